package storetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

// gtp names one lease and commit row.
type gtp struct {
	group, topic string
	partition    int32
}

func newGTP(t *testing.T) gtp { return gtp{UniqueName(t, "g"), UniqueName(t, "t"), 0} }

func acquire(ctx context.Context, t *testing.T, m store.MetaStore, k gtp, member string, now, expires int64) store.Assignment {
	t.Helper()
	a, err := m.AcquireLease(ctx, k.group, k.topic, k.partition, member, at(now), at(expires))
	must(t, fmt.Sprintf("AcquireLease(%s) at %d", member, now), err)
	return a
}

func wantAssignment(ctx context.Context, t *testing.T, m store.MetaStore, k gtp, want store.Assignment) {
	t.Helper()
	got, err := m.GetAssignment(ctx, k.group, k.topic, k.partition)
	must(t, "GetAssignment", err)
	if normAssignment(got) != normAssignment(want) {
		t.Fatalf("GetAssignment = %+v, want %+v", got, want)
	}
}

func wantNoAssignment(ctx context.Context, t *testing.T, m store.MetaStore, k gtp) {
	t.Helper()
	a, err := m.GetAssignment(ctx, k.group, k.topic, k.partition)
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetAssignment = %+v, %v; want ErrNotFound", a, err)
	}
}

// wantHeld fails t unless err is a *LeaseHeldError naming the live lease of a.
func wantHeld(t *testing.T, err error, a store.Assignment) {
	t.Helper()
	var lh *store.LeaseHeldError
	if !errors.As(err, &lh) {
		t.Fatalf("AcquireLease of a live lease: %v, want a *LeaseHeldError", err)
	}
	wantErrIs(t, "AcquireLease of a live lease", err, store.ErrLeaseHeld)
	if lh.Owner != a.Owner || !lh.ExpiresAt.Equal(a.ExpiresAt) {
		t.Fatalf("LeaseHeldError = %q until %v, want %q until %v", lh.Owner, lh.ExpiresAt, a.Owner, a.ExpiresAt)
	}
}

func lease(k gtp, owner string, gen, expires int64) store.Assignment {
	return store.Assignment{Group: k.group, Topic: k.topic, Partition: k.partition, Owner: owner, Generation: gen, ExpiresAt: at(expires)}
}

func testLeaseUnknown(ctx context.Context, t *testing.T, m store.MetaStore) {
	wantNoAssignment(ctx, t, m, newGTP(t))
}

func testLeaseAcquireNew(ctx context.Context, t *testing.T, m store.MetaStore) {
	k := newGTP(t)
	k.partition = 5
	a := acquire(ctx, t, m, k, "m-1", 0, 30_000)
	want := lease(k, "m-1", 1, 30_000)
	if normAssignment(a) != normAssignment(want) {
		t.Fatalf("AcquireLease = %+v, want %+v", a, want)
	}
	wantAssignment(ctx, t, m, k, want)
	if !a.Live(at(29_999)) || a.Live(at(30_000)) {
		t.Fatalf("Assignment.Live is wrong around the expiry of %+v", a)
	}
	// Other partitions, topics and groups are other leases.
	for _, other := range []gtp{{k.group, k.topic, 4}, {k.group, k.topic + "x", 5}, {k.group + "x", k.topic, 5}} {
		wantNoAssignment(ctx, t, m, other)
		if a := acquire(ctx, t, m, other, "m-2", 0, 30_000); a.Generation != 1 || a.Owner != "m-2" {
			t.Fatalf("AcquireLease of %+v = %+v, want m-2 at generation 1", other, a)
		}
	}
	wantAssignment(ctx, t, m, k, want)
}

func testLeaseHeld(ctx context.Context, t *testing.T, m store.MetaStore) {
	k := newGTP(t)
	held := acquire(ctx, t, m, k, "m-1", 0, 30_000)
	for _, now := range []int64{0, 10_000, 29_999} {
		_, err := m.AcquireLease(ctx, k.group, k.topic, k.partition, "m-2", at(now), at(now+30_000))
		wantHeld(t, err, held)
	}
	wantAssignment(ctx, t, m, k, held)
}

