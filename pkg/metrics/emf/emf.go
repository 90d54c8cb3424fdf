// Package emf writes Strata's metrics in CloudWatch embedded metric format: JSON log
// lines on the function's standard output, which CloudWatch Logs turns into metrics with
// no API call (docs/DESIGN.md §5). A sink from New writes one line per observation; one
// from NewAggregated sums counters and keeps distributions per dimension set, and writes
// them as a few lines an interval (the functions use it, so a busy environment pays for
// a line per interval rather than per request). Metric names and dimensions are the
// Prometheus ones of pkg/metrics (strata_records_appended_total by topic, ...), so one
// dashboard reads either; the functions' own counters (dispatch) are added beside them.
package emf

import (
	"encoding/json"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/dispatch"
	"github.com/stratalog/strata/pkg/retention"
)

// Units CloudWatch understands.
const (
	UnitCount   = "Count"
	UnitSeconds = "Seconds"
	UnitBytes   = "Bytes"
)

// Metric is one named value.
type Metric struct {
	Name  string
	Unit  string
	Value float64
}

// Sink writes EMF lines to W. It is safe for concurrent use; each line is one Write, so
// lines from concurrent callers never interleave.
type Sink struct {
	namespace string
	clock     func() time.Time
	mu        sync.Mutex
	w         io.Writer
	agg       *aggregate // nil: a line per observation
}

// New returns a sink writing one line per observation to w (os.Stdout in Lambda) under
// the CloudWatch namespace; clock nil means time.Now.
func New(w io.Writer, namespace string, clock func() time.Time) *Sink {
	if clock == nil {
		clock = time.Now
	}
	return &Sink{namespace: namespace, clock: clock, w: w}
}

// NewAggregated returns a sink that aggregates observations per dimension set: counters
// (names ending in _total) are summed, every other metric keeps its distribution as EMF
// Values/Counts (at most MaxValues, with exact Min, Max, Sum and Count), so CloudWatch's
// sums, extremes and percentiles are those of the observations. What it holds is written
// by the first observation or FlushIfDue once interval (DefaultFlushInterval when ≤ 0) has
// passed since the oldest pending observation, and by Flush. The metric names,
// dimensions and namespace are New's.
func NewAggregated(w io.Writer, namespace string, clock func() time.Time, interval time.Duration) *Sink {
	s := New(w, namespace, clock)
	if interval <= 0 {
		interval = DefaultFlushInterval
	}
	s.agg = &aggregate{interval: interval, entries: map[string]*entry{}}
	return s
}

// Flush writes what an aggregating sink holds, now. Write errors are ignored.
func (s *Sink) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLocked()
}

// FlushIfDue writes what an aggregating sink holds when its oldest observation has
// waited the interval: what a function calls as each invocation ends, so no more than an
// interval's observations wait in an environment Lambda freezes.
func (s *Sink) FlushIfDue() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.agg != nil && s.agg.due(s.clock()) {
		s.flushLocked()
	}
}

func (s *Sink) flushLocked() {
	if s.agg == nil || len(s.agg.entries) == 0 {
		return
	}
	for _, line := range s.agg.lines(s.namespace) {
		_, _ = s.w.Write(line)
	}
	s.agg.entries = map[string]*entry{}
}

type metricDef struct {
	Name string `json:"Name"`
	Unit string `json:"Unit,omitempty"`
}

type directive struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []metricDef `json:"Metrics"`
}

type awsMeta struct {
	Timestamp         int64       `json:"Timestamp"`
	CloudWatchMetrics []directive `json:"CloudWatchMetrics"`
}

// Emit writes one line holding metrics with the given dimensions (label name → value;
// names in dims order). Write errors are ignored: metrics never fail the work.
func (s *Sink) Emit(dims [][2]string, metrics ...Metric) {
	s.emit(dims, false, metrics...)
}

// EmitRollup is Emit with the metrics also aggregated without dimensions (a second,
// empty dimension set), for alarms over every topic or group at once.
func (s *Sink) EmitRollup(dims [][2]string, metrics ...Metric) {
	s.emit(dims, true, metrics...)
}

func (s *Sink) emit(dims [][2]string, rollup bool, metrics ...Metric) {
	if len(metrics) == 0 {
		return
	}
	if s.agg != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		now := s.clock()
		if s.agg.due(now) {
			s.flushLocked()
		}
		s.agg.add(now, dims, rollup, metrics)
		return
	}
	line := map[string]any{}
	names := make([]string, 0, len(dims))
	for _, d := range dims {
		names = append(names, d[0])
		line[d[0]] = d[1]
	}
	defs := make([]metricDef, 0, len(metrics))
	for _, m := range metrics {
		defs = append(defs, metricDef{Name: m.Name, Unit: m.Unit})
		line[m.Name] = m.Value
	}
	line["_aws"] = awsMeta{
		Timestamp:         s.clock().UnixMilli(),
		CloudWatchMetrics: []directive{{Namespace: s.namespace, Dimensions: dimensionSets(names, rollup), Metrics: defs}},
	}
	b, err := json.Marshal(line)
	if err != nil {
		return
	}
	b = append(b, '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = s.w.Write(b)
}

// dimensionSets is names as EMF's one dimension set, plus the empty set when rollup.
func dimensionSets(names []string, rollup bool) [][]string {
	if rollup && len(names) > 0 {
		return [][]string{names, {}}
	}
	return [][]string{names}
}

