package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

func sequencerCases() []testCase[store.MetaStore] {
	return []testCase[store.MetaStore]{
		{"CommitsTileFromZero", testSeqTiles},
		{"EmptyPartitionReadsZero", testSeqEmpty},
		{"LastCarriesPayload", testSeqLast},
		{"SeedsFromLegacyIndex", testSeqSeed},
		{"HighWatermarkOutlivesIndex", testSeqOutlivesIndex},
		{"MaterialisedIdempotentCommit", testSeqIdempotent},
		{"EventualNeverAhead", testSeqEventual},
		{"EventualIndexCatchesUp", testIndexEventual},
	}
}

// commit appends e through the sequencer (materialising it) and returns the stored entry.
func commit(ctx context.Context, t *testing.T, m store.MetaStore, e store.IndexEntry) store.IndexEntry {
	t.Helper()
	put, err := AppendEntry(ctx, m, e)
	must(t, "append", err)
	return put
}

func wantNextOffset(ctx context.Context, t *testing.T, m store.MetaStore, topic string, partition int32, want int64) {
	t.Helper()
	st, err := m.Sequencer(ctx, topic, partition)
	must(t, "Sequencer", err)
	if st.NextOffset != want {
		t.Fatalf("Sequencer(%s/%d).NextOffset = %d, want %d", topic, partition, st.NextOffset, want)
	}
}

func testSeqTiles(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := UniqueName(t, "t")
	var want []store.IndexEntry
	for i, n := range []int64{3, 1, 5} {
		e := entry(topic, 1, 0, n)
		e.ObjectKey = e.ObjectKey + "-" + string(rune('a'+i))
		got := commit(ctx, t, m, e)
		e.BaseOffset = []int64{0, 3, 4}[i]
		if normEntry(got) != normEntry(e) {
			t.Fatalf("commit %d = %+v, want %+v", i, got, e)
		}
		want = append(want, e)
	}
	wantNextOffset(ctx, t, m, topic, 1, 9)
	wantNextOffset(ctx, t, m, topic, 0, 0)
	wantIndexEntries(ctx, t, m, topic, 1, 0, 10, want)
	st, err := m.Sequencer(ctx, topic, 1)
	must(t, "Sequencer", err)
	if st.NextSeq != 3 || st.Topic != topic || st.Partition != 1 || st.LogStart != 0 {
		t.Fatalf("Sequencer = %+v, want topic %s partition 1, 3 commits, log start 0", st, topic)
	}
}

func testSeqEmpty(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := UniqueName(t, "t")
	st, err := m.Sequencer(ctx, topic, 3)
	must(t, "Sequencer of an unwritten partition", err)
	if st.NextOffset != 0 || st.NextSeq != 0 || st.LogStart != 0 || st.Last != nil {
		t.Fatalf("Sequencer of an unwritten partition = %+v, want zeros", st)
	}
}

func testSeqLast(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := UniqueName(t, "t")
	commit(ctx, t, m, entry(topic, 0, 0, 2))
	e := entry(topic, 0, 0, 4)
	e.ObjectKey += "-second"
	c, err := m.Sequence(ctx, store.SeqCommit{Entry: e, IdempotencyKey: topic + "#k", BodyHash: "sha256:ab"})
	must(t, "Sequence", err)
	if c.Entry.BaseOffset != 2 || c.Seq != 2 {
		t.Fatalf("Sequence = base %d seq %d, want 2 and 2", c.Entry.BaseOffset, c.Seq)
	}
	st, err := m.Sequencer(ctx, topic, 0)
	must(t, "Sequencer", err)
	if st.Last == nil {
		t.Fatal("Sequencer.Last is nil after two commits")
	}
	e.BaseOffset = 2
	got := *st.Last
	if normEntry(got.Entry) != normEntry(e) || got.IdempotencyKey != topic+"#k" || got.BodyHash != "sha256:ab" || got.Seq != 2 {
		t.Fatalf("Sequencer.Last = %+v, want entry %+v, key %s#k, hash sha256:ab, seq 2", got, e, topic)
	}
}

// testSeqSeed: a partition written in the index-as-sequencer format (entries, no
// counter) continues after its newest entry.
func testSeqSeed(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := UniqueName(t, "t")
	putEntries(ctx, t, m, entry(topic, 2, 0, 5), entry(topic, 2, 5, 3))
	wantNextOffset(ctx, t, m, topic, 2, 8)
	got := commit(ctx, t, m, entry(topic, 2, 0, 2))
	if got.BaseOffset != 8 {
		t.Fatalf("first commit after a legacy index ending at 8 got base %d", got.BaseOffset)
	}
	wantNextOffset(ctx, t, m, topic, 2, 10)
}

// testSeqOutlivesIndex: deleting every index entry (TTL, retention) never moves the high
// watermark back.
func testSeqOutlivesIndex(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := UniqueName(t, "t")
	a := commit(ctx, t, m, entry(topic, 0, 0, 3))
	b := commit(ctx, t, m, entry(topic, 0, 0, 2))
	must(t, "AdvanceLogStart", m.AdvanceLogStart(ctx, topic, 0, b.End()))
	must(t, "DeleteIndexEntry", m.DeleteIndexEntry(ctx, topic, 0, a.BaseOffset))
	must(t, "DeleteIndexEntry", m.DeleteIndexEntry(ctx, topic, 0, b.BaseOffset))
	wantNextOffset(ctx, t, m, topic, 0, 5)
	wantLogStart(ctx, t, m, topic, 0, 5)
	if got := commit(ctx, t, m, entry(topic, 0, 0, 1)); got.BaseOffset != 5 {
		t.Fatalf("commit after the index was emptied got base %d, want 5", got.BaseOffset)
	}
}

