package log

import "time"

// Metrics receives the log's counters; the local runtime backs it with Prometheus and
// Lambda with CloudWatch embedded metrics. Implementations must be safe for concurrent use.
type Metrics interface {
	// Appended is called once per successful append.
	Appended(topic string, records, bytes int, ackLatency time.Duration)
	// CommitsMaterialized is called with the number of index entries Materialize wrote:
	// commits whose appender stopped between its commit and its index write.
	CommitsMaterialized(topic string, n int)
}

// NopMetrics discards everything.
type NopMetrics struct{}

// Appended implements Metrics.
func (NopMetrics) Appended(string, int, int, time.Duration) {}

// CommitsMaterialized implements Metrics.
func (NopMetrics) CommitsMaterialized(string, int) {}
