package metrics_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/metrics"
)

// TestConsumerRunsReportThemselves: a consumer given the Metrics as Config.Metrics
// reports every run without its caller's help — handled, retried and dropped records
// (a poison record with no dead-letter topic) — for Run as for RunMember's runs.
func TestConsumerRunsReportThemselves(t *testing.T) {
	ctx := context.Background()
	s := backendtest.Local(ctx, t)
	l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.CreateTopic(ctx, "orders", 2, 0); err != nil {
		t.Fatal(err)
	}
	recs := make([]log.Record, 10)
	for i := range recs {
		p := int32(i % 2)
		recs[i] = log.Record{Value: []byte{byte(i)}, Partition: &p}
	}
	if _, err := l.Append(ctx, "orders", recs, log.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	poison := errors.New("poison")
	h := func(_ context.Context, r consumer.Record) error {
		if r.Offset == 2 {
			return poison // in each partition: retried, then dropped
		}
		return nil
	}
	coord := group.New(s.Meta, l, nil)
	c, err := consumer.New(l, coord, consumer.Config{Group: "g", Topic: "orders", Member: "m", Handler: h,
		MaxAttempts: 2, Backoff: func(int) time.Duration { return time.Millisecond }, PollWait: 10 * time.Millisecond,
		CommitInterval: time.Millisecond, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true}); err != nil {
		t.Fatal(err)
	}
	gt := map[string]string{"group": "g", "topic": "orders"}
	mustValue(t, reg, "strata_consumer_records_handled_total", gt, 4)
	mustValue(t, reg, "strata_consumer_poison_retries_total", gt, 1)
	mustValue(t, reg, "strata_consumer_dropped_total", gt, 1)

	// RunMember's runs report too: partition 1 through the balancer.
	bal, err := group.NewBalancer(group.BalancerConfig{Store: group.ByIncarnation(s.Meta, l), Group: "g", Topic: "orders", Member: "m",
		Partitions: 2, TTL: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.RunMember(runCtx, bal, 50*time.Millisecond) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		committed, err := coord.Committed(ctx, "g", "orders", 1)
		if err == nil && committed != nil && *committed == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("partition 1 committed %v, %v; want 5", committed, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mustValue(t, reg, "strata_consumer_records_handled_total", gt, 8)
	mustValue(t, reg, "strata_consumer_dropped_total", gt, 2)
}
