//go:build linux

package consumer_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/httpapi"
	"github.com/stratalog/strata/pkg/httpconsumer"
	"github.com/stratalog/strata/pkg/log"
)

// Environment of the consumer process the SIGSTOP test spawns (this test binary,
// re-executed): when helperURL is set, TestMain runs the consumer instead of the tests.
const (
	helperURL   = "STRATA_PAUSE_HELPER_URL"
	helperGroup = "STRATA_PAUSE_HELPER_GROUP"
	helperSkew  = "STRATA_PAUSE_HELPER_SKEW"
	helperOut   = "STRATA_PAUSE_HELPER_OUT"
)

// pauseTTL is the consumer process's lease TTL: short, so the test stays short.
const pauseTTL = time.Second

func TestMain(m *testing.M) {
	if os.Getenv(helperURL) != "" {
		if err := pauseHelper(); err != nil {
			fmt.Fprintln(os.Stderr, "pause helper:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// pauseHelper is the consumer process: it follows partition 0 of "orders" over HTTP for
// its group, with its clock skewed as told, writing "start <offset> <unix ns>" to the
// output file as each record's handler starts (one write each, so a line is on disk
// before the handler goes on), and "end fenced=<bool> <err>" when its run ends.
func pauseHelper() error {
	skew, err := time.ParseDuration(os.Getenv(helperSkew))
	if err != nil {
		return err
	}
	out, err := os.OpenFile(os.Getenv(helperOut), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer out.Close()
	c, err := client.New(os.Getenv(helperURL))
	if err != nil {
		return err
	}
	clock := func() time.Time { return time.Now().Add(skew) }
	ad := httpconsumer.NewConsumerAdapter(c, httpconsumer.WithAdapterClock(clock))
	h := func(ctx context.Context, r consumer.Record) error {
		if _, err := fmt.Fprintf(out, "start %d %d\n", r.Offset, time.Now().UnixNano()); err != nil {
			return err
		}
		select {
		case <-time.After(5 * time.Millisecond): // some work
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	cons, err := consumer.New(ad, ad, consumer.Config{Group: os.Getenv(helperGroup), Topic: "orders", Member: "paused",
		Handler: h, LeaseTTL: pauseTTL, PollWait: 100 * time.Millisecond, CommitInterval: 10 * time.Millisecond, Clock: clock})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := cons.Run(ctx, 0, consumer.RunOptions{})
	_, werr := fmt.Fprintf(out, "end fenced=%v %v\n", st.Fenced, err)
	return werr
}

// pauseLog is what the consumer process wrote.
type pauseLog struct {
	starts []pauseStart
	end    string
}

type pauseStart struct {
	offset int64
	at     time.Time
}

func readPauseLog(t *testing.T, path string) pauseLog {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var pl pauseLog
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 3 && f[0] == "start":
			off, err1 := strconv.ParseInt(f[1], 10, 64)
			ns, err2 := strconv.ParseInt(f[2], 10, 64)
			if err1 != nil || err2 != nil {
				t.Fatalf("bad line %q", sc.Text())
			}
			pl.starts = append(pl.starts, pauseStart{off, time.Unix(0, ns)})
		case len(f) > 0 && f[0] == "end":
			pl.end = sc.Text()
		}
	}
	return pl
}

// processState returns the state letter of /proc/<pid>/stat ("T" when stopped).
func processState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2 : i+3]
	}
	return ""
}

// TestSIGSTOPPastLease runs a real consumer process against an in-process server (the
// HTTP API over the embedded backend), with its clock −1, 0 or +1 minute off the
// server's. Once it is working, the process is stopped with SIGSTOP for longer than its
// lease TTL; meanwhile either another member takes the partition over and finishes
// it, or an operator resets the group to the earliest offset. After SIGCONT, the
// process's run must end fenced, no handler may have started after the stop, and the
// commit row must be exactly as the new owner or the reset left it.
func TestSIGSTOPPastLease(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns consumer processes and waits out their leases")
	}
	ctx := context.Background()
	s := backendtest.Local(ctx, t)
	l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta})
	if err != nil {
		t.Fatal(err)
	}
	coord := group.New(s.Meta, l, nil)
	srv := httptest.NewServer(httpapi.New(httpapi.Config{Log: l, Groups: coord}))
	t.Cleanup(srv.Close)
	const records = 2000
	if _, err := l.CreateTopic(ctx, "orders", 1, 0); err != nil {
		t.Fatal(err)
	}
	p := int32(0)
	recs := make([]log.Record, records)
	for i := range recs {
		recs[i] = log.Record{Value: fmt.Appendf(nil, "event-%d", i), Partition: &p}
	}
	if _, err := l.Append(ctx, "orders", recs, log.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, after := range []string{"takeover", "reset"} {
		for _, skew := range skews {
			t.Run(fmt.Sprintf("%s/skew%+v", after, skew), func(t *testing.T) {
				t.Parallel()
				grp := fmt.Sprintf("sigstop-%s-%d", after, int(skew.Seconds())+60)
				sigstopScenario(t, srv.URL, c, coord, l, grp, after, skew)
			})
		}
	}
}

