package storetest

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

// EffectMaker makes a fresh MetaStore and the EffectStore fenced by its assignments.
type EffectMaker func(ctx context.Context, t *testing.T) (store.MetaStore, store.EffectStore)

// RunEffectTests is the conformance suite of store.EffectStore: every implementation
// runs it from its own tests, as RunConformanceTests.
func RunEffectTests(t *testing.T, mk EffectMaker) {
	t.Helper()
	for _, tc := range []struct {
		name string
		run  func(ctx context.Context, t *testing.T, m store.MetaStore, e store.EffectStore)
	}{
		{"DuplicateDeliveryRefusedAsApplied", testEffectDuplicate},
		{"ZombieWriteRefusedAfterReassignment", testEffectZombie},
		{"WithoutLeaseFenced", testEffectNoLease},
		{"MarkerExpires", testEffectMarkerExpires},
		{"IncarnationsIsolated", testEffectIncarnationsIsolated},
	} {
		t.Run("EffectStore/"+tc.name, func(t *testing.T) {
			ctx := t.Context()
			m, e := mk(ctx, t)
			tc.run(ctx, t, m, e)
		})
	}
}

// never is a marker expiry of zero: the marker is kept for ever.
var never time.Time

// EffectSweeper is what the suite needs to see effect markers expire: DeleteExpired
// must delete what expired before now, as the embedded store's sweep does and as
// DynamoDB's TTL does (the emulator runs no TTL, so its harness deletes the items whose
// TTL attribute is past, which checks the attribute). The EffectStore an EffectMaker
// returns must implement it.
type EffectSweeper interface {
	DeleteExpired(ctx context.Context, now time.Time) (int, error)
}

func wantEffect(ctx context.Context, t *testing.T, e store.EffectStore, key string, want []byte) {
	t.Helper()
	got, err := e.GetEffect(ctx, key)
	switch {
	case want == nil && !errors.Is(err, store.ErrNotFound):
		t.Fatalf("GetEffect(%q) = %q, %v; want ErrNotFound", key, got, err)
	case want != nil && (err != nil || !bytes.Equal(got, want)):
		t.Fatalf("GetEffect(%q) = %q, %v; want %q", key, got, err, want)
	}
}

func fenceOf(k gtp, gen int64) store.Fence {
	return store.Fence{Group: k.group, Topic: k.topic, Partition: k.partition, Generation: gen}
}

// testEffectDuplicate: a record's effect lands once; a second delivery of the same
// (topic, partition, offset) is ErrApplied and changes nothing, whatever its key.
func testEffectDuplicate(ctx context.Context, t *testing.T, m store.MetaStore, e store.EffectStore) {
	k := newGTP(t)
	a := acquire(ctx, t, m, k, "m-1", 0, 30_000)
	key := UniqueName(t, "order")
	must(t, "ApplyEffect", e.ApplyEffect(ctx, fenceOf(k, a.Generation), 5, key, []byte("charged 10"), never))
	wantEffect(ctx, t, e, key, []byte("charged 10"))
	wantErrIs(t, "ApplyEffect of a duplicate delivery", e.ApplyEffect(ctx, fenceOf(k, a.Generation), 5, key, []byte("charged twice"), never), store.ErrApplied)
	other := UniqueName(t, "order")
	wantErrIs(t, "ApplyEffect of a duplicate delivery under another key", e.ApplyEffect(ctx, fenceOf(k, a.Generation), 5, other, []byte("x"), never), store.ErrApplied)
	wantEffect(ctx, t, e, key, []byte("charged 10"))
	wantEffect(ctx, t, e, other, nil)
	// The next offset, and the same offset of another partition, are other records.
	must(t, "ApplyEffect of the next offset", e.ApplyEffect(ctx, fenceOf(k, a.Generation), 6, key, []byte("charged 20"), never))
	wantEffect(ctx, t, e, key, []byte("charged 20"))
	k1 := gtp{k.group, k.topic, 1}
	a1 := acquire(ctx, t, m, k1, "m-1", 0, 30_000)
	must(t, "ApplyEffect of offset 5 of partition 1", e.ApplyEffect(ctx, fenceOf(k1, a1.Generation), 5, other, []byte("y"), never))
	wantEffect(ctx, t, e, other, []byte("y"))
}

// testEffectZombie: once the partition moved to a newer generation, the old owner's
// write is ErrFenced and writes nothing, even for a record nobody applied; the new
// owner's write of that record goes through.
func testEffectZombie(ctx context.Context, t *testing.T, m store.MetaStore, e store.EffectStore) {
	k := newGTP(t)
	old := acquire(ctx, t, m, k, "m-1", 0, 30_000)
	key := UniqueName(t, "order")
	must(t, "ApplyEffect", e.ApplyEffect(ctx, fenceOf(k, old.Generation), 1, key, []byte("v1"), never))
	fresh := acquire(ctx, t, m, k, "m-2", 30_000, 60_000) // m-1's lease lapsed: reassigned
	if fresh.Generation <= old.Generation {
		t.Fatalf("take-over at generation %d, not above %d", fresh.Generation, old.Generation)
	}
	wantErrIs(t, "zombie ApplyEffect after reassignment", e.ApplyEffect(ctx, fenceOf(k, old.Generation), 2, key, []byte("zombie"), never), store.ErrFenced)
	wantEffect(ctx, t, e, key, []byte("v1"))
	// Fenced and applied at once: fenced wins.
	wantErrIs(t, "zombie ApplyEffect of an applied record", e.ApplyEffect(ctx, fenceOf(k, old.Generation), 1, key, []byte("zombie"), never), store.ErrFenced)
	// The zombie wrote no marker: the new owner applies the record.
	must(t, "ApplyEffect by the new owner", e.ApplyEffect(ctx, fenceOf(k, fresh.Generation), 2, key, []byte("v2"), never))
	wantEffect(ctx, t, e, key, []byte("v2"))
	wantErrIs(t, "ApplyEffect at a future generation", e.ApplyEffect(ctx, fenceOf(k, fresh.Generation+1), 3, key, []byte("x"), never), store.ErrFenced)
}

