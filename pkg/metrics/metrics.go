// Package metrics backs Strata's metric hooks (log.Metrics, httpapi.Metrics, consumer
// run statistics, retention passes, group fencing and rebalances) with Prometheus
// collectors, and exports consumer lag by describing known groups on each scrape
// (docs/DESIGN.md §5). Everything is registered on the registry passed in; nothing is
// global.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/retention"
)

// Namespace prefixes every metric name.
const Namespace = "strata"

// latencyBuckets cover an embedded-backend ack (around a millisecond) up to a slow AWS
// append (seconds).
var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// Metrics holds the collectors. Its methods are safe for concurrent use.
type Metrics struct {
	appendLatency   *prometheus.HistogramVec
	recordsAppended *prometheus.CounterVec
	bytesAppended   *prometheus.CounterVec
	materialized    *prometheus.CounterVec

	requests        *prometheus.CounterVec
	requestDuration *prometheus.HistogramVec

	fencedCommits *prometheus.CounterVec
	rebalances    *prometheus.CounterVec

	handled      *prometheus.CounterVec
	retries      *prometheus.CounterVec
	deadLettered *prometheus.CounterVec
	dropped      *prometheus.CounterVec
	recordsLost  *prometheus.CounterVec
	parked       *prometheus.CounterVec
	replayed     *prometheus.CounterVec
	parkedLost   *prometheus.CounterVec

	retentionRuns    *prometheus.CounterVec
	retentionExpired prometheus.Counter
	entriesDeleted   prometheus.Counter
	objectsDeleted   prometheus.Counter
	ttlDeleted       prometheus.Counter
}

// New creates the collectors and registers them on reg.
func New(reg prometheus.Registerer) (*Metrics, error) {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
	}
	m := &Metrics{
		appendLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace,
			Name: "append_ack_latency_seconds", Help: "Time from an append's start until its records are durable and acknowledged.",
			Buckets: latencyBuckets}, []string{"topic"}),
		recordsAppended: counter("records_appended_total", "Records appended and acknowledged.", "topic"),
		bytesAppended:   counter("bytes_appended_total", "Record bytes (key, value, headers) appended and acknowledged.", "topic"),
		materialized:    counter("commits_materialized_total", "Index entries written from the sequencer's stream for commits whose appender stopped before writing them.", "topic"),

		requests: counter("http_requests_total", "HTTP requests by route pattern and status code.", "route", "code"),
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace,
			Name: "http_request_duration_seconds", Help: "HTTP request handling time by route pattern.",
			Buckets: latencyBuckets}, []string{"route"}),

		fencedCommits: counter("fenced_commits_total", "Commits refused because the member no longer owned the lease at its generation.", "group", "topic"),
		rebalances:    counter("rebalances_total", "Lease ownership changes (each increments the partition's generation).", "group", "topic"),

		handled:      counter("consumer_records_handled_total", "Records a consumer handler completed.", "group", "topic"),
		retries:      counter("consumer_poison_retries_total", "Handler failures that were retried.", "group", "topic"),
		deadLettered: counter("consumer_dead_lettered_total", "Records that failed every attempt and were dead-lettered.", "group", "topic"),
		dropped:      counter("consumer_dropped_total", "Records that failed every attempt and were skipped: no dead-letter topic was configured.", "group", "topic"),
		recordsLost:  counter("consumer_records_lost_total", "Records a consumer skipped because retention removed them before they were read.", "group", "topic"),
		parked:       counter("consumer_parked_records_total", "Records sent to the group's parking topic because their key is parked (on_failure park).", "group", "topic"),
		replayed:     counter("consumer_replayed_records_total", "Parked records handed to the handler again after their key was released.", "group", "topic"),
		parkedLost:   counter("consumer_parked_lost_records_total", "Parked records a release did not find: the parking topic's retention took them first.", "group", "topic"),

		retentionRuns: counter("retention_runs_total", "Retention passes by result (ok or error).", "result"),
		retentionExpired: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace,
			Name: "retention_records_expired_total", Help: "Records moved below the log start offset by retention."}),
		entriesDeleted: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace,
			Name: "retention_index_entries_deleted_total", Help: "Index entries deleted by retention."}),
		objectsDeleted: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace,
			Name: "retention_objects_deleted_total", Help: "Segment objects deleted by retention (expired or orphaned)."}),
		ttlDeleted: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace,
			Name: "ttl_rows_deleted_total", Help: "Expired index and idempotency rows removed by the embedded backend's TTL sweep."}),
	}
	for _, c := range []prometheus.Collector{
		m.appendLatency, m.recordsAppended, m.bytesAppended, m.materialized,
		m.requests, m.requestDuration, m.fencedCommits, m.rebalances,
		m.handled, m.retries, m.deadLettered, m.dropped, m.recordsLost, m.parked, m.replayed, m.parkedLost,
		m.retentionRuns, m.retentionExpired, m.entriesDeleted, m.objectsDeleted, m.ttlDeleted,
	} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Appended implements log.Metrics.
func (m *Metrics) Appended(topic string, records, bytes int, ackLatency time.Duration) {
	m.appendLatency.WithLabelValues(topic).Observe(ackLatency.Seconds())
	m.recordsAppended.WithLabelValues(topic).Add(float64(records))
	m.bytesAppended.WithLabelValues(topic).Add(float64(bytes))
}

// CommitsMaterialized implements log.Metrics. The partition is not a label: a topic may
// have 1,024 of them.
func (m *Metrics) CommitsMaterialized(topic string, n int) {
	m.materialized.WithLabelValues(topic).Add(float64(n))
}

// Request implements httpapi.Metrics.
func (m *Metrics) Request(route string, status int, elapsed time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.requestDuration.WithLabelValues(route).Observe(elapsed.Seconds())
}

var _ consumer.Metrics = (*Metrics)(nil)

// ConsumerRun implements consumer.Metrics: it adds what one consumer run of a partition
// did. Set the Metrics as consumer.Config.Metrics and every run (Run, RunLease and
// RunMember's) reports itself once, when it ends.
func (m *Metrics) ConsumerRun(group, topic string, s consumer.Stats) {
	m.handled.WithLabelValues(group, topic).Add(float64(s.Handled))
	m.retries.WithLabelValues(group, topic).Add(float64(s.Retries))
	m.deadLettered.WithLabelValues(group, topic).Add(float64(s.DeadLettered))
	m.dropped.WithLabelValues(group, topic).Add(float64(s.Dropped))
	m.recordsLost.WithLabelValues(group, topic).Add(float64(s.RecordsLost))
	m.parked.WithLabelValues(group, topic).Add(float64(s.Parked))
	m.replayed.WithLabelValues(group, topic).Add(float64(s.Replayed))
	m.parkedLost.WithLabelValues(group, topic).Add(float64(s.ParkedLost))
}

// RetentionRun records one retention pass; err is the pass's (joined) error.
func (m *Metrics) RetentionRun(s retention.Stats, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.retentionRuns.WithLabelValues(result).Inc()
	m.retentionExpired.Add(float64(s.RecordsExpired))
	m.entriesDeleted.Add(float64(s.EntriesDeleted))
	m.objectsDeleted.Add(float64(s.ObjectsDeleted))
}

// TTLDeleted records rows removed by a TTL sweep of the embedded backend.
func (m *Metrics) TTLDeleted(n int) { m.ttlDeleted.Add(float64(n)) }

// Handler serves the gatherer's metrics in the Prometheus text format.
func Handler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{})
}
