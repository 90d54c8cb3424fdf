package dispatch_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/dispatch"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
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

// TestHealthCountsParkedKeys: the sweep's health carries, per subscription, the keys
// the group parked over the subscribed topic's partitions (not another topic's), read
// through the store as the dispatch function's role reads them, on both backends.
func TestHealthCountsParkedKeys(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta})
		if err != nil {
			t.Fatal(err)
		}
		for _, tp := range []string{"orders", "refunds"} {
			if _, err := l.CreateTopic(ctx, tp, 2, time.Hour); err != nil {
				t.Fatal(err)
			}
		}
		coord := group.New(s.Meta, l, nil)
		park := func(topic string, p int32, keys ...string) {
			t.Helper()
			lease, err := coord.Acquire(ctx, "billing", topic, p, "m", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				row := group.Parked{Group: "billing", Topic: topic, Partition: p, Key: []byte(k), FirstOffset: 0, LastOffset: 0,
					Records: 1, Error: "declined", Attempts: 1, ParkedAt: time.UnixMilli(1e12), ParkOffset: -1}
				if err := coord.PutParked(ctx, row, "m", lease.Generation); err != nil {
					t.Fatal(err)
				}
			}
		}
		park("orders", 0, "a", "b")
		park("orders", 1, "a")
		park("refunds", 0)
		d, err := dispatch.New(dispatch.Config{
			Subscriptions: subs("orders", "billing", "fn", "refunds", "billing", "fn", "orders", "idle", "fn"),
			Leases:        s.Meta, Offsets: l, Invoker: &recorder{},
		})
		if err != nil {
			t.Fatal(err)
		}
		hs, err := d.Health(ctx, coord)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		for _, h := range hs {
			if h.ParkedKeys == nil {
				t.Fatalf("%s/%s: no parked keys counted", h.Group, h.Topic)
			}
			got[h.Group+"/"+h.Topic] = *h.ParkedKeys
		}
		want := map[string]int64{"billing/orders": 3, "billing/refunds": 0}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("parked keys per subscription %v, want %v", got, want)
		}
	})
}
