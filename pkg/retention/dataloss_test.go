package retention_test

import (
	"context"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/retention"
)

// TestSecondsToDataLossFallsAsConsumerStalls: a group stalls at offset 2 of topic "r"
// (retention 1h); driven by the clock alone, its time to data loss falls from the hour
// the oldest unread record has left, crosses a 15-minute alarm threshold, reaches 0,
// and once retention expires the unread records they are reported lost while the time
// is counted from the oldest record still retained.
func TestSecondsToDataLossFallsAsConsumerStalls(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s)
		f.append(t, 4) // offsets 0–3 at t0
		f.now = t0.Add(30 * time.Minute)
		f.append(t, 2) // offsets 4–5 at t0+30m
		coord := group.New(s.Meta, f.l, func() time.Time { return f.now })
		l, err := coord.Acquire(ctx, "billing", "r", 0, "m", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := coord.Commit(ctx, "billing", "r", 0, "m", l.Generation, 2); err != nil {
			t.Fatal(err)
		}
		const threshold = 15 * time.Minute
		describe := func() group.PartitionInfo {
			t.Helper()
			info, err := coord.Describe(ctx, "billing")
			if err != nil {
				t.Fatal(err)
			}
			if len(info.Partitions) != 1 {
				t.Fatalf("describe: %+v, want one partition", info.Partitions)
			}
			return info.Partitions[0]
		}
		type step struct {
			at       time.Duration // since t0
			expire   bool          // run a retention pass first
			left     time.Duration
			lost     int64
			alarming bool
		}
		steps := []step{
			{at: 30 * time.Minute, left: 30 * time.Minute},
			{at: 40 * time.Minute, left: 20 * time.Minute},
			{at: 50 * time.Minute, left: 10 * time.Minute, alarming: true},
			{at: 60 * time.Minute, left: 0, alarming: true},
			{at: 61 * time.Minute, left: 0, alarming: true}, // clamped, not negative
			// Past retention offsets 0–3 expire: 2 unread ones lost, the oldest unread
			// still retained is offset 4, appended at t0+30m.
			{at: 65 * time.Minute, expire: true, left: 25 * time.Minute, lost: 2},
		}
		prev := time.Duration(1<<63 - 1)
		for _, st := range steps {
			f.now = t0.Add(st.at)
			if st.expire {
				f.run(t, retention.Job{ObjectMargin: 30 * time.Second})
			}
			p := describe()
			if p.DataLoss == nil {
				t.Fatalf("at t0+%s: no data loss figure with %d records of lag", st.at, p.LagRecords)
			}
			if p.DataLoss.TimeLeft != st.left || p.DataLoss.RecordsLost != st.lost {
				t.Errorf("at t0+%s: %+v, want %s left, %d lost", st.at, *p.DataLoss, st.left, st.lost)
			}
			if got := p.DataLoss.TimeLeft < threshold; got != st.alarming {
				t.Errorf("at t0+%s: under the %s threshold = %v, want %v", st.at, threshold, got, st.alarming)
			}
			if !st.expire && p.DataLoss.TimeLeft > prev {
				t.Errorf("at t0+%s: time to data loss rose from %s to %s while stalled", st.at, prev, p.DataLoss.TimeLeft)
			}
			prev = p.DataLoss.TimeLeft
		}

		// Caught up, there is nothing to lose: no figure.
		l, err = coord.Acquire(ctx, "billing", "r", 0, "m", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := coord.Commit(ctx, "billing", "r", 0, "m", l.Generation, 6); err != nil {
			t.Fatal(err)
		}
		if p := describe(); p.DataLoss != nil || p.LagRecords != 0 {
			t.Fatalf("caught up: lag %d, data loss %+v, want none", p.LagRecords, p.DataLoss)
		}
	})
}
