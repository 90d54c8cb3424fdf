package wire

import (
	"errors"
	"fmt"
)

// MaxCompletedRanges bounds the "completed" ranges of one commit (docs/API.md).
const MaxCompletedRanges = 64

// OffsetRange is a half-open offset range [from, to), in JSON the array [from, to]: a run of
// offsets above a commit's next_offset that the consumer has already handled.
type OffsetRange [2]int64

// ErrBadCompleted is what CheckCompleted's errors wrap.
var ErrBadCompleted = errors.New("bad completed ranges")

// CheckCompleted reports whether rs may be stored with a commit of next: at most
// MaxCompletedRanges ranges, each non-empty, sorted, neither overlapping nor touching
// (touching ranges are one range), and all above next (next itself is not done, or the
// commit would be past it).
func CheckCompleted(next int64, rs []OffsetRange) error {
	if len(rs) > MaxCompletedRanges {
		return fmt.Errorf("%w: %d ranges, at most %d", ErrBadCompleted, len(rs), MaxCompletedRanges)
	}
	prev := next
	for i, r := range rs {
		switch {
		case r[0] >= r[1]:
			return fmt.Errorf("%w: range %d [%d, %d) is empty", ErrBadCompleted, i, r[0], r[1])
		case i == 0 && r[0] <= next:
			return fmt.Errorf("%w: range %d [%d, %d) does not start above next_offset %d", ErrBadCompleted, i, r[0], r[1], next)
		case i > 0 && r[0] <= prev:
			return fmt.Errorf("%w: range %d [%d, %d) overlaps, touches or precedes the one before it", ErrBadCompleted, i, r[0], r[1])
		}
		prev = r[1]
	}
	return nil
}
