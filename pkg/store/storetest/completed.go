package storetest

import (
	"context"
	"testing"

	"github.com/stratalog/strata/pkg/store"
)

// testCommitCompleted: the completed ranges above a commit's next offset are stored with
// it and read back in order; the next commit replaces them (none given removes them), a
// fenced or stale commit leaves them, and a reset drops them.
func testCommitCompleted(ctx context.Context, t *testing.T, m store.MetaStore) {
	k := newGTP(t)
	a := acquire(ctx, t, m, k, "m-1", 0, 30_000)
	withCompleted := func(c store.CommitRow, rs ...store.OffsetRange) store.CommitRow {
		c.Completed = rs
		return c
	}
	first := withCompleted(commitRow(k, 10, a.Generation, 100, ""),
		store.OffsetRange{From: 11, To: 12}, store.OffsetRange{From: 14, To: 20}, store.OffsetRange{From: 1 << 40, To: 1<<40 + 1})
	must(t, "Commit with completed ranges", m.Commit(ctx, first, "m-1"))
	wantCommit(ctx, t, m, k, first)

	// Neither a fenced nor a stale commit touches them.
	wantErrIs(t, "fenced Commit with completed ranges",
		m.Commit(ctx, withCompleted(commitRow(k, 30, a.Generation+1, 200, ""), store.OffsetRange{From: 31, To: 32}), "m-1"), store.ErrFenced)
	wantErrIs(t, "stale Commit with completed ranges",
		m.Commit(ctx, withCompleted(commitRow(k, 9, a.Generation, 200, ""), store.OffsetRange{From: 40, To: 41}), "m-1"), store.ErrStaleCommit)
	wantCommit(ctx, t, m, k, first)

	// The same offset with other ranges replaces them; a commit without any removes them.
	same := withCompleted(commitRow(k, 10, a.Generation, 300, ""), store.OffsetRange{From: 12, To: 13})
	must(t, "Commit of the same offset with other ranges", m.Commit(ctx, same, "m-1"))
	wantCommit(ctx, t, m, k, same)
	plain := commitRow(k, 13, a.Generation, 400, "")
	must(t, "Commit without completed ranges", m.Commit(ctx, plain, "m-1"))
	wantCommit(ctx, t, m, k, plain)

	// ListCommits carries them; a reset drops them.
	again := withCompleted(commitRow(k, 14, a.Generation, 500, ""), store.OffsetRange{From: 15, To: 17})
	must(t, "Commit with completed ranges", m.Commit(ctx, again, "m-1"))
	cs, err := m.ListCommits(ctx, k.group)
	must(t, "ListCommits", err)
	if len(cs) != 1 || !sameCommit(cs[0], again) {
		t.Fatalf("ListCommits = %+v, want [%+v]", cs, again)
	}
	must(t, "ResetCommits", m.ResetCommits(ctx, k.group, k.topic, map[int32]int64{k.partition: 14}, at(40_000)))
	got, err := m.GetCommit(ctx, k.group, k.topic, k.partition)
	must(t, "GetCommit after a reset", err)
	if got.NextOffset != 14 || len(got.Completed) != 0 {
		t.Fatalf("GetCommit after a reset = %+v, want next offset 14 and no completed ranges", got)
	}
}