func testLeaseTakeOver(ctx context.Context, t *testing.T, m store.MetaStore) {
	k := newGTP(t)
	acquire(ctx, t, m, k, "m-1", 0, 30_000)
	// At exactly the expiry the lease is no longer live (Assignment.Live).
	a := acquire(ctx, t, m, k, "m-2", 30_000, 60_000)
	want := lease(k, "m-2", 2, 60_000)
	if normAssignment(a) != normAssignment(want) {
		t.Fatalf("take-over at the expiry = %+v, want %+v", a, want)
	}
	wantAssignment(ctx, t, m, k, want)
	a = acquire(ctx, t, m, k, "m-3", 500_000, 530_000)
	if a.Generation != 3 || a.Owner != "m-3" {
		t.Fatalf("take-over long after the expiry = %+v, want m-3 at generation 3", a)
	}
	// The member that lost the lease is fenced.
	_, err := m.RenewLease(ctx, k.group, k.topic, k.partition, "m-2", 2, at(600_000))
	wantErrIs(t, "RenewLease by a taken-over member", err, store.ErrFenced)
	wantAssignment(ctx, t, m, k, lease(k, "m-3", 3, 530_000))
}

func testLeaseReacquire(ctx context.Context, t *testing.T, m store.MetaStore) {
	k := newGTP(t)
	acquire(ctx, t, m, k, "m-1", 0, 30_000)
	a := acquire(ctx, t, m, k, "m-1", 1_000, 31_000)
	want := lease(k, "m-1", 2, 31_000)
	if normAssignment(a) != normAssignment(want) {
		t.Fatalf("re-acquire by the owner = %+v, want %+v", a, want)
	}
	// The earlier incarnation (generation 1) is fenced.
	_, err := m.RenewLease(ctx, k.group, k.topic, k.partition, "m-1", 1, at(90_000))
	wantErrIs(t, "RenewLease by the earlier incarnation", err, store.ErrFenced)
	wantErrIs(t, "ReleaseLease by the earlier incarnation", m.ReleaseLease(ctx, k.group, k.topic, k.partition, "m-1", 1), store.ErrFenced)
	wantAssignment(ctx, t, m, k, want)
}

func testLeaseRenew(ctx context.Context, t *testing.T, m store.MetaStore) {
	k := newGTP(t)
	acquire(ctx, t, m, k, "m-1", 0, 30_000)
	a, err := m.RenewLease(ctx, k.group, k.topic, k.partition, "m-1", 1, at(45_000))
	must(t, "RenewLease", err)
	want := lease(k, "m-1", 1, 45_000)
	if normAssignment(a) != normAssignment(want) {
		t.Fatalf("RenewLease = %+v, want %+v", a, want)
	}
	wantAssignment(ctx, t, m, k, want)

	for _, bad := range []struct {
		member string
		gen    int64
	}{{"m-1", 2}, {"m-1", 0}, {"m-2", 1}, {"", 1}} {
		_, err := m.RenewLease(ctx, k.group, k.topic, k.partition, bad.member, bad.gen, at(90_000))
		wantErrIs(t, fmt.Sprintf("RenewLease(%q, generation %d)", bad.member, bad.gen), err, store.ErrFenced)
	}
	wantAssignment(ctx, t, m, k, want)

	// An expired lease nobody took over can still be renewed by its owner.
	a, err = m.RenewLease(ctx, k.group, k.topic, k.partition, "m-1", 1, at(200_000))
	must(t, "RenewLease after the expiry", err)
	want.ExpiresAt = at(200_000)
	if normAssignment(a) != normAssignment(want) {
		t.Fatalf("RenewLease after the expiry = %+v, want %+v", a, want)
	}
	wantAssignment(ctx, t, m, k, want)

	// Renewing a lease that does not exist is fenced, and creates nothing.
	none := newGTP(t)
	_, err = m.RenewLease(ctx, none.group, none.topic, none.partition, "m-1", 1, at(30_000))
	wantErrIs(t, "RenewLease of a missing lease", err, store.ErrFenced)
	wantNoAssignment(ctx, t, m, none)
}

