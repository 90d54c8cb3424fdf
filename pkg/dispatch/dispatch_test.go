package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/dispatch"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
)

// node is an in-process log and coordinator on the embedded backend.
type node struct {
	meta  store.MetaStore
	log   *log.Log
	coord *group.Coordinator
}

func newNode(t testing.TB) *node {
	t.Helper()
	s := backendtest.Local(context.Background(), t)
	l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta})
	if err != nil {
		t.Fatal(err)
	}
	return &node{meta: s.Meta, log: l, coord: group.New(s.Meta, l, nil)}
}

func (n *node) topic(t testing.TB, name string, partitions int32) {
	t.Helper()
	if _, err := n.log.CreateTopic(context.Background(), name, partitions, time.Hour); err != nil {
		t.Fatal(err)
	}
}

// appendN appends n records to one partition and returns the commits the sequencer's
// stream would carry, one per append.
func (n *node) appendN(t testing.TB, topic string, p int32, count int) []dispatch.Commit {
	t.Helper()
	var out []dispatch.Commit
	for i := range count {
		res, err := n.log.Append(context.Background(), topic, []log.Record{{Value: fmt.Appendf(nil, "v%d", i), Partition: &p}}, log.AppendOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, dispatch.Commit{Topic: topic, Partition: p, HighWatermark: res[0].Offset + 1})
	}
	return out
}

// recorder is an Invoker that records the events; failFor makes one function fail.
type recorder struct {
	mu      sync.Mutex
	calls   []string
	failFor string
}

func (r *recorder) Invoke(_ context.Context, fn string, ev deploy.ConsumerEvent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if fn == r.failFor {
		return errors.New("throttled")
	}
	r.calls = append(r.calls, fmt.Sprintf("%s:%s/%s/%d", fn, ev.Group, ev.Topic, ev.Partition))
	return nil
}

func (r *recorder) sorted() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]string(nil), r.calls...)
	sort.Strings(out)
	return out
}

type failingMaterializer struct{ calls int }

func (f *failingMaterializer) Materialize(context.Context, []dispatch.Commit) error {
	f.calls++
	return errors.New("index write failed")
}

type countingMaterializer struct {
	mu  sync.Mutex
	hws []int64
}

func (c *countingMaterializer) Materialize(_ context.Context, cs []dispatch.Commit) error {
	c.mu.Lock()
	for _, cm := range cs {
		c.hws = append(c.hws, cm.HighWatermark)
	}
	c.mu.Unlock()
	return nil
}

func subs(pairs ...string) []deploy.Subscription {
	var out []deploy.Subscription
	for i := 0; i+2 < len(pairs)+1; i += 3 {
		out = append(out, deploy.Subscription{Topic: pairs[i], Group: pairs[i+1], Function: pairs[i+2]})
	}
	return out
}

func equal(a, b []string) bool {
	return fmt.Sprint(a) == fmt.Sprint(b)
}