// The names of pkg/metrics, with the Prometheus namespace prefix.
const (
	AppendAckLatency     = deploy.MetricAppendLatency
	RecordsAppended      = "strata_records_appended_total"
	BytesAppended        = "strata_bytes_appended_total"
	CommitsMaterialized  = "strata_commits_materialized_total"
	HTTPRequests         = "strata_http_requests_total"
	HTTPRequestDuration  = "strata_http_request_duration_seconds"
	RecordsHandled       = "strata_consumer_records_handled_total"
	PoisonRetries        = "strata_consumer_poison_retries_total"
	DeadLettered         = deploy.MetricDeadLettered
	Dropped              = "strata_consumer_dropped_total"
	RecordsLost          = "strata_consumer_records_lost_total"
	ParkedRecords        = deploy.MetricParkedRecords
	ReplayedRecords      = deploy.MetricReplayedRecords
	ParkedLostRecords    = deploy.MetricParkedLostRecords
	FencedCommits        = "strata_fenced_commits_total"
	RetentionRuns        = "strata_retention_runs_total"
	RetentionExpired     = "strata_retention_records_expired_total"
	RetentionEntriesDel  = "strata_retention_index_entries_deleted_total"
	RetentionObjectsDel  = "strata_retention_objects_deleted_total"
	DispatchCommits      = "strata_dispatch_commits_total"
	DispatchLeaseChecks  = "strata_dispatch_lease_checks_total"
	DispatchInvocations  = "strata_dispatch_invocations_total"
	DispatchInvokeErrors = deploy.MetricDispatchInvokeErrors
	DispatchHealthErrors = "strata_dispatch_health_errors_total"
)

// The subscriptions' health the scheduled dispatch sweep emits per {group, topic}, named
// as the stack's alarms read them (pkg/deploy).
const (
	ConsumerLagSeconds     = deploy.MetricLagSeconds
	ConsumerSecondsToLoss  = deploy.MetricSecondsToDataLoss
	ConsumerRecordsExpired = deploy.MetricRecordsExpired
	ConsumerParkedKeys     = deploy.MetricParkedKeys
)

// Appended implements log.Metrics.
func (s *Sink) Appended(topic string, records, bytes int, ackLatency time.Duration) {
	s.EmitRollup([][2]string{{"topic", topic}},
		Metric{AppendAckLatency, UnitSeconds, ackLatency.Seconds()},
		Metric{RecordsAppended, UnitCount, float64(records)},
		Metric{BytesAppended, UnitBytes, float64(bytes)})
}

// CommitsMaterialized implements log.Metrics (by topic, as pkg/metrics).
func (s *Sink) CommitsMaterialized(topic string, n int) {
	s.Emit([][2]string{{"topic", topic}}, Metric{CommitsMaterialized, UnitCount, float64(n)})
}

// Request implements httpapi.Metrics: the request counter by route and code, the
// duration by route.
func (s *Sink) Request(route string, status int, elapsed time.Duration) {
	s.Emit([][2]string{{"route", route}, {"code", strconv.Itoa(status)}}, Metric{HTTPRequests, UnitCount, 1})
	s.Emit([][2]string{{"route", route}}, Metric{HTTPRequestDuration, UnitSeconds, elapsed.Seconds()})
}

// ConsumerRun implements consumer.Metrics: what one consumer run did, by group and
// topic (as pkg/metrics).
func (s *Sink) ConsumerRun(group, topic string, st consumer.Stats) {
	ms := []Metric{
		{RecordsHandled, UnitCount, float64(st.Handled)},
		{PoisonRetries, UnitCount, float64(st.Retries)},
		{DeadLettered, UnitCount, float64(st.DeadLettered)},
		{Dropped, UnitCount, float64(st.Dropped)},
		{RecordsLost, UnitCount, float64(st.RecordsLost)},
		{ParkedRecords, UnitCount, float64(st.Parked)},
		{ReplayedRecords, UnitCount, float64(st.Replayed)},
		{ParkedLostRecords, UnitCount, float64(st.ParkedLost)},
	}
	if st.Fenced {
		ms = append(ms, Metric{FencedCommits, UnitCount, 1})
	}
	s.Emit([][2]string{{"group", group}, {"topic", topic}}, ms...)
}

// SubscriptionHealth records one subscription's health, per {group, topic} as the
// stack's alarms read it (dispatch's scheduled sweep). A caught-up group emits no time to
// data loss and parked keys that could not be read emit no datum: the alarms treat
// missing data as not breaching.
func (s *Sink) SubscriptionHealth(h dispatch.GroupHealth) {
	ms := []Metric{
		{ConsumerLagSeconds, UnitSeconds, h.LagSeconds},
		{ConsumerRecordsExpired, UnitCount, float64(h.RecordsLost)},
	}
	if h.SecondsToDataLoss != nil {
		ms = append(ms, Metric{ConsumerSecondsToLoss, UnitSeconds, *h.SecondsToDataLoss})
	}
	if h.ParkedKeys != nil {
		ms = append(ms, Metric{ConsumerParkedKeys, UnitCount, float64(*h.ParkedKeys)})
	}
	s.Emit([][2]string{{"group", h.Group}, {"topic", h.Topic}}, ms...)
}

// RetentionRun records one retention pass.
func (s *Sink) RetentionRun(st retention.Stats, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	s.Emit([][2]string{{"result", result}}, Metric{RetentionRuns, UnitCount, 1})
	s.Emit(nil,
		Metric{RetentionExpired, UnitCount, float64(st.RecordsExpired)},
		Metric{RetentionEntriesDel, UnitCount, float64(st.EntriesDeleted)},
		Metric{RetentionObjectsDel, UnitCount, float64(st.ObjectsDeleted)})
}
