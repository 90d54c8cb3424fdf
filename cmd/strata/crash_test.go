package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/soak"
	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/store/awstest"
	"github.com/stratalog/strata/pkg/store/dynamo"
	s3store "github.com/stratalog/strata/pkg/store/s3"
)

// EnvCrashRounds overrides the number of kill -9 rounds of TestDevKill9Rounds (default 10).
const EnvCrashRounds = "STRATA_CRASH_ROUNDS"

// startDevWith starts the strata binary with args and extra environment, and waits for
// its "listening on" line.
func startDevWith(t *testing.T, env []string, args ...string) *devProc {
	t.Helper()
	cmd := exec.Command(strataBin, args...)
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &devProc{cmd: cmd, stdout: bufio.NewReader(stdout), stderr: &bytes.Buffer{}, exited: make(chan error, 1)}
	cmd.Stderr = &lockedWriter{w: p.stderr}
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
		_, _ = io.Copy(io.Discard, p.stdout)
		p.exited <- cmd.Wait()
	}()
	select {
	case l := <-line:
		m := listeningLine.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("strata dev printed %q first (stderr %q)", l, cmd.Stderr.(*lockedWriter).String())
		}
		p.url = m[1]
	case <-time.After(30 * time.Second):
		t.Fatalf("strata dev printed nothing in 30 s (stderr %q)", cmd.Stderr.(*lockedWriter).String())
	}
	return p
}

// lockedWriter lets the test read a child's stderr while the child writes it.
type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

// crashBatch is one append request of the crash test and what became of it.
type crashBatch struct {
	key  string // Idempotency-Key, empty for a plain append
	ids  []string
	recs []client.Record
	res  []client.Result // the acknowledged results, nil until acknowledged
}

// crashLoad is the state of the crash test across rounds.
type crashLoad struct {
	mu      sync.Mutex
	in      soak.Input
	pending []*crashBatch // idempotent batches in flight at a kill, retried after the restart
	acked   []*crashBatch // acknowledged idempotent batches, re-sent to check their offsets
	batches int
	errors  map[string]int
}

func (l *crashLoad) ack(b *crashBatch, res []client.Result) {
	b.res = res
	for j, r := range res {
		l.in.Acks = append(l.in.Acks, soak.Ack{ID: b.ids[j], Partition: r.Partition, Offset: r.Offset,
			Key: b.recs[j].Key, Value: b.recs[j].Value, Idempotent: b.key != ""})
	}
	if b.key != "" {
		l.acked = append(l.acked, b)
	}
}

// TestDevKill9Rounds: `strata dev` is killed with SIGKILL at a random moment under load
// (8 appenders, half with Idempotency-Key) and restarted on the same storage, 10 times,
// on the embedded backend and on the AWS backend (emulator). After each restart the
// batches whose answer the kill cut off are retried with their key, and acknowledged
// idempotent batches are re-sent and must get their first offsets back. At the end the
// whole log is read and audited (soak.Audit): every acknowledged record readable at its
// offset, byte-identical; no offset used twice; no idempotent record stored twice; a
// plain record stored twice only when an attempt of it was cut off.
func TestDevKill9Rounds(t *testing.T) {
	rounds := 10
	if s := os.Getenv(EnvCrashRounds); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number", EnvCrashRounds, s)
		}
		rounds = n
	}
	t.Run("local", func(t *testing.T) {
		dir := t.TempDir()
		kill9Rounds(t, rounds, func() *devProc {
			return startDevWith(t, nil, "dev", "--addr", "127.0.0.1:0", "--data-dir", dir, "--retention-interval", "1h")
		})
	})
	t.Run("aws", func(t *testing.T) {
		cfg, env := emulatedDev(t, "crash")
		env = append(env, "STRATA_FAULT_RATE=")
		kill9Rounds(t, rounds, func() *devProc {
			return startDevWith(t, env, "dev", "--backend", "aws", "--bootstrap", "--addr", "127.0.0.1:0",
				"--bucket", cfg.Bucket, "--table-prefix", cfg.TablePrefix, "--retention-interval", "1h")
		})
	})
}

