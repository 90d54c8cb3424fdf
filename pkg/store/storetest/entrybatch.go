package storetest

import (
	"context"
	"testing"

	"github.com/stratalog/strata/pkg/store"
)

// testEntryBatch: an entry's batch number round-trips through the index (absent reads
// as 0), and on a topic commit topic every commit's result and sequencer state carries
// its batch's number on its entry too, which the entry written for it keeps: a producer
// request's retry tells the batches committed since its first send by them.
func testEntryBatch(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic := TopicCommitID(t)
	e := entry(topic, 0, 0, 3)
	e.Batch = 1<<40 + 3
	none := entry(topic, 0, 3, 2)
	putEntries(ctx, t, m, e, none)
	wantIndexEntries(ctx, t, m, topic, 0, 0, 10, []store.IndexEntry{e, none})

	var last int64
	for i, object := range []string{"v1/o/a", "v1/o/b"} {
		out := commitBatch(ctx, t, m, batchOf(topic, object, [2]int64{1, 2}, [2]int64{2, 1}))
		for _, c := range out {
			if c.Batch <= last || c.Entry.Batch != c.Batch {
				t.Fatalf("batch %d: commit %+v of batch %d carries batch %d on its entry, want the batch's number above %d",
					i, c.Entry, c.Batch, c.Entry.Batch, last)
			}
			got, err := m.IndexEntries(ctx, topic, c.Entry.Partition, c.Entry.BaseOffset, 1)
			must(t, "IndexEntries", err)
			if len(got) != 1 || got[0].Batch != c.Batch {
				t.Fatalf("batch %d: the entry written for commit %+v reads back as %+v, want batch %d", i, c.Entry, got, c.Batch)
			}
			st, err := m.Sequencer(ctx, topic, c.Entry.Partition)
			must(t, "Sequencer", err)
			if st.Last == nil || st.Last.Entry.Batch != st.Last.Batch || st.Last.Batch != c.Batch {
				t.Fatalf("batch %d: partition %d's state %+v does not carry batch %d on its last entry", i, c.Entry.Partition, st.Last, c.Batch)
			}
		}
		last = out[0].Batch
	}
}