// testSeqIdempotent: a backend that materialises a commit must also claim its
// idempotency key, and index a second commit under a claimed key as a duplicate.
func testSeqIdempotent(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := UniqueName(t, "t")
	key := topic + "#" + UniqueName(t, "idem")
	first, err := m.Sequence(ctx, store.SeqCommit{Entry: entry(topic, 0, 0, 2), IdempotencyKey: key, BodyHash: "h"})
	must(t, "Sequence", err)
	if !first.Materialized {
		t.Skip("this backend leaves materialising to the log; its claims are tested through ClaimIdempotency")
	}
	if first.Claim == nil || first.Claim.BaseOffset != 0 || first.Claim.Count != 2 || first.Entry.Duplicate {
		t.Fatalf("first idempotent commit: claim %+v duplicate %v, want its own claim at 0", first.Claim, first.Entry.Duplicate)
	}
	again := entry(topic, 0, 0, 2)
	again.ObjectKey += "-again"
	second, err := m.Sequence(ctx, store.SeqCommit{Entry: again, IdempotencyKey: key, BodyHash: "h"})
	must(t, "Sequence", err)
	if second.Claim == nil || second.Claim.BaseOffset != 0 || !second.Entry.Duplicate || second.Entry.BaseOffset != 2 {
		t.Fatalf("second commit under a claimed key: base %d claim %+v duplicate %v, want base 2, the first claim, duplicate",
			second.Entry.BaseOffset, second.Claim, second.Entry.Duplicate)
	}
	es, err := m.IndexEntries(ctx, topic, 0, 0, 10)
	must(t, "IndexEntries", err)
	if len(es) != 2 || es[0].Duplicate || !es[1].Duplicate {
		t.Fatalf("index after a duplicate commit = %+v, want the second marked duplicate", es)
	}
	rec, err := m.GetIdempotency(ctx, key, 0)
	must(t, "GetIdempotency", err)
	if rec.BaseOffset != 0 || rec.Count != 2 || rec.BodyHash != "h" {
		t.Fatalf("claim = %+v, want base 0 count 2 hash h", rec)
	}
}

// testSeqEventual: an eventually consistent read of a partition's state is never ahead
// of a strongly consistent read made after it, and catches up with it, on a topic of
// either layout (per-partition counters and the topic commit's one item).
func testSeqEventual(ctx context.Context, t *testing.T, m store.MetaStore) {
	for _, topic := range []string{UniqueName(t, "t"), TopicCommitID(t)} {
		st, err := m.SequencerEventual(ctx, topic, 0)
		must(t, "SequencerEventual of an empty partition", err)
		if st.NextOffset != 0 || st.LogStart != 0 {
			t.Fatalf("SequencerEventual(%s/0) of an empty partition = %+v, want zeros", topic, st)
		}
		if _, err := AppendBatch(ctx, m, batchOf(topic, "v1/"+topic+"/obj-a", [2]int64{0, 3}, [2]int64{1, 2})); err != nil {
			t.Fatal(err)
		}
		if _, err := AppendBatch(ctx, m, batchOf(topic, "v1/"+topic+"/obj-b", [2]int64{0, 4})); err != nil {
			t.Fatal(err)
		}
		for p, want := range []int64{7, 2} {
			var got store.SeqState
			for try := 0; ; try++ {
				got, err = m.SequencerEventual(ctx, topic, int32(p))
				must(t, "SequencerEventual", err)
				strong, err := m.Sequencer(ctx, topic, int32(p))
				must(t, "Sequencer", err)
				if got.NextOffset > strong.NextOffset || got.LogStart > strong.LogStart {
					t.Fatalf("SequencerEventual(%s/%d) = next %d, start %d: ahead of the strong read after it (next %d, start %d)",
						topic, p, got.NextOffset, got.LogStart, strong.NextOffset, strong.LogStart)
				}
				if got.NextOffset == want || try == 50 {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if got.NextOffset != want || got.Topic != topic || got.Partition != int32(p) {
				t.Fatalf("SequencerEventual(%s/%d) = %+v, want next offset %d within a second", topic, p, got, want)
			}
		}
	}
}

// testIndexEventual: an eventually consistent read of the index answers, within a
// second, what IndexEntries answers — the entry holding from and those after it — on a
// topic of either layout.
func testIndexEventual(ctx context.Context, t *testing.T, m store.MetaStore) {
	for _, topic := range []string{UniqueName(t, "t"), TopicCommitID(t)} {
		if _, err := AppendBatch(ctx, m, batchOf(topic, "v1/"+topic+"/obj-a", [2]int64{0, 3})); err != nil {
			t.Fatal(err)
		}
		if _, err := AppendBatch(ctx, m, batchOf(topic, "v1/"+topic+"/obj-b", [2]int64{0, 4})); err != nil {
			t.Fatal(err)
		}
		for _, from := range []int64{0, 2, 3, 7} {
			want, err := m.IndexEntries(ctx, topic, 0, from, 10)
			must(t, "IndexEntries", err)
			var got []store.IndexEntry
			for try := 0; try <= 50; try++ {
				got, err = m.IndexEntriesEventual(ctx, topic, 0, from, 10)
				must(t, "IndexEntriesEventual", err)
				if len(got) == len(want) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			wantEntries(t, fmt.Sprintf("IndexEntriesEventual(%s/0, from %d)", topic, from), got, want)
		}
	}
}
