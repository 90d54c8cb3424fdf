package emf_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/metrics/emf"
)

// emfLine is one EMF line decoded: its directives and its root members.
type emfLine struct {
	timestamp  int64
	directives []struct {
		Namespace  string
		Dimensions [][]string
		Metrics    []struct{ Name, Unit string }
	}
	root map[string]json.RawMessage
}

// tb is what the helpers need of a test: *testing.T and *rapid.T.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
	Fatal(args ...any)
}

func decodeLines(t tb, out string) []emfLine {
	t.Helper()
	var lines []emfLine
	for _, raw := range strings.Split(strings.TrimSpace(out), "\n") {
		if raw == "" {
			continue
		}
		var l emfLine
		var doc struct {
			AWS struct {
				Timestamp         int64
				CloudWatchMetrics json.RawMessage
			} `json:"_aws"`
		}
		if err := json.Unmarshal([]byte(raw), &doc); err != nil {
			t.Fatalf("line %s: %v", raw, err)
		}
		if err := json.Unmarshal(doc.AWS.CloudWatchMetrics, &l.directives); err != nil {
			t.Fatalf("line %s: %v", raw, err)
		}
		if err := json.Unmarshal([]byte(raw), &l.root); err != nil {
			t.Fatal(err)
		}
		l.timestamp = doc.AWS.Timestamp
		lines = append(lines, l)
	}
	return lines
}

// series is what the lines say about one metric under one dimension set with its values
// ("name{dim=value,...}"; a rollup is "name{}"): a counter's sum, or a distribution's
// Values/Counts and statistics summed over lines.
type series struct {
	sum      float64
	count    int64
	min, max float64
	values   map[float64]int64
	hist     bool
}

func collect(t tb, lines []emfLine) map[string]*series {
	t.Helper()
	out := map[string]*series{}
	for _, l := range lines {
		for _, d := range l.directives {
			for _, set := range d.Dimensions {
				var parts []string
				for _, dim := range set {
					var v string
					if err := json.Unmarshal(l.root[dim], &v); err != nil {
						t.Fatalf("dimension %s has no string value: %v", dim, err)
					}
					parts = append(parts, dim+"="+v)
				}
				for _, m := range d.Metrics {
					key := m.Name + "{" + strings.Join(parts, ",") + "}"
					s := out[key]
					if s == nil {
						s = &series{values: map[float64]int64{}, min: math.Inf(1), max: math.Inf(-1)}
						out[key] = s
					}
					raw := l.root[m.Name]
					var n float64
					if json.Unmarshal(raw, &n) == nil {
						s.sum += n
						s.count++
						s.values[n]++
						s.min, s.max = min(s.min, n), max(s.max, n)
						continue
					}
					var h struct {
						Values        []float64
						Counts        []int64
						Max, Min, Sum float64
						Count         int64
					}
					if err := json.Unmarshal(raw, &h); err != nil {
						t.Fatalf("%s: %s is neither a number nor a histogram", key, raw)
					}
					if len(h.Values) > emf.MaxValues || len(h.Values) != len(h.Counts) || len(h.Values) == 0 {
						t.Fatalf("%s: %d values, %d counts", key, len(h.Values), len(h.Counts))
					}
					strictly := slices.IsSorted(h.Values) && len(slices.Compact(slices.Clone(h.Values))) == len(h.Values)
					if !strictly || h.Values[0] < h.Min || h.Values[len(h.Values)-1] > h.Max {
						t.Fatalf("%s: values %v not strictly ascending within [%v, %v]", key, h.Values, h.Min, h.Max)
					}
					var c int64
					for i, v := range h.Values {
						c += h.Counts[i]
						s.values[v] += h.Counts[i]
					}
					if c != h.Count {
						t.Fatalf("%s: counts add up to %d, Count %d", key, c, h.Count)
					}
					s.hist = true
					s.sum += h.Sum
					s.count += h.Count
					s.min, s.max = min(s.min, h.Min), max(s.max, h.Max)
				}
			}
		}
	}
	return out
}

// quantile is the nearest-rank q-quantile of values with counts.
func quantile(values map[float64]int64, q float64) float64 {
	var vs []float64
	var total int64
	for v, c := range values {
		vs = append(vs, v)
		total += c
	}
	sort.Float64s(vs)
	rank := int64(math.Ceil(q * float64(total)))
	var seen int64
	for _, v := range vs {
		seen += values[v]
		if seen >= rank {
			return v
		}
	}
	return math.NaN()
}

