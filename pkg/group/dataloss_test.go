package group_test

import (
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/group"
)

// TestPlanDataLoss: the time left is the oldest unread record's append time plus the
// retention minus now, clamped at 0; records below the log start are lost.
func TestPlanDataLoss(t *testing.T) {
	const ret = time.Hour
	cases := []struct {
		name            string
		next, logStart  int64
		age             time.Duration // of the oldest unread retained record
		wantLeft        time.Duration
		wantRecordsLost int64
	}{
		{"fresh", 5, 0, 0, time.Hour, 0},
		{"stalled 50m", 5, 0, 50 * time.Minute, 10 * time.Minute, 0},
		{"at retention", 5, 0, time.Hour, 0, 0},
		{"past retention clamped", 5, 0, 2 * time.Hour, 0, 0},
		{"position below the log start", 3, 10, 20 * time.Minute, 40 * time.Minute, 7},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := group.PlanDataLoss(c.next, c.logStart, t0.Add(-c.age), ret, t0)
			if got.TimeLeft != c.wantLeft || got.RecordsLost != c.wantRecordsLost {
				t.Fatalf("got %+v, want %s left, %d lost", got, c.wantLeft, c.wantRecordsLost)
			}
		})
	}
}
