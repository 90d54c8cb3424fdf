package local_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"pgregory.net/rapid"

	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/store/local"
	"github.com/stratalog/strata/pkg/store/storetest"
)

// TestTopicCommitDenseProperty (rapid): any mix of multi-partition batches — several
// commits per partition, some batches refused whole for a commit of no records — sent
// concurrently through SequenceBatch leaves every partition's offsets dense: the
// accepted commits tile [0, high watermark) with no gap and no overlap, a refused batch
// moves no partition, and a partition's commits of one batch are consecutive in batch
// order.
func TestTopicCommitDenseProperty(t *testing.T) {
	m, err := local.OpenMetaStore(filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		topic := storetest.TopicCommitID(t)
		const partitions = 4
		type batch struct {
			cs  []store.SeqCommit
			bad bool
		}
		batches := make([]batch, rapid.IntRange(1, 10).Draw(rt, "batches"))
		for i := range batches {
			b := &batches[i]
			b.bad = rapid.IntRange(0, 4).Draw(rt, "bad") == 0
			n := rapid.IntRange(1, 6).Draw(rt, "commits")
			off := int64(0)
			for j := range n {
				count := int64(rapid.IntRange(1, 5).Draw(rt, "count"))
				if b.bad && j == n-1 {
					count = 0
				}
				e := store.IndexEntry{Topic: topic, Partition: int32(rapid.IntRange(0, partitions-1).Draw(rt, "partition")),
					Count: count, ObjectKey: fmt.Sprintf("v1/o/%d", i), ByteOffset: off, ByteLength: 10}
				off += 10
				b.cs = append(b.cs, store.SeqCommit{Entry: e})
			}
		}
		outs := make([][]store.SeqCommit, len(batches))
		errs := make([][]error, len(batches))
		var wg sync.WaitGroup
		for i := range batches {
			wg.Go(func() { outs[i], errs[i] = m.SequenceBatch(ctx, batches[i].cs) })
		}
		wg.Wait()
		owner := map[int32]map[int64]int{} // partition → offset → batch
		for i, b := range batches {
			for j, err := range errs[i] {
				if b.bad != (err != nil) {
					rt.Fatalf("batch %d commit %d: error %v, bad batch %v", i, j, err, b.bad)
				}
			}
			if b.bad {
				continue
			}
			next := map[int32]int64{}
			for j, c := range outs[i] {
				p := c.Entry.Partition
				if prev, ok := next[p]; ok && c.Entry.BaseOffset != prev {
					rt.Fatalf("batch %d commit %d on %d at %d, want %d (after the batch's previous commit there)", i, j, p, c.Entry.BaseOffset, prev)
				}
				next[p] = c.Entry.End()
				if owner[p] == nil {
					owner[p] = map[int64]int{}
				}
				for o := c.Entry.BaseOffset; o < c.Entry.End(); o++ {
					if w, taken := owner[p][o]; taken {
						rt.Fatalf("offset %d/%d assigned to batches %d and %d", p, o, w, i)
					}
					owner[p][o] = i
				}
			}
		}
		for p := range int32(partitions) {
			st, err := m.Sequencer(ctx, topic, p)
			if err != nil {
				rt.Fatal(err)
			}
			if int64(len(owner[p])) != st.NextOffset {
				rt.Fatalf("partition %d: %d offsets assigned, high watermark %d", p, len(owner[p]), st.NextOffset)
			}
			for o := range st.NextOffset {
				if _, ok := owner[p][o]; !ok {
					rt.Fatalf("partition %d: offset %d below the high watermark %d belongs to no commit", p, o, st.NextOffset)
				}
			}
			es, err := m.IndexEntries(ctx, topic, p, 0, 1000)
			if err != nil {
				rt.Fatal(err)
			}
			if err := storetest.CheckTiling(es); err != nil || (len(es) > 0 && (es[0].BaseOffset != 0 || es[len(es)-1].End() != st.NextOffset)) {
				rt.Fatalf("partition %d: entries do not tile [0, %d): %v", p, st.NextOffset, err)
			}
		}
	})
}
