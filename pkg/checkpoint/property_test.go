package checkpoint

import (
	"errors"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// model is the obvious specification: a set of started offsets and which are
// done, with the commit position computed by scanning.
type model struct {
	base, end int64
	done      []bool  // done[o-base] for o in [base, end)
	inFlight  []int64 // started, not done, unordered
	lastNext  int64   // Next() seen at the previous check, since the last reset
	starts    int64   // Start calls that succeeded, for the copy bound
}

func (m *model) next() int64 {
	for i, d := range m.done {
		if !d {
			return m.base + int64(i)
		}
	}
	return m.end
}

func (m *model) start(t *rapid.T, tr *Tracker) {
	if err := tr.Start(m.end); err != nil {
		t.Fatalf("Start(%d): %v", m.end, err)
	}
	m.inFlight = append(m.inFlight, m.end)
	m.done = append(m.done, false)
	m.end++
	m.starts++
}

func (m *model) complete(t *rapid.T, tr *Tracker, i int) {
	o := m.inFlight[i]
	if err := tr.Done(o); err != nil {
		t.Fatalf("Done(%d): %v", o, err)
	}
	m.done[o-m.base] = true
	m.inFlight[i] = m.inFlight[len(m.inFlight)-1]
	m.inFlight = m.inFlight[:len(m.inFlight)-1]
}

// For any interleaving of starts, completions in any order, invalid calls and
// resets, the tracker agrees with the model: Next() is the smallest incomplete
// offset (so never beyond it), never decreases between resets, equals the end
// once all started offsets are done, and the ring stays within 4× the window.
func TestPropertyMatchesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		start := rapid.Int64Range(0, 1<<40).Draw(t, "start")
		tr := New(start)
		m := &model{base: start, end: start, lastNext: start}

		t.Repeat(map[string]func(*rapid.T){
			"start": func(t *rapid.T) {
				m.start(t, tr)
			},
			"startMany": func(t *rapid.T) {
				for n := rapid.IntRange(1, 300).Draw(t, "n"); n > 0; n-- {
					m.start(t, tr)
				}
			},
			"done": func(t *rapid.T) {
				if len(m.inFlight) == 0 {
					t.Skip("nothing in flight")
				}
				m.complete(t, tr, rapid.IntRange(0, len(m.inFlight)-1).Draw(t, "i"))
			},
			"doneMany": func(t *rapid.T) {
				if len(m.inFlight) == 0 {
					t.Skip("nothing in flight")
				}
				for n := rapid.IntRange(1, len(m.inFlight)).Draw(t, "n"); n > 0; n-- {
					m.complete(t, tr, rapid.IntRange(0, len(m.inFlight)-1).Draw(t, "i"))
				}
			},
			"startWrong": func(t *rapid.T) {
				o := rapid.Int64Range(m.base-3, m.end+3).Filter(func(o int64) bool { return o != m.end }).Draw(t, "o")
				if err := tr.Start(o); !errors.Is(err, ErrOutOfOrder) {
					t.Fatalf("Start(%d) with %d due: %v, want ErrOutOfOrder", o, m.end, err)
				}
			},
			"doneWrong": func(t *rapid.T) {
				o := rapid.Int64Range(m.base-3, m.end+3).Filter(func(o int64) bool {
					return !slices.Contains(m.inFlight, o)
				}).Draw(t, "o")
				want := ErrAlreadyDone
				if o < m.base || o >= m.end {
					want = ErrNotStarted
				}
				if err := tr.Done(o); !errors.Is(err, want) {
					t.Fatalf("Done(%d): %v, want %v", o, err, want)
				}
			},
			"reset": func(t *rapid.T) {
				s := rapid.Int64Range(0, 1<<40).Draw(t, "start")
				tr.Reset(s)
				*m = model{base: s, end: s, lastNext: s, starts: m.starts}
			},
			"": func(t *rapid.T) {
				got, want := tr.Next(), m.next()
				if got != want {
					t.Fatalf("Next() = %d, want smallest incomplete %d", got, want)
				}
				if got < m.lastNext {
					t.Fatalf("Next() went back from %d to %d", m.lastNext, got)
				}
				m.lastNext = got
				if len(m.inFlight) == 0 && got != m.end {
					t.Fatalf("all done but Next() = %d, want end %d", got, m.end)
				}
				if n := tr.InFlight(); n != len(m.inFlight) {
					t.Fatalf("InFlight() = %d, want %d", n, len(m.inFlight))
				}
				if err := tr.check(); err != nil {
					t.Fatal(err)
				}
				if tr.copied > 4*m.starts {
					t.Fatalf("resizes copied %d bits for %d starts, want ≤ 4 per start", tr.copied, m.starts)
				}
			},
		})
	})
}
