package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stratalog/strata/pkg/store"
)

// batchCases specify SequencerStore.SequenceBatch: the topic commit.
func batchCases() []testCase[store.MetaStore] {
	return []testCase[store.MetaStore]{
		{"TopicCommitTiles", testBatchTiles},
		{"TopicCommitSingleAndBounds", testBatchSingleAndBounds},
		{"TopicCommitLogStart", testBatchLogStart},
		{"BadBatchChangesNothing", testBatchBad},
		{"LegacyTopicBatch", testBatchLegacy},
		{"EntryBatchRoundTrip", testEntryBatch},
	}
}

// TopicCommitID returns a unique topic incarnation ID of the topic commit layout
// (store.TopicCommits).
func TopicCommitID(t testing.TB) string {
	t.Helper()
	inc := store.TopicCommitPrefix + strings.ToLower(strings.ReplaceAll(UniqueName(t, "x")[len("x-"):], "-", ""))
	inc = strings.Map(func(r rune) rune {
		if (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') {
			return r
		}
		return -1
	}, inc)
	if len(inc) > 64 {
		inc = inc[:2] + inc[len(inc)-62:]
	}
	return store.TopicID(UniqueName(t, "t"), inc)
}

// batchOf makes a batch's commits on topic: one per (partition, count) pair, its
// blocks back to back in one object, sharing its times.
func batchOf(topic, object string, pcs ...[2]int64) []store.SeqCommit {
	cs := make([]store.SeqCommit, len(pcs))
	off := int64(0)
	for i, pc := range pcs {
		e := entry(topic, int32(pc[0]), 0, pc[1])
		e.ObjectKey, e.ByteOffset, e.ByteLength = object, off, pc[1]*10
		e.MaxTimestamp, e.AppendedAt, e.ExpiresAt = at(int64(i+1)), at(100), at(86_400_100)
		off += e.ByteLength
		cs[i] = store.SeqCommit{Entry: e}
	}
	return cs
}

// AppendBatch sequences cs with SequenceBatch (retrying only when every commit failed as
// unavailable) and writes the entries the backend did not materialise; it returns the
// committed entries in cs's order.
func AppendBatch(ctx context.Context, m store.MetaStore, cs []store.SeqCommit) ([]store.IndexEntry, error) {
	var out []store.SeqCommit
	err := retryUnavailable(func() error {
		var errs []error
		out, errs = m.SequenceBatch(ctx, cs)
		return errors.Join(errs...)
	})
	if err != nil {
		return nil, fmt.Errorf("SequenceBatch: %w", err)
	}
	es := make([]store.IndexEntry, len(out))
	for i, c := range out {
		es[i] = c.Entry
		if c.Materialized {
			continue
		}
		err := retryUnavailable(func() error { return m.PutIndexEntry(ctx, c.Entry) })
		var ce *store.ConflictError
		if errors.As(err, &ce) && ce.Existing.ObjectKey == c.Entry.ObjectKey && ce.Existing.ByteOffset == c.Entry.ByteOffset {
			err = nil
		}
		if err != nil {
			return nil, fmt.Errorf("index entry at %d: %w", c.Entry.BaseOffset, err)
		}
	}
	return es, nil
}

func wantBases(t *testing.T, what string, es []store.IndexEntry, want ...int64) {
	t.Helper()
	for i, e := range es {
		if e.BaseOffset != want[i] {
			t.Fatalf("%s: commit %d (partition %d) at %d, want bases %v", what, i, e.Partition, e.BaseOffset, want)
		}
	}
}

// testBatchTiles: a batch's commits of one partition take consecutive offsets in the
// batch's order, after those the partition had, and every partition counts its commits.
func testBatchTiles(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := TopicCommitID(t)
	es, err := AppendBatch(ctx, m, batchOf(topic, "v1/o/a", [2]int64{0, 2}, [2]int64{1, 3}, [2]int64{0, 1}, [2]int64{2, 1}))
	must(t, "first batch", err)
	wantBases(t, "first batch", es, 0, 0, 2, 0)
	es2, err := AppendBatch(ctx, m, batchOf(topic, "v1/o/b", [2]int64{2, 4}, [2]int64{0, 5}))
	must(t, "second batch", err)
	wantBases(t, "second batch", es2, 1, 3)
	for p, want := range map[int32][2]int64{0: {8, 3}, 1: {3, 1}, 2: {5, 2}, 3: {0, 0}} {
		st, err := m.Sequencer(ctx, topic, p)
		must(t, "Sequencer", err)
		if st.NextOffset != want[0] || st.NextSeq != want[1] || st.Topic != topic || st.Partition != p || st.LogStart != 0 {
			t.Fatalf("Sequencer(%d) = %+v, want next offset %d after %d commits", p, st, want[0], want[1])
		}
	}
	st, err := m.Sequencer(ctx, topic, 0)
	must(t, "Sequencer", err)
	if st.Last == nil || normEntry(st.Last.Entry) != normEntry(es2[1]) || st.Last.Seq != 3 {
		t.Fatalf("Sequencer(0).Last = %+v, want the second batch's commit %+v, seq 3", st.Last, es2[1])
	}
	wantIndexEntries(ctx, t, m, topic, 0, 0, 10, []store.IndexEntry{es[0], es[2], es2[1]})
	wantIndexEntries(ctx, t, m, topic, 2, 0, 10, []store.IndexEntry{es[3], es2[0]})
}

