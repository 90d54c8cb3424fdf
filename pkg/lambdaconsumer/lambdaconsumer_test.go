package lambdaconsumer_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/internal/ctxtime"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/lambdaconsumer"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/retention"
	"github.com/stratalog/strata/pkg/store"
)

type node struct {
	stores backendtest.Stores
	log    *log.Log
	coord  *group.Coordinator
}

func newNode(t testing.TB, partitions int32, retentionTime time.Duration, records int) *node {
	t.Helper()
	s := backendtest.Local(context.Background(), t)
	l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta})
	if err != nil {
		t.Fatal(err)
	}
	n := &node{stores: s, log: l, coord: group.New(s.Meta, l, nil)}
	if _, err := l.CreateTopic(context.Background(), "orders", partitions, retentionTime); err != nil {
		t.Fatal(err)
	}
	n.append(t, records)
	return n
}

func (n *node) append(t testing.TB, records int) {
	t.Helper()
	p := int32(0)
	for i := range records {
		if _, err := n.log.Append(context.Background(), "orders", []log.Record{{Key: []byte("k"), Value: fmt.Appendf(nil, `{"order_id":"o-%d"}`, i), Partition: &p}}, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func (n *node) backend(context.Context) (lambdaconsumer.Backend, error) {
	return lambdaconsumer.Backend{Log: n.log, Groups: n.coord}, nil
}

func (n *node) committed(t *testing.T) int64 {
	t.Helper()
	c, err := n.coord.Committed(context.Background(), "billing", "orders", 0)
	if err != nil || c == nil {
		t.Fatalf("committed: %v, %v", c, err)
	}
	return *c
}

func (n *node) leaseOwner(t *testing.T) string {
	t.Helper()
	id, err := n.log.TopicID(context.Background(), "orders")
	if err != nil {
		t.Fatal(err)
	}
	a, err := n.stores.Meta.GetAssignment(context.Background(), "billing", id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if a.Live(time.Now()) {
		return a.Owner
	}
	return ""
}

// ledger is an idempotent side effect (a conditional put keyed by offset).
type ledger struct {
	mu      sync.Mutex
	applied map[int64]int
}

func newLedger() *ledger { return &ledger{applied: map[int64]int{}} }

func (l *ledger) put(off int64) {
	l.mu.Lock()
	l.applied[off]++
	l.mu.Unlock()
}

func (l *ledger) check(t *testing.T, want int) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.applied) != want {
		t.Errorf("%d offsets applied, want %d", len(l.applied), want)
	}
	for off, n := range l.applied {
		if n != 1 {
			t.Errorf("offset %d applied %d times", off, n)
		}
	}
}

type nopMetrics struct{}

func (nopMetrics) ConsumerRun(string, string, consumer.Stats) {}

var ev = lambdaconsumer.Event{Topic: "orders", Partition: 0, Group: "billing"}

// TestDuplicateInvocation: two invocations for one partition at once: one works, the
// other finds the lease held and returns at once without error; nothing is applied twice.
func TestDuplicateInvocation(t *testing.T) {
	n := newNode(t, 1, time.Hour, 20)
	led := newLedger()
	started := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	h := lambdaconsumer.Handler(lambdaconsumer.Config{Open: n.backend, Metrics: nopMetrics{}, IdleWait: 50 * time.Millisecond},
		func(ctx context.Context, r lambdaconsumer.Record) error {
			once.Do(func() { close(started) })
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
			led.put(r.Offset)
			return nil
		})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type out struct {
		res lambdaconsumer.Result
		err error
	}
	first := make(chan out, 1)
	go func() {
		res, err := h(ctx, ev)
		first <- out{res, err}
	}()
	<-started
	t0 := time.Now()
	res, err := h(ctx, ev)
	if err != nil || !res.LeaseHeld || res.Handled != 0 {
		t.Fatalf("duplicate: %+v, %v; want lease_held, nothing handled, no error", res, err)
	}
	t.Logf("the duplicate returned in %s", time.Since(t0))
	close(release)
	o := <-first
	if o.err != nil || o.res.LeaseHeld || o.res.Handled != 20 || o.res.Committed != 20 {
		t.Fatalf("first: %+v, %v", o.res, o.err)
	}
	led.check(t, 20)
	if got := n.committed(t); got != 20 {
		t.Errorf("committed %d, want 20", got)
	}
	if owner := n.leaseOwner(t); owner != "" {
		t.Errorf("lease still held by %q after the invocation", owner)
	}
}

// TestDeadlineMidBatch: an invocation whose deadline arrives mid-batch commits its
// contiguous prefix and releases; the next invocation resumes exactly there.
func TestDeadlineMidBatch(t *testing.T) {
	n := newNode(t, 1, time.Hour, 40)
	led := newLedger()
	var mu sync.Mutex
	var firstSeen []int64
	h := lambdaconsumer.Handler(lambdaconsumer.Config{
		Open: n.backend, Metrics: nopMetrics{}, IdleWait: 50 * time.Millisecond,
		DeadlineMargin: 100 * time.Millisecond, PollRecords: 100,
	}, func(ctx context.Context, r lambdaconsumer.Record) error {
		mu.Lock()
		firstSeen = append(firstSeen, r.Offset)
		mu.Unlock()
		if err := ctxtime.Sleep(ctx, 20*time.Millisecond); err != nil {
			return err // cut short: not applied, not completed
		}
		led.put(r.Offset)
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	res, err := h(ctx, ev)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if !res.StoppedAtDeadline || res.Handled == 0 || res.Handled >= 40 {
		t.Fatalf("first invocation %+v: want stopped at its deadline mid-batch", res)
	}
	prefix := n.committed(t)
	if prefix != res.Handled || res.Committed != prefix {
		t.Errorf("committed %d, result %+v: the contiguous prefix of %d handled records", prefix, res, res.Handled)
	}
	if owner := n.leaseOwner(t); owner != "" {
		t.Errorf("lease still held by %q after the deadline", owner)
	}
	mu.Lock()
	firstSeen = nil
	mu.Unlock()

	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res2, err := h(ctx, ev)
	if err != nil || res2.Committed != 40 || res2.StoppedAtDeadline {
		t.Fatalf("second invocation %+v, %v", res2, err)
	}
	mu.Lock()
	resumedAt := firstSeen[0]
	mu.Unlock()
	if resumedAt != prefix {
		t.Errorf("the next invocation started at %d, want exactly the committed %d", resumedAt, prefix)
	}
	led.check(t, 40)
}

// stuckCommits is a coordinator whose commits, once stuck, hang until their context
// ends: a store too slow to answer within the invocation's margin.
type stuckCommits struct {
	consumer.Coordinator
	stuck *atomic.Bool
}

func (s stuckCommits) Commit(ctx context.Context, grp, topic string, partition int32, member string, generation, next int64, completed ...store.OffsetRange) error {
	if s.stuck.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	return s.Coordinator.Commit(ctx, grp, topic, partition, member, generation, next, completed...)
}

// TestFinishEndsBeforeTheDeadline: when the last commit cannot be made in the margin,
// the invocation gives it up before its deadline and answers with the error, rather
// than being killed by Lambda mid-request with no answer and no metrics.
func TestFinishEndsBeforeTheDeadline(t *testing.T) {
	n := newNode(t, 1, time.Hour, 40)
	var stuck atomic.Bool
	h := lambdaconsumer.Handler(lambdaconsumer.Config{
		Open: func(context.Context) (lambdaconsumer.Backend, error) {
			return lambdaconsumer.Backend{Log: n.log, Groups: stuckCommits{n.coord, &stuck}}, nil
		},
		Metrics: nopMetrics{}, IdleWait: time.Second, DeadlineMargin: 300 * time.Millisecond, PollRecords: 10,
	}, func(ctx context.Context, r lambdaconsumer.Record) error {
		stuck.Store(true) // the group's start is recorded; every later commit hangs
		return ctxtime.Sleep(ctx, 20*time.Millisecond)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	deadline, _ := ctx.Deadline()
	_, err := h(ctx, ev)
	if ended := time.Now(); !ended.Before(deadline) {
		t.Errorf("the invocation answered %s after its deadline", ended.Sub(deadline))
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("invocation error %v, want the last commit's deadline", err)
	}
}

// TestRetentionResetCountsLoss: after retention removed records a group had not read,
// the next invocation applies the reset policy (earliest) and counts the loss.
func TestRetentionResetCountsLoss(t *testing.T) {
	n := newNode(t, 1, time.Second, 10)
	led := newLedger()
	h := lambdaconsumer.Handler(lambdaconsumer.Config{Open: n.backend, Metrics: nopMetrics{}, IdleWait: 20 * time.Millisecond},
		func(_ context.Context, r lambdaconsumer.Record) error { led.put(r.Offset); return nil })
	ctx := context.Background()
	// The group reads the first 3 records, then stops (its commit stays at 3).
	l, err := n.coord.Acquire(ctx, "billing", "orders", 0, "old", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.coord.Commit(ctx, "billing", "orders", 0, "old", l.Generation, 3); err != nil {
		t.Fatal(err)
	}
	if err := n.coord.Release(ctx, "billing", "orders", 0, "old", l.Generation); err != nil {
		t.Fatal(err)
	}
	n.append(t, 2) // offsets 10, 11 stay: only the older entries expire below
	job := retention.Job{Meta: n.stores.Meta, Objects: n.stores.Objects, Clock: func() time.Time { return time.Now().Add(time.Hour) }}
	st, err := job.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	start, hw, err := n.log.Bounds(ctx, "orders", 0)
	if err != nil || start <= 3 {
		t.Fatalf("retention moved the log start to %d (stats %+v, err %v); the test needs it past 3", start, st, err)
	}
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := h(tctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	if res.Lost != start-3 || res.Committed != hw || res.Handled != hw-start {
		t.Errorf("result %+v; want %d lost, %d handled, committed %d", res, start-3, hw-start, hw)
	}
}

func TestBadEvents(t *testing.T) {
	n := newNode(t, 2, time.Hour, 0)
	h := lambdaconsumer.Handler(lambdaconsumer.Config{Open: n.backend, Metrics: nopMetrics{}, Topic: "orders", Group: "billing"},
		func(context.Context, lambdaconsumer.Record) error { return nil })
	for _, tc := range []struct {
		name string
		ev   lambdaconsumer.Event
	}{
		{"empty", lambdaconsumer.Event{}},
		{"bad topic name", lambdaconsumer.Event{Topic: "../etc", Group: "billing"}},
		{"negative partition", lambdaconsumer.Event{Topic: "orders", Group: "billing", Partition: -1}},
		{"another topic", lambdaconsumer.Event{Topic: "payments", Group: "billing"}},
		{"another group", lambdaconsumer.Event{Topic: "orders", Group: "audit"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h(context.Background(), tc.ev)
			if !errors.Is(err, lambdaconsumer.ErrBadEvent) {
				t.Errorf("err %v, want ErrBadEvent", err)
			}
		})
	}
	// Nothing was touched: the group does not exist.
	if _, err := n.coord.Describe(context.Background(), "billing"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("describe after bad events: %v, want not found", err)
	}
	t.Run("a partition beyond the topic is an error, not a panic", func(t *testing.T) {
		if _, err := h(context.Background(), lambdaconsumer.Event{Topic: "orders", Group: "billing", Partition: 7}); err == nil {
			t.Error("accepted")
		}
	})
}
