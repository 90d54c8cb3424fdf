package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

// makeDirty makes the harness's MetaStore and requires it to be a DirtyCounterStore:
// every backend implements it.
func makeDirty(h Harness, ctx context.Context) (store.DirtyCounterStore, error) {
	m, err := h.MakeMetaStore(ctx)
	if err != nil {
		return nil, err
	}
	d, ok := m.(store.DirtyCounterStore)
	if !ok {
		return nil, fmt.Errorf("%T does not implement store.DirtyCounterStore", m)
	}
	return d, nil
}

func dirtySections() []section[store.DirtyCounterStore] {
	return []section[store.DirtyCounterStore]{
		{"DirtyCounters", []testCase[store.DirtyCounterStore]{
			{"AddsApartPerPartition", testDirtyAdds},
			{"ClaimOnlyOnSeen", testDirtyClaim},
			{"ConcurrentAddsAndClaims", testDirtyConcurrent},
		}},
	}
}

// testDirtyAdds: a missing counter starts at zero; AddOverwrites answers the counter as
// its addition left it, removed records and the requested time included; partitions
// and topics count apart.
func testDirtyAdds(ctx context.Context, t *testing.T, d store.DirtyCounterStore) {
	topic := store.TopicID(UniqueName(t, "t"), "inc1")
	c, err := d.AddOverwrites(ctx, topic, 0, 3)
	must(t, "AddOverwrites", err)
	if c != (store.DirtyCounter{Overwrites: 3}) {
		t.Fatalf("first AddOverwrites = %+v, want 3 overwrites", c)
	}
	must(t, "AddRemoved", d.AddRemoved(ctx, topic, 0, 2))
	must(t, "AddRemoved of another partition", d.AddRemoved(ctx, topic, 1, 5))
	ok, err := d.ClaimCompaction(ctx, topic, 0, time.Time{}, at(7))
	must(t, "ClaimCompaction", err)
	if !ok {
		t.Fatal("the first claim of a counter never requested lost")
	}
	c, err = d.AddOverwrites(ctx, topic, 0, 4)
	must(t, "AddOverwrites", err)
	if c.Overwrites != 7 || c.Removed != 2 || !msTime(c.RequestedAt).Equal(msTime(at(7))) {
		t.Fatalf("AddOverwrites = %+v, want 7 overwrites, 2 removed, requested at %v", c, at(7))
	}
	c, err = d.AddOverwrites(ctx, topic, 1, 1)
	must(t, "AddOverwrites of another partition", err)
	if c != (store.DirtyCounter{Overwrites: 1, Removed: 5}) {
		t.Fatalf("partition 1 = %+v, want 1 overwrite, 5 removed, never requested", c)
	}
	c, err = d.AddOverwrites(ctx, store.TopicID(UniqueName(t, "u"), "inc1"), 0, 1)
	must(t, "AddOverwrites of another topic", err)
	if c != (store.DirtyCounter{Overwrites: 1}) {
		t.Fatalf("another topic = %+v, want its own counter", c)
	}
}

// testDirtyClaim: a claim wins only on the requested time the counter holds (zero for
// never); a stale one loses and changes nothing.
func testDirtyClaim(ctx context.Context, t *testing.T, d store.DirtyCounterStore) {
	topic := store.TopicID(UniqueName(t, "t"), "inc1")
	for i, step := range []struct {
		seen, at time.Time
		want     bool
	}{
		{time.Time{}, at(10), true},
		{time.Time{}, at(11), false}, // someone claimed since
		{at(9), at(12), false},       // stale
		{at(10), at(20), true},
		{at(10), at(21), false},
	} {
		ok, err := d.ClaimCompaction(ctx, topic, 2, step.seen, step.at)
		must(t, "ClaimCompaction", err)
		if ok != step.want {
			t.Fatalf("step %d: claim on %v = %v, want %v", i, step.seen, ok, step.want)
		}
	}
	c, err := d.AddOverwrites(ctx, topic, 2, 0)
	must(t, "AddOverwrites", err)
	if !msTime(c.RequestedAt).Equal(msTime(at(20))) {
		t.Fatalf("requested at %v, want %v (the last winning claim)", c.RequestedAt, at(20))
	}
}

// testDirtyConcurrent: concurrent additions all count, and of concurrent claims on one
// seen value exactly one wins.
func testDirtyConcurrent(ctx context.Context, t *testing.T, d store.DirtyCounterStore) {
	topic := store.TopicID(UniqueName(t, "t"), "inc1")
	const n = 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	errs := make(chan error, 2*n)
	for i := range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if _, err := d.AddOverwrites(ctx, topic, 0, 1); err != nil {
				errs <- err
			}
		}()
		go func() {
			defer wg.Done()
			ok, err := d.ClaimCompaction(ctx, topic, 0, time.Time{}, at(int64(100+i)))
			if err != nil {
				errs <- err
			}
			if ok {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, "concurrent call", err)
	}
	if wins != 1 {
		t.Fatalf("%d of %d concurrent claims on one seen value won, want exactly 1", wins, n)
	}
	c, err := d.AddOverwrites(ctx, topic, 0, 0)
	must(t, "AddOverwrites", err)
	if c.Overwrites != n {
		t.Fatalf("%d overwrites after %d concurrent additions of 1", c.Overwrites, n)
	}
}
