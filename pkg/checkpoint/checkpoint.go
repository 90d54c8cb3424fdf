// Package checkpoint tracks which offsets of one partition a consumer has
// finished when records are handled in parallel, and yields the offset that is
// safe to commit: the end of the contiguous completed prefix.
//
// Completing offset 11 before 10 must not move the checkpoint past 10, or a
// crash before 10 finishes would skip it. With next=10 and completed={11},
// Next() stays 10; once 10 completes it jumps to 12.
//
// The tracker keeps one done-bit per offset in the window [Next, last started]
// in a power-of-two ring of 64-bit words. The ring doubles only when the window
// outgrows it and shrinks when the window falls below a quarter of it, so its
// capacity never exceeds max(64, 4×window) bits, independent of how far the
// log has moved. Each Start and Done is O(1) amortised: advancing the prefix
// clears up to 64 completed offsets per step, and every resize copies only the
// current window.
package checkpoint

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync"
)

// Sentinel errors; the errors returned by Tracker wrap one of them with the
// offending offset, so callers branch with errors.Is.
var (
	// ErrOutOfOrder: Start was given an offset other than the next one due;
	// offsets must be started densely and in increasing order.
	ErrOutOfOrder = errors.New("checkpoint: offset started out of order")
	// ErrNotStarted: Done was given an offset that was not started since the
	// last New or Reset.
	ErrNotStarted = errors.New("checkpoint: offset not started")
	// ErrAlreadyDone: Done was given an offset that was already completed.
	ErrAlreadyDone = errors.New("checkpoint: offset already done")
	// ErrOffsetOverflow: Start(math.MaxInt64) has no representable next offset.
	ErrOffsetOverflow = errors.New("checkpoint: offset overflows int64")
)

// minWords is the smallest ring (64 done-bits), kept even when nothing is in
// flight so that a steady small window never reallocates.
const minWords = 1

// Tracker is the contiguous-completion tracker of one partition. All methods
// are safe for concurrent use (an uncontended mutex costs a few nanoseconds,
// which is small next to handling a record), so workers may call Done directly
// while the poll loop calls Start. The zero value is a tracker starting at 0.
type Tracker struct {
	mu sync.Mutex
	// remembered are runs of offsets at or above end that an earlier owner completed
	// (Remember), sorted and disjoint; Begin completes them as they are reached.
	remembered []Range
	// completions counts Done and remembered Begin calls, so a caller can tell whether
	// anything completed since it last looked.
	completions int64
	base        int64    // first offset of this incarnation (New or Reset)
	next        int64    // smallest incomplete offset; the commit position
	end         int64    // next offset to be started; window is [next, end)
	inFlight    int      // started and not done
	words       []uint64 // ring of done-bits; offset o lives at bit o mod (64·len)
	copied      int64    // bits moved by resizes, to verify the amortised bound in tests
}

// New returns a tracker whose first offset to start, and commit position, is
// start (normally the group's committed offset).
func New(start int64) *Tracker {
	return &Tracker{base: start, next: start, end: start, words: make([]uint64, minWords)}
}

// Start records that offset was dispatched to a worker. It must be the offset
// after the previously started one (or the tracker's start); anything else is
// ErrOutOfOrder and changes nothing.
func (t *Tracker) Start(offset int64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.start(offset)
}

func (t *Tracker) start(offset int64) error {
	if offset != t.end {
		return fmt.Errorf("start %d, want %d: %w", offset, t.end, ErrOutOfOrder)
	}
	if offset == math.MaxInt64 {
		return fmt.Errorf("start %d: %w", offset, ErrOffsetOverflow)
	}
	if t.end-t.next >= int64(len(t.words))*64 {
		t.resize(max(minWords, 2*len(t.words)))
	}
	t.end++
	t.inFlight++
	for len(t.remembered) > 0 && t.remembered[0].To <= t.end {
		t.remembered = t.remembered[1:]
	}
	if len(t.remembered) > 0 && t.remembered[0].From < t.end {
		t.remembered[0].From = t.end
	}
	return nil
}