// testBatchSingleAndBounds: Sequence on a topic commit topic is a batch of one, and a
// partition never written reads as zeros.
func testBatchSingleAndBounds(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := TopicCommitID(t)
	wantNextOffset(ctx, t, m, topic, 5, 0)
	a := batchOf(topic, "v1/o/a", [2]int64{5, 3})[0].Entry
	got := commit(ctx, t, m, a)
	if got.BaseOffset != 0 {
		t.Fatalf("first Sequence at %d, want 0", got.BaseOffset)
	}
	es, err := AppendBatch(ctx, m, batchOf(topic, "v1/o/b", [2]int64{5, 1}, [2]int64{4, 1}))
	must(t, "batch", err)
	wantBases(t, "batch after a Sequence", es, 3, 0)
	b := batchOf(topic, "v1/o/c", [2]int64{5, 2})[0].Entry
	if got := commit(ctx, t, m, b); got.BaseOffset != 4 {
		t.Fatalf("Sequence after a batch at %d, want 4", got.BaseOffset)
	}
	wantNextOffset(ctx, t, m, topic, 5, 6)
	wantNextOffset(ctx, t, m, topic, 4, 1)
}

// testBatchLogStart: a topic commit topic's log start follows the partition contract.
func testBatchLogStart(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := TopicCommitID(t)
	if err := m.AdvanceLogStart(ctx, topic, 1, 1); !errors.Is(err, store.ErrBeyondEnd) {
		t.Fatalf("AdvanceLogStart of an unwritten partition = %v, want ErrBeyondEnd", err)
	}
	_, err := AppendBatch(ctx, m, batchOf(topic, "v1/o/a", [2]int64{0, 4}, [2]int64{1, 2}))
	must(t, "batch", err)
	must(t, "AdvanceLogStart", m.AdvanceLogStart(ctx, topic, 0, 3))
	must(t, "AdvanceLogStart lower", m.AdvanceLogStart(ctx, topic, 0, 2))
	wantLogStart(ctx, t, m, topic, 0, 3)
	wantLogStart(ctx, t, m, topic, 1, 0)
	if err := m.AdvanceLogStart(ctx, topic, 1, 3); !errors.Is(err, store.ErrBeyondEnd) {
		t.Fatalf("AdvanceLogStart past the high watermark = %v, want ErrBeyondEnd", err)
	}
	must(t, "AdvanceLogStart to the end", m.AdvanceLogStart(ctx, topic, 1, 2))
	wantLogStart(ctx, t, m, topic, 1, 2)
	es, err := AppendBatch(ctx, m, batchOf(topic, "v1/o/b", [2]int64{0, 1}))
	must(t, "batch after log starts", err)
	wantBases(t, "batch after log starts", es, 4)
	wantLogStart(ctx, t, m, topic, 0, 3)
}

// testBatchBad: a batch with a commit of no records is refused whole: no partition of
// it moves.
func testBatchBad(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := TopicCommitID(t)
	cs := batchOf(topic, "v1/o/a", [2]int64{0, 2}, [2]int64{1, 1})
	cs[1].Entry.Count = 0
	out, errs := m.SequenceBatch(ctx, cs)
	if len(out) != len(cs) || len(errs) != len(cs) {
		t.Fatalf("SequenceBatch answered %d results and %d errors for %d commits", len(out), len(errs), len(cs))
	}
	if errs[1] == nil {
		t.Fatal("a commit of 0 records was accepted")
	}
	wantNextOffset(ctx, t, m, topic, 0, 0)
	wantNextOffset(ctx, t, m, topic, 1, 0)
}

// testBatchLegacy: on a topic without the topic commit layout SequenceBatch still
// sequences every commit as Sequence does.
func testBatchLegacy(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := UniqueName(t, "t")
	commit(ctx, t, m, entry(topic, 1, 0, 2))
	es, err := AppendBatch(ctx, m, batchOf(topic, "v1/o/a", [2]int64{0, 2}, [2]int64{1, 3}))
	must(t, "legacy batch", err)
	wantBases(t, "legacy batch", es, 0, 2)
	wantNextOffset(ctx, t, m, topic, 1, 5)
}

// testRaceBatches: concurrent batches that each put one record on partitions 0 and 1
// must be ordered alike on both (the topic commit is one atomic step): every batch gets
// one base on both, and the bases are dense.
func testRaceBatches(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := TopicCommitID(t)
	const writers, each = 6, 4
	errs := make([]error, writers)
	got := make([][][]store.IndexEntry, writers)
	race(writers, func(w int) {
		for i := range each {
			es, err := AppendBatch(ctx, m, batchOf(topic, fmt.Sprintf("v1/o/w%d-%d", w, i), [2]int64{0, 1}, [2]int64{1, 1}))
			if err != nil {
				errs[w] = err
				return
			}
			got[w] = append(got[w], es)
		}
	})
	must(t, "concurrent batches", errors.Join(errs...))
	seen := map[int64]bool{}
	for w := range got {
		for i, es := range got[w] {
			if es[0].BaseOffset != es[1].BaseOffset {
				t.Fatalf("batch %d of writer %d at %d on partition 0 and %d on 1: batches interleaved", i, w, es[0].BaseOffset, es[1].BaseOffset)
			}
			seen[es[0].BaseOffset] = true
		}
	}
	for b := int64(0); b < writers*each; b++ {
		if !seen[b] {
			t.Fatalf("no batch at %d: bases not dense", b)
		}
	}
	wantNextOffset(ctx, t, m, topic, 0, writers*each)
}
