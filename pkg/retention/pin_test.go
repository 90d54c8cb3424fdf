package retention_test

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/stratalog/strata/pkg/retention"
	"github.com/stratalog/strata/pkg/store"
)

// TestPlanPin: where a pass puts a partition's log start when groups pin it (retention
// 1h, cap 2h, now = t0+4h; entries [0,10) at t0, [10,20) at t0+90m, [20,30) at t0+2h30m,
// [30,40) at t0+2h50m: retention alone expires all 40, the cap only the first 10).
func TestPlanPin(t *testing.T) {
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	entries := []store.IndexEntry{
		{BaseOffset: 0, Count: 10, AppendedAt: at(0)},
		{BaseOffset: 10, Count: 10, AppendedAt: at(90 * time.Minute)},
		{BaseOffset: 20, Count: 10, AppendedAt: at(150 * time.Minute)},
		{BaseOffset: 30, Count: 10, AppendedAt: at(170 * time.Minute)},
	}
	gap := []store.IndexEntry{entries[0], entries[2], entries[3]} // [10,20) not indexed
	cases := []struct {
		name      string
		pin       time.Duration
		start     int64
		entries   []store.IndexEntry
		committed []int64
		want      retention.PinPlan
	}{
		{name: "no pin", committed: []int64{15}, want: retention.PinPlan{Start: 40}},
		{name: "no group", pin: 2 * time.Hour, want: retention.PinPlan{Start: 40}},
		{name: "group caught up past what expires", pin: 2 * time.Hour, committed: []int64{40, 45}, want: retention.PinPlan{Start: 40}},
		{name: "held at the entry holding the position", pin: 2 * time.Hour, committed: []int64{25},
			want: retention.PinPlan{Start: 20, Pinned: true, KeepFrom: at(150 * time.Minute)}},
		{name: "held at an entry boundary position", pin: 2 * time.Hour, committed: []int64{20},
			want: retention.PinPlan{Start: 20, Pinned: true, KeepFrom: at(150 * time.Minute)}},
		{name: "lowest of several groups", pin: 2 * time.Hour, committed: []int64{35, 12, 41},
			want: retention.PinPlan{Start: 10, Pinned: true, KeepFrom: at(90 * time.Minute)}},
		{name: "past the cap the records expire as unpinned", pin: 2 * time.Hour, committed: []int64{3},
			want: retention.PinPlan{Start: 10, Pinned: true, KeepFrom: at(90 * time.Minute)}},
		{name: "every record past the cap", pin: 10 * time.Minute, committed: []int64{3},
			want: retention.PinPlan{Start: 40}},
		{name: "cap reached inside the group's records", pin: time.Hour, committed: []int64{3},
			want: retention.PinPlan{Start: 20, Pinned: true, KeepFrom: at(150 * time.Minute)}},
		// Records were lost to it already; it reads on from the log start, which it pins.
		{name: "a group below the log start pins the log start", pin: 2 * time.Hour, start: 20, entries: entries[2:], committed: []int64{5},
			want: retention.PinPlan{Start: 20, Pinned: true, KeepFrom: at(150 * time.Minute)}},
		// The gap's commits followed the entry before it: its time bounds their objects'.
		{name: "a gap is kept while the entry after it is within the cap", pin: 2 * time.Hour, entries: gap, committed: []int64{12},
			want: retention.PinPlan{Start: 10, Pinned: true, KeepFrom: at(0)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			es := c.entries
			if es == nil {
				es = entries
			}
			got := retention.PlanPin(retention.PinInput{
				Start: c.start, Expired: 40, Entries: es, Newest: at(170 * time.Minute),
				Committed: c.committed, Retention: time.Hour, Pin: c.pin, Now: at(4 * time.Hour),
			})
			if got != c.want {
				t.Fatalf("PlanPin = %+v, want %+v", got, c.want)
			}
		})
	}
}

