package consumer_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
)

// commitDuplicate commits the block at base once more under the idempotency key that
// claimed it, as a retried idempotent append does when its first attempt's commit was
// not yet materialised: the new offsets are indexed as a duplicate, which readers skip.
// topic is the topic's store key (store.TopicID).
func commitDuplicate(t *testing.T, s backendtest.Stores, topic, key string, base int64) {
	t.Helper()
	ctx := context.Background()
	es, err := s.Meta.IndexEntries(ctx, topic, 0, base, 1)
	if err != nil || len(es) != 1 {
		t.Fatalf("index entry at %d: %v %v", base, es, err)
	}
	c, err := s.Meta.Sequence(ctx, store.SeqCommit{Entry: es[0], IdempotencyKey: topic + "#" + key, BodyHash: "h"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Materialized {
		c.Entry.Duplicate = true
		if err := s.Meta.PutIndexEntry(ctx, c.Entry); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDuplicateBlocksSkipped: a poll skips the offsets of duplicate commits (issue 7:
// "duplicates are skipped by readers"), so the records a consumer gets are not dense.
// The consumer must step over those offsets, mid-run, at the start of a run and at the
// end of the log, and commit past them, instead of ending every run with "offset
// started out of order" and never moving again (found by the soak, internal/soak).
func TestDuplicateBlocksSkipped(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s, "orders", 2) // 0, 1
		p := int32(0)
		appendTwo := func(key string) int64 {
			recs := []log.Record{{Value: []byte("a"), Partition: &p}, {Value: []byte("b"), Partition: &p}}
			res, err := f.log.Append(ctx, "orders", recs, log.AppendOptions{IdempotencyKey: key})
			if err != nil {
				t.Fatal(err)
			}
			return res[0].Offset
		}
		id := mustTopicID(t, f.log, "orders")
		k := appendTwo("k")               // 2, 3
		commitDuplicate(t, s, id, "k", k) // 4, 5 skipped
		appendTwo("")                     // 6, 7
		commitDuplicate(t, s, id, "k", k) // 8, 9 skipped
		if _, hw, err := f.log.Bounds(ctx, "orders", 0); err != nil || hw != 10 {
			t.Fatalf("high watermark %d (%v), want 10", hw, err)
		}
		for _, tc := range []struct {
			from int64
			want []int64
		}{{0, []int64{0, 1, 2, 3, 6, 7}}, {4, []int64{6, 7}}} {
			t.Run(fmt.Sprintf("from %d", tc.from), func(t *testing.T) {
				grp := fmt.Sprintf("g%d", tc.from)
				if tc.from > 0 {
					f.resetTo(t, grp, tc.from)
				}
				var got seen
				c := f.consumer(t, grp, "m", func(_ context.Context, r consumer.Record) error { got.add(r.Offset); return nil }, nil)
				if _, err := c.Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true}); err != nil {
					t.Fatalf("run from %d: %v", tc.from, err)
				}
				if !slices.Equal(got.get(), tc.want) {
					t.Fatalf("handled %v, want %v", got.get(), tc.want)
				}
				if c := f.committed(t, grp); c != 10 {
					t.Fatalf("committed %d, want 10 (past the trailing duplicate)", c)
				}
			})
		}
	})
}
