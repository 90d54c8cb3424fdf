package group

import (
	"context"
	"errors"
	"fmt"

	"github.com/stratalog/strata/pkg/store"
)

// LagHistorySamples is how many samples of each partition the lag history keeps: with
// `strata dev`'s 5 s sampling the last 10 minutes, with a deployed stack's retention
// schedule (a pass every few minutes) the last several hours.
const LagHistorySamples = 120

// ErrNoLagHistory: the store keeps no lag history (it is not a store.LagHistoryStore).
var ErrNoLagHistory = errors.New("group: the store keeps no lag history")

// SampleLag records, for every group, the lag Describe reports now as one sample per
// partition of its history (store.LagHistoryStore.RecordLag, keeping
// LagHistorySamples). It goes on past a group that fails and returns how many groups
// it recorded and every failure. A scheduled pass calls it: `strata dev`'s loop, and
// the retention function on AWS, where no process outlives a request.
func (c *Coordinator) SampleLag(ctx context.Context) (int, error) {
	if c.lag == nil {
		return 0, ErrNoLagHistory
	}
	names, err := c.ListGroups(ctx)
	if err != nil {
		return 0, fmt.Errorf("group: sample lag: %w", err)
	}
	var errs []error
	n := 0
	for _, g := range names {
		if ctx.Err() != nil {
			return n, errors.Join(append(errs, ctx.Err())...)
		}
		info, err := c.Describe(ctx, g)
		if errors.Is(err, store.ErrNotFound) {
			continue // deleted since the list
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		lags, err := c.byIncarnation(ctx, PartitionLags(info))
		if err != nil {
			errs = append(errs, fmt.Errorf("group: record lag of %q: %w", g, err))
			continue
		}
		if err := c.lag.RecordLag(ctx, g, c.now(), lags, LagHistorySamples); err != nil {
			errs = append(errs, fmt.Errorf("group: record lag of %q: %w", g, err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// PartitionLags is the lag sample of every partition of a described group.
func PartitionLags(info GroupInfo) []store.PartitionLag {
	out := make([]store.PartitionLag, 0, len(info.Partitions))
	for _, p := range info.Partitions {
		out = append(out, store.PartitionLag{Topic: p.Topic, Partition: p.Partition, Records: p.LagRecords, Behind: p.LagTime})
	}
	return out
}

// byIncarnation files each sample under its topic's live incarnation (store.TopicID)
// when the coordinator resolves them, so that a topic created again under a name
// starts a history of its own instead of continuing the deleted one's (the next
// sample drops the series it does not carry); a topic deleted since Describe is left
// out.
func (c *Coordinator) byIncarnation(ctx context.Context, lags []store.PartitionLag) ([]store.PartitionLag, error) {
	ids, ok := c.offsets.(TopicIDs)
	if !ok {
		return lags, nil
	}
	cache := map[string]string{}
	out := lags[:0]
	for _, l := range lags {
		id, seen := cache[l.Topic]
		if !seen {
			var err error
			id, err = ids.TopicID(ctx, l.Topic)
			if errors.Is(err, store.ErrNotFound) {
				id, err = "", nil
			}
			if err != nil {
				return nil, err
			}
			cache[l.Topic] = id
		}
		if id != "" {
			l.Topic = id
			out = append(out, l)
		}
	}
	return out, nil
}

// LagHistory returns the group's lag history, ordered by topic then partition;
// ErrNotFound for an unknown group, ErrNoLagHistory when the store keeps none.
func (c *Coordinator) LagHistory(ctx context.Context, group string) ([]store.LagSeries, error) {
	if !validGroup(group) {
		return nil, invalidf("bad group name %q", group)
	}
	if c.lag == nil {
		return nil, ErrNoLagHistory
	}
	if _, err := c.store.GetGroup(ctx, group); err != nil {
		return nil, fmt.Errorf("group %q: %w", group, err)
	}
	h, err := c.lag.LagHistory(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("group: lag history of %q: %w", group, err)
	}
	for i := range h {
		h[i].Topic, _ = store.SplitTopicID(h[i].Topic) // series are filed by incarnation
	}
	return h, nil
}

// LiveMembers returns the group's live members (heartbeating consumers, holding
// partitions or waiting for a share), ordered by ID; ErrNotFound for an unknown group.
func (c *Coordinator) LiveMembers(ctx context.Context, group string) ([]store.Member, error) {
	if !validGroup(group) {
		return nil, invalidf("bad group name %q", group)
	}
	if _, err := c.store.GetGroup(ctx, group); err != nil {
		return nil, fmt.Errorf("group %q: %w", group, err)
	}
	ms, err := c.store.LiveMembers(ctx, group, c.now())
	if err != nil {
		return nil, fmt.Errorf("group: live members of %q: %w", group, err)
	}
	return ms, nil
}
