package httpconsumer_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/httpconsumer"
)

// TestNewGroupConsumerRefuses: a missing client or handler and a non-positive lease TTL
// are refused at construction, with an error naming what is wrong.
func TestNewGroupConsumerRefuses(t *testing.T) {
	n := newNode(t)
	c, err := client.New(n.url)
	if err != nil {
		t.Fatal(err)
	}
	ok := func(context.Context, httpconsumer.Record) error { return nil }
	for _, tc := range []struct {
		name   string
		c      *client.Client
		handle httpconsumer.Handler
		opts   []httpconsumer.GroupOption
	}{
		{"no client", nil, ok, nil},
		{"no handler", c, nil, nil},
		{"zero ttl", c, ok, []httpconsumer.GroupOption{httpconsumer.WithLeaseTTL(0)}},
		{"negative ttl", c, ok, []httpconsumer.GroupOption{httpconsumer.WithLeaseTTL(-time.Second)}},
		{"bad reset policy", c, ok, []httpconsumer.GroupOption{httpconsumer.WithResetPolicy("newest")}},
		{"poll wait above ttl/3", c, ok, []httpconsumer.GroupOption{httpconsumer.WithLeaseTTL(3 * time.Second),
			httpconsumer.WithConsumerConfig(func(cfg *consumer.Config) { cfg.PollWait = 2 * time.Second })}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := httpconsumer.NewGroupConsumer(tc.c, "g", "t", tc.handle, tc.opts...); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

// TestGroupConsumerDefaults: without options the member gets a unique name and the
// heartbeat runs at a third of the default lease TTL.
func TestGroupConsumerDefaults(t *testing.T) {
	c, err := client.New("http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	ok := func(context.Context, httpconsumer.Record) error { return nil }
	a, err := httpconsumer.NewGroupConsumer(c, "g", "t", ok)
	if err != nil {
		t.Fatal(err)
	}
	b, err := httpconsumer.NewGroupConsumer(c, "g", "t", ok)
	if err != nil {
		t.Fatal(err)
	}
	if a.Member() == "" || a.Member() == b.Member() {
		t.Fatalf("members %q and %q: want distinct non-empty names", a.Member(), b.Member())
	}
	if got := a.HeartbeatInterval(); got != 10*time.Second {
		t.Fatalf("heartbeat %s, want 10s (30s TTL / 3)", got)
	}
	d, err := httpconsumer.NewGroupConsumer(c, "g", "t", ok, httpconsumer.WithLeaseTTL(900*time.Millisecond), httpconsumer.WithMember("m1"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Member() != "m1" || d.HeartbeatInterval() != 300*time.Millisecond {
		t.Fatalf("member %q heartbeat %s", d.Member(), d.HeartbeatInterval())
	}
}

// recorder collects one member's rebalance callbacks.
type recorder struct {
	mu                sync.Mutex
	assigned, revoked []int32
	held              []int32
}

func (r *recorder) opts() []httpconsumer.GroupOption {
	return []httpconsumer.GroupOption{
		httpconsumer.WithOnAssigned(func(_ context.Context, ps []int32) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.assigned = append(r.assigned, ps...)
		}),
		httpconsumer.WithOnRevoked(func(_ context.Context, ps []int32) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.revoked = append(r.revoked, ps...)
		}),
		httpconsumer.WithOnRebalance(func(_ context.Context, rb httpconsumer.Rebalance) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.held = rb.Held
		}),
	}
}

func (r *recorder) snapshot() (assigned, revoked, held []int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.assigned), slices.Clone(r.revoked), slices.Clone(r.held)
}

// eventually polls cond until it holds or a generous deadline passes (no timing
// assumption beyond "within a minute").
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestGroupConsumerRebalance: two members share four partitions. The first takes all of
// them, hands two back when the second joins (revoked), takes them again when the second
// leaves; every record is handled and committed, and Stats count them.
func TestGroupConsumerRebalance(t *testing.T) {
	n := newNode(t)
	ctx := context.Background()
	if _, err := n.log.CreateTopic(ctx, "orders", 4, 0); err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 4; p++ {
		appendN(t, n.log, "orders", p, 5)
	}
	c, err := client.New(n.url)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	handle := func(_ context.Context, r httpconsumer.Record) error {
		mu.Lock()
		defer mu.Unlock()
		seen[fmt.Sprintf("%d/%d", r.Partition, r.Offset)] = true
		return nil
	}
	const ttl = 1500 * time.Millisecond
	var ra, rb recorder
	a, err := httpconsumer.NewGroupConsumer(c, "billing", "orders", handle,
		append(ra.opts(), httpconsumer.WithMember("a"), httpconsumer.WithLeaseTTL(ttl), httpconsumer.WithWorkers(2))...)
	if err != nil {
		t.Fatal(err)
	}
	b, err := httpconsumer.NewGroupConsumer(c, "billing", "orders", handle,
		append(rb.opts(), httpconsumer.WithMember("b"), httpconsumer.WithLeaseTTL(ttl))...)
	if err != nil {
		t.Fatal(err)
	}
	actx, stopA := context.WithCancel(ctx)
	aDone := make(chan error, 1)
	go func() { aDone <- a.Run(actx) }()
	eventually(t, "a holds all four", func() bool { _, _, h := ra.snapshot(); return len(h) == 4 })
	if err := a.Run(actx); err != httpconsumer.ErrRunning {
		t.Fatalf("second Run: %v, want ErrRunning", err)
	}

	bctx, stopB := context.WithCancel(ctx)
	bDone := make(chan error, 1)
	go func() { bDone <- b.Run(bctx) }()
	eventually(t, "b holds two", func() bool { _, _, h := rb.snapshot(); return len(h) == 2 })
	eventually(t, "a holds two", func() bool { _, _, h := ra.snapshot(); return len(h) == 2 })
	_, revokedA, heldA := ra.snapshot()
	_, _, heldB := rb.snapshot()
	if len(revokedA) != 2 || slices.ContainsFunc(revokedA, func(p int32) bool { return slices.Contains(heldA, p) }) {
		t.Fatalf("a revoked %v, holds %v", revokedA, heldA)
	}
	if s := b.Stats(); !slices.Equal(s.Held, heldB) || s.LiveMembers != 2 || s.Member != "b" {
		t.Fatalf("b stats %+v, held %v", s, heldB)
	}

	stopB()
	if err := <-bDone; err != nil {
		t.Fatalf("b: %v", err)
	}
	_, revokedB, _ := rb.snapshot()
	slices.Sort(revokedB)
	if !slices.Equal(revokedB, heldB) {
		t.Fatalf("b revoked %v on leaving, held %v", revokedB, heldB)
	}
	eventually(t, "a holds all four again", func() bool { _, _, h := ra.snapshot(); return len(h) == 4 })
	eventually(t, "all records committed", func() bool {
		g, err := c.DescribeGroup(ctx, "billing")
		if err != nil || len(g.Partitions) != 4 {
			return false
		}
		for _, p := range g.Partitions {
			if p.CommittedOffset == nil || *p.CommittedOffset != 5 {
				return false
			}
		}
		return true
	})
	stopA()
	if err := <-aDone; err != nil {
		t.Fatalf("a: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 20 {
		t.Fatalf("handled %d distinct records, want 20", len(seen))
	}
	if got := a.Stats().Handled + b.Stats().Handled; got < 20 {
		t.Fatalf("stats handled %d, want ≥ 20", got)
	}
	if s := a.Stats(); len(s.Held) != 0 || s.Runs == 0 {
		t.Fatalf("a after Run: %+v", s)
	}
}

// TestGroupConsumerStatsCountFailures: a handler that fails a record counts it in
// Failures each attempt, and the record dropped after its last attempt (no dead-letter
// topic) in Dropped once its run ended.
func TestGroupConsumerStatsCountFailures(t *testing.T) {
	n := newNode(t)
	ctx := context.Background()
	if _, err := n.log.CreateTopic(ctx, "orders", 1, 0); err != nil {
		t.Fatal(err)
	}
	appendN(t, n.log, "orders", 0, 3)
	c, err := client.New(n.url)
	if err != nil {
		t.Fatal(err)
	}
	gc, err := httpconsumer.NewGroupConsumer(c, "billing", "orders",
		func(_ context.Context, r httpconsumer.Record) error {
			if r.Offset == 1 {
				return fmt.Errorf("poison")
			}
			return nil
		},
		httpconsumer.WithLeaseTTL(3*time.Second),
		httpconsumer.WithConsumerConfig(func(cfg *consumer.Config) {
			cfg.MaxAttempts = 2
			cfg.Backoff = func(int) time.Duration { return time.Millisecond }
		}))
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- gc.Run(rctx) }()
	eventually(t, "two handled, two failures", func() bool { s := gc.Stats(); return s.Handled == 2 && s.Failures == 2 })
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s := gc.Stats(); s.Dropped != 1 || s.Runs != 1 {
		t.Fatalf("stats %+v: want 1 dropped over 1 run", s)
	}
}