// TestHandleCommits drives the stream path's decisions from real lease and commit rows.
func TestHandleCommits(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		subs  []deploy.Subscription
		setup func(t *testing.T, n *node) []dispatch.Commit
		// clockAhead moves dispatch's clock forward (leases expire).
		clockAhead time.Duration
		want       []string
		wantStats  dispatch.Stats
	}{
		{
			name: "a new group with records is invoked once for many commits",
			subs: subs("orders", "billing", "fn-billing"),
			setup: func(t *testing.T, n *node) []dispatch.Commit {
				return n.appendN(t, "orders", 1, 30)
			},
			want:      []string{"fn-billing:billing/orders/1"},
			wantStats: dispatch.Stats{Commits: 30, Candidates: 1, LeaseChecks: 1, CommitReads: 1, Invocations: 1},
		},
		{
			name: "every subscribed group of the topic, each partition once",
			subs: subs("orders", "billing", "fn-billing", "orders", "audit", "fn-audit", "payments", "billing", "fn-pay"),
			setup: func(t *testing.T, n *node) []dispatch.Commit {
				return append(n.appendN(t, "orders", 0, 3), n.appendN(t, "orders", 1, 2)...)
			},
			want:      []string{"fn-audit:audit/orders/0", "fn-audit:audit/orders/1", "fn-billing:billing/orders/0", "fn-billing:billing/orders/1"},
			wantStats: dispatch.Stats{Commits: 5, Candidates: 4, LeaseChecks: 4, CommitReads: 4, Invocations: 4},
		},
		{
			name: "commits of a topic nobody subscribes to invoke nothing",
			subs: subs("payments", "billing", "fn-pay"),
			setup: func(t *testing.T, n *node) []dispatch.Commit {
				return n.appendN(t, "orders", 0, 2)
			},
			wantStats: dispatch.Stats{Commits: 2},
		},
		{
			name: "a live lease means a consumer is working: no invocation",
			subs: subs("orders", "billing", "fn-billing"),
			setup: func(t *testing.T, n *node) []dispatch.Commit {
				cs := n.appendN(t, "orders", 0, 3)
				if _, err := n.coord.Acquire(ctx, "billing", "orders", 0, "m-1", time.Minute); err != nil {
					t.Fatal(err)
				}
				return cs
			},
			wantStats: dispatch.Stats{Commits: 3, Candidates: 1, LeaseChecks: 1, SkippedLive: 1},
		},
		{
			name: "an expired lease with lag is invoked",
			subs: subs("orders", "billing", "fn-billing"),
			setup: func(t *testing.T, n *node) []dispatch.Commit {
				cs := n.appendN(t, "orders", 0, 3)
				l, err := n.coord.Acquire(ctx, "billing", "orders", 0, "m-1", time.Second)
				if err != nil {
					t.Fatal(err)
				}
				if err := n.coord.Commit(ctx, "billing", "orders", 0, "m-1", l.Generation, 1); err != nil {
					t.Fatal(err)
				}
				return cs
			},
			clockAhead: time.Hour,
			want:       []string{"fn-billing:billing/orders/0"},
			wantStats:  dispatch.Stats{Commits: 3, Candidates: 1, LeaseChecks: 1, CommitReads: 1, Invocations: 1},
		},
		{
			name: "a released lease whose commit reached the high watermark has no lag",
			subs: subs("orders", "billing", "fn-billing"),
			setup: func(t *testing.T, n *node) []dispatch.Commit {
				cs := n.appendN(t, "orders", 0, 3)
				l, err := n.coord.Acquire(ctx, "billing", "orders", 0, "m-1", time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				if err := n.coord.Commit(ctx, "billing", "orders", 0, "m-1", l.Generation, 3); err != nil {
					t.Fatal(err)
				}
				if err := n.coord.Release(ctx, "billing", "orders", 0, "m-1", l.Generation); err != nil {
					t.Fatal(err)
				}
				return cs
			},
			wantStats: dispatch.Stats{Commits: 3, Candidates: 1, LeaseChecks: 1, CommitReads: 1, SkippedNoLag: 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(t)
			n.topic(t, "orders", 2)
			n.topic(t, "payments", 1)
			commits := tc.setup(t, n)
			inv := &recorder{}
			d, err := dispatch.New(dispatch.Config{
				Subscriptions: tc.subs, Leases: n.meta, Offsets: n.log, Invoker: inv,
				Clock: func() time.Time { return time.Now().Add(tc.clockAhead) },
			})
			if err != nil {
				t.Fatal(err)
			}
			st, err := d.HandleCommits(ctx, commits)
			if err != nil {
				t.Fatal(err)
			}
			if got := inv.sorted(); !equal(got, tc.want) {
				t.Errorf("invocations %v, want %v", got, tc.want)
			}
			if st != tc.wantStats {
				t.Errorf("stats %+v, want %+v", st, tc.wantStats)
			}
		})
	}
}

func TestMaterializeFirst(t *testing.T) {
	ctx := context.Background()
	n := newNode(t)
	n.topic(t, "orders", 1)
	commits := n.appendN(t, "orders", 0, 4)

	t.Run("the batch is materialised, in order, before dispatch", func(t *testing.T) {
		m := &countingMaterializer{}
		inv := &recorder{}
		d, err := dispatch.New(dispatch.Config{Subscriptions: subs("orders", "g", "fn"), Leases: n.meta, Invoker: inv, Materializer: m})
		if err != nil {
			t.Fatal(err)
		}
		st, err := d.HandleCommits(ctx, commits)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(m.hws) != "[1 2 3 4]" || st.Materialized != 4 || st.Invocations != 1 {
			t.Errorf("materialised %v, stats %+v", m.hws, st)
		}
	})
	t.Run("a failed materialisation stops the batch before any invocation", func(t *testing.T) {
		m := &failingMaterializer{}
		inv := &recorder{}
		d, err := dispatch.New(dispatch.Config{Subscriptions: subs("orders", "g", "fn"), Leases: n.meta, Invoker: inv, Materializer: m})
		if err != nil {
			t.Fatal(err)
		}
		st, err := d.HandleCommits(ctx, commits)
		if err == nil || m.calls != 1 || len(inv.sorted()) != 0 || st.LeaseChecks != 0 {
			t.Errorf("err %v, materialise calls %d, invocations %v, stats %+v", err, m.calls, inv.sorted(), st)
		}
	})
}

