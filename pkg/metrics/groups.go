package metrics

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/store"
)

// Coordinator is the group coordinator's API as the HTTP handlers use it
// (*group.Coordinator implements it; so does httpapi.Groups).
type Coordinator interface {
	Acquire(ctx context.Context, g, topic string, partition int32, member string, ttl time.Duration) (group.Lease, error)
	Renew(ctx context.Context, g, topic string, partition int32, member string, generation int64, ttl time.Duration) (group.Lease, error)
	Release(ctx context.Context, g, topic string, partition int32, member string, generation int64) error
	Commit(ctx context.Context, g, topic string, partition int32, member string, generation, nextOffset int64, completed ...store.OffsetRange) error
	Describe(ctx context.Context, g string) (group.GroupInfo, error)
	Reset(ctx context.Context, g, topic string, to group.ResetTo) ([]group.PartitionOffset, error)
}

// Groups wraps a Coordinator: it counts fenced commits and lease takeovers, and
// remembers the groups it has seen so the lag collector knows what to describe.
// The store offers no list of groups, so a group shows up in the lag metrics once this
// process has served a call for it.
type Groups struct {
	inner Coordinator
	m     *Metrics
	mu    sync.Mutex
	known map[string]struct{}
}

// WrapGroups returns inner instrumented with m.
func (m *Metrics) WrapGroups(inner Coordinator) *Groups {
	return &Groups{inner: inner, m: m, known: map[string]struct{}{}}
}

// Track adds groups to the set the lag collector describes.
func (g *Groups) Track(names ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, n := range names {
		g.known[n] = struct{}{}
	}
}

// Untrack removes groups from the set the lag collector describes.
func (g *Groups) Untrack(names ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, n := range names {
		delete(g.known, n)
	}
}

// Known returns the tracked group names in order.
func (g *Groups) Known() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]string, 0, len(g.known))
	for n := range g.known {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Acquire implements Coordinator; a granted lease is an ownership change (a new
// generation), counted as a rebalance.
func (g *Groups) Acquire(ctx context.Context, grp, topic string, partition int32, member string, ttl time.Duration) (group.Lease, error) {
	l, err := g.inner.Acquire(ctx, grp, topic, partition, member, ttl)
	if err == nil {
		g.Track(grp)
		g.m.rebalances.WithLabelValues(grp, topic).Inc()
	}
	return l, err
}

// Renew implements Coordinator.
func (g *Groups) Renew(ctx context.Context, grp, topic string, partition int32, member string, generation int64, ttl time.Duration) (group.Lease, error) {
	return g.inner.Renew(ctx, grp, topic, partition, member, generation, ttl)
}

// Release implements Coordinator.
func (g *Groups) Release(ctx context.Context, grp, topic string, partition int32, member string, generation int64) error {
	return g.inner.Release(ctx, grp, topic, partition, member, generation)
}

// Commit implements Coordinator, counting fenced commits.
func (g *Groups) Commit(ctx context.Context, grp, topic string, partition int32, member string, generation, nextOffset int64, completed ...store.OffsetRange) error {
	err := g.inner.Commit(ctx, grp, topic, partition, member, generation, nextOffset, completed...)
	if errors.Is(err, group.ErrFenced) {
		name, _, _ := store.ParseTopicRef(topic) // a lease's holder may name its incarnation
		g.m.fencedCommits.WithLabelValues(grp, name).Inc()
	}
	return err
}

// CommitAt is Commit with options (group.Coordinator.CommitAt), counting fenced
// commits; a wrapped coordinator without it takes only plain commits.
func (g *Groups) CommitAt(ctx context.Context, grp, topic string, partition int32, member string, generation, nextOffset int64, opts group.CommitOptions) error {
	c, ok := g.inner.(interface {
		CommitAt(ctx context.Context, grp, topic string, partition int32, member string, generation, nextOffset int64, opts group.CommitOptions) error
	})
	var err error
	switch {
	case ok:
		err = c.CommitAt(ctx, grp, topic, partition, member, generation, nextOffset, opts)
	case opts.Metadata != "" || opts.AllowBackward:
		return fmt.Errorf("%w: the coordinator keeps neither commit metadata nor backward commits", group.ErrInvalid)
	default:
		err = g.inner.Commit(ctx, grp, topic, partition, member, generation, nextOffset, opts.Completed...)
	}
	if errors.Is(err, group.ErrFenced) {
		name, _, _ := store.ParseTopicRef(topic)
		g.m.fencedCommits.WithLabelValues(grp, name).Inc()
	}
	return err
}

// GetSettings returns the group's settings from the wrapped coordinator (what
// pkg/consumer reads when a run starts); group.ErrUnsupported when it has none.
func (g *Groups) GetSettings(ctx context.Context, grp string) (group.Settings, error) {
	r, ok := g.inner.(interface {
		GetSettings(ctx context.Context, grp string) (group.Settings, error)
	})
	if !ok {
		return group.Settings{}, group.ErrUnsupported
	}
	return r.GetSettings(ctx, grp)
}

// Describe implements Coordinator.
func (g *Groups) Describe(ctx context.Context, grp string) (group.GroupInfo, error) {
	info, err := g.inner.Describe(ctx, grp)
	if err == nil {
		g.Track(grp)
	}
	return info, err
}

// Reset implements Coordinator.
func (g *Groups) Reset(ctx context.Context, grp, topic string, to group.ResetTo) ([]group.PartitionOffset, error) {
	res, err := g.inner.Reset(ctx, grp, topic, to)
	if err == nil {
		g.Track(grp)
	}
	return res, err
}

// LagCollector exports consumer lag in records and in seconds, time to data loss and
// parked keys for every group Groups knows, describing each group on every scrape (so the figures are never stale).
type LagCollector struct {
	groups     *Groups
	timeout    time.Duration
	records    *prometheus.Desc
	seconds    *prometheus.Desc
	dataLoss   *prometheus.Desc
	lost       *prometheus.Desc
	parkedKeys *prometheus.Desc
	errorsCnt  prometheus.Counter
}

// NewLagCollector returns the lag collector of g; timeout bounds each group's describe
// (default 2s). Register it on the same registry as the rest.
func NewLagCollector(g *Groups, timeout time.Duration) *LagCollector {
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	labels := []string{"group", "topic", "partition"}
	return &LagCollector{
		groups:  g,
		timeout: timeout,
		records: prometheus.NewDesc(Namespace+"_consumer_lag_records",
			"High watermark minus the group's committed offset.", labels, nil),
		seconds: prometheus.NewDesc(Namespace+"_consumer_lag_seconds",
			"Age of the group's oldest unread record (0 without lag).", labels, nil),
		dataLoss: prometheus.NewDesc(Namespace+"_consumer_seconds_to_data_loss",
			"Time until the group's oldest unread retained record expires (0 when expiring; absent when caught up).", labels, nil),
		lost: prometheus.NewDesc(Namespace+"_consumer_records_lost",
			"Records that expired before the group read them.", labels, nil),
		parkedKeys: prometheus.NewDesc(Namespace+"_consumer_parked_keys",
			"Keys the group parked on the partition (on_failure park), waiting for a release.", labels, nil),
		errorsCnt: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace,
			Name: "consumer_lag_errors_total", Help: "Group describes (or reads of their parked keys) that failed while collecting lag."}),
	}
}

