package checkpoint

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"sync"
	"testing"
)

// capBits is the ring's capacity in done-bits.
func (t *Tracker) capBits() int64 { return int64(len(t.words)) * 64 }

// check verifies the representation: the commit position's bit and every bit
// outside [next, end) are zero, the set bits inside are exactly the completed
// offsets past next, and the ring is within max(64, 4×window) bits.
func (t *Tracker) check() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	window := t.end - t.next
	if window < 0 || t.next < t.base {
		return fmt.Errorf("base %d next %d end %d out of order", t.base, t.next, t.end)
	}
	if c := t.capBits(); c > max(64, 4*window) {
		return fmt.Errorf("capacity %d bits exceeds max(64, 4×window %d)", c, window)
	}
	if window > 0 {
		if i, b := t.slot(t.next); t.words[i]&b != 0 {
			return fmt.Errorf("bit of commit position %d is set", t.next)
		}
	}
	set := int64(0)
	for _, w := range t.words {
		set += int64(bits.OnesCount64(w))
	}
	if done := window - int64(t.inFlight); set != done {
		return fmt.Errorf("%d bits set, want %d completed past next (window %d, in flight %d)", set, done, window, t.inFlight)
	}
	return nil
}

func mustStart(t *testing.T, tr *Tracker, offsets ...int64) {
	t.Helper()
	for _, o := range offsets {
		if err := tr.Start(o); err != nil {
			t.Fatalf("Start(%d): %v", o, err)
		}
	}
}

func mustDone(t *testing.T, tr *Tracker, offsets ...int64) {
	t.Helper()
	for _, o := range offsets {
		if err := tr.Done(o); err != nil {
			t.Fatalf("Done(%d): %v", o, err)
		}
	}
}

func wantNext(t *testing.T, tr *Tracker, want int64) {
	t.Helper()
	if got := tr.Next(); got != want {
		t.Fatalf("Next() = %d, want %d", got, want)
	}
	if err := tr.check(); err != nil {
		t.Fatal(err)
	}
}