func TestInvokeErrorsDoNotStopOthers(t *testing.T) {
	n := newNode(t)
	n.topic(t, "orders", 1)
	commits := n.appendN(t, "orders", 0, 2)
	inv := &recorder{failFor: "fn-a"}
	d, err := dispatch.New(dispatch.Config{Subscriptions: subs("orders", "a", "fn-a", "orders", "b", "fn-b"), Leases: n.meta, Invoker: inv})
	if err != nil {
		t.Fatal(err)
	}
	st, err := d.HandleCommits(context.Background(), commits)
	if err != nil {
		t.Fatalf("a failed invocation failed the batch: %v (it is counted; the sweep retries it)", err)
	}
	if got := inv.sorted(); !equal(got, []string{"fn-b:b/orders/0"}) || st.InvokeErrors != 1 || st.Invocations != 1 {
		t.Errorf("invocations %v, stats %+v", got, st)
	}
}

func TestSweep(t *testing.T) {
	ctx := context.Background()
	n := newNode(t)
	n.topic(t, "orders", 3)
	n.appendN(t, "orders", 0, 2) // lag, never consumed
	n.appendN(t, "orders", 2, 1) // caught up below
	l, err := n.coord.Acquire(ctx, "billing", "orders", 2, "m", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.coord.Commit(ctx, "billing", "orders", 2, "m", l.Generation, 1); err != nil {
		t.Fatal(err)
	}
	if err := n.coord.Release(ctx, "billing", "orders", 2, "m", l.Generation); err != nil {
		t.Fatal(err)
	}
	inv := &recorder{}
	d, err := dispatch.New(dispatch.Config{Subscriptions: subs("orders", "billing", "fn"), Leases: n.meta, Offsets: n.log, Invoker: inv})
	if err != nil {
		t.Fatal(err)
	}
	st, err := d.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Partition 1 is empty (not even checked), 2 has no lag, 0 lags.
	if got := inv.sorted(); !equal(got, []string{"fn:billing/orders/0"}) || st.LeaseChecks != 2 || st.SkippedNoLag != 1 {
		t.Errorf("invocations %v, stats %+v", got, st)
	}
}

// TestSweepBeforeTheTopicExists: the stack subscribes its consumer to a topic nobody has
// created yet (right after cdk deploy); the sweep must not fail every minute until
// someone does (each failure is a function error, and the stack alarms on one): the
// missing topic is counted and skipped, the other subscriptions still swept. Found by
// running the synthesized stack (internal/stackrun).
func TestSweepBeforeTheTopicExists(t *testing.T) {
	ctx := context.Background()
	n := newNode(t)
	n.topic(t, "orders", 1)
	n.appendN(t, "orders", 0, 2)
	inv := &recorder{}
	d, err := dispatch.New(dispatch.Config{Subscriptions: subs("gone", "billing", "fn", "orders", "billing", "fn"), Leases: n.meta, Offsets: n.log, Invoker: inv})
	if err != nil {
		t.Fatal(err)
	}
	st, err := d.Sweep(ctx)
	if err != nil {
		t.Errorf("sweep with a subscribed topic not created yet: %v, want no error", err)
	}
	if st.MissingTopics != 1 {
		t.Errorf("stats %+v, want the missing topic counted", st)
	}
	if got := inv.sorted(); !equal(got, []string{"fn:billing/orders/0"}) {
		t.Errorf("invocations %v", got)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	n := newNode(t)
	for _, tc := range []struct {
		name string
		cfg  dispatch.Config
	}{
		{"no invoker", dispatch.Config{Leases: n.meta}},
		{"no leases", dispatch.Config{Invoker: &recorder{}}},
		{"bad topic", dispatch.Config{Leases: n.meta, Invoker: &recorder{}, Subscriptions: subs("../x", "g", "fn")}},
		{"twice", dispatch.Config{Leases: n.meta, Invoker: &recorder{}, Subscriptions: subs("t", "g", "fn", "t", "g", "fn2")}},
	} {
		if _, err := dispatch.New(tc.cfg); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}
