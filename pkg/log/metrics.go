package log

import "time"

// Metrics receives the log's counters; the local runtime backs it with Prometheus and
// Lambda with CloudWatch embedded metrics. Implementations must be safe for concurrent use.
type Metrics interface {
	// Appended is called once per successful append.
	Appended(topic string, records, bytes int, ackLatency time.Duration)
	// SequencerConflict is called for every lost race on a partition's next offset.
	SequencerConflict(topic string, partition int32)
}

// NopMetrics discards everything.
type NopMetrics struct{}

// Appended implements Metrics.
func (NopMetrics) Appended(string, int, int, time.Duration) {}

// SequencerConflict implements Metrics.
func (NopMetrics) SequencerConflict(string, int32) {}
