package dispatch_test

import (
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/dispatch"
	"github.com/stratalog/strata/pkg/group"
)

// TestPlanHealth: a subscription's health is the largest lag, the smallest time to data
// loss and the sum of records lost over the topic's partitions; none when caught up.
func TestPlanHealth(t *testing.T) {
	dl := func(left time.Duration, lost int64) *group.DataLoss {
		return &group.DataLoss{TimeLeft: left, RecordsLost: lost}
	}
	info := group.GroupInfo{Partitions: []group.PartitionInfo{
		{Topic: "orders", Partition: 0, LagTime: 10 * time.Minute, DataLoss: dl(50*time.Minute, 0)},
		{Topic: "orders", Partition: 1, LagTime: 40 * time.Minute, DataLoss: dl(20*time.Minute, 3)},
		{Topic: "orders", Partition: 2},
		{Topic: "other", Partition: 0, LagTime: time.Hour, DataLoss: dl(0, 9)},
		{Topic: "idle", Partition: 0},
	}}
	cases := []struct {
		topic    string
		lag      float64
		toLoss   float64 // -1: none
		lostRecs int64
	}{
		{"orders", 2400, 1200, 3},
		{"other", 3600, 0, 9},
		{"idle", 0, -1, 0},
		{"absent", 0, -1, 0},
	}
	for _, c := range cases {
		h := dispatch.PlanHealth(info, "billing", c.topic)
		got := -1.0
		if h.SecondsToDataLoss != nil {
			got = *h.SecondsToDataLoss
		}
		if h.Group != "billing" || h.Topic != c.topic || h.LagSeconds != c.lag || got != c.toLoss || h.RecordsLost != c.lostRecs {
			t.Errorf("%s: %+v (to loss %v), want lag %v, to loss %v, lost %d", c.topic, h, got, c.lag, c.toLoss, c.lostRecs)
		}
	}
}
