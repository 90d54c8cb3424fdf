package metrics_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/metrics"
)

// TestParkingExported: a parking group's runs export the records they parked and the
// records a release replayed (strata_consumer_parked_records_total,
// strata_consumer_replayed_records_total), and the lag collector the keys parked per
// partition (strata_consumer_parked_keys), back to 0 once the key is replayed.
func TestParkingExported(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.CreateTopic(ctx, "orders", 1, 0); err != nil {
			t.Fatal(err)
		}
		p := int32(0)
		var recs []log.Record
		for _, k := range []string{"bad", "ok", "bad", "ok", "bad"} {
			recs = append(recs, log.Record{Key: []byte(k), Value: []byte("v"), Partition: &p})
		}
		if _, err := l.Append(ctx, "orders", recs, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		coord := group.New(s.Meta, l, nil)
		if _, err := coord.SetSettings(ctx, "billing", group.Settings{ResetPolicy: "earliest", MaxAttempts: 1, OnFailure: group.OnFailurePark}); err != nil {
			t.Fatal(err)
		}
		reg := prometheus.NewRegistry()
		m, err := metrics.New(reg)
		if err != nil {
			t.Fatal(err)
		}
		g := m.WrapGroups(coord)
		reg.MustRegister(metrics.NewLagCollector(g, 5*time.Second))
		g.Track("billing")
		var poisoned atomic.Bool
		poisoned.Store(true)
		run := func(member string) {
			t.Helper()
			c, err := consumer.New(l, coord, consumer.Config{Group: "billing", Topic: "orders", Member: member, Metrics: m,
				PollWait: 10 * time.Millisecond, CommitInterval: time.Millisecond,
				Handler: func(_ context.Context, r consumer.Record) error {
					if string(r.Key) == "bad" && poisoned.Load() {
						return errors.New("declined")
					}
					return nil
				}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true}); err != nil {
				t.Fatal(err)
			}
		}
		gt := map[string]string{"group": "billing", "topic": "orders"}
		part := map[string]string{"group": "billing", "topic": "orders", "partition": "0"}
		run("m-1")
		mustValue(t, reg, "strata_consumer_parked_records_total", gt, 3)
		mustValue(t, reg, "strata_consumer_replayed_records_total", gt, 0)
		mustValue(t, reg, "strata_consumer_parked_keys", part, 1)

		poisoned.Store(false)
		if _, err := coord.ReleaseParked(ctx, "billing", "orders", []byte("bad")); err != nil {
			t.Fatal(err)
		}
		run("m-2")
		mustValue(t, reg, "strata_consumer_parked_records_total", gt, 3)
		mustValue(t, reg, "strata_consumer_replayed_records_total", gt, 3)
		mustValue(t, reg, "strata_consumer_parked_keys", part, 0)
	})
}
