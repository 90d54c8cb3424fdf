package emf

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxValues is the most distinct values one metric's Values array may hold: CloudWatch
// drops a metric with more.
const MaxValues = 100

// DefaultFlushInterval is how long an aggregating sink keeps observations before it
// writes them (NewAggregated): well inside the stack's five-minute alarm periods.
const DefaultFlushInterval = 30 * time.Second

// maxEntriesPerLine bounds the dimension sets packed into one line, keeping a line far
// below CloudWatch Logs' event size limit even with every distribution at MaxValues.
const maxEntriesPerLine = 16

// isCounter reports whether a metric is summed when aggregated: the Prometheus counters
// (names ending in _total). Every other metric (latencies, gauges) keeps its
// distribution.
func isCounter(name string) bool { return strings.HasSuffix(name, "_total") }

// entry is the observations of one dimension set (names and values, and whether the
// dimensionless rollup is emitted too) since the last flush.
type entry struct {
	dims    [][2]string
	rollup  bool
	order   []string // metric names in first-seen order
	units   map[string]string
	counter map[string]float64
	dist    map[string]*distribution
}

func (e *entry) add(m Metric) {
	if math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
		return // CloudWatch takes finite values only
	}
	if _, ok := e.units[m.Name]; !ok {
		e.order = append(e.order, m.Name)
		e.units[m.Name] = m.Unit
	}
	if isCounter(m.Name) {
		e.counter[m.Name] += m.Value
		return
	}
	d := e.dist[m.Name]
	if d == nil {
		d = &distribution{buckets: map[bucketKey]*bucket{}}
		e.dist[m.Name] = d
	}
	d.add(m.Value)
}

// dimsKey identifies a dimension set with its values.
func dimsKey(dims [][2]string, rollup bool) string {
	var b strings.Builder
	if rollup {
		b.WriteString("r")
	}
	for _, d := range dims {
		b.WriteString("\x00")
		b.WriteString(d[0])
		b.WriteString("\x01")
		b.WriteString(d[1])
	}
	return b.String()
}

// distribution keeps a metric's values as at most MaxValues buckets of geometrically
// growing width, each with its count and the sum of its values, so the line's
// Values/Counts pairs carry the count and sum exactly and every value within the
// bucket's relative width (2% at first, doubled each time more than MaxValues buckets
// are needed: 100 buckets of 2% span a factor of 7, of 4% 52, of 8% 2,700). Min, Max,
// Sum and Count are exact.
type distribution struct {
	scale         uint // bucket index = floor(log_base(|v|) / 2^scale)
	buckets       map[bucketKey]*bucket
	count         int64
	sum, min, max float64
}

type bucketKey struct {
	sign  int8 // -1, 0 (the value 0) or 1
	index int64
}

type bucket struct {
	n   int64
	sum float64
}

// logBase is the first buckets' width: values within 2% share a bucket.
var logBase = math.Log(1.02)

func (d *distribution) key(v float64) bucketKey {
	switch {
	case v == 0:
		return bucketKey{}
	case v < 0:
		return bucketKey{sign: -1, index: int64(math.Floor(math.Log(-v)/logBase)) >> d.scale}
	}
	return bucketKey{sign: 1, index: int64(math.Floor(math.Log(v)/logBase)) >> d.scale}
}

func (d *distribution) add(v float64) {
	if d.count == 0 {
		d.min, d.max = v, v
	}
	d.count++
	d.sum += v
	d.min, d.max = min(d.min, v), max(d.max, v)
	k := d.key(v)
	b := d.buckets[k]
	if b == nil {
		b = &bucket{}
		d.buckets[k] = b
	}
	b.n++
	b.sum += v
	for len(d.buckets) > MaxValues {
		d.coarsen()
	}
}

// coarsen doubles every bucket's width, merging pairs of neighbours (floor(i/2) of a
// bucket index i is its index at twice the width).
func (d *distribution) coarsen() {
	d.scale++
	merged := make(map[bucketKey]*bucket, len(d.buckets)/2+1)
	for k, b := range d.buckets {
		k.index >>= 1
		m := merged[k]
		if m == nil {
			m = &bucket{}
			merged[k] = m
		}
		m.n += b.n
		m.sum += b.sum
	}
	d.buckets = merged
}

// histogram is the EMF value of a distribution: Values strictly ascending (each
// bucket's mean), their Counts, and the exact statistics.
type histogram struct {
	Values []float64 `json:"Values"`
	Counts []int64   `json:"Counts"`
	Max    float64   `json:"Max"`
	Min    float64   `json:"Min"`
	Count  int64     `json:"Count"`
	Sum    float64   `json:"Sum"`
}

