package compact_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/internal/clocktest"
	"github.com/stratalog/strata/pkg/awscount"
	"github.com/stratalog/strata/pkg/compact"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
)

// TestTriggerPolicy: the estimate is overwrites less removed over every offset less
// removed; a partition is due at the ratio, with at least MinDirty superseded, once the
// last request is Cooldown old.
func TestTriggerPolicy(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := compact.TriggerPolicy{MinDirtyRatio: 0.5, Cooldown: time.Minute, MinDirty: 2}
	for _, c := range []struct {
		c    store.DirtyCounter
		next int64
		now  time.Time
		want bool
	}{
		{store.DirtyCounter{Overwrites: 4}, 10, t0, false},                                        // 0.4
		{store.DirtyCounter{Overwrites: 5}, 10, t0, true},                                         // 0.5
		{store.DirtyCounter{Overwrites: 1}, 2, t0, false},                                         // under MinDirty
		{store.DirtyCounter{Overwrites: 9, Removed: 5}, 10, t0, true},                             // after a pass removed 5: 4 of 5
		{store.DirtyCounter{Overwrites: 6, Removed: 5}, 10, t0, false},                            // 1 superseded left
		{store.DirtyCounter{Overwrites: 5, Removed: 9}, 10, t0, false},                            // more removed than overwritten: 0
		{store.DirtyCounter{Overwrites: 5, RequestedAt: t0}, 10, t0.Add(59 * time.Second), false}, // cooling down
		{store.DirtyCounter{Overwrites: 5, RequestedAt: t0}, 10, t0.Add(time.Minute), true},
		{store.DirtyCounter{Overwrites: 5}, 0, t0, false}, // no offsets: nothing to estimate
	} {
		if got := p.Due(c.c, c.next, c.now); got != c.want {
			t.Errorf("Due(%+v, next %d, %v) = %v, want %v", c.c, c.next, c.now.Sub(t0), got, c.want)
		}
	}
	if (compact.TriggerPolicy{}).Due(store.DirtyCounter{Overwrites: 1, RequestedAt: t0}, 2, t0.Add(compact.HeadGuard-time.Second)) {
		t.Error("the default cooldown is the head guard: due before it")
	}
}

