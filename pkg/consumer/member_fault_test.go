package consumer_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/ctxtime"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
)

// idleLog is a log with nothing to read: every poll waits and returns no records.
type idleLog struct{}

func (idleLog) Poll(ctx context.Context, _ string, _ int32, offset int64, opt log.PollOptions) (log.PollResult, error) {
	if err := ctxtime.Sleep(ctx, opt.Wait); err != nil {
		return log.PollResult{}, err
	}
	return log.PollResult{NextOffset: offset, HighWatermark: offset}, nil
}

func (idleLog) Append(context.Context, string, []log.Record, log.AppendOptions) ([]log.Result, error) {
	return nil, nil
}

func (idleLog) Bounds(context.Context, string, int32) (int64, int64, error) { return 0, 0, nil }

// scriptedCoord answers renewals with renew and counts releases and renewals.
type scriptedCoord struct {
	renew    func(partition int32, generation int64) error
	renews   atomic.Int64
	releases atomic.Int64
}

func (c *scriptedCoord) Acquire(context.Context, string, string, int32, string, time.Duration) (group.Lease, error) {
	return group.Lease{}, fmt.Errorf("acquire: %w", group.ErrInvalid)
}

func (c *scriptedCoord) Renew(_ context.Context, g, topic string, p int32, m string, gen int64, ttl time.Duration) (group.Lease, error) {
	c.renews.Add(1)
	if err := c.renew(p, gen); err != nil {
		return group.Lease{}, err
	}
	return group.Lease{Group: g, Topic: topic, Partition: p, Member: m, Generation: gen, ExpiresAt: time.Now().Add(ttl)}, nil
}

func (c *scriptedCoord) Release(context.Context, string, string, int32, string, int64) error {
	c.releases.Add(1)
	return nil
}

func (c *scriptedCoord) Commit(context.Context, string, string, int32, string, int64, int64, ...store.OffsetRange) error {
	return nil
}

func (c *scriptedCoord) GetSettings(context.Context, string) (group.Settings, error) {
	return group.Settings{}, group.ErrNotFound
}

// scriptedBalancer plays the steps it is given, one per call, then blocks until ctx
// ends; like group.Balancer, releasing a partition it does not hold is an error.
type scriptedBalancer struct {
	mu         sync.Mutex
	steps      []func(ctx context.Context) (group.StepResult, error)
	calls      int
	held       map[int32]bool
	badRelease int
}

func (b *scriptedBalancer) Step(ctx context.Context) (group.StepResult, error) {
	b.mu.Lock()
	i := b.calls
	b.calls++
	b.mu.Unlock()
	if i >= len(b.steps) {
		<-ctx.Done()
		return group.StepResult{}, ctx.Err()
	}
	res, err := b.steps[i](ctx)
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range res.Lost {
		delete(b.held, p)
	}
	for _, l := range res.Acquired {
		b.held[l.Partition] = true
	}
	return res, err
}

func (b *scriptedBalancer) Release(_ context.Context, p int32) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.held[p] {
		b.badRelease++
		return fmt.Errorf("partition %d is not held: %w", p, group.ErrInvalid)
	}
	delete(b.held, p)
	return nil
}

func (b *scriptedBalancer) Leave(context.Context) error { return nil }

func (b *scriptedBalancer) stepCalls() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls
}

func leaseOf(p int32, gen int64) group.Lease {
	zero := int64(0)
	return group.Lease{Group: "billing", Topic: "orders", Partition: p, Member: "m", Generation: gen,
		ExpiresAt: time.Now().Add(300 * time.Millisecond), Committed: &zero}
}