// TestPlanPinNoEntries: offsets passed as expired without an entry (the counter's
// newest commit proved them old) are pinned by the newest commit's time.
func TestPlanPinNoEntries(t *testing.T) {
	in := retention.PinInput{Start: 0, Expired: 8, Newest: t0, Committed: []int64{4}, Retention: time.Hour, Pin: 2 * time.Hour}
	for _, c := range []struct {
		now  time.Duration
		want retention.PinPlan
	}{
		{2 * time.Hour, retention.PinPlan{Start: 0, Pinned: true, KeepFrom: t0}},
		{3 * time.Hour, retention.PinPlan{Start: 8}},
	} {
		in.Now = t0.Add(c.now)
		if got := retention.PlanPin(in); got != c.want {
			t.Errorf("at t0+%s: PlanPin = %+v, want %+v", c.now, got, c.want)
		}
	}
}

// TestPropertyPlanPin: for any entries, positions, retention and cap, the planned log
// start stays within [Start, Expired] and on an entry boundary, drops no entry within
// retention + cap at or after a group's position, and is Expired when no group pins.
func TestPropertyPlanPin(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 8).Draw(t, "entries")
		start := rapid.Int64Range(0, 5).Draw(t, "start")
		var es []store.IndexEntry
		off := start
		at := t0
		for i := range n {
			off += rapid.Int64Range(0, 2).Draw(t, fmt.Sprintf("gap%d", i)) // 0: no gap
			count := rapid.Int64Range(1, 4).Draw(t, fmt.Sprintf("count%d", i))
			at = at.Add(time.Duration(rapid.IntRange(0, 120).Draw(t, fmt.Sprintf("step%d", i))) * time.Minute)
			es = append(es, store.IndexEntry{BaseOffset: off, Count: count, AppendedAt: at})
			off += count
		}
		expired := off
		if n == 0 {
			expired = start + rapid.Int64Range(0, 5).Draw(t, "unindexed")
		}
		committed := rapid.SliceOfN(rapid.Int64Range(0, expired+3), 0, 4).Draw(t, "committed")
		in := retention.PinInput{
			Start: start, Expired: expired, Entries: es, Newest: at.Add(time.Minute), Committed: committed,
			Retention: time.Hour, Pin: time.Duration(rapid.IntRange(0, 600).Draw(t, "pinMinutes")) * time.Minute,
			Now: t0.Add(time.Duration(rapid.IntRange(0, 1200).Draw(t, "nowMinutes")) * time.Minute),
		}
		plan := retention.PlanPin(in)
		if plan.Start < in.Start || plan.Start > in.Expired || plan.Pinned != (plan.Start < in.Expired) {
			t.Fatalf("plan %+v outside [%d, %d]", plan, in.Start, in.Expired)
		}
		capCutoff := in.Now.Add(-(in.Retention + in.Pin))
		inRange := false
		for _, c := range committed {
			if c >= in.Expired {
				continue
			}
			c = max(c, in.Start)
			inRange = true
			if in.Pin <= 0 || plan.Start <= c {
				continue
			}
			// The group lost records: none of them may be within the cap (an entry
			// within it at or after the group's position stays, and with it those after).
			for _, e := range es {
				if e.End() > c && e.BaseOffset < plan.Start && e.AppendedAt.After(capCutoff) {
					t.Fatalf("plan %+v drops entry %+v within the cap that the group at %d needs", plan, e, c)
				}
			}
		}
		if (!inRange || in.Pin <= 0) && plan.Start != in.Expired {
			t.Fatalf("no group pins (pin %s) but plan %+v, not Expired %d", in.Pin, plan, in.Expired)
		}
		for _, e := range es {
			if e.BaseOffset >= plan.Start {
				continue
			}
			if e.End() > plan.Start {
				t.Fatalf("plan %+v cuts entry %+v: not an entry boundary", plan, e)
			}
		}
	})
}
