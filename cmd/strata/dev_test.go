package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/client"
)

// strataBin is the strata binary TestMain builds for the process-level tests.
var strataBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "strata-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	strataBin = filepath.Join(dir, "strata")
	args := []string{"build", "-o", strataBin}
	if benchBuilt {
		// The process-level tests run the binary with the drivers this test has.
		args = append(args, "-tags", "bench")
	}
	build := exec.Command("go", append(args, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build strata:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var listeningLine = regexp.MustCompile(`^listening on (http://127\.0\.0\.1:[0-9]+)\n$`)

// devProc is a running `strata dev`.
type devProc struct {
	cmd    *exec.Cmd
	url    string
	stdout *bufio.Reader
	stderr *bytes.Buffer
	// rest is what dev printed on stdout after its first line.
	rest   *syncBuffer
	exited chan error
}

// startDev starts `strata dev` on dataDir and a free port, and waits for its
// "listening on" line (the only thing it may print first).
func startDev(t *testing.T, dataDir string, extra ...string) *devProc {
	t.Helper()
	cmd := exec.Command(strataBin, append([]string{"dev", "--addr", "127.0.0.1:0", "--data-dir", dataDir, "--retention-interval", "1h"}, extra...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &devProc{cmd: cmd, stdout: bufio.NewReader(stdout), stderr: &bytes.Buffer{}, rest: &syncBuffer{}, exited: make(chan error, 1)}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-p.exited
		}
	})
	line := make(chan string, 1)
	go func() {
		l, _ := p.stdout.ReadString('\n')
		line <- l
		_, _ = io.Copy(p.rest, p.stdout) // drain, so Wait returns
		p.exited <- cmd.Wait()
	}()
	select {
	case l := <-line:
		m := listeningLine.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("strata dev printed %q first, want %q (stderr %q)", l, "listening on http://ADDR\n", p.stderr.String())
		}
		p.url = m[1]
	case <-time.After(15 * time.Second):
		t.Fatalf("strata dev printed nothing in 15 s (stderr %q)", p.stderr.String())
	}
	return p
}

// TestDevGracefulShutdown: `strata dev` prints exactly "listening on http://ADDR",
// answers, and on SIGTERM answers the long poll in flight and exits 0 within 5 s.
func TestDevGracefulShutdown(t *testing.T) {
	ctx := context.Background()
	p := startDev(t, t.TempDir())
	c, _ := client.New(p.url)
	if err := c.Health(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, "t", client.TopicConfig{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	polled := make(chan error, 1)
	go func() {
		res, err := c.Poll(ctx, "t", 0, 0, client.PollOptions{Wait: 20 * time.Second})
		if err == nil && (len(res.Records) != 0 || res.HighWatermark != 0) {
			err = fmt.Errorf("unexpected answer %+v", res)
		}
		polled <- err
	}()
	time.Sleep(200 * time.Millisecond)
	t0 := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		took := time.Since(t0)
		if err != nil {
			t.Fatalf("strata dev exited with %v after SIGTERM (stderr %q)", err, p.stderr.String())
		}
		if took > 5*time.Second {
			t.Fatalf("strata dev took %v to exit", took)
		}
		t.Logf("exited 0 %v after SIGTERM", took.Round(time.Millisecond))
	case <-time.After(6 * time.Second):
		t.Fatalf("strata dev still running 6 s after SIGTERM (stderr %q)", p.stderr.String())
	}
	if err := <-polled; err != nil {
		t.Fatalf("the long poll in flight at SIGTERM: %v", err)
	}
	if p.stderr.Len() != 0 {
		t.Fatalf("stderr: %q", p.stderr.String())
	}
}

// ack is an acknowledged record: where it landed and what it holds.
type ack struct {
	partition  int32
	offset     int64
	key, value []byte
}

// appendUntilKilled runs appenders concurrent appenders against url until kill is
// called, and returns what was acknowledged. An error before the kill fails the test.
func appendUntilKilled(t *testing.T, url, topic string, appenders int, seed uint64, kill func()) []ack {
	t.Helper()
	c, err := client.New(url)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		acks   []ack
		killed atomic.Bool
		wg     sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			for ctx.Err() == nil {
				recs := make([]client.Record, 1+rng.IntN(16))
				for j := range recs {
					recs[j].Key = fmt.Appendf(nil, "a%d-%d", i, rng.IntN(50))
					recs[j].Value = make([]byte, rng.IntN(4096))
					for k := range recs[j].Value {
						recs[j].Value[k] = byte(rng.Uint32())
					}
				}
				res, err := c.Append(ctx, topic, recs, client.AppendOptions{})
				if err != nil {
					if !killed.Load() && ctx.Err() == nil {
						t.Errorf("appender %d before the kill: %v", i, err)
					}
					return
				}
				mu.Lock()
				for j, r := range res {
					acks = append(acks, ack{r.Partition, r.Offset, recs[j].Key, recs[j].Value})
				}
				mu.Unlock()
			}
		}()
	}
	// Kill at a random moment once appends are flowing.
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(acks)
		mu.Unlock()
		if n >= 50 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(time.Duration(rand.N(300)) * time.Millisecond)
	killed.Store(true)
	kill()
	wg.Wait()
	if len(acks) < 50 {
		t.Fatalf("only %d records acknowledged before the kill", len(acks))
	}
	return acks
}

