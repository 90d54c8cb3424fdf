package checkpoint

import (
	"cmp"
	"slices"
)

// Range is the half-open run of offsets [From, To).
type Range struct {
	From, To int64
}

// Remember records runs of offsets not started yet that were completed before — by an
// earlier owner of the partition, as its last commit says — so that Begin completes
// them at once instead of handing them out again. The parts of rs below the next offset
// to start are ignored (they are started or done already); rs need not be sorted.
func (t *Tracker) Remember(rs []Range) {
	t.mu.Lock()
	defer t.mu.Unlock()
	all := slices.Clone(t.remembered)
	for _, r := range rs {
		r.From = max(r.From, t.end)
		if r.From < r.To {
			all = append(all, r)
		}
	}
	slices.SortFunc(all, func(a, b Range) int { return cmp.Compare(a.From, b.From) })
	t.remembered = t.remembered[:0]
	for _, r := range all {
		if n := len(t.remembered); n > 0 && r.From <= t.remembered[n-1].To {
			t.remembered[n-1].To = max(t.remembered[n-1].To, r.To)
			continue
		}
		t.remembered = append(t.remembered, r)
	}
}

// Begin starts offset as Start does; when offset was remembered as completed
// (Remember) it also completes it at once and reports true: the caller must not hand
// it to a worker.
func (t *Tracker) Begin(offset int64) (remembered bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	remembered = len(t.remembered) > 0 && t.remembered[0].From <= offset && offset < t.remembered[0].To
	if err := t.start(offset); err != nil {
		return false, err
	}
	if !remembered {
		return false, nil
	}
	return true, t.done(offset)
}

// Completions counts completions so far (Done, and Begin of a remembered offset): a
// change means Checkpoint's answer may have changed.
func (t *Tracker) Completions() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.completions
}

// Checkpoint returns, read together, the offset to commit and the runs of completed
// offsets above it — done in the window and remembered beyond it — at most limit of
// them, lowest first. The offset is Next, or beyond it when everything started is done
// and a remembered run begins where the window ends. Every offset in them is completed, so a later owner may
// skip them; a run left out beyond the limit is merely redone.
func (t *Tracker) Checkpoint(limit int) (next int64, completed []Range) {
	t.mu.Lock()
	defer t.mu.Unlock()
	add := func(r Range) bool {
		if n := len(completed); n > 0 && completed[n-1].To == r.From {
			completed[n-1].To = r.To
			return true
		}
		if len(completed) == limit {
			return false
		}
		completed = append(completed, r)
		return true
	}
	mask := uint64(len(t.words)*64 - 1)
	inRun, from := false, int64(0)
	for o := t.next; o < t.end; {
		pos := uint64(o) & mask
		w := t.words[pos>>6] >> (pos & 63)
		if !inRun && w == 0 {
			o += int64(64 - pos&63) // nothing done in the rest of this word
			continue
		}
		done := w&1 != 0
		switch {
		case done && !inRun:
			inRun, from = true, o
		case !done && inRun:
			inRun = false
			if !add(Range{from, o}) {
				return t.next, completed
			}
		}
		o++
	}
	if inRun && !add(Range{from, t.end}) {
		return t.next, completed
	}
	next = t.next
	for i, r := range t.remembered {
		if i == 0 && r.From == next {
			// Caught up with a remembered run not polled yet: it is done, so the
			// position passes it (Next catches up when Begin reaches it).
			next = r.To
			continue
		}
		if !add(r) {
			break
		}
	}
	return next, completed
}