// syncBuffer is a bytes.Buffer safe for concurrent writes, for a test logger.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func memberConsumer(t *testing.T, coord consumer.Coordinator, logs *syncBuffer) *consumer.Consumer {
	t.Helper()
	c, err := consumer.New(idleLog{}, coord, consumer.Config{Group: "billing", Topic: "orders", Member: "m",
		Handler: func(context.Context, consumer.Record) error { return nil }, LeaseTTL: 300 * time.Millisecond,
		PollWait: 10 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRunMemberSurvivesALostPartition: a partition moves; its run sees the fence and
// ends while the balancer's step sees it too and forgets the partition. RunMember must
// not hand the forgotten partition back (an error that used to end RunMember), must go
// on stepping and take the partition again later, and logs the run's end.
func TestRunMemberSurvivesALostPartition(t *testing.T) {
	coord := &scriptedCoord{renew: func(_ int32, gen int64) error {
		if gen == 1 {
			return fmt.Errorf("renew: %w", group.ErrFenced)
		}
		return nil
	}}
	bal := &scriptedBalancer{held: map[int32]bool{}}
	bal.steps = []func(context.Context) (group.StepResult, error){
		func(context.Context) (group.StepResult, error) {
			return group.StepResult{Acquired: []group.Lease{leaseOf(0, 1)}}, nil
		},
		func(context.Context) (group.StepResult, error) {
			// The step's own renewal is fenced at the moment the run's is.
			for coord.renews.Load() == 0 {
				time.Sleep(time.Millisecond)
			}
			time.Sleep(20 * time.Millisecond) // the run's exit is queued meanwhile
			return group.StepResult{Lost: []int32{0}}, nil
		},
		func(context.Context) (group.StepResult, error) {
			return group.StepResult{Acquired: []group.Lease{leaseOf(0, 2)}}, nil
		},
		func(context.Context) (group.StepResult, error) { return group.StepResult{}, nil },
	}
	var logs syncBuffer
	c := memberConsumer(t, coord, &logs)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.RunMember(ctx, bal, 20*time.Millisecond) }()
	deadline := time.After(10 * time.Second)
	for bal.stepCalls() < 5 {
		select {
		case err := <-done:
			t.Fatalf("RunMember returned %v after %d steps; a lost partition must not end it", err, bal.stepCalls())
		case <-deadline:
			t.Fatalf("RunMember made %d steps in 10 s:\n%s", bal.stepCalls(), logs.String())
		case <-time.After(time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("RunMember returned %v when its context ended, want nil", err)
	}
	if bal.badRelease != 0 {
		t.Fatalf("RunMember released a partition the balancer no longer held %d times", bal.badRelease)
	}
	if out := logs.String(); !bytes.Contains([]byte(out), []byte("partition run ended")) || !bytes.Contains([]byte(out), []byte("fenced")) {
		t.Fatalf("the fenced run's end was not logged:\n%s", out)
	}
}

// TestRunMemberShutdownAfterManyRunsEnded: 80 partitions whose renewals all fail (a
// store outage) end on their own while the balancer's step hangs in the same outage;
// more runs end than RunMember's exit queue holds. Cancelling RunMember must still
// return promptly, and the failed step is logged.
func TestRunMemberShutdownAfterManyRunsEnded(t *testing.T) {
	const partitions = 80
	coord := &scriptedCoord{renew: func(int32, int64) error { return fmt.Errorf("renew: %w", group.ErrUnavailable) }}
	bal := &scriptedBalancer{held: map[int32]bool{}}
	bal.steps = []func(context.Context) (group.StepResult, error){
		func(context.Context) (group.StepResult, error) {
			var res group.StepResult
			for p := range int32(partitions) {
				res.Acquired = append(res.Acquired, leaseOf(p, 1))
			}
			return res, nil
		},
		func(context.Context) (group.StepResult, error) {
			return group.StepResult{}, fmt.Errorf("step: %w", group.ErrUnavailable)
		},
	}
	var logs syncBuffer
	c := memberConsumer(t, coord, &logs)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.RunMember(ctx, bal, 20*time.Millisecond) }()
	waitUntil(t, "every run to end on its own", func() bool { return coord.releases.Load() == partitions })
	time.Sleep(50 * time.Millisecond) // every run is now handing in its exit
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("RunMember returned %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("RunMember hung on shutdown after more runs ended than its exit queue holds")
	}
	if out := logs.String(); !bytes.Contains([]byte(out), []byte("balancer step failed")) {
		t.Fatalf("the failed step was not logged:\n%s", out)
	}
}
