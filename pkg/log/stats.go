package log

import (
	"context"
	"errors"
	"fmt"

	"github.com/stratalog/strata/pkg/store"
)

// statsPage is how many index entries one read of PartitionStats asks for: a scan is
// one pass over the partition's entries, so pages larger than a poll's keep it cheap.
const statsPage = 500

// PartitionStats is what a bounded scan of a partition's index entries from its log
// start found. Bytes counts the stored size of every block a reader would read (whole
// entry ranges, the way a poll fetches them); Records counts the offsets readers do not
// skip. When Complete is false the scan stopped early (its entry budget, or an unindexed
// commit) and both are lower bounds.
type PartitionStats struct {
	LogStart, HighWatermark int64
	Records, Bytes          int64
	EntriesScanned          int
	Complete                bool
}

// PartitionStats scans at most maxEntries (>= 1) index entries of the partition from
// its log start. Duplicate entries (another commit claimed their records, or a hole
// compaction left) store no bytes of their own and are not counted. An entry of a group
// commit shared by partitions is one partition's blocks, so only this partition's bytes
// count. A partition the topic does not have matches store.ErrNotFound.
func (l *Log) PartitionStats(ctx context.Context, topic string, partition int32, maxEntries int) (PartitionStats, error) {
	if maxEntries < 1 {
		return PartitionStats{}, invalidf("max entries %d must be at least 1", maxEntries)
	}
	t, err := l.checkPartition(ctx, topic, partition)
	if err != nil {
		if partition >= 0 && errors.Is(err, ErrInvalid) {
			return PartitionStats{}, fmt.Errorf("log: topic %q has no partition %d (%w)", topic, partition, store.ErrNotFound)
		}
		return PartitionStats{}, err
	}
	start, hw, err := l.bounds(ctx, t.ID(), partition)
	if err != nil {
		return PartitionStats{}, err
	}
	st := PartitionStats{LogStart: start, HighWatermark: hw, Complete: true}
	next := start
	for next < hw {
		if st.EntriesScanned >= maxEntries {
			st.Complete = false
			return st, nil
		}
		page, err := l.meta.IndexEntries(ctx, t.ID(), partition, next, min(statsPage, maxEntries-st.EntriesScanned+1))
		if err != nil {
			return PartitionStats{}, storeErr(err)
		}
		from := next
		for _, e := range page {
			if e.End() <= next {
				continue // the entry before next (the store answers the one containing it)
			}
			if e.BaseOffset >= hw {
				break
			}
			if st.EntriesScanned >= maxEntries {
				st.Complete = false
				return st, nil
			}
			if e.BaseOffset > next {
				st.Complete = false // [next, e.BaseOffset) is not indexed yet
			}
			st.EntriesScanned++
			if !e.Duplicate {
				n, err := readable(e, max(next, e.BaseOffset))
				if err != nil {
					return PartitionStats{}, err
				}
				st.Records += n
				st.Bytes += e.ByteLength
			}
			next = e.End()
		}
		if next == from {
			st.Complete = false // no entry past next: the rest is unindexed
			return st, nil
		}
	}
	return st, nil
}

// readable counts the offsets of e from from on that readers do not skip.
func readable(e store.IndexEntry, from int64) (int64, error) {
	runs, err := e.SkipRanges()
	if err != nil {
		return 0, fmt.Errorf("%w: entry @%d: %w", ErrCorrupt, e.BaseOffset, err)
	}
	n := e.End() - from
	for _, s := range runs {
		lo, hi := max(e.BaseOffset+s.Offset, from), min(e.BaseOffset+s.Offset+s.Count, e.End())
		if hi > lo {
			n -= hi - lo
		}
	}
	return n, nil
}
