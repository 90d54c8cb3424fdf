package emf_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/dispatch"
	"github.com/stratalog/strata/pkg/metrics/emf"
)

// TestAlarmedMetricsEmittedAsTheStackReadsThem: the metrics the stack's alarms read
// (pkg/deploy's names, the dimension sets infra/strata's alarms use) are what the sink
// writes, a line per observation or aggregated (what the functions write). Before, the
// alarms read the names without "strata_" and append latency without dimensions while
// the sink emitted it per topic only, so those alarms never had data.
func TestAlarmedMetricsEmittedAsTheStackReadsThem(t *testing.T) {
	clock := func() time.Time { return time.UnixMilli(1e12) }
	for _, aggregated := range []bool{false, true} {
		var buf bytes.Buffer
		s := emf.New(&buf, deploy.MetricsNamespace, clock)
		if aggregated {
			s = emf.NewAggregated(&buf, deploy.MetricsNamespace, clock, emf.DefaultFlushInterval)
		}
		s.Appended("orders", 3, 300, 40*time.Millisecond)
		s.ConsumerRun("billing", "orders", consumer.Stats{Handled: 5, DeadLettered: 1})
		toLoss, parked := 600.0, int64(2)
		s.SubscriptionHealth(dispatch.GroupHealth{Group: "billing", Topic: "orders", LagSeconds: 30, SecondsToDataLoss: &toLoss, ParkedKeys: &parked})
		s.Flush()
		checkAlarmedMetrics(t, buf.String())
	}
}

func checkAlarmedMetrics(t *testing.T, out string) {
	t.Helper()

	// dims[metric] lists the dimension sets under which a metric is emitted.
	dims := map[string][][]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var doc struct {
			AWS struct {
				CloudWatchMetrics []struct {
					Namespace  string
					Dimensions [][]string
					Metrics    []struct{ Name string }
				}
			} `json:"_aws"`
		}
		if err := json.Unmarshal([]byte(line), &doc); err != nil {
			t.Fatalf("line %s: %v", line, err)
		}
		for _, d := range doc.AWS.CloudWatchMetrics {
			if d.Namespace != deploy.MetricsNamespace {
				t.Errorf("namespace %q, want %q", d.Namespace, deploy.MetricsNamespace)
			}
			for _, m := range d.Metrics {
				dims[m.Name] = append(dims[m.Name], d.Dimensions...)
			}
		}
	}
	has := func(metric string, want []string) bool {
		return slices.ContainsFunc(dims[metric], func(set []string) bool { return slices.Equal(set, want) })
	}
	for _, c := range []struct {
		metric string
		dims   []string
	}{
		{deploy.MetricAppendLatency, []string{}},
		{deploy.MetricAppendLatency, []string{"topic"}},
		{deploy.MetricDeadLettered, []string{"group", "topic"}},
		{deploy.MetricParkedRecords, []string{"group", "topic"}},
		{deploy.MetricReplayedRecords, []string{"group", "topic"}},
		{deploy.MetricLagSeconds, []string{"group", "topic"}},
		{deploy.MetricSecondsToDataLoss, []string{"group", "topic"}},
		{deploy.MetricParkedKeys, []string{"group", "topic"}},
	} {
		if !has(c.metric, c.dims) {
			t.Errorf("%s is not emitted with dimensions %v (emitted: %v)", c.metric, c.dims, dims[c.metric])
		}
	}
}
