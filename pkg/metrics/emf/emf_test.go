package emf_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/metrics"
	"github.com/stratalog/strata/pkg/metrics/emf"
	"github.com/stratalog/strata/pkg/retention"
)

// TestSameNamesAsPrometheus: every metric the sink writes (but dispatch's own) is a
// metric pkg/metrics registers, with the same label names as dimensions.
func TestSameNamesAsPrometheus(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	s := emf.New(&buf, "Strata", func() time.Time { return time.UnixMilli(1796092200000) })
	st := consumer.Stats{Handled: 3, Retries: 1, DeadLettered: 1, RecordsLost: 2, Dropped: 1, Parked: 2, Replayed: 1}
	for _, sink := range []interface {
		Appended(string, int, int, time.Duration)
		CommitsMaterialized(string, int)
		Request(string, int, time.Duration)
		ConsumerRun(string, string, consumer.Stats)
		RetentionRun(retention.Stats, error)
	}{m, s} {
		sink.Appended("orders", 2, 10, time.Millisecond)
		sink.CommitsMaterialized("orders", 1)
		sink.Request("POST /v1/topics", 201, time.Millisecond)
		sink.ConsumerRun("billing", "orders", st)
		sink.RetentionRun(retention.Stats{RecordsExpired: 4}, nil)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]map[string]bool{}
	for _, f := range families {
		ls := map[string]bool{}
		for _, mm := range f.GetMetric() {
			for _, l := range mm.GetLabel() {
				ls[l.GetName()] = true
			}
		}
		labels[f.GetName()] = ls
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) < 6 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, line := range lines {
		var doc struct {
			AWS struct {
				Timestamp         int64
				CloudWatchMetrics []struct {
					Namespace  string
					Dimensions [][]string
					Metrics    []struct{ Name, Unit string }
				}
			} `json:"_aws"`
		}
		if err := json.Unmarshal([]byte(line), &doc); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		var raw map[string]any
		_ = json.Unmarshal([]byte(line), &raw)
		d := doc.AWS.CloudWatchMetrics[0]
		if doc.AWS.Timestamp != 1796092200000 || d.Namespace != "Strata" {
			t.Errorf("%s: timestamp or namespace", line)
		}
		for _, mm := range d.Metrics {
			ls, ok := labels[mm.Name]
			if !ok {
				t.Errorf("%s is not a Prometheus metric of pkg/metrics", mm.Name)
				continue
			}
			if _, ok := raw[mm.Name].(float64); !ok {
				t.Errorf("%s has no value in %s", mm.Name, line)
			}
			for _, dim := range d.Dimensions[0] {
				if !ls[dim] {
					t.Errorf("%s: dimension %q is not a label of the Prometheus metric", mm.Name, dim)
				}
				if _, ok := raw[dim].(string); !ok {
					t.Errorf("%s: dimension %q has no value", mm.Name, dim)
				}
			}
		}
	}
}