// verifyLog reads every partition from offset 0 and checks that offsets are dense and
// that every acknowledged record is there, byte for byte.
func verifyLog(t *testing.T, url, topic string, partitions int32, acks []ack) {
	t.Helper()
	ctx := context.Background()
	c, _ := client.New(url)
	got := make([]map[int64]client.PolledRecord, partitions)
	for p := range partitions {
		got[p] = map[int64]client.PolledRecord{}
		next := int64(0)
		for {
			res, err := c.Poll(ctx, topic, p, next, client.PollOptions{MaxRecords: 1000})
			if err != nil {
				t.Fatalf("poll %d@%d: %v", p, next, err)
			}
			if res.LogStartOffset != 0 {
				t.Fatalf("partition %d starts at %d", p, res.LogStartOffset)
			}
			for _, r := range res.Records {
				if r.Offset != next {
					t.Fatalf("partition %d: offset %d where %d was due (offsets not dense)", p, r.Offset, next)
				}
				got[p][r.Offset] = r
				next++
			}
			if res.NextOffset != next {
				t.Fatalf("partition %d: next offset %d after reading up to %d", p, res.NextOffset, next)
			}
			if next == res.HighWatermark {
				break
			}
		}
	}
	for _, a := range acks {
		r, ok := got[a.partition][a.offset]
		if !ok {
			t.Fatalf("acknowledged record %d@%d is gone", a.partition, a.offset)
		}
		if !bytes.Equal(r.Key, a.key) || !bytes.Equal(r.Value, a.value) {
			t.Fatalf("record %d@%d differs from what was acknowledged (key %q vs %q, %d vs %d value bytes)",
				a.partition, a.offset, r.Key, a.key, len(r.Value), len(a.value))
		}
	}
}

// TestDevKill9KeepsAcknowledgedRecords: SIGKILL `strata dev` twice while 8 clients
// append; after each restart on the same directory every acknowledged record is
// readable at its offset, byte-identical, and every partition's offsets are dense.
func TestDevKill9KeepsAcknowledgedRecords(t *testing.T) {
	dir := t.TempDir()
	const partitions = 4
	p := startDev(t, dir)
	c, _ := client.New(p.url)
	if _, err := c.CreateTopic(context.Background(), "crash", client.TopicConfig{Partitions: partitions}); err != nil {
		t.Fatal(err)
	}
	var all []ack
	for round := range 2 {
		acks := appendUntilKilled(t, p.url, "crash", 8, uint64(round), func() {
			if err := p.cmd.Process.Kill(); err != nil {
				t.Error(err)
			}
		})
		var exitErr *exec.ExitError
		if err := <-p.exited; !errors.As(err, &exitErr) || exitErr.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("round %d: strata dev ended with %v, want killed by SIGKILL", round, err)
		}
		all = append(all, acks...)
		t.Logf("round %d: %d records acknowledged before SIGKILL", round, len(acks))
		p = startDev(t, dir)
		verifyLog(t, p.url, "crash", partitions, all)
	}
}
