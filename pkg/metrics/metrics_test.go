package metrics_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/httpapi"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/metrics"
	"github.com/stratalog/strata/pkg/retention"
)

var (
	_ log.Metrics         = (*metrics.Metrics)(nil)
	_ httpapi.Metrics     = (*metrics.Metrics)(nil)
	_ httpapi.Groups      = (*metrics.Groups)(nil)
	_ metrics.Coordinator = (*group.Coordinator)(nil)
)

// value returns the value of the metric name with exactly the given labels (counter,
// gauge, or a histogram's sample count), and whether it exists.
func value(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	fams, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue next
				}
			}
			return sample(m), true
		}
	}
	return 0, false
}

func sample(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return -1
}

func mustValue(t *testing.T, g prometheus.Gatherer, name string, labels map[string]string, want float64) {
	t.Helper()
	got, ok := value(t, g, name, labels)
	if !ok || got != want {
		t.Fatalf("%s%v = %v (present %v), want %v", name, labels, got, ok, want)
	}
}

func TestCounters(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := metrics.New(reg); err == nil {
		t.Fatal("a second New on the same registry registered its collectors again")
	}
	m.Appended("orders", 3, 300, 4*time.Millisecond)
	m.Appended("orders", 2, 20, 2*time.Second)
	m.Appended("other", 1, 1, time.Millisecond)
	m.CommitsMaterialized("orders", 1)
	m.CommitsMaterialized("orders", 1)
	m.Request("POST /v1/topics/{topic}/records", 200, time.Millisecond)
	m.Request("POST /v1/topics/{topic}/records", 200, time.Millisecond)
	m.Request("POST /v1/topics/{topic}/records", 503, time.Millisecond)
	m.ConsumerRun("g", "orders", consumer.Stats{Handled: 10, Retries: 4, DeadLettered: 1, RecordsLost: 7})
	m.ConsumerRun("g", "orders", consumer.Stats{Handled: 5, Retries: 1, Dropped: 3})
	m.RetentionRun(retention.Stats{RecordsExpired: 100, EntriesDeleted: 3, ObjectsDeleted: 2}, nil)
	m.RetentionRun(retention.Stats{}, errors.New("boom"))
	m.TTLDeleted(4)

	topic := map[string]string{"topic": "orders"}
	mustValue(t, reg, "strata_records_appended_total", topic, 5)
	mustValue(t, reg, "strata_bytes_appended_total", topic, 320)
	mustValue(t, reg, "strata_append_ack_latency_seconds", topic, 2)
	mustValue(t, reg, "strata_records_appended_total", map[string]string{"topic": "other"}, 1)
	mustValue(t, reg, "strata_commits_materialized_total", topic, 2)
	route := "POST /v1/topics/{topic}/records"
	mustValue(t, reg, "strata_http_requests_total", map[string]string{"route": route, "code": "200"}, 2)
	mustValue(t, reg, "strata_http_requests_total", map[string]string{"route": route, "code": "503"}, 1)
	mustValue(t, reg, "strata_http_request_duration_seconds", map[string]string{"route": route}, 3)
	gt := map[string]string{"group": "g", "topic": "orders"}
	mustValue(t, reg, "strata_consumer_records_handled_total", gt, 15)
	mustValue(t, reg, "strata_consumer_poison_retries_total", gt, 5)
	mustValue(t, reg, "strata_consumer_dead_lettered_total", gt, 1)
	mustValue(t, reg, "strata_consumer_dropped_total", gt, 3)
	mustValue(t, reg, "strata_consumer_records_lost_total", gt, 7)
	mustValue(t, reg, "strata_retention_runs_total", map[string]string{"result": "ok"}, 1)
	mustValue(t, reg, "strata_retention_runs_total", map[string]string{"result": "error"}, 1)
	mustValue(t, reg, "strata_retention_records_expired_total", nil, 100)
	mustValue(t, reg, "strata_retention_objects_deleted_total", nil, 2)
	mustValue(t, reg, "strata_ttl_rows_deleted_total", nil, 4)

	// The latency histogram puts the 4 ms append below 5 ms and the 2 s one above 1 s.
	fams, _ := reg.Gather()
	for _, f := range fams {
		if f.GetName() != "strata_append_ack_latency_seconds" {
			continue
		}
		for _, mm := range f.GetMetric() {
			if mm.GetLabel()[0].GetValue() != "orders" {
				continue
			}
			for _, b := range mm.GetHistogram().GetBucket() {
				want := uint64(0)
				if b.GetUpperBound() >= 0.005 {
					want = 1
				}
				if b.GetUpperBound() >= 2.5 {
					want = 2
				}
				if b.GetCumulativeCount() != want {
					t.Fatalf("bucket le=%v holds %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
				}
			}
		}
	}

	rec := httptest.NewRecorder()
	metrics.Handler(reg).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != 200 || !strings.Contains(string(body), `strata_records_appended_total{topic="orders"} 5`) {
		t.Fatalf("/metrics answered %d:\n%s", rec.Code, body)
	}
}

// TestGroupsAndLag: the coordinator wrapper counts takeovers and fenced commits, and
// the lag collector reports each known group's lag on every scrape.
func TestGroupsAndLag(t *testing.T) {
	ctx := context.Background()
	s := backendtest.Local(ctx, t)
	l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.CreateTopic(ctx, "orders", 2, time.Hour); err != nil {
		t.Fatal(err)
	}
	p := int32(1)
	recs := make([]log.Record, 10)
	for i := range recs {
		recs[i] = log.Record{Value: []byte("x"), Partition: &p}
	}
	if _, err := l.Append(ctx, "orders", recs, log.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	g := m.WrapGroups(group.New(s.Meta, l, nil))
	reg.MustRegister(metrics.NewLagCollector(g, time.Second))
	lagLabels := map[string]string{"group": "billing", "topic": "orders", "partition": "1"}
	if _, ok := value(t, reg, "strata_consumer_lag_records", lagLabels); ok {
		t.Fatal("lag reported for a group nobody used")
	}

	lease, err := g.Acquire(ctx, "billing", "orders", 1, "m1", group.MinTTL)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Commit(ctx, "billing", "orders", 1, "m1", lease.Generation, 4); err != nil {
		t.Fatal(err)
	}
	gt := map[string]string{"group": "billing", "topic": "orders"}
	mustValue(t, reg, "strata_rebalances_total", gt, 1)
	mustValue(t, reg, "strata_consumer_lag_records", lagLabels, 6)
	if v, _ := value(t, reg, "strata_consumer_lag_seconds", lagLabels); v <= 0 || v > 60 {
		t.Fatalf("lag seconds %v, want the age of offset 4", v)
	}
	// The topic's retention (1h) less offset 4's age; nothing expired.
	if v, ok := value(t, reg, "strata_consumer_seconds_to_data_loss", lagLabels); !ok || v > 3600 || v < 3600-60 {
		t.Fatalf("seconds to data loss %v (%v), want about 3600", v, ok)
	}
	mustValue(t, reg, "strata_consumer_records_lost", lagLabels, 0)
	time.Sleep(2 * group.MinTTL)
	if _, err := g.Acquire(ctx, "billing", "orders", 1, "m2", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := g.Commit(ctx, "billing", "orders", 1, "m1", lease.Generation, 5); !errors.Is(err, group.ErrFenced) {
		t.Fatalf("commit by the old owner: %v", err)
	}
	if _, err := g.Acquire(ctx, "billing", "orders", 1, "m3", time.Minute); !errors.Is(err, group.ErrLeaseHeld) {
		t.Fatalf("acquire of a held lease: %v", err)
	}
	mustValue(t, reg, "strata_rebalances_total", gt, 2)
	mustValue(t, reg, "strata_fenced_commits_total", gt, 1)
	mustValue(t, reg, "strata_consumer_lag_records", lagLabels, 6)

	// A group seen through Describe or Reset is tracked too.
	if _, err := g.Reset(ctx, "audit", "orders", group.ResetEarliest()); err != nil {
		t.Fatal(err)
	}
	mustValue(t, reg, "strata_consumer_lag_records", map[string]string{"group": "audit", "topic": "orders", "partition": "1"}, 10)
	if got := g.Known(); len(got) != 2 || got[0] != "audit" || got[1] != "billing" {
		t.Fatalf("known groups %v", got)
	}
	mustValue(t, reg, "strata_consumer_lag_errors_total", nil, 0)
}

// TestDeletedGroupLeavesLag: once a group is deleted its lag gauges leave /metrics (a
// stray group must not export lag for ever), and it is not counted as an error.
func TestDeletedGroupLeavesLag(t *testing.T) {
	ctx := context.Background()
	s := backendtest.Local(ctx, t)
	l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.CreateTopic(ctx, "orders", 1, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, "orders", []log.Record{{Value: []byte("x")}}, log.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	coord := group.New(s.Meta, l, nil)
	g := m.WrapGroups(coord)
	reg.MustRegister(metrics.NewLagCollector(g, time.Second))
	if _, err := g.Reset(ctx, "nosuch", "orders", group.ResetEarliest()); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"group": "nosuch", "topic": "orders", "partition": "0"}
	mustValue(t, reg, "strata_consumer_lag_records", labels, 1)
	if err := coord.DeleteGroup(ctx, "nosuch"); err != nil {
		t.Fatal(err)
	}
	if v, ok := value(t, reg, "strata_consumer_lag_records", labels); ok {
		t.Fatalf("lag of a deleted group still exported: %v", v)
	}
	if got := g.Known(); len(got) != 0 {
		t.Fatalf("known groups after deletion %v", got)
	}
	mustValue(t, reg, "strata_consumer_lag_errors_total", nil, 0)
}