func testLeaseRelease(ctx context.Context, t *testing.T, m store.MetaStore) {
	k := newGTP(t)
	acquire(ctx, t, m, k, "m-1", 0, 30_000)
	for _, bad := range []struct {
		member string
		gen    int64
	}{{"m-2", 1}, {"m-1", 2}, {"m-1", 0}} {
		err := m.ReleaseLease(ctx, k.group, k.topic, k.partition, bad.member, bad.gen)
		wantErrIs(t, fmt.Sprintf("ReleaseLease(%q, generation %d)", bad.member, bad.gen), err, store.ErrFenced)
	}
	wantAssignment(ctx, t, m, k, lease(k, "m-1", 1, 30_000))

	must(t, "ReleaseLease", m.ReleaseLease(ctx, k.group, k.topic, k.partition, "m-1", 1))
	got, err := m.GetAssignment(ctx, k.group, k.topic, k.partition)
	must(t, "GetAssignment after release", err)
	if got.Owner != "" || got.Generation != 1 || got.Live(at(0)) {
		t.Fatalf("after release: %+v, want no owner and generation 1", got)
	}
	// Releasing again: the caller is no longer the owner.
	wantErrIs(t, "second ReleaseLease", m.ReleaseLease(ctx, k.group, k.topic, k.partition, "m-1", 1), store.ErrFenced)

	// A released lease is free before its old expiry.
	a := acquire(ctx, t, m, k, "m-2", 1_000, 31_000)
	if want := lease(k, "m-2", 2, 31_000); normAssignment(a) != normAssignment(want) {
		t.Fatalf("acquire after release = %+v, want %+v", a, want)
	}
	for _, bad := range []struct {
		member string
		gen    int64
	}{{"m-1", 1}, {"m-2", 1}, {"m-1", 2}} {
		err := m.ReleaseLease(ctx, k.group, k.topic, k.partition, bad.member, bad.gen)
		wantErrIs(t, fmt.Sprintf("ReleaseLease(%q, generation %d) after take-over", bad.member, bad.gen), err, store.ErrFenced)
	}
	wantAssignment(ctx, t, m, k, lease(k, "m-2", 2, 31_000))

	// The same member taking it again after its own release also moves the generation.
	must(t, "ReleaseLease", m.ReleaseLease(ctx, k.group, k.topic, k.partition, "m-2", 2))
	if a := acquire(ctx, t, m, k, "m-2", 2_000, 32_000); a.Generation != 3 {
		t.Fatalf("re-acquire after own release = %+v, want generation 3", a)
	}

	none := newGTP(t)
	wantErrIs(t, "ReleaseLease of a missing lease", m.ReleaseLease(ctx, none.group, none.topic, none.partition, "m-1", 1), store.ErrFenced)
	wantNoAssignment(ctx, t, m, none)
}

// --- commits ---

func commitRow(k gtp, next, gen int64, ms int64, meta string) store.CommitRow {
	return store.CommitRow{Group: k.group, Topic: k.topic, Partition: k.partition, NextOffset: next, Generation: gen, CommittedAt: at(ms), Metadata: meta}
}

func wantCommit(ctx context.Context, t *testing.T, m store.MetaStore, k gtp, want store.CommitRow) {
	t.Helper()
	got, err := m.GetCommit(ctx, k.group, k.topic, k.partition)
	must(t, "GetCommit", err)
	if !sameCommit(got, want) {
		t.Fatalf("GetCommit = %+v, want %+v", got, want)
	}
}

func wantCommitOffset(ctx context.Context, t *testing.T, m store.MetaStore, k gtp, want int64) {
	t.Helper()
	got, err := m.GetCommit(ctx, k.group, k.topic, k.partition)
	must(t, fmt.Sprintf("GetCommit(%s/%s/%d)", k.group, k.topic, k.partition), err)
	if got.NextOffset != want || got.Group != k.group || got.Topic != k.topic || got.Partition != k.partition {
		t.Fatalf("GetCommit = %+v, want next offset %d of %+v", got, want, k)
	}
}

func wantNoCommit(ctx context.Context, t *testing.T, m store.MetaStore, k gtp) {
	t.Helper()
	c, err := m.GetCommit(ctx, k.group, k.topic, k.partition)
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetCommit(%s/%s/%d) = %+v, %v; want ErrNotFound", k.group, k.topic, k.partition, c, err)
	}
}

func testCommitUnknown(ctx context.Context, t *testing.T, m store.MetaStore) {
	k := newGTP(t)
	wantNoCommit(ctx, t, m, k)
	// Without a lease a commit is fenced and writes nothing.
	wantErrIs(t, "Commit without a lease", m.Commit(ctx, commitRow(k, 5, 1, 0, ""), "m-1"), store.ErrFenced)
	wantNoCommit(ctx, t, m, k)
}

func testCommitMonotonic(ctx context.Context, t *testing.T, m store.MetaStore) {
	k := newGTP(t)
	k.partition = 3
	acquire(ctx, t, m, k, "m-1", 0, 30_000)
	first := commitRow(k, 10, 1, 100, `{"note":"first"}`)
	must(t, "Commit", m.Commit(ctx, first, "m-1"))
	wantCommit(ctx, t, m, k, first)

	must(t, "Commit of the same offset", m.Commit(ctx, commitRow(k, 10, 1, 200, ""), "m-1"))
	wantCommitOffset(ctx, t, m, k, 10)
	higher := commitRow(k, 1<<40, 1, 300, "higher")
	must(t, "Commit of a higher offset", m.Commit(ctx, higher, "m-1"))
	wantCommit(ctx, t, m, k, higher)
	for _, lower := range []int64{1<<40 - 1, 10, 0} {
		err := m.Commit(ctx, commitRow(k, lower, 1, 400, "lower"), "m-1")
		wantErrIs(t, fmt.Sprintf("Commit of %d below %d", lower, int64(1<<40)), err, store.ErrStaleCommit)
	}
	wantCommit(ctx, t, m, k, higher)
	wantNoCommit(ctx, t, m, gtp{k.group, k.topic, 0})
}

