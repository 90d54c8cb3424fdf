package metrics

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Commits is what the unindexed-commit collector reads of the log; *log.Log has it.
type Commits interface {
	ListTopics(ctx context.Context) ([]string, error)
	Partitions(ctx context.Context, topic string) (int32, error)
	// UnindexedAge is how long the partition's newest commit has waited for its index
	// entry (0 once indexed).
	UnindexedAge(ctx context.Context, topic string, partition int32) (time.Duration, error)
}

// UnindexedCollector exports strata_commit_unindexed_age_seconds per partition of every
// topic on each scrape: Strata's analogue of under-replicated partitions, commits
// sequenced but not yet readable.
type UnindexedCollector struct {
	log       Commits
	timeout   time.Duration
	age       *prometheus.Desc
	errorsCnt prometheus.Counter
}

// NewUnindexedCollector returns the collector over l; timeout bounds a scrape's reads
// (default 2s).
func NewUnindexedCollector(l Commits, timeout time.Duration) *UnindexedCollector {
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	return &UnindexedCollector{
		log:     l,
		timeout: timeout,
		age: prometheus.NewDesc(Namespace+"_commit_unindexed_age_seconds",
			"How long the partition's newest commit has waited for its index entry (0 once indexed).",
			[]string{"topic", "partition"}, nil),
		errorsCnt: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace,
			Name: "commit_unindexed_errors_total", Help: "Reads that failed while collecting unindexed commits."}),
	}
}

// Describe implements prometheus.Collector.
func (c *UnindexedCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.age
	c.errorsCnt.Describe(ch)
}

// Collect implements prometheus.Collector. A topic or partition whose reads fail is
// left out of this scrape and counted in strata_commit_unindexed_errors_total.
func (c *UnindexedCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	defer c.errorsCnt.Collect(ch)
	topics, err := c.log.ListTopics(ctx)
	if err != nil {
		c.errorsCnt.Inc()
		return
	}
	for _, t := range topics {
		n, err := c.log.Partitions(ctx, t)
		if err != nil {
			c.errorsCnt.Inc()
			continue
		}
		for p := range n {
			age, err := c.log.UnindexedAge(ctx, t, p)
			if err != nil {
				c.errorsCnt.Inc()
				continue
			}
			ch <- prometheus.MustNewConstMetric(c.age, prometheus.GaugeValue, age.Seconds(), t, strconv.Itoa(int(p)))
		}
	}
}
