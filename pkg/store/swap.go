package store

import (
	"context"
	"fmt"
)

// MaxSwapEntries bounds the entries of one SwapIndexEntries call (old and new together):
// DynamoDB's transaction holds at most 100 items.
const MaxSwapEntries = 100

// IndexSwapper replaces a run of a partition's index entries with others covering the
// same offsets: compaction's commit of a rewritten layout.
type IndexSwapper interface {
	// SwapIndexEntries must, in one atomic step, replace the entries old — consecutive
	// entries of (topic, partition), as read — with new, which must tile exactly the
	// offsets old tiles, only if every entry of old is still stored as read (same
	// BaseOffset, Count, ObjectKey, ByteOffset and ByteLength); otherwise it must return
	// an error wrapping ErrConflict and change nothing. A reader sees the old entries or
	// the new ones, never a mix. Bad input (not tiling, more than MaxSwapEntries entries
	// together, another partition) is an error that changes nothing.
	SwapIndexEntries(ctx context.Context, topic string, partition int32, old, new []IndexEntry) error
}

// CheckSwap validates a SwapIndexEntries call's arguments: old and new non-empty, of the
// partition, each tiling its offsets without a gap, the same range, and at most
// MaxSwapEntries together.
func CheckSwap(topic string, partition int32, old, new []IndexEntry) error {
	if len(old) == 0 || len(new) == 0 {
		return fmt.Errorf("store: swap of %s/%d: no entries", topic, partition)
	}
	if len(old)+len(new) > MaxSwapEntries {
		return fmt.Errorf("store: swap of %s/%d: %d entries, at most %d", topic, partition, len(old)+len(new), MaxSwapEntries)
	}
	for _, es := range [][]IndexEntry{old, new} {
		for i, e := range es {
			if e.Topic != topic || e.Partition != partition || e.Count < 1 {
				return fmt.Errorf("store: swap of %s/%d: entry %s/%d@%d (count %d) does not belong", topic, partition, e.Topic, e.Partition, e.BaseOffset, e.Count)
			}
			if i > 0 && es[i-1].End() != e.BaseOffset {
				return fmt.Errorf("store: swap of %s/%d: entries do not tile at %d", topic, partition, e.BaseOffset)
			}
		}
	}
	if old[0].BaseOffset != new[0].BaseOffset || old[len(old)-1].End() != new[len(new)-1].End() {
		return fmt.Errorf("store: swap of %s/%d: new entries cover [%d, %d), old [%d, %d)", topic, partition,
			new[0].BaseOffset, new[len(new)-1].End(), old[0].BaseOffset, old[len(old)-1].End())
	}
	return nil
}

// SameBlock reports whether a and b are the same stored entry for SwapIndexEntries'
// condition: the same offsets and the same bytes of the same object.
func SameBlock(a, b IndexEntry) bool {
	return a.BaseOffset == b.BaseOffset && a.Count == b.Count && a.ObjectKey == b.ObjectKey &&
		a.ByteOffset == b.ByteOffset && a.ByteLength == b.ByteLength
}
