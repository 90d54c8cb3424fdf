package lambdafn_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/dispatch"
	"github.com/stratalog/strata/pkg/lambdafn"
	"github.com/stratalog/strata/pkg/metrics/emf"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
)

// lockedBuffer is a bytes.Buffer the runtime's goroutines may write at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// stats are the lines and bytes written so far.
func (l *lockedBuffer) stats() (lines, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Count(l.b.Bytes(), []byte("\n")), l.b.Len()
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// appendEvent is the append fixture with its own idempotency key, so every request
// appends.
func appendEvent(t testing.TB, i int) []byte {
	t.Helper()
	var req events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(fixture(t, "apigw-v2-append.json"), &req); err != nil {
		t.Fatal(err)
	}
	req.Headers["idempotency-key"] = fmt.Sprintf("metrics-%d", i)
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// metricsAPI is the api function's handler as functions/api assembles it, its metrics
// going to sink.
func metricsAPI(t testing.TB, sink *emf.Sink) *lambdafn.API {
	t.Helper()
	rt, err := runtime.New(context.Background(), runtime.Config{Node: node.Config{DataDir: t.TempDir()}, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	api := lambdafn.NewAPI(rt.Handler(), nil).WithMetrics(sink)
	invoke(t, api, fixture(t, "apigw-v2-create-topic.json"))
	sink.Flush()
	return api
}

// TestAPIMetricLinesPerAppend: the api function's metrics of n append requests served
// by one environment within an interval are one EMF line, written by the first
// invocation that finds the interval passed, carrying every one of the n requests (a line
// per observation wrote three lines a request); that invocation's own observations start
// the next interval. It logs the lines and bytes per append
// request both ways (docs/BENCHMARKS.md).
func TestAPIMetricLinesPerAppend(t *testing.T) {
	const n = 200
	now := time.UnixMilli(1796092200000)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }

	var each, agg lockedBuffer
	perObservation := metricsAPI(t, emf.New(&each, deploy.MetricsNamespace, clock))
	aggregated := metricsAPI(t, emf.NewAggregated(&agg, deploy.MetricsNamespace, clock, emf.DefaultFlushInterval))
	l0, b0 := each.stats()
	a0, _ := agg.stats()
	for i := range n {
		for _, api := range []*lambdafn.API{perObservation, aggregated} {
			if r := invoke(t, api, appendEvent(t, i)); r.StatusCode != 200 {
				t.Fatalf("append %d: %d %s", i, r.StatusCode, r.Body)
			}
		}
		advance(100 * time.Millisecond) // n requests in 20 s, within the interval
	}
	l1, b1 := each.stats()
	if a1, _ := agg.stats(); a1 != a0 {
		t.Fatalf("%d lines within the interval, want none yet", a1-a0)
	}
	advance(emf.DefaultFlushInterval)
	if r := invoke(t, aggregated, appendEvent(t, n)); r.StatusCode != 200 {
		t.Fatal(r.Body)
	}
	out := agg.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := lines[len(lines)-1]
	if a2, _ := agg.stats(); a2-a0 != 1 {
		t.Fatalf("%d lines for %d append requests, want 1:\n%s", a2-a0, n, out)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(last), &doc); err != nil {
		t.Fatal(err)
	}
	var requests float64
	var latency struct{ Count int64 }
	if err := json.Unmarshal(doc[emf.HTTPRequests], &requests); err != nil || requests != n {
		t.Fatalf("%s = %s, want %d", emf.HTTPRequests, doc[emf.HTTPRequests], n)
	}
	if err := json.Unmarshal(doc[emf.AppendAckLatency], &latency); err != nil || latency.Count != n {
		t.Fatalf("%s = %s, want %d observations", emf.AppendAckLatency, doc[emf.AppendAckLatency], n)
	}
	t.Logf("per observation: %.1f lines, %.0f bytes per append request", float64(l1-l0)/n, float64(b1-b0)/n)
	t.Logf("aggregated: 1 line of %d bytes for %d append requests in one interval: %.4f lines, %.1f bytes per append request",
		len(last)+1, n, 1/float64(n), float64(len(last)+1)/float64(n))
}

// TestDispatchAndRetentionFlushAggregatedMetrics: with the aggregating sink the mains
// use, stream batches within an interval write nothing; the scheduled sweep writes what
// they and it observed, summed; a retention pass writes its metrics as it ends, in one
// line (two, a line per observation).
func TestDispatchAndRetentionFlushAggregatedMetrics(t *testing.T) {
	now := time.UnixMilli(1796092200000)
	clock := func() time.Time { return now }
	_, _, rt, _ := newDispatch(t, &materialized{})
	inv := &recorder{}
	d, err := dispatch.New(dispatch.Config{
		Subscriptions: []deploy.Subscription{{Topic: "orders", Group: "billing", Function: "strata-consumer"}},
		Leases:        rt.Meta(), Offsets: rt.Log(), Invoker: inv, Materializer: &materialized{},
	})
	if err != nil {
		t.Fatal(err)
	}
	var out lockedBuffer
	h := lambdafn.NewDispatch(d, lambdafn.DecodeSequencerImage, emf.NewAggregated(&out, deploy.MetricsNamespace, clock, emf.DefaultFlushInterval))
	var invocations float64
	for range 3 {
		invocations += float64(dispatchFixture(t, h, "ddb-stream-sequencer.json").Stats.Invocations)
		now = now.Add(time.Second)
	}
	if lines, _ := out.stats(); lines != 0 {
		t.Fatalf("%d lines from stream batches within the interval:\n%s", lines, out.String())
	}
	invocations += float64(dispatchFixture(t, h, "scheduled-event.json").Stats.Invocations)
	lines, _ := out.stats()
	if lines == 0 || lines > 2 { // {trigger=stream}, {trigger=schedule} share a line unless they conflict
		t.Fatalf("%d lines after the sweep:\n%s", lines, out.String())
	}
	var sum float64
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var doc map[string]any
		if err := json.Unmarshal([]byte(line), &doc); err != nil {
			t.Fatal(err)
		}
		v, _ := doc[emf.DispatchInvocations].(float64)
		sum += v
	}
	if sum != invocations || invocations == 0 {
		t.Fatalf("%s sums to %v over the lines, want %v", emf.DispatchInvocations, sum, invocations)
	}

	var ret lockedBuffer
	r := lambdafn.NewRetention(rt.RunRetention, emf.NewAggregated(&ret, deploy.MetricsNamespace, clock, emf.DefaultFlushInterval))
	if _, err := r.Invoke(context.Background(), fixture(t, "scheduled-event.json")); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if lines, _ := ret.stats(); lines != 1 || json.Unmarshal([]byte(ret.String()), &doc) != nil || doc[emf.RetentionRuns] != 1.0 {
		t.Fatalf("retention pass wrote %d lines:\n%s", lines, ret.String())
	}
}