func (d *distribution) histogram() histogram {
	bs := make([]*bucket, 0, len(d.buckets))
	for _, b := range d.buckets {
		bs = append(bs, b)
	}
	mean := func(b *bucket) float64 { return b.sum / float64(b.n) }
	slices.SortFunc(bs, func(a, b *bucket) int {
		switch ma, mb := mean(a), mean(b); {
		case ma < mb:
			return -1
		case ma > mb:
			return 1
		}
		return 0
	})
	h := histogram{Max: d.max, Min: d.min, Count: d.count, Sum: d.sum}
	for _, b := range bs {
		// Six significant digits are far finer than a bucket and keep the line short;
		// a mean rounded past the exact extremes is kept inside them.
		v, _ := strconv.ParseFloat(strconv.FormatFloat(mean(b), 'g', 6, 64), 64)
		v = min(max(v, d.min), d.max)
		if n := len(h.Values); n > 0 && h.Values[n-1] == v {
			h.Counts[n-1] += b.n // neighbours across a boundary, equal once rounded
			continue
		}
		h.Values = append(h.Values, v)
		h.Counts = append(h.Counts, b.n)
	}
	return h
}

// aggregate is an aggregating sink's pending observations.
type aggregate struct {
	interval time.Duration
	entries  map[string]*entry
	first    time.Time // the first pending observation
	last     time.Time // the latest pending observation: the lines' timestamp
}

func (a *aggregate) add(now time.Time, dims [][2]string, rollup bool, metrics []Metric) {
	wasEmpty := len(a.entries) == 0
	k := dimsKey(dims, rollup)
	e := a.entries[k]
	if e == nil {
		e = &entry{dims: slices.Clone(dims), rollup: rollup, units: map[string]string{},
			counter: map[string]float64{}, dist: map[string]*distribution{}}
		a.entries[k] = e
	}
	for _, m := range metrics {
		e.add(m)
	}
	if len(e.order) == 0 {
		delete(a.entries, k) // nothing finite was observed
		return
	}
	if wasEmpty {
		a.first = now
	}
	a.last = now
}

// due reports whether the pending observations have waited an interval.
func (a *aggregate) due(now time.Time) bool {
	return len(a.entries) > 0 && now.Sub(a.first) >= a.interval
}

// lines packs the pending entries into as few EMF lines as CloudWatch allows: entries
// share a line when their dimension values agree on every name they have in common and
// their metric names differ (each is a member of the line's root). Entries are taken in
// key order, so the lines are deterministic.
func (a *aggregate) lines(namespace string) [][]byte {
	keys := make([]string, 0, len(a.entries))
	for k := range a.entries {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	type doc struct {
		root       map[string]any
		directives []directive
	}
	var docs []*doc
	fits := func(d *doc, e *entry) bool {
		if len(d.directives) >= maxEntriesPerLine {
			return false
		}
		for _, dim := range e.dims {
			if v, ok := d.root[dim[0]]; ok && v != dim[1] {
				return false
			}
		}
		for _, name := range e.order {
			if _, ok := d.root[name]; ok {
				return false
			}
		}
		return true
	}
	for _, k := range keys {
		e := a.entries[k]
		var d *doc
		for _, c := range docs {
			if fits(c, e) {
				d = c
				break
			}
		}
		if d == nil {
			d = &doc{root: map[string]any{}}
			docs = append(docs, d)
		}
		names := make([]string, 0, len(e.dims))
		for _, dim := range e.dims {
			names = append(names, dim[0])
			d.root[dim[0]] = dim[1]
		}
		defs := make([]metricDef, 0, len(e.order))
		for _, name := range e.order {
			defs = append(defs, metricDef{Name: name, Unit: e.units[name]})
			if dist, ok := e.dist[name]; ok {
				d.root[name] = dist.histogram()
			} else {
				d.root[name] = e.counter[name]
			}
		}
		d.directives = append(d.directives, directive{Namespace: namespace, Dimensions: dimensionSets(names, e.rollup), Metrics: defs})
	}
	out := make([][]byte, 0, len(docs))
	for _, d := range docs {
		d.root["_aws"] = awsMeta{Timestamp: a.last.UnixMilli(), CloudWatchMetrics: d.directives}
		b, err := json.Marshal(d.root)
		if err != nil {
			continue
		}
		out = append(out, append(b, '\n'))
	}
	return out
}