func kill9Rounds(t *testing.T, rounds int, start func() *devProc) {
	const (
		topic      = "crash"
		partitions = 4
		appenders  = 8
	)
	ctx := context.Background()
	load := &crashLoad{in: soak.Input{Failed: map[string]int{}, IdempotentIDs: map[string]bool{}}, errors: map[string]int{}}
	p := start()
	c, _ := client.New(p.url)
	if _, err := c.CreateTopic(ctx, topic, client.TopicConfig{Partitions: partitions}); err != nil {
		t.Fatal(err)
	}
	seed := uint64(time.Now().UnixNano())
	rng := mrand.New(mrand.NewPCG(seed, 1)) // the test goroutine's; each appender has its own
	t.Logf("seed %d", seed)
	var replays, retried int
	t0 := time.Now()
	for round := range rounds {
		var (
			killed atomic.Bool
			wg     sync.WaitGroup
			acks   atomic.Int64
		)
		for i := range appenders {
			wg.Go(func() {
				rng := mrand.New(mrand.NewPCG(seed, uint64(round*appenders+i)))
				for n := 0; !killed.Load(); n++ {
					b := &crashBatch{}
					if i%2 == 0 {
						b.key = fmt.Sprintf("r%d-a%d-b%d", round, i, n)
					}
					for j := range 1 + rng.IntN(8) {
						id := fmt.Sprintf("r%d-a%d-b%d-%d", round, i, n, j)
						b.ids = append(b.ids, id)
						b.recs = append(b.recs, client.Record{Key: fmt.Appendf(nil, "k%d-%d", i, rng.IntN(50)), Value: fmt.Appendf(nil, "%s|%x", id, rng.Uint64())})
					}
					load.mu.Lock()
					load.batches++
					if b.key != "" {
						for _, id := range b.ids {
							load.in.IdempotentIDs[id] = true
						}
					}
					load.mu.Unlock()
					res, err := c.Append(ctx, topic, b.recs, client.AppendOptions{IdempotencyKey: b.key})
					load.mu.Lock()
					switch {
					case err == nil:
						load.ack(b, res)
						acks.Add(int64(len(res)))
					case b.key != "":
						load.pending = append(load.pending, b)
					default:
						for _, id := range b.ids {
							load.in.Failed[id]++
						}
					}
					if err != nil {
						if !killed.Load() {
							load.errors[err.Error()]++
						}
						load.mu.Unlock()
						return
					}
					load.mu.Unlock()
				}
			})
		}
		// Kill at a random moment once appends flow.
		for deadline := time.Now().Add(20 * time.Second); acks.Load() < 20 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
		killed.Store(true)
		if err := p.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		var exitErr *exec.ExitError
		if err := <-p.exited; !errors.As(err, &exitErr) || exitErr.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("round %d: strata dev ended with %v, want killed by SIGKILL", round, err)
		}
		wg.Wait()
		if acks.Load() < 20 {
			t.Fatalf("round %d: only %d records acknowledged before the kill", round, acks.Load())
		}
		p = start()
		c, _ = client.New(p.url)
		// Retry with its key every idempotent batch the kill cut off.
		load.mu.Lock()
		pending := load.pending
		load.pending = nil
		load.mu.Unlock()
		for _, b := range pending {
			res, err := c.Append(ctx, topic, b.recs, client.AppendOptions{IdempotencyKey: b.key})
			if err != nil {
				t.Fatalf("round %d: retry of %s after the restart: %v", round, b.key, err)
			}
			load.mu.Lock()
			load.ack(b, res)
			load.mu.Unlock()
			retried++
		}
		// Re-send some acknowledged idempotent batches: their first offsets come back.
		load.mu.Lock()
		sample := make([]*crashBatch, 0, 10)
		for range min(10, len(load.acked)) {
			sample = append(sample, load.acked[rng.IntN(len(load.acked))])
		}
		load.mu.Unlock()
		for _, b := range sample {
			res, err := c.Append(ctx, topic, b.recs, client.AppendOptions{IdempotencyKey: b.key})
			if err != nil {
				t.Fatalf("round %d: replay of %s: %v", round, b.key, err)
			}
			for j := range res {
				if res[j].Partition != b.res[j].Partition || res[j].Offset != b.res[j].Offset {
					t.Fatalf("round %d: replay of %s record %d answered %d@%d, first acknowledged %d@%d",
						round, b.key, j, res[j].Partition, res[j].Offset, b.res[j].Partition, b.res[j].Offset)
				}
			}
			replays++
		}
	}

	hw := map[int32]int64{}
	top, err := c.DescribeTopic(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, pi := range top.PartitionInfo {
		hw[pi.Partition] = pi.HighWatermark
	}
	for p, h := range hw {
		for next := int64(0); next < h; {
			res, err := c.Poll(ctx, topic, p, next, client.PollOptions{MaxRecords: 1000, Wait: time.Second})
			if err != nil {
				t.Fatalf("read %d@%d: %v", p, next, err)
			}
			for _, r := range res.Records {
				load.in.Log = append(load.in.Log, soak.Stored{Partition: p, Offset: r.Offset, Key: r.Key, Value: r.Value})
			}
			if res.NextOffset <= next {
				t.Fatalf("read %d@%d made no progress below the high watermark %d", p, next, h)
			}
			next = res.NextOffset
		}
	}
	rep := soak.Audit(load.in)
	var highWatermark int64
	for _, h := range hw {
		highWatermark += h
	}
	t.Logf("%d kill -9 rounds in %s: %d append requests, %d idempotent batches retried after a restart, %d replays answered with their first offsets, offsets used %d (high watermarks %v), of them skipped by readers as duplicate commits %d, errors before a kill %v\n%s",
		rounds, time.Since(t0).Round(time.Millisecond), load.batches, retried, replays, highWatermark, hw, highWatermark-int64(rep.StoredRecords), load.errors, rep)
	for _, v := range rep.Violations {
		t.Errorf("audit: %s", v)
	}
	if len(load.errors) > 0 {
		t.Errorf("appends failed before any kill: %v", load.errors)
	}
}

// emulatedDev names tables and a bucket of the test's own on the emulator
// ("<kind><random>-", "strata-<kind>-<random>"), removed when the test ends, and returns
// them with the environment a `strata dev --backend aws` child needs to reach the
// emulator: test credentials and none of the machine's AWS files.
func emulatedDev(t *testing.T, kind string) (dynamo.Config, []string) {
	ctx := context.Background()
	ep := awstest.Endpoint(t)
	id := randomHex()
	cfg := dynamo.Config{TablePrefix: kind + id + "-", Bucket: "strata-" + kind + "-" + id}
	t.Cleanup(func() {
		if err := s3store.DeleteBucket(ctx, awstest.S3Client(ctx, t), cfg.Bucket); err != nil {
			t.Logf("cleanup bucket: %v", err)
		}
		if err := dynamo.Teardown(ctx, awstest.DynamoDBClient(ctx, t), cfg); err != nil {
			t.Logf("cleanup tables: %v", err)
		}
	})
	return cfg, []string{"AWS_ENDPOINT_URL=" + ep, "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_SESSION_TOKEN=",
		"AWS_REGION=" + awstest.Region, "AWS_CONFIG_FILE=" + os.DevNull, "AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull}
}

func randomHex() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