// The design brief's scenario: 10 and 11 run concurrently, 11 finishes first,
// and the process crashes before 10 finishes. The commit must not pass 10.
func TestOffsets10And11FinishOutOfOrderThenCrash(t *testing.T) {
	tr := New(10)
	mustStart(t, tr, 10, 11)
	mustDone(t, tr, 11)
	wantNext(t, tr, 10)
	if got := tr.InFlight(); got != 1 {
		t.Fatalf("InFlight() = %d, want 1", got)
	}

	// Crash: all that survives is the committed position. The replacement
	// consumer resumes there, so both 10 and 11 are handed out again.
	committed := tr.Next()
	resumed := New(committed)
	var seen []int64
	for o := resumed.Next(); o < 12; o++ {
		mustStart(t, resumed, o)
		seen = append(seen, o)
	}
	if len(seen) != 2 || seen[0] != 10 || seen[1] != 11 {
		t.Fatalf("after crash, redelivered %v, want [10 11]", seen)
	}

	// Without the crash, 10 finishing makes 12 committable.
	mustDone(t, tr, 10)
	wantNext(t, tr, 12)
	if got := tr.InFlight(); got != 0 {
		t.Fatalf("InFlight() = %d, want 0", got)
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name    string
		start   int64
		started int   // offsets start, start+1, … started before the call
		done    []int // of those, indices completed before the call
		call    func(*Tracker) error
		want    error
	}{
		{"start skips one", 10, 2, nil, func(tr *Tracker) error { return tr.Start(13) }, ErrOutOfOrder},
		{"start repeats last", 10, 2, nil, func(tr *Tracker) error { return tr.Start(11) }, ErrOutOfOrder},
		{"start below tracker start", 10, 0, nil, func(tr *Tracker) error { return tr.Start(9) }, ErrOutOfOrder},
		{"start at max int64", math.MaxInt64, 0, nil, func(tr *Tracker) error { return tr.Start(math.MaxInt64) }, ErrOffsetOverflow},
		{"done never started", 10, 2, nil, func(tr *Tracker) error { return tr.Done(12) }, ErrNotStarted},
		{"done on fresh tracker", 10, 0, nil, func(tr *Tracker) error { return tr.Done(10) }, ErrNotStarted},
		{"done below tracker start", 10, 2, nil, func(tr *Tracker) error { return tr.Done(9) }, ErrNotStarted},
		{"done twice out of order", 10, 3, []int{1}, func(tr *Tracker) error { return tr.Done(11) }, ErrAlreadyDone},
		{"done twice after commit", 10, 3, []int{0}, func(tr *Tracker) error { return tr.Done(10) }, ErrAlreadyDone},
		{"done twice after prefix jump", 10, 3, []int{1, 0}, func(tr *Tracker) error { return tr.Done(11) }, ErrAlreadyDone},
		{"valid start", 10, 2, nil, func(tr *Tracker) error { return tr.Start(12) }, nil},
		{"valid done", 10, 2, []int{0}, func(tr *Tracker) error { return tr.Done(11) }, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := New(tc.start)
			for i := 0; i < tc.started; i++ {
				mustStart(t, tr, tc.start+int64(i))
			}
			for _, i := range tc.done {
				mustDone(t, tr, tc.start+int64(i))
			}
			next, inFlight := tr.Next(), tr.InFlight()
			err := tc.call(tr)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if tr.Next() != next || tr.InFlight() != inFlight {
				t.Fatalf("failed call changed state: next %d→%d, in flight %d→%d", next, tr.Next(), inFlight, tr.InFlight())
			}
			if err := tr.check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestZeroValueStartsAtZero(t *testing.T) {
	var tr Tracker
	wantNext(t, &tr, 0)
	if err := tr.Done(0); !errors.Is(err, ErrNotStarted) {
		t.Fatalf("Done(0) on zero value: %v, want ErrNotStarted", err)
	}
	mustStart(t, &tr, 0, 1)
	mustDone(t, &tr, 1, 0)
	wantNext(t, &tr, 2)
}

// Completing a large window in reverse crosses word boundaries and the ring's
// wrap-around in one prefix advance, then shrinks the ring back.
func TestReverseCompletionAcrossWordsAndWrap(t *testing.T) {
	tr := New(1000)
	mustStart(t, tr, 1000, 1001, 1002)
	mustDone(t, tr, 1000, 1001, 1002) // move next off a word boundary
	for o := int64(1003); o < 1003+300; o++ {
		mustStart(t, tr, o)
	}
	if c := tr.capBits(); c < 300 {
		t.Fatalf("capacity %d bits cannot hold a window of 300", c)
	}
	for o := int64(1003 + 299); o > 1003; o-- {
		mustDone(t, tr, o)
		wantNext(t, tr, 1003)
	}
	mustDone(t, tr, 1003)
	wantNext(t, tr, 1303)
	if c := tr.capBits(); c != 64 {
		t.Fatalf("capacity %d bits after the window emptied, want 64", c)
	}
}

func TestResetForgetsInFlightAndMemory(t *testing.T) {
	tr := New(0)
	for o := int64(0); o < 1000; o++ {
		mustStart(t, tr, o)
	}
	mustDone(t, tr, 5)
	tr.Reset(500)
	wantNext(t, tr, 500)
	if tr.InFlight() != 0 || tr.capBits() != 64 {
		t.Fatalf("after Reset: in flight %d, capacity %d bits; want 0, 64", tr.InFlight(), tr.capBits())
	}
	if err := tr.Done(7); !errors.Is(err, ErrNotStarted) {
		t.Fatalf("Done of pre-reset offset: %v, want ErrNotStarted", err)
	}
	if err := tr.Start(1000); !errors.Is(err, ErrOutOfOrder) {
		t.Fatalf("Start continuing pre-reset run: %v, want ErrOutOfOrder", err)
	}
	mustStart(t, tr, 500, 501)
	mustDone(t, tr, 501, 500)
	wantNext(t, tr, 502)
}

// Over a million offsets completed in random order, with the dispatcher
// keeping started − committed at most 64 (as a consumer bounds its uncommitted
// work), the ring never exceeds 4×64 bits and resizes copy O(1) bits per offset.
func TestLongRunMemoryBounded(t *testing.T) {
	const total, window = 1_000_000, 64
	rng := rand.New(rand.NewPCG(1, 2))
	tr := New(0)
	var inFlight []int64
	next, maxCap, maxWindow := int64(0), int64(0), int64(0)
	for completed := 0; completed < total; {
		for next-tr.Next() < window && next < total {
			mustStart(t, tr, next)
			inFlight = append(inFlight, next)
			next++
		}
		maxWindow = max(maxWindow, next-tr.Next())
		// Occasionally drain most of the window to force shrinks too.
		n := 1
		if rng.IntN(1000) == 0 {
			n = len(inFlight) - rng.IntN(4)
		}
		for ; n > 0 && len(inFlight) > 0; n-- {
			i := rng.IntN(len(inFlight))
			mustDone(t, tr, inFlight[i])
			inFlight[i] = inFlight[len(inFlight)-1]
			inFlight = inFlight[:len(inFlight)-1]
			completed++
		}
		maxCap = max(maxCap, tr.capBits())
		if maxCap > 4*window {
			t.Fatalf("after %d completions: capacity %d bits > 4×window %d", completed, maxCap, window)
		}
	}
	wantNext(t, tr, total)
	if maxWindow != window {
		t.Fatalf("max window %d, want the test to reach %d", maxWindow, window)
	}
	if tr.copied > 4*total {
		t.Fatalf("resizes copied %d bits for %d offsets, want ≤ 4 per offset", tr.copied, total)
	}
	t.Logf("max window %d, max capacity %d bits, %d bits copied by resizes", maxWindow, maxCap, tr.copied)
}

// With the window bound redrawn from [1, 2000] every few thousand completions,
// the ring grows and shrinks repeatedly, yet stays within max(64, 4×window)
// bits at every step and resizes copy at most 4 bits per offset overall.
func TestLongRunVaryingWindow(t *testing.T) {
	const total = 1_000_000
	rng := rand.New(rand.NewPCG(5, 6))
	tr := New(0)
	var inFlight []int64
	next, limit, resizes, lastCap := int64(0), int64(1), 0, tr.capBits()
	for completed := 0; completed < total; completed++ {
		if completed%4096 == 0 {
			limit = 1 + rng.Int64N(2000)
		}
		for next-tr.Next() < limit && next < total {
			mustStart(t, tr, next)
			inFlight = append(inFlight, next)
			next++
			if c, w := tr.capBits(), next-tr.Next(); c > max(64, 4*w) {
				t.Fatalf("capacity %d bits with window %d", c, w)
			}
		}
		i := rng.IntN(len(inFlight))
		mustDone(t, tr, inFlight[i])
		inFlight[i] = inFlight[len(inFlight)-1]
		inFlight = inFlight[:len(inFlight)-1]
		if c, w := tr.capBits(), next-tr.Next(); c > max(64, 4*w) {
			t.Fatalf("capacity %d bits with window %d", c, w)
		} else if c != lastCap {
			resizes++
			lastCap = c
		}
	}
	wantNext(t, tr, total)
	if resizes < 20 {
		t.Fatalf("only %d resizes: the test no longer exercises growth and shrinking", resizes)
	}
	if tr.copied > 4*total {
		t.Fatalf("resizes copied %d bits for %d offsets, want ≤ 4 per offset", tr.copied, total)
	}
	t.Logf("%d resizes copied %d bits", resizes, tr.copied)
}

// Workers completing concurrently while a dispatcher starts offsets end with
// everything committed; run with -race to check the locking.
func TestConcurrentWorkers(t *testing.T) {
	const total, workers = 20_000, 16
	tr := New(100)
	work := make(chan int64, workers)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := int64(-1)
			for o := range work {
				if err := tr.Done(o); err != nil {
					errs <- err
					return
				}
				if n := tr.Next(); n < last {
					errs <- fmt.Errorf("Next went back from %d to %d", last, n)
					return
				} else {
					last = n
				}
			}
		}()
	}
	for o := int64(100); o < 100+total; o++ {
		mustStart(t, tr, o)
		work <- o
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	wantNext(t, tr, 100+total)
	if tr.InFlight() != 0 {
		t.Fatalf("InFlight() = %d, want 0", tr.InFlight())
	}
}

// TestSkipPassesOffsetsWithoutRecords: skipped offsets complete at once, so the prefix
// passes them as soon as every started offset before them is done.
func TestSkipPassesOffsetsWithoutRecords(t *testing.T) {
	tr := New(10)
	if err := tr.Start(10); err != nil {
		t.Fatal(err)
	}
	if err := tr.Skip(13); err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(13); err != nil {
		t.Fatal(err)
	}
	if tr.Next() != 10 || tr.InFlight() != 2 {
		t.Fatalf("next %d in flight %d, want 10 and 2", tr.Next(), tr.InFlight())
	}
	if err := tr.Done(10); err != nil {
		t.Fatal(err)
	}
	if tr.Next() != 13 {
		t.Fatalf("next %d after 10 completed, want 13 (11 and 12 skipped)", tr.Next())
	}
	if err := tr.Skip(12); err != nil || tr.Next() != 13 {
		t.Fatalf("Skip below the next offset due changed something: %v, next %d", err, tr.Next())
	}
}