// TestTriggerAcrossAppenders: N appenders (each its own Log, as each Lambda request is
// its own host) sharing the stores write overwrites of a compacted partition through
// the key index; below the dirty ratio no pass is asked for, past it exactly one
// (whichever appenders find it due at once), another only after the cooldown, and none
// once a pass's removed records brought the estimate back down. A request without
// overwrites writes no counter.
func TestTriggerAcrossAppenders(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		clock := clocktest.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		counters := s.Meta.(store.DirtyCounterStore)
		var asked atomic.Int64
		var askedFor sync.Map
		race := &racing{DirtyCounterStore: counters}
		trigger := &compact.Trigger{Store: race, Clock: clock.Now, Policy: compact.TriggerPolicy{MinDirtyRatio: 0.5, Cooldown: time.Minute},
			Start: func(_ context.Context, topic string, p int32) error {
				asked.Add(1)
				askedFor.Store(fmt.Sprintf("%s/%d", topic, p), true)
				return nil
			}}
		const hosts = 4
		var logs [hosts]*log.Log
		for i := range logs {
			l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta.(log.Meta), Clock: clock.Now,
				KeyOverwrites: func(ctx context.Context, tp store.Topic, p int32, n, next int64) {
					if _, err := trigger.Overwrote(ctx, tp, p, n, next); err != nil {
						t.Errorf("trigger: %v", err)
					}
				}})
			if err != nil {
				t.Fatal(err)
			}
			logs[i] = l
		}
		tp, err := logs[0].CreateTopicWith(ctx, "state", log.TopicSpec{Partitions: 1, Cleanup: store.TopicCleanup{Cleanup: store.CleanupCompact}})
		if err != nil {
			t.Fatal(err)
		}
		zero := int32(0)
		put := func(host int, key string) {
			t.Helper()
			if _, err := logs[host%hosts].Append(ctx, "state", []log.Record{{Key: []byte(key), Value: []byte("v"), Partition: &zero}}, log.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		counter := func() store.DirtyCounter {
			t.Helper()
			c, err := counters.AddOverwrites(ctx, tp.ID(), 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		for i := range 40 { // new keys: no overwrite, no counter write
			put(i, fmt.Sprintf("k%d", i))
		}
		if c := counter(); c.Overwrites != 0 {
			t.Fatalf("after 40 new keys the counter is %+v, want no overwrites", c)
		}
		for i := range 10 { // 10 superseded of 50: 0.2
			put(i, fmt.Sprintf("k%d", i))
		}
		if n := asked.Load(); n != 0 {
			t.Fatalf("%d passes asked for at a dirty ratio of 0.2, want none", n)
		}
		// The appenders at once overwrite 60 more: 70 superseded of 110, past 0.5 from
		// the 30th on, found due by many requests on every host.
		var wg sync.WaitGroup
		for h := range hosts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 15 {
					put(h, fmt.Sprintf("k%d", 10+(h*15+i)%30))
				}
			}()
		}
		wg.Wait()
		if c := counter(); c.Overwrites != 70 {
			t.Errorf("counter %+v, want 70 overwrites", c)
		}
		if n := asked.Load(); n != 1 {
			t.Fatalf("%d passes asked for past the ratio by %d appenders, want exactly 1", n, hosts)
		}
		if _, ok := askedFor.Load("state/0"); !ok {
			t.Error("the pass asked for is not state/0's")
		}
		put(1, "k0")
		if n := asked.Load(); n != 1 {
			t.Fatalf("%d passes asked for within the cooldown, want still 1", n)
		}
		// After the cooldown every appender finds the partition due at once (each
		// one's counter read lands before any claim): one claim wins, one pass is asked.
		clock.Advance(time.Minute)
		race.arm(hosts)
		for h := range hosts {
			wg.Add(1)
			go func() { defer wg.Done(); put(h, fmt.Sprintf("k%d", h)) }()
		}
		wg.Wait()
		if n := asked.Load(); n != 2 {
			t.Fatalf("%d passes asked for after the cooldown by %d appenders finding it due at once, want 2", n, hosts)
		}
		// A pass removed the 72 superseded records: the estimate is back to 1 of 41.
		if err := counters.AddRemoved(ctx, tp.ID(), 0, 72); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Minute)
		put(3, "k2")
		if n := asked.Load(); n != 2 {
			t.Fatalf("%d passes asked for after a pass removed what was superseded, want still 2", n)
		}
	})
}

// TestTriggerCooldownAtLeastMinLag: a topic whose min.compaction.lag is longer than the
// cooldown is asked for again only once that lag has passed (a pass sooner finds the
// superseded records still inside it).
func TestTriggerCooldownAtLeastMinLag(t *testing.T) {
	ctx := context.Background()
	clock := clocktest.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := backendtest.Local(ctx, t)
	asked := 0
	tr := &compact.Trigger{Store: s.Meta.(store.DirtyCounterStore), Clock: clock.Now,
		Start: func(context.Context, string, int32) error { asked++; return nil }}
	tp := store.Topic{Name: "state", Incarnation: "i1", Partitions: 1, Cleanup: store.CleanupCompact, MinCompactionLag: time.Hour}
	for _, step := range []struct {
		advance time.Duration
		want    int
	}{{0, 1}, {compact.HeadGuard, 1}, {time.Hour - compact.HeadGuard, 2}} {
		clock.Advance(step.advance)
		if _, err := tr.Overwrote(ctx, tp, 0, 10, 12); err != nil {
			t.Fatal(err)
		}
		if asked != step.want {
			t.Fatalf("after %v more: asked %d times, want %d", step.advance, asked, step.want)
		}
	}
}

// racing is a DirtyCounterStore whose claims, once armed with n, wait until n counter
// additions have answered: the appenders that found a partition due all read the
// counter before any of them claims.
type racing struct {
	store.DirtyCounterStore
	mu      sync.Mutex
	pending int
	ready   chan struct{}
}

func (r *racing) arm(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending, r.ready = n, make(chan struct{})
}

func (r *racing) AddOverwrites(ctx context.Context, topic string, partition int32, n int64) (store.DirtyCounter, error) {
	c, err := r.DirtyCounterStore.AddOverwrites(ctx, topic, partition, n)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ready != nil && r.pending > 0 {
		if r.pending--; r.pending == 0 {
			close(r.ready)
		}
	}
	return c, err
}