type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time          { return c.now }
func (c *fakeClock) advance(d time.Duration) { c.now = c.now.Add(d) }
func newClock() *fakeClock                   { return &fakeClock{now: time.UnixMilli(1796092200000)} }
func near(a, b float64) bool                 { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
func lineCount(b *bytes.Buffer) int          { return strings.Count(b.String(), "\n") }

// TestAggregatedAppendsWriteOneLinePerFlush: a thousand append requests in one
// environment, as the api function serves them (the log's Appended and the HTTP
// handler's Request per request: three lines each unaggregated), write nothing until the
// interval passed and then one line, with the same counter sums, the exact count, sum,
// minimum and maximum of the latencies, and their p99 within the buckets' width.
func TestAggregatedAppendsWriteOneLinePerFlush(t *testing.T) {
	const n = 1000
	clock := newClock()
	var agg, each bytes.Buffer
	sinks := []*emf.Sink{
		emf.NewAggregated(&agg, deploy.MetricsNamespace, clock.Now, 30*time.Second),
		emf.New(&each, deploy.MetricsNamespace, clock.Now),
	}
	route := "POST /v1/topics/{topic}/records"
	for i := range n {
		// Latencies from 2 ms to about 2 s: three decades.
		lat := time.Duration(2e6 * math.Pow(1000, float64(i%97)/96))
		for _, s := range sinks {
			s.Appended("orders", 1+i%5, 100*(1+i%5), lat)
			s.Request(route, 200, lat+time.Millisecond)
		}
		clock.advance(20 * time.Millisecond) // 1,000 requests in 20 s
		sinks[0].FlushIfDue()                // as each invocation ends
	}
	if lineCount(&agg) != 0 {
		t.Fatalf("%d lines before the interval passed", lineCount(&agg))
	}
	if got := lineCount(&each); got != 3*n {
		t.Fatalf("unaggregated: %d lines for %d requests, want %d", got, n, 3*n)
	}
	clock.advance(10 * time.Second)
	sinks[0].FlushIfDue()
	if got := lineCount(&agg); got != 1 {
		t.Fatalf("%d lines for %d requests in one interval, want 1:\n%s", got, n, agg.String())
	}
	got, want := collect(t, decodeLines(t, agg.String())), collect(t, decodeLines(t, each.String()))
	if len(got) != len(want) {
		t.Fatalf("aggregated series %d, unaggregated %d", len(got), len(want))
	}
	for key, w := range want {
		g := got[key]
		if g == nil {
			t.Errorf("%s missing from the aggregated line", key)
			continue
		}
		if !near(g.sum, w.sum) {
			t.Errorf("%s: sum %v, want %v", key, g.sum, w.sum)
		}
		if !g.hist {
			continue // a counter: CloudWatch's alarms read its Sum
		}
		if g.count != w.count || g.min != w.min || g.max != w.max {
			t.Errorf("%s: count %d min %v max %v, want %d %v %v", key, g.count, g.min, g.max, w.count, w.min, w.max)
		}
		// Three decades take buckets of 8% (two doublings of 2%).
		for _, q := range []float64{0.5, 0.9, 0.99} {
			if e, x := quantile(g.values, q), quantile(w.values, q); math.Abs(e-x) > 0.08*x {
				t.Errorf("%s: p%v %v, want %v within 8%%", key, q*100, e, x)
			}
		}
	}
	if lat := got[emf.AppendAckLatency+"{}"]; lat == nil || lat.count != n {
		t.Fatalf("the rollup the p99 alarm reads: %+v", lat)
	}
	if bytesPer := float64(agg.Len()); bytesPer > 8192 {
		t.Errorf("one flush wrote %v bytes", bytesPer)
	}
}

// TestAggregatedFlushesAtTheNextEmitAfterTheInterval: an observation after the interval
// first writes what waited (stamped with its latest observation's time), then starts
// the next interval; Flush writes at once; an empty sink writes nothing.
func TestAggregatedFlushesAtTheNextEmitAfterTheInterval(t *testing.T) {
	clock := newClock()
	var buf bytes.Buffer
	s := emf.NewAggregated(&buf, "Strata", clock.Now, 10*time.Second)
	s.Flush()
	s.FlushIfDue()
	if buf.Len() != 0 {
		t.Fatalf("an empty sink wrote %q", buf.String())
	}
	s.CommitsMaterialized("orders", 2)
	clock.advance(4 * time.Second)
	s.CommitsMaterialized("orders", 3)
	stamp := clock.now.UnixMilli()
	clock.advance(6 * time.Second) // frozen past the interval; the next invocation emits
	s.CommitsMaterialized("orders", 7)
	lines := decodeLines(t, buf.String())
	if len(lines) != 1 || lines[0].timestamp != stamp {
		t.Fatalf("lines %d (timestamp %v), want 1 stamped %v", len(lines), lines[0].timestamp, stamp)
	}
	if v := collect(t, lines)[emf.CommitsMaterialized+"{topic=orders}"]; v == nil || v.sum != 5 || v.hist {
		t.Fatalf("first flush: %+v, want the counter 5", v)
	}
	s.Flush()
	if v := collect(t, decodeLines(t, buf.String()))[emf.CommitsMaterialized+"{topic=orders}"]; v.sum != 12 {
		t.Fatalf("after Flush: %v, want 12", v.sum)
	}
	before := buf.Len()
	s.Emit([][2]string{{"topic", "orders"}}, // a non-finite value is dropped
		emf.Metric{Name: emf.AppendAckLatency, Unit: emf.UnitSeconds, Value: math.NaN()},
		emf.Metric{Name: emf.AppendAckLatency, Unit: emf.UnitSeconds, Value: 0.5})
	s.Flush()
	if v := collect(t, decodeLines(t, buf.String()[before:]))[emf.AppendAckLatency+"{topic=orders}"]; v == nil || v.count != 1 {
		t.Fatalf("latency %+v", v)
	}
}

// TestAggregationPreservesSumsAcrossAnySplit: whatever the observations and however the
// clock splits them into flushes, the lines carry every counter's sum and every
// distribution's count, sum, minimum and maximum exactly, at most MaxValues values a
// metric, and a flush writes no more lines than the dimension values that conflict.
func TestAggregationPreservesSumsAcrossAnySplit(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		clock := newClock()
		var agg bytes.Buffer
		s := emf.NewAggregated(&agg, "Strata", clock.Now, 15*time.Second)
		type want struct {
			sum, min, max float64
			count         int64
		}
		wants := map[string]*want{}
		note := func(key string, v float64) {
			w := wants[key]
			if w == nil {
				w = &want{min: v, max: v}
				wants[key] = w
			}
			w.sum += v
			w.count++
			w.min, w.max = min(w.min, v), max(w.max, v)
		}
		topics := []string{"a", "b", "c"}
		codes := []int{200, 503}
		steps := rapid.IntRange(1, 400).Draw(rt, "steps")
		for i := range steps {
			topic := rapid.SampledFrom(topics).Draw(rt, "topic")
			switch rapid.IntRange(0, 3).Draw(rt, "op") {
			case 0:
				recs := rapid.IntRange(0, 500).Draw(rt, "records")
				// Microsecond latencies from 0 to 60 s: distributions may need coarsening.
				lat := time.Duration(rapid.Int64Range(0, 60e6).Draw(rt, "latency")) * time.Microsecond
				s.Appended(topic, recs, 10*recs, lat)
				for _, k := range []string{"{topic=" + topic + "}", "{}"} {
					note(emf.AppendAckLatency+k, lat.Seconds())
					note(emf.RecordsAppended+k, float64(recs))
					note(emf.BytesAppended+k, float64(10*recs))
				}
			case 1:
				code := rapid.SampledFrom(codes).Draw(rt, "code")
				el := time.Duration(rapid.Int64Range(1, 5e6).Draw(rt, "elapsed")) * time.Microsecond
				s.Request("r", code, el)
				note(fmt.Sprintf("%s{route=r,code=%d}", emf.HTTPRequests, code), 1)
				note(emf.HTTPRequestDuration+"{route=r}", el.Seconds())
			case 2:
				n := rapid.IntRange(0, 9).Draw(rt, "n")
				s.CommitsMaterialized(topic, n)
				note(emf.CommitsMaterialized+"{topic="+topic+"}", float64(n))
			case 3:
				before := lineCount(&agg)
				if rapid.Bool().Draw(rt, "force") {
					s.Flush()
				} else {
					s.FlushIfDue()
				}
				if got := lineCount(&agg) - before; got > len(topics)+1 {
					rt.Fatalf("step %d: one flush wrote %d lines", i, got)
				}
			}
			clock.advance(time.Duration(rapid.Int64Range(0, 20e3).Draw(rt, "advance")) * time.Millisecond)
		}
		s.Flush()
		got := collect(rt, decodeLines(rt, agg.String()))
		for key, w := range wants {
			g := got[key]
			if g == nil {
				rt.Fatalf("%s missing", key)
			}
			if !near(g.sum, w.sum) {
				rt.Fatalf("%s: sum %v, want %v", key, g.sum, w.sum)
			}
			if g.hist && (g.count != w.count || g.min != w.min || g.max != w.max) {
				rt.Fatalf("%s: count %d min %v max %v, want %d %v %v", key, g.count, g.min, g.max, w.count, w.min, w.max)
			}
		}
		if len(got) != len(wants) {
			rt.Fatalf("%d series, want %d", len(got), len(wants))
		}
	})
}

// TestAggregatedValuesAreDistinct: values either side of a bucket boundary, closer than
// the line's six significant digits, are one value of the line with both counts, not the
// same value twice.
func TestAggregatedValuesAreDistinct(t *testing.T) {
	var buf bytes.Buffer
	s := emf.NewAggregated(&buf, "Strata", newClock().Now, time.Minute)
	boundary := math.Pow(1.02, -100) // a bucket boundary: 1.02^k
	for _, v := range []float64{boundary * (1 - 1e-9), boundary * (1 + 1e-9), 0.5} {
		s.Emit(nil, emf.Metric{Name: emf.AppendAckLatency, Unit: emf.UnitSeconds, Value: v})
	}
	s.Flush()
	got := collect(t, decodeLines(t, buf.String()))[emf.AppendAckLatency+"{}"]
	if got == nil || got.count != 3 || len(got.values) != 2 {
		t.Fatalf("%+v, want 3 observations as 2 values", got)
	}
}