func testCommitFenced(ctx context.Context, t *testing.T, m store.MetaStore) {
	k := newGTP(t)
	acquire(ctx, t, m, k, "m-1", 0, 30_000)
	ok := commitRow(k, 10, 1, 100, "m-1")
	must(t, "Commit", m.Commit(ctx, ok, "m-1"))

	// Fenced commits carry higher offsets, so only the fence can refuse them.
	fenced := func(what, member string, gen, next int64) {
		t.Helper()
		err := m.Commit(ctx, commitRow(k, next, gen, 500, "fenced"), member)
		wantErrIs(t, what, err, store.ErrFenced)
	}
	fenced("Commit by another member", "m-2", 1, 20)
	fenced("Commit at a newer generation", "m-1", 2, 20)
	fenced("Commit at an older generation", "m-1", 0, 20)
	// Fenced and stale at once: the fence wins.
	fenced("Commit of a lower offset by another member", "m-2", 1, 5)
	fenced("Commit of the same offset by another member", "m-2", 1, 10)
	wantCommit(ctx, t, m, k, ok)

	must(t, "ReleaseLease", m.ReleaseLease(ctx, k.group, k.topic, k.partition, "m-1", 1))
	fenced("Commit after own release", "m-1", 1, 20)
	wantCommit(ctx, t, m, k, ok)

	acquire(ctx, t, m, k, "m-2", 1_000, 31_000)
	fenced("Commit by the previous owner after a take-over", "m-1", 1, 20)
	fenced("Commit by the new owner at the old generation", "m-2", 1, 20)
	fenced("Commit of a lower offset by the previous owner", "m-1", 1, 9)
	wantCommit(ctx, t, m, k, ok)
	next := commitRow(k, 11, 2, 600, "m-2")
	must(t, "Commit by the new owner", m.Commit(ctx, next, "m-2"))
	wantCommit(ctx, t, m, k, next)
}

func testResetLive(ctx context.Context, t *testing.T, m store.MetaStore) {
	k0 := newGTP(t)
	k1, k2 := gtp{k0.group, k0.topic, 1}, gtp{k0.group, k0.topic, 2}
	acquire(ctx, t, m, k0, "m-1", 0, 30_000)
	must(t, "Commit", m.Commit(ctx, commitRow(k0, 10, 1, 100, ""), "m-1"))
	acquire(ctx, t, m, k1, "m-2", 0, 30_000)
	must(t, "ReleaseLease", m.ReleaseLease(ctx, k1.group, k1.topic, k1.partition, "m-2", 1))

	// Only partition 0 has a live lease; it blocks the reset of every partition.
	offsets := map[int32]int64{0: 3, 1: 4, 2: 5}
	for _, now := range []int64{0, 29_999} {
		err := m.ResetCommits(ctx, k0.group, k0.topic, offsets, at(now))
		wantErrIs(t, fmt.Sprintf("ResetCommits with a live lease at %d", now), err, store.ErrGroupActive)
	}
	wantCommitOffset(ctx, t, m, k0, 10)
	wantNoCommit(ctx, t, m, k1)
	wantNoCommit(ctx, t, m, k2)
	wantAssignment(ctx, t, m, k0, lease(k0, "m-1", 1, 30_000)) // a refused reset fences nothing
	wantAssignment(ctx, t, m, k1, lease(k1, "", 1, 30_000))
	wantNoAssignment(ctx, t, m, k2)
	// At exactly the expiry the lease is no longer live.
	must(t, "ResetCommits at the expiry", m.ResetCommits(ctx, k0.group, k0.topic, offsets, at(30_000)))
	wantCommitOffset(ctx, t, m, k0, 3)
	wantCommitOffset(ctx, t, m, k1, 4)
	wantCommitOffset(ctx, t, m, k2, 5)
}