func (r *racing) ClaimCompaction(ctx context.Context, topic string, partition int32, seen, at time.Time) (bool, error) {
	r.mu.Lock()
	ready := r.ready
	r.mu.Unlock()
	if ready != nil {
		select {
		case <-ready:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	return r.DirtyCounterStore.ClaimCompaction(ctx, topic, partition, seen, at)
}

// TestStatsAdd: every field of Stats is summed (a field added to Stats and left out of
// Add fails here).
func TestStatsAdd(t *testing.T) {
	var one compact.Stats
	v := reflect.ValueOf(&one).Elem()
	for i := range v.NumField() {
		v.Field(i).SetInt(int64(i + 1))
	}
	sum := reflect.ValueOf(one.Add(one))
	for i := range sum.NumField() {
		if got := sum.Field(i).Int(); got != int64(2*(i+1)) {
			t.Errorf("%s: %d, want %d", sum.Type().Field(i).Name, got, 2*(i+1))
		}
	}
}

// TestTriggerRequestsPerAppend (DynamoDB, counted by an SDK middleware): the trigger's
// cost on the append path is no request for an append that superseded nothing, one
// UpdateItem (the counter) for one that superseded records in a partition below the
// ratio, and one more (the claim) when it asks for a pass; the key index puts are the
// same requests as without the trigger (superseded comes back with them).
func TestTriggerRequestsPerAppend(t *testing.T) {
	ctx := context.Background()
	counter := awscount.New()
	s := backendtest.AWSWith(ctx, t, func(c *aws.Config) { c.APIOptions = append(c.APIOptions, counter.Middleware) })
	if s.Meta == nil {
		return
	}
	clock := clocktest.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	asked := 0
	tr := &compact.Trigger{Store: s.Meta.(store.DirtyCounterStore), Clock: clock.Now, Policy: compact.TriggerPolicy{MinDirtyRatio: 0.6},
		Start: func(context.Context, string, int32) error { asked++; return nil }}
	l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta.(log.Meta), Clock: clock.Now,
		KeyOverwrites: func(ctx context.Context, tp store.Topic, p int32, n, next int64) {
			if _, err := tr.Overwrote(ctx, tp, p, n, next); err != nil {
				t.Errorf("trigger: %v", err)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.CreateTopicWith(ctx, "state", log.TopicSpec{Partitions: 1, Cleanup: store.TopicCleanup{Cleanup: store.CleanupCompact}}); err != nil {
		t.Fatal(err)
	}
	zero := int32(0)
	appendKeys := func(keys ...string) (updates, puts int64) {
		t.Helper()
		recs := make([]log.Record, len(keys))
		for i, k := range keys {
			recs[i] = log.Record{Key: []byte(k), Value: []byte("v"), Partition: &zero}
		}
		counter.Reset()
		if _, err := l.Append(ctx, "state", recs, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		return counter.Requests("DynamoDB.UpdateItem"), counter.Requests("DynamoDB.PutItem")
	}
	baseU, baseP := appendKeys("a", "b", "c", "d", "e") // new keys: the append's own requests
	if u, p := appendKeys("f", "g", "h", "i", "j"); u != baseU || p != baseP {
		t.Errorf("new keys again: %d UpdateItem, %d PutItem; want %d and %d", u, p, baseU, baseP)
	}
	if u, p := appendKeys("a", "b", "c", "d", "e"); u != baseU+1 || p != baseP || asked != 0 {
		t.Errorf("5 superseded of 15 (below 0.6): %d UpdateItem, %d PutItem, %d asked; want %d (the counter's one more), %d, 0", u, p, asked, baseU+1, baseP)
	}
	if u, p := appendKeys("a", "b", "c", "d", "e", "f", "g", "h", "i", "j"); u != baseU+2 || p != baseP+5 || asked != 1 {
		t.Errorf("15 superseded of 25 (0.6): %d UpdateItem, %d PutItem, %d asked; want %d (counter and claim), %d (5 more keys), 1", u, p, asked, baseU+2, baseP+5)
	}
	counts, ops := counter.Snapshot()
	for _, op := range ops {
		t.Logf("last append: %s %d", op, counts[op].Requests)
	}
}
