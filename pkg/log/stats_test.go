package log_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
)

// TestPartitionStats: a partition's bytes are the sizes of its own appended blocks (a
// commit shared with another partition counts only this one's), a small entry budget
// answers a lower bound marked incomplete, and bad input is refused.
func TestPartitionStats(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l, _, _ := blocksLog(t, s, 0)
		a, b, c := encode(t, 1, "a", "b", "c"), encode(t, 2, "xyz-long-value"), encode(t, 3, "d")
		// One commit, one object, holding blocks of partitions 0 and 2.
		if _, err := l.AppendBlocks(ctx, "bl", []log.Block{{Partition: 0, Data: a}, {Partition: 2, Data: b}}, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := l.AppendBlocks(ctx, "bl", []log.Block{{Partition: 0, Data: c}}, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			partition      int32
			max            int
			records, bytes int64
			scanned        int
			complete       bool
		}{
			{0, 10, 4, int64(len(a) + len(c)), 2, true},
			{0, 2, 4, int64(len(a) + len(c)), 2, true},
			{0, 1, 3, int64(len(a)), 1, false},
			{2, 10, 1, int64(len(b)), 1, true},
			{1, 10, 0, 0, 0, true},
		} {
			st, err := l.PartitionStats(ctx, "bl", tc.partition, tc.max)
			if err != nil {
				t.Fatal(err)
			}
			want := log.PartitionStats{HighWatermark: tc.records, Records: tc.records, Bytes: tc.bytes, EntriesScanned: tc.scanned, Complete: tc.complete}
			if !tc.complete {
				want.HighWatermark = 4
			}
			if st != want {
				t.Errorf("partition %d max %d: %+v, want %+v", tc.partition, tc.max, st, want)
			}
		}
		if _, err := l.PartitionStats(ctx, "bl", 3, 10); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("partition out of range: %v, want store.ErrNotFound", err)
		}
		if _, err := l.PartitionStats(ctx, "nope", 0, 10); !errors.Is(err, log.ErrTopicNotFound) {
			t.Errorf("unknown topic: %v, want ErrTopicNotFound", err)
		}
		if _, err := l.PartitionStats(ctx, "bl", 0, 0); !errors.Is(err, log.ErrInvalid) {
			t.Errorf("max entries 0: %v, want ErrInvalid", err)
		}
	})
}

// markedMeta answers index entries with Duplicate and Skip set as a shared commit's
// claims and compaction's holes leave them: dup marks the entries at those base
// offsets duplicate, skip gives entries skip runs.
type markedMeta struct {
	store.MetaStore
	dup  map[int64]bool
	skip map[int64]string
}

func (m *markedMeta) IndexEntries(ctx context.Context, topic string, partition int32, from int64, limit int) ([]store.IndexEntry, error) {
	es, err := m.MetaStore.IndexEntries(ctx, topic, partition, from, limit)
	for i := range es {
		es[i].Duplicate = m.dup[es[i].BaseOffset]
		es[i].Skip = m.skip[es[i].BaseOffset]
	}
	return es, err
}

// TestPartitionStatsCountsReadBlocksOnce: a duplicate entry counts neither bytes nor
// records; an entry with skip runs counts its whole stored range (a poll fetches it
// whole) but not the skipped offsets.
func TestPartitionStatsCountsReadBlocksOnce(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		meta := &markedMeta{MetaStore: s.Meta, dup: map[int64]bool{3: true}, skip: map[int64]string{0: "1+1"}}
		l, err := log.New(log.Config{Objects: s.Objects, Meta: meta})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.CreateTopic(ctx, "bl", 1, time.Hour); err != nil {
			t.Fatal(err)
		}
		a, b, c := encode(t, 1, "a", "b", "c"), encode(t, 2, "d"), encode(t, 3, "e", "f")
		for _, blk := range [][]byte{a, b, c} {
			if _, err := l.AppendBlocks(ctx, "bl", []log.Block{{Partition: 0, Data: blk}}, log.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		st, err := l.PartitionStats(ctx, "bl", 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		want := log.PartitionStats{HighWatermark: 6, Records: 2 + 2, Bytes: int64(len(a) + len(c)), EntriesScanned: 3, Complete: true}
		if st != want {
			t.Errorf("stats %+v, want %+v", st, want)
		}
	})
}