func testResetAllowed(ctx context.Context, t *testing.T, m store.MetaStore) {
	k0 := newGTP(t)
	k1, k2, k3 := gtp{k0.group, k0.topic, 1}, gtp{k0.group, k0.topic, 2}, gtp{k0.group, k0.topic, 3}
	acquire(ctx, t, m, k0, "m-1", 0, 30_000) // expires
	must(t, "Commit", m.Commit(ctx, commitRow(k0, 100, 1, 100, ""), "m-1"))
	acquire(ctx, t, m, k1, "m-1", 0, 900_000) // released
	must(t, "Commit", m.Commit(ctx, commitRow(k1, 50, 1, 100, ""), "m-1"))
	must(t, "ReleaseLease", m.ReleaseLease(ctx, k1.group, k1.topic, k1.partition, "m-1", 1))
	acquire(ctx, t, m, k3, "m-1", 0, 30_000) // not reset
	must(t, "Commit", m.Commit(ctx, commitRow(k3, 7, 1, 100, "keep"), "m-1"))
	// Live leases of the group on another topic and of another group on this topic do not count.
	acquire(ctx, t, m, gtp{k0.group, k0.topic + "x", 0}, "m-9", 0, 900_000)
	acquire(ctx, t, m, gtp{k0.group + "x", k0.topic, 0}, "m-9", 0, 900_000)

	must(t, "ResetCommits", m.ResetCommits(ctx, k0.group, k0.topic, map[int32]int64{0: 5, 1: 60, 2: 0}, at(40_000)))
	wantCommitOffset(ctx, t, m, k0, 5) // lowered
	wantCommitOffset(ctx, t, m, k1, 60)
	wantCommitOffset(ctx, t, m, k2, 0) // created
	wantCommit(ctx, t, m, k3, commitRow(k3, 7, 1, 100, "keep"))

	// Commits continue from the reset offsets (the reset moved generation 1 to 2).
	gen := acquire(ctx, t, m, k0, "m-2", 40_000, 70_000).Generation
	if gen != 3 {
		t.Fatalf("AcquireLease after a reset: generation %d, want 3", gen)
	}
	wantErrIs(t, "Commit below the reset offset", m.Commit(ctx, commitRow(k0, 4, gen, 41_000, ""), "m-2"), store.ErrStaleCommit)
	must(t, "Commit at the reset offset", m.Commit(ctx, commitRow(k0, 5, gen, 41_000, ""), "m-2"))
	must(t, "Commit above the reset offset", m.Commit(ctx, commitRow(k0, 6, gen, 42_000, ""), "m-2"))
	wantCommit(ctx, t, m, k0, commitRow(k0, 6, gen, 42_000, ""))
}

// wantFencedRow fails t unless the assignment row of k has no owner and generation gen.
func wantFencedRow(ctx context.Context, t *testing.T, m store.MetaStore, k gtp, gen int64) {
	t.Helper()
	a, err := m.GetAssignment(ctx, k.group, k.topic, k.partition)
	must(t, "GetAssignment", err)
	if a.Owner != "" || a.Generation != gen || a.Group != k.group || a.Topic != k.topic || a.Partition != k.partition {
		t.Fatalf("GetAssignment after a reset = %+v, want no owner at generation %d", a, gen)
	}
}

// testResetFences: a reset makes every earlier generation of the group on the topic
// obsolete, so an owner whose lease lapsed (paused, nobody took over) can neither renew
// nor commit at its old generation and undo the reset.
func testResetFences(ctx context.Context, t *testing.T, m store.MetaStore) {
	k0 := newGTP(t)
	k1, k2 := gtp{k0.group, k0.topic, 1}, gtp{k0.group, k0.topic, 2}
	other := gtp{k0.group, k0.topic + "x", 0}
	acquire(ctx, t, m, k0, "m-1", 0, 30_000) // lapses: m-1 is paused
	must(t, "Commit", m.Commit(ctx, commitRow(k0, 10, 1, 100, ""), "m-1"))
	acquire(ctx, t, m, k1, "m-2", 0, 30_000)
	must(t, "ReleaseLease", m.ReleaseLease(ctx, k1.group, k1.topic, k1.partition, "m-2", 1))
	acquire(ctx, t, m, other, "m-3", 0, 900_000)

	must(t, "ResetCommits", m.ResetCommits(ctx, k0.group, k0.topic, map[int32]int64{0: 0, 1: 0, 2: 0}, at(40_000)))
	wantFencedRow(ctx, t, m, k0, 2)
	wantFencedRow(ctx, t, m, k1, 2)
	wantFencedRow(ctx, t, m, k2, 1) // created by the reset
	wantAssignment(ctx, t, m, other, lease(other, "m-3", 1, 900_000))

	// The paused owner wakes up: every call at its old generation is fenced.
	_, err := m.RenewLease(ctx, k0.group, k0.topic, k0.partition, "m-1", 1, at(70_000))
	wantErrIs(t, "RenewLease at the generation before the reset", err, store.ErrFenced)
	wantErrIs(t, "Commit at the generation before the reset",
		m.Commit(ctx, commitRow(k0, 20, 1, 41_000, ""), "m-1"), store.ErrFenced)
	wantErrIs(t, "ReleaseLease at the generation before the reset",
		m.ReleaseLease(ctx, k0.group, k0.topic, k0.partition, "m-1", 1), store.ErrFenced)
	wantCommitOffset(ctx, t, m, k0, 0)
	wantFencedRow(ctx, t, m, k0, 2)

	// Leases taken after the reset work from the next generation.
	if a := acquire(ctx, t, m, k0, "m-1", 41_000, 71_000); a.Generation != 3 {
		t.Fatalf("AcquireLease after the reset: generation %d, want 3", a.Generation)
	}
	must(t, "Commit after re-acquiring", m.Commit(ctx, commitRow(k0, 1, 3, 42_000, ""), "m-1"))
	if a := acquire(ctx, t, m, k2, "m-2", 41_000, 71_000); a.Generation != 2 {
		t.Fatalf("AcquireLease of a partition first leased after the reset: generation %d, want 2", a.Generation)
	}
}