func sigstopScenario(t *testing.T, url string, c *client.Client, coord *group.Coordinator, l *log.Log, grp, after string, skew time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	outPath := filepath.Join(t.TempDir(), "consumer.log")
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperURL+"="+url, helperGroup+"="+grp, helperSkew+"="+skew.String(), helperOut+"="+outPath)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	pid := cmd.Process.Pid
	defer func() {
		_ = syscall.Kill(pid, syscall.SIGCONT)
		_ = cmd.Process.Kill()
	}()

	waitUntil(t, "the consumer process to start 50 records", func() bool { return len(readPauseLog(t, outPath).starts) >= 50 })
	committedBefore := int64(-1)
	waitUntil(t, "a commit by the consumer process", func() bool {
		o, err := coord.Committed(ctx, grp, "orders", 0)
		if err == nil && o != nil && *o > 0 {
			committedBefore = *o
			return true
		}
		return false
	})
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the process to stop", func() bool { return processState(pid) == "T" })
	stoppedAt := time.Now()
	before := readPauseLog(t, outPath)
	time.Sleep(pauseTTL + 500*time.Millisecond) // past the lease, by the server's clock

	switch after {
	case "takeover":
		repl, err := consumer.New(l, coord, consumer.Config{Group: grp, Topic: "orders", Member: "replacement",
			Handler: func(context.Context, consumer.Record) error { return nil }, PollWait: 10 * time.Millisecond,
			CommitInterval: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := repl.Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true}); err != nil {
			t.Fatal(err)
		}
	case "reset":
		if _, err := c.ResetGroup(ctx, grp, "orders", client.ResetEarliest()); err != nil {
			t.Fatal(err)
		}
	}
	want, err := coord.Committed(ctx, grp, "orders", 0)
	if err != nil || want == nil {
		t.Fatalf("committed after the %s: %v, %v", after, want, err)
	}

	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumedAt := time.Now()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("consumer process: %v\n%s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		late := 0
		for _, st := range readPauseLog(t, outPath).starts {
			if !st.at.Before(stoppedAt) {
				late++
			}
		}
		got, err := coord.Committed(ctx, grp, "orders", 0)
		t.Fatalf("the resumed consumer process was not fenced within 10 s: it started %d records after SIGSTOP, committed %v (%v), want %d",
			late, *got, err, *want)
	}
	ended := time.Since(resumedAt)
	pl := readPauseLog(t, outPath)
	if !strings.HasPrefix(pl.end, "end fenced=true") || !strings.Contains(pl.end, "fenced") {
		t.Fatalf("the resumed process's run ended with %q, want fenced", pl.end)
	}
	late := 0
	for _, st := range pl.starts {
		if !st.at.Before(stoppedAt) {
			late++
			t.Errorf("the resumed process started offset %d at %v, after it was stopped at %v", st.offset, st.at, stoppedAt)
		}
	}
	if got, err := coord.Committed(ctx, grp, "orders", 0); err != nil || got == nil || *got != *want {
		t.Fatalf("committed %v (%v) after the resumed process ended, want %d: it committed after its pause", got, err, *want)
	}
	t.Logf("%s, clock %+v: %d records started before SIGSTOP (commit %d), %d after; committed %d after the %s stays; run ended fenced %v after SIGCONT",
		after, skew, len(before.starts), committedBefore, late, *want, after, ended.Round(time.Millisecond))
}
