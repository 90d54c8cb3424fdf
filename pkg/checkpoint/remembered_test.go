package checkpoint

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestRememberedSkippedAfterRestart is the brief's scenario with remembered acks: 10
// and 11 run concurrently, 11 finishes first, the consumer commits 10 with [11, 12)
// completed and crashes before 10 finishes. The next owner redoes 10 and skips 11.
func TestRememberedSkippedAfterRestart(t *testing.T) {
	tr := New(10)
	mustNil(t, tr.Start(10))
	mustNil(t, tr.Start(11))
	mustNil(t, tr.Done(11))
	next, completed := tr.Checkpoint(64)
	if next != 10 || !slices.Equal(completed, []Range{{11, 12}}) {
		t.Fatalf("Checkpoint = %d, %v; want 10, [{11 12}]", next, completed)
	}

	// Crash; the next owner starts from the commit.
	again := New(next)
	again.Remember(completed)
	if rem, err := again.Begin(10); err != nil || rem {
		t.Fatalf("Begin(10) = %v, %v; want a record to handle", rem, err)
	}
	if rem, err := again.Begin(11); err != nil || !rem {
		t.Fatalf("Begin(11) = %v, %v; want remembered", rem, err)
	}
	if got := again.Next(); got != 10 {
		t.Fatalf("Next = %d before 10 is done, want 10", got)
	}
	mustNil(t, again.Done(10))
	if got := again.Next(); got != 12 {
		t.Fatalf("Next = %d once 10 is done, want 12", got)
	}
}

func TestCheckpointRanges(t *testing.T) {
	for _, tc := range []struct {
		name       string
		start      int64
		started    int64 // offsets [start, start+started) are started
		done       []int64
		remembered []Range
		limit      int
		wantNext   int64
		want       []Range
	}{
		{name: "nothing done", start: 5, started: 3, limit: 64, wantNext: 5},
		{name: "prefix done", start: 5, started: 3, done: []int64{5, 6}, limit: 64, wantNext: 7},
		{name: "gaps", start: 0, started: 10, done: []int64{1, 2, 4, 7, 8, 9}, limit: 64, wantNext: 0,
			want: []Range{{1, 3}, {4, 5}, {7, 10}}},
		{name: "limit keeps the lowest", start: 0, started: 10, done: []int64{1, 2, 4, 7, 8, 9}, limit: 2, wantNext: 0,
			want: []Range{{1, 3}, {4, 5}}},
		{name: "across ring words", start: 60, started: 200, done: []int64{63, 64, 65, 127, 128, 250}, limit: 64, wantNext: 60,
			want: []Range{{63, 66}, {127, 129}, {250, 251}}},
		{name: "remembered beyond the window", start: 0, started: 3, done: []int64{1}, remembered: []Range{{5, 7}, {9, 10}},
			limit: 64, wantNext: 0, want: []Range{{1, 2}, {5, 7}, {9, 10}}},
		{name: "remembered touching the window's done run merges", start: 0, started: 3, done: []int64{2},
			remembered: []Range{{3, 6}}, limit: 64, wantNext: 0, want: []Range{{2, 6}}},
		{name: "remembered clipped by starts", start: 0, started: 4, done: []int64{0}, remembered: []Range{{2, 6}},
			limit: 64, wantNext: 1, want: []Range{{4, 6}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := New(tc.start)
			// Remember first (as a new owner does), then start plainly: started offsets
			// are handed out, so only the remembered part beyond them stays.
			tr.Remember(tc.remembered)
			for o := tc.start; o < tc.start+tc.started; o++ {
				mustNil(t, tr.Start(o))
			}
			for _, o := range tc.done {
				mustNil(t, tr.Done(o))
			}
			next, got := tr.Checkpoint(tc.limit)
			if next != tc.wantNext || !slices.Equal(got, tc.want) {
				t.Fatalf("Checkpoint(%d) = %d, %v; want %d, %v", tc.limit, next, got, tc.wantNext, tc.want)
			}
		})
	}
}

// TestPropertyRememberedNeverSkipsUnfinished: over any number of lives — starts,
// completions in any order, a checkpoint (with at most a few ranges) and a crash that
// loses everything in flight — an offset a new life skips as remembered was finished
// in an earlier life, every offset below a checkpoint was finished, and every offset
// not finished is handed out again.
func TestPropertyRememberedNeverSkipsUnfinished(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		finished := map[int64]bool{}
		next := rapid.Int64Range(0, 1<<40).Draw(t, "start")
		var completed []Range
		limit := rapid.IntRange(1, 4).Draw(t, "limit")
		lives := rapid.IntRange(1, 6).Draw(t, "lives")
		for life := 0; life < lives; life++ {
			tr := New(next)
			tr.Remember(completed)
			var inFlight []int64
			end := next
			steps := rapid.IntRange(0, 60).Draw(t, "steps")
			for i := 0; i < steps; i++ {
				if len(inFlight) == 0 || rapid.Bool().Draw(t, "start?") {
					rem, err := tr.Begin(end)
					if err != nil {
						t.Fatalf("Begin(%d): %v", end, err)
					}
					if rem && !finished[end] {
						t.Fatalf("life %d skipped offset %d, which no life finished", life, end)
					}
					if !rem {
						inFlight = append(inFlight, end)
					}
					end++
					continue
				}
				j := rapid.IntRange(0, len(inFlight)-1).Draw(t, "done")
				o := inFlight[j]
				inFlight = slices.Delete(inFlight, j, j+1)
				if err := tr.Done(o); err != nil {
					t.Fatalf("Done(%d): %v", o, err)
				}
				finished[o] = true
			}
			from := next
			next, completed = tr.Checkpoint(limit)
			for o := from; o < next; o++ {
				if !finished[o] {
					t.Fatalf("checkpoint %d passes offset %d, which is not finished", next, o)
				}
			}
			for _, r := range completed {
				if r.From <= next {
					t.Fatalf("completed range %v not above the checkpoint %d", r, next)
				}
				for o := r.From; o < r.To; o++ {
					if !finished[o] {
						t.Fatalf("completed range %v holds offset %d, which is not finished", r, o)
					}
				}
			}
			if len(completed) > limit {
				t.Fatalf("%d completed ranges, limit %d", len(completed), limit)
			}
			// The crash: whatever is in flight is lost, unfinished.
		}
	})
}

func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