func testListAssignmentsCommits(ctx context.Context, t *testing.T, m store.MetaStore) {
	g := UniqueName(t, "g")
	ta, tb := UniqueName(t, "a"), UniqueName(t, "b") // "a-..." < "b-..."
	// Acquire out of order; partitions 10 and 2 catch a string sort.
	keys := []gtp{{g, tb, 10}, {g, ta, 2}, {g, tb, 0}, {g, ta, 10}, {g, ta, 0}, {g, tb, 2}, {g, ta, 1}}
	var wantA []store.Assignment
	var wantC []store.CommitRow
	for i, k := range keys {
		a := acquire(ctx, t, m, k, fmt.Sprintf("m-%d", i), 0, int64(30_000+i))
		if i%2 == 0 {
			c := commitRow(k, int64(i*10), 1, int64(i), fmt.Sprint(i))
			must(t, "Commit", m.Commit(ctx, c, a.Owner))
			wantC = append(wantC, c)
		}
		if i == 3 {
			must(t, "ReleaseLease", m.ReleaseLease(ctx, k.group, k.topic, k.partition, a.Owner, 1))
			var err error
			a, err = m.GetAssignment(ctx, k.group, k.topic, k.partition)
			must(t, "GetAssignment after release", err)
		}
		wantA = append(wantA, a)
	}
	// Groups whose names extend g are other groups.
	for _, other := range []string{g + "-x", g + "0", g + ".b"} {
		k := gtp{other, ta, 0}
		acquire(ctx, t, m, k, "m-x", 0, 30_000)
		must(t, "Commit", m.Commit(ctx, commitRow(k, 1, 1, 0, ""), "m-x"))
	}
	byKey := func(x, y gtp) int {
		if c := cmp.Compare(x.topic, y.topic); c != 0 {
			return c
		}
		return cmp.Compare(x.partition, y.partition)
	}
	slices.SortFunc(wantA, func(x, y store.Assignment) int {
		return byKey(gtp{x.Group, x.Topic, x.Partition}, gtp{y.Group, y.Topic, y.Partition})
	})
	slices.SortFunc(wantC, func(x, y store.CommitRow) int {
		return byKey(gtp{x.Group, x.Topic, x.Partition}, gtp{y.Group, y.Topic, y.Partition})
	})

	gotA, err := m.ListAssignments(ctx, g)
	must(t, "ListAssignments", err)
	if !slices.Equal(normAssignments(gotA), normAssignments(wantA)) {
		t.Fatalf("ListAssignments:\n got  %+v\n want %+v", gotA, wantA)
	}
	gotC, err := m.ListCommits(ctx, g)
	must(t, "ListCommits", err)
	if !sameCommits(gotC, wantC) {
		t.Fatalf("ListCommits:\n got  %+v\n want %+v", gotC, wantC)
	}

	unknown := UniqueName(t, "g")
	if as, err := m.ListAssignments(ctx, unknown); err != nil || len(as) != 0 {
		t.Fatalf("ListAssignments of an unknown group = %+v, %v; want empty", as, err)
	}
	if cs, err := m.ListCommits(ctx, unknown); err != nil || len(cs) != 0 {
		t.Fatalf("ListCommits of an unknown group = %+v, %v; want empty", cs, err)
	}
}

// --- groups and members ---