// Skip starts and completes at once every offset from the next one due up to to
// (exclusive): offsets the log holds no record for that a reader must pass, such as an
// idempotent append's duplicate commit. A to at or below the next offset due does nothing.
func (t *Tracker) Skip(to int64) error {
	for {
		t.mu.Lock()
		o := t.end
		t.mu.Unlock()
		if o >= to {
			return nil
		}
		if err := t.Start(o); err != nil {
			return err
		}
		if err := t.Done(o); err != nil {
			return err
		}
	}
}

// Done records that offset was completed, in any order. An offset not started
// since the last New or Reset is ErrNotStarted; one already completed is
// ErrAlreadyDone. Neither changes anything.
func (t *Tracker) Done(offset int64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.done(offset)
}

func (t *Tracker) done(offset int64) error {
	if offset < t.base || offset >= t.end {
		return fmt.Errorf("done %d, started [%d, %d): %w", offset, t.base, t.end, ErrNotStarted)
	}
	if offset < t.next {
		return fmt.Errorf("done %d, committable up to %d: %w", offset, t.next, ErrAlreadyDone)
	}
	i, b := t.slot(offset)
	if t.words[i]&b != 0 {
		return fmt.Errorf("done %d: %w", offset, ErrAlreadyDone)
	}
	t.inFlight--
	t.completions++
	if offset != t.next {
		t.words[i] |= b
		return nil
	}
	t.next++
	t.advance()
	if w := t.end - t.next; len(t.words) > minWords && w*4 < int64(len(t.words))*64 {
		t.resize(wordsFor(w))
	}
	return nil
}

// Next returns the offset to commit: the smallest offset not yet completed, or
// the next one to be started when nothing is in flight.
func (t *Tracker) Next() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.next
}

// InFlight returns how many offsets were started and not yet completed.
func (t *Tracker) InFlight() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.inFlight
}

// Reset forgets all state and restarts at start, as after a partition is
// reassigned or the consumer seeks. A completion from before the reset is
// ErrNotStarted if its offset is outside the new run, but is indistinguishable
// from a new one inside it, so the caller must drop stale completions (e.g. by
// generation) rather than rely on the tracker to reject them.
func (t *Tracker) Reset(start int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.base, t.next, t.end, t.inFlight = start, start, start, 0
	t.remembered = nil
	if len(t.words) == minWords {
		clear(t.words)
	} else {
		t.words = make([]uint64, minWords)
	}
}

// slot returns the word index and bit mask of offset in the ring.
func (t *Tracker) slot(offset int64) (int, uint64) {
	pos := uint64(offset) & uint64(len(t.words)*64-1)
	return int(pos >> 6), 1 << (pos & 63)
}

// advance moves next over completed offsets, clearing their bits, up to 64 per
// step. Bits outside [next, end) are always zero, and next's own bit is zero,
// so the scan stops at the first incomplete offset or at end.
func (t *Tracker) advance() {
	mask := uint64(len(t.words)*64 - 1)
	for t.next < t.end {
		pos := uint64(t.next) & mask
		i, shift := pos>>6, pos&63
		// The shift fills the top with zeros, so run stops at this word's end.
		run := min(int64(bits.TrailingZeros64(^(t.words[i] >> shift))), t.end-t.next)
		if run == 0 {
			return
		}
		if run == 64 {
			t.words[i] = 0
		} else {
			t.words[i] &^= (1<<uint64(run) - 1) << shift
		}
		t.next += run
	}
}

// resize moves the done-bits of the window into a ring of n words.
func (t *Tracker) resize(n int) {
	old, oldMask := t.words, uint64(len(t.words)*64-1)
	t.words = make([]uint64, n)
	for o := t.next; o < t.end; o++ {
		p := uint64(o) & oldMask
		if old[p>>6]&(1<<(p&63)) != 0 {
			i, b := t.slot(o)
			t.words[i] |= b
		}
	}
	t.copied += t.end - t.next
}

// wordsFor returns the ring size, a power of two words, holding 2×window bits.
func wordsFor(window int64) int {
	n := minWords
	for int64(n)*64 < 2*window {
		n *= 2
	}
	return n
}