// testEffectNoLease: a partition never leased fences every write.
func testEffectNoLease(ctx context.Context, t *testing.T, _ store.MetaStore, e store.EffectStore) {
	k := newGTP(t)
	key := UniqueName(t, "order")
	wantErrIs(t, "ApplyEffect without a lease", e.ApplyEffect(ctx, fenceOf(k, 1), 0, key, []byte("x"), never), store.ErrFenced)
	wantEffect(ctx, t, e, key, nil)
}

// testEffectMarkerExpires: a record's marker refuses its replay until the expiry it was
// written with, also across a sweep before it; swept after it, the record's effect may
// be applied again (and is then refused again). A marker without an expiry is kept.
func testEffectMarkerExpires(ctx context.Context, t *testing.T, m store.MetaStore, e store.EffectStore) {
	sw, ok := e.(EffectSweeper)
	if !ok {
		t.Fatalf("%T offers the suite no EffectSweeper", e)
	}
	k := newGTP(t)
	a := acquire(ctx, t, m, k, "m-1", 0, 30_000)
	key := UniqueName(t, "order")
	expires := time.Now().Add(time.Hour).Truncate(time.Second)
	must(t, "ApplyEffect", e.ApplyEffect(ctx, fenceOf(k, a.Generation), 7, key, []byte("v1"), expires))
	must(t, "ApplyEffect without expiry", e.ApplyEffect(ctx, fenceOf(k, a.Generation), 8, key, []byte("v2"), never))
	sweep := func(now time.Time) {
		t.Helper()
		if _, err := sw.DeleteExpired(ctx, now); err != nil {
			t.Fatalf("DeleteExpired(%s): %v", now, err)
		}
	}
	sweep(expires.Add(-2 * time.Second))
	wantErrIs(t, "replay before the marker's expiry", e.ApplyEffect(ctx, fenceOf(k, a.Generation), 7, key, []byte("replay"), expires), store.ErrApplied)
	wantEffect(ctx, t, e, key, []byte("v2"))
	sweep(expires.Add(2 * time.Second))
	must(t, "replay past the marker's expiry", e.ApplyEffect(ctx, fenceOf(k, a.Generation), 7, key, []byte("v3"), expires.Add(time.Hour)))
	wantEffect(ctx, t, e, key, []byte("v3"))
	wantErrIs(t, "second replay past the marker's expiry", e.ApplyEffect(ctx, fenceOf(k, a.Generation), 7, key, []byte("v4"), never), store.ErrApplied)
	sweep(expires.Add(24 * 365 * time.Hour))
	wantErrIs(t, "replay of a marker without expiry", e.ApplyEffect(ctx, fenceOf(k, a.Generation), 8, key, []byte("v5"), never), store.ErrApplied)
}

// testEffectIncarnationsIsolated: the fence and the markers of two incarnations of one
// topic name (two store.TopicIDs) are apart. The old incarnation's fence — the same
// group, partition and generation as the new one's first lease — writes nothing of the
// new incarnation's, and its marker of an offset never refuses the new incarnation's
// record at that offset.
func testEffectIncarnationsIsolated(ctx context.Context, t *testing.T, m store.MetaStore, e store.EffectStore) {
	name, g := UniqueName(t, "t"), UniqueName(t, "g")
	old := gtp{g, store.TopicID(name, "tcold"), 0}
	cur := gtp{g, store.TopicID(name, "tcnew"), 0}
	ao := acquire(ctx, t, m, old, "m-1", 0, 30_000)
	key := UniqueName(t, "order")
	must(t, "ApplyEffect of the old incarnation's offset 0", e.ApplyEffect(ctx, fenceOf(old, ao.Generation), 0, key, []byte("old"), never))
	an := acquire(ctx, t, m, cur, "m-1", 0, 30_000)
	if an.Generation != ao.Generation {
		t.Fatalf("first leases at generations %d and %d, want the same", ao.Generation, an.Generation)
	}
	must(t, "ApplyEffect of the new incarnation's offset 0", e.ApplyEffect(ctx, fenceOf(cur, an.Generation), 0, key, []byte("new"), never))
	wantEffect(ctx, t, e, key, []byte("new"))
	wantErrIs(t, "ApplyEffect of the old incarnation's applied offset 0", e.ApplyEffect(ctx, fenceOf(old, ao.Generation), 0, key, []byte("again"), never), store.ErrApplied)
	wantEffect(ctx, t, e, key, []byte("new"))
}