func testEnsureGroup(ctx context.Context, t *testing.T, m store.MetaStore) {
	name := UniqueName(t, "g")
	first := store.GroupConfig{Name: name, ResetPolicy: "earliest", MaxAttempts: 5, DeadLetterTopic: name + "-dlq", CreatedAt: at(0)}
	got, err := m.EnsureGroup(ctx, first)
	must(t, "EnsureGroup", err)
	if normGroup(got) != normGroup(first) {
		t.Fatalf("EnsureGroup = %+v, want %+v", got, first)
	}
	second := store.GroupConfig{Name: name, ResetPolicy: "fail", MaxAttempts: 1, CreatedAt: at(9_000)}
	got, err = m.EnsureGroup(ctx, second)
	must(t, "second EnsureGroup", err)
	if normGroup(got) != normGroup(first) {
		t.Fatalf("second EnsureGroup = %+v, want the stored %+v", got, first)
	}
	got, err = m.GetGroup(ctx, name)
	must(t, "GetGroup", err)
	if normGroup(got) != normGroup(first) {
		t.Fatalf("GetGroup = %+v, want %+v", got, first)
	}
}

func testGroupUnknown(ctx context.Context, t *testing.T, m store.MetaStore) {
	name := UniqueName(t, "g")
	_, err := m.GetGroup(ctx, name)
	wantErrIs(t, "GetGroup of an unknown group", err, store.ErrNotFound)
	_, err = m.EnsureGroup(ctx, store.GroupConfig{Name: name + "x", ResetPolicy: "latest", MaxAttempts: 3, CreatedAt: at(0)})
	must(t, "EnsureGroup", err)
	_, err = m.GetGroup(ctx, name)
	wantErrIs(t, "GetGroup of a group that only prefixes another", err, store.ErrNotFound)
}

func wantLive(ctx context.Context, t *testing.T, m store.MetaStore, group string, now int64, want ...store.Member) {
	t.Helper()
	got, err := m.LiveMembers(ctx, group, at(now))
	must(t, "LiveMembers", err)
	if !slices.Equal(normMembers(got), normMembers(want)) {
		t.Fatalf("LiveMembers(%s) at %d:\n got  %+v\n want %+v", group, now, got, want)
	}
}

func testMembers(ctx context.Context, t *testing.T, m store.MetaStore) {
	g := UniqueName(t, "g")
	member := func(id string, exp int64) store.Member { return store.Member{Group: g, ID: id, ExpiresAt: at(exp)} }
	m1, m2, m0 := member("m-1", 1_000), member("m-2", 2_000), member("m-0", 3_000)
	for _, mb := range []store.Member{m1, m2, m0} {
		must(t, "Heartbeat", m.Heartbeat(ctx, mb))
	}
	must(t, "Heartbeat of another group", m.Heartbeat(ctx, store.Member{Group: g + "-x", ID: "m-9", ExpiresAt: at(9_000)}))

	wantLive(ctx, t, m, g, 0, m0, m1, m2)
	wantLive(ctx, t, m, g, 999, m0, m1, m2)
	wantLive(ctx, t, m, g, 1_000, m0, m2) // expiry must be after now
	wantLive(ctx, t, m, g, 2_500, m0)
	wantLive(ctx, t, m, g, 3_000)

	m1 = member("m-1", 5_000)
	must(t, "Heartbeat upsert", m.Heartbeat(ctx, m1))
	wantLive(ctx, t, m, g, 2_500, m0, m1)

	must(t, "RemoveMember", m.RemoveMember(ctx, g, "m-0"))
	wantLive(ctx, t, m, g, 0, m1, m2)
	must(t, "RemoveMember again", m.RemoveMember(ctx, g, "m-0"))
	must(t, "RemoveMember of an unknown group", m.RemoveMember(ctx, UniqueName(t, "g"), "m-1"))
	wantLive(ctx, t, m, g, 0, m1, m2)
	wantLive(ctx, t, m, UniqueName(t, "g"), 0)
}