// Describe implements prometheus.Collector.
func (c *LagCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.records
	ch <- c.seconds
	ch <- c.dataLoss
	ch <- c.lost
	ch <- c.parkedKeys
	c.errorsCnt.Describe(ch)
}

// parked is the group's parked keys per partition when the wrapped coordinator keeps
// them (nil, nil when it does not).
func (c *LagCollector) parked(name string) (map[group.PartitionKey]int64, error) {
	pl, ok := c.groups.inner.(interface {
		ListParked(ctx context.Context, group string) ([]group.Parked, error)
	})
	if !ok {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	rows, err := pl.ListParked(ctx, name)
	if errors.Is(err, group.ErrUnsupported) || errors.Is(err, group.ErrNotFound) {
		return nil, nil // no parked keys kept, or the group deleted since its describe
	}
	if err != nil {
		return nil, err
	}
	return group.CountParked(rows), nil
}

// Collect implements prometheus.Collector. A group whose describe fails is left out of
// this scrape and counted in strata_consumer_lag_errors_total (a failed read of its
// parked keys leaves out only their gauge, counted too); a group that no longer exists
// is no longer tracked.
func (c *LagCollector) Collect(ch chan<- prometheus.Metric) {
	for _, name := range c.groups.Known() {
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		info, err := c.groups.inner.Describe(ctx, name)
		cancel()
		if errors.Is(err, group.ErrNotFound) {
			// Deleted (strata groups delete): its gauges leave /metrics for good.
			c.groups.Untrack(name)
			continue
		}
		if err != nil {
			c.errorsCnt.Inc()
			continue
		}
		parked, err := c.parked(name)
		if err != nil {
			c.errorsCnt.Inc()
		}
		for _, p := range info.Partitions {
			part := strconv.Itoa(int(p.Partition))
			ch <- prometheus.MustNewConstMetric(c.records, prometheus.GaugeValue, float64(p.LagRecords), name, p.Topic, part)
			ch <- prometheus.MustNewConstMetric(c.seconds, prometheus.GaugeValue, p.LagTime.Seconds(), name, p.Topic, part)
			if parked != nil {
				n := parked[group.PartitionKey{Topic: p.Topic, Partition: p.Partition}]
				ch <- prometheus.MustNewConstMetric(c.parkedKeys, prometheus.GaugeValue, float64(n), name, p.Topic, part)
			}
			if p.DataLoss != nil {
				ch <- prometheus.MustNewConstMetric(c.dataLoss, prometheus.GaugeValue, p.DataLoss.TimeLeft.Seconds(), name, p.Topic, part)
				ch <- prometheus.MustNewConstMetric(c.lost, prometheus.GaugeValue, float64(p.DataLoss.RecordsLost), name, p.Topic, part)
			}
		}
	}
	c.errorsCnt.Collect(ch)
}
