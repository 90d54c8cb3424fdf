package client

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestAlignedDueProperty: an aligned batch is due at a tick of its grid (a multiple of
// the linger from the phase), at or after its first record and less than a linger
// later; records of one grid period are due together whenever they came.
func TestAlignedDueProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		linger := time.Duration(rapid.Int64Range(int64(time.Millisecond), int64(10*time.Second)).Draw(rt, "linger"))
		slots := rapid.IntRange(1, 16).Draw(rt, "slots")
		phase := linger / time.Duration(slots) * time.Duration(rapid.IntRange(0, slots-1).Draw(rt, "slot"))
		at := time.Unix(0, rapid.Int64Range(0, 1<<62).Draw(rt, "at"))
		due := alignedDue(at, linger, phase)
		if due.Before(at) || due.Sub(at) >= linger {
			rt.Fatalf("record at %v, linger %v, phase %v: due %v, want within [at, at+linger)", at, linger, phase, due)
		}
		if tick := due.Add(-phase); !tick.Truncate(linger).Equal(tick) {
			rt.Fatalf("due %v is not a tick of the grid of %v at phase %v", due, linger, phase)
		}
		later := at.Add(time.Duration(rapid.Int64Range(0, int64(due.Sub(at))).Draw(rt, "later")))
		if got := alignedDue(later, linger, phase); !got.Equal(due) {
			rt.Fatalf("records at %v and %v of one period: due %v and %v", at, later, due, got)
		}
	})
}

// TestAlignedDueTicks: the grid's ticks by example.
func TestAlignedDueTicks(t *testing.T) {
	base := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return base.Add(time.Duration(n) * time.Millisecond) }
	for _, c := range []struct {
		at         time.Time
		linger, ph time.Duration
		want       time.Time
	}{
		{ms(0), time.Second, 0, ms(0)},
		{ms(1), time.Second, 0, ms(1000)},
		{ms(999), time.Second, 0, ms(1000)},
		{ms(1), time.Second, 250 * time.Millisecond, ms(250)},
		{ms(251), time.Second, 250 * time.Millisecond, ms(1250)},
		{ms(30), 100 * time.Millisecond, 50 * time.Millisecond, ms(50)},
	} {
		if got := alignedDue(c.at, c.linger, c.ph); !got.Equal(c.want) {
			t.Errorf("alignedDue(%v, %v, %v) = %v, want %v", c.at.Format("15:04:05.000"), c.linger, c.ph,
				got.Format("15:04:05.000"), c.want.Format("15:04:05.000"))
		}
	}
}