// testLeaseIncarnationsIsolated: the lease and commit rows of two incarnations of one
// topic name (two store.TopicIDs) are apart. The new incarnation's first lease is at
// generation 1, as the old one's was, and the old one's token — the same member and
// generation — renews, commits and releases the old incarnation's rows only, so a run
// of a deleted incarnation that names it (group.Lease.TopicRef) never acts on the new.
func testLeaseIncarnationsIsolated(ctx context.Context, t *testing.T, m store.MetaStore) {
	name, g := UniqueName(t, "t"), UniqueName(t, "g")
	old := gtp{g, store.TopicID(name, "tcold"), 0}
	cur := gtp{g, store.TopicID(name, "tcnew"), 0}
	ao := acquire(ctx, t, m, old, "m-1", 0, 100_000)
	must(t, "Commit on the old incarnation", m.Commit(ctx, commitRow(old, 7, ao.Generation, 10, ""), "m-1"))
	an := acquire(ctx, t, m, cur, "m-1", 20, 100_000)
	if an.Generation != 1 || ao.Generation != 1 {
		t.Fatalf("first leases at generations %d (old) and %d (new), want 1 each", ao.Generation, an.Generation)
	}
	if _, err := m.GetCommit(ctx, cur.group, cur.topic, cur.partition); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetCommit of the new incarnation = %v, want ErrNotFound", err)
	}
	_, err := m.RenewLease(ctx, old.group, old.topic, old.partition, "m-1", ao.Generation, at(200_000))
	must(t, "RenewLease of the old incarnation", err)
	must(t, "Commit on the old incarnation", m.Commit(ctx, commitRow(old, 9, ao.Generation, 30, ""), "m-1"))
	must(t, "ReleaseLease of the old incarnation", m.ReleaseLease(ctx, old.group, old.topic, old.partition, "m-1", ao.Generation))
	if _, err := m.GetCommit(ctx, cur.group, cur.topic, cur.partition); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetCommit of the new incarnation after the old one's commits = %v, want ErrNotFound", err)
	}
	wantAssignment(ctx, t, m, cur, store.Assignment{Group: g, Topic: cur.topic, Owner: "m-1", Generation: 1, ExpiresAt: at(100_000)})
	must(t, "Commit on the new incarnation", m.Commit(ctx, commitRow(cur, 1, an.Generation, 40, ""), "m-1"))
	wantCommit(ctx, t, m, old, commitRow(old, 9, ao.Generation, 30, ""))
	wantCommit(ctx, t, m, cur, commitRow(cur, 1, an.Generation, 40, ""))
}

// testCommitLease: a commit that carries a lease expiry renews the lease in the same
// write, one that asks releases it (the generation stays), and a refused commit — fenced
// or stale — moves neither the lease nor the position.
func testCommitLease(ctx context.Context, t *testing.T, m store.MetaStore) {
	k := newGTP(t)
	acquire(ctx, t, m, k, "m-1", 0, 30_000)
	renew := commitRow(k, 10, 1, 1_000, "")
	renew.LeaseExpiresAt = at(61_000)
	must(t, "Commit renewing the lease", m.Commit(ctx, renew, "m-1"))
	wantAssignment(ctx, t, m, k, lease(k, "m-1", 1, 61_000))
	wantCommit(ctx, t, m, k, commitRow(k, 10, 1, 1_000, ""))

	stale := commitRow(k, 5, 1, 2_000, "")
	stale.LeaseExpiresAt = at(90_000)
	wantErrIs(t, "stale Commit renewing the lease", m.Commit(ctx, stale, "m-1"), store.ErrStaleCommit)
	for _, bad := range []struct {
		member string
		gen    int64
	}{{"m-2", 1}, {"m-1", 2}} {
		c := commitRow(k, 20, bad.gen, 3_000, "")
		c.LeaseExpiresAt = at(90_000)
		wantErrIs(t, fmt.Sprintf("Commit renewing as %q generation %d", bad.member, bad.gen), m.Commit(ctx, c, bad.member), store.ErrFenced)
		c.LeaseExpiresAt, c.ReleaseLease = time.Time{}, true
		wantErrIs(t, fmt.Sprintf("Commit releasing as %q generation %d", bad.member, bad.gen), m.Commit(ctx, c, bad.member), store.ErrFenced)
	}
	wantAssignment(ctx, t, m, k, lease(k, "m-1", 1, 61_000))
	wantCommit(ctx, t, m, k, commitRow(k, 10, 1, 1_000, ""))

	release := commitRow(k, 12, 1, 4_000, "")
	release.ReleaseLease = true
	must(t, "Commit releasing the lease", m.Commit(ctx, release, "m-1"))
	got, err := m.GetAssignment(ctx, k.group, k.topic, k.partition)
	must(t, "GetAssignment after the releasing commit", err)
	if got.Owner != "" || got.Generation != 1 || got.Live(at(4_000)) {
		t.Fatalf("after a releasing commit: %+v, want no owner and generation 1", got)
	}
	wantCommit(ctx, t, m, k, commitRow(k, 12, 1, 4_000, ""))
	wantErrIs(t, "ReleaseLease after the releasing commit", m.ReleaseLease(ctx, k.group, k.topic, k.partition, "m-1", 1), store.ErrFenced)
	next := acquire(ctx, t, m, k, "m-2", 5_000, 35_000)
	if next.Generation != 2 {
		t.Fatalf("acquire after the releasing commit: generation %d, want 2", next.Generation)
	}
}
