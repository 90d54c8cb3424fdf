package group

import (
	"context"
	"fmt"
	"slices"
)

// ResetPartitions is Reset limited to the given partitions of topic (every partition
// when partitions is empty): each listed partition's committed offset moves as to says,
// all at once, and the others keep theirs. It is refused with ErrGroupActive while any
// lease of the group on topic is live, with ErrInvalid for a partition the topic does
// not have, and with an *OffsetOutOfRangeError when an explicit offset lies outside a
// listed partition's bounds; either way nothing changes.
func (c *Coordinator) ResetPartitions(ctx context.Context, group, topic string, partitions []int32, to ResetTo) ([]PartitionOffset, error) {
	return c.reset(ctx, group, topic, partitions, to)
}

// reset is Reset and ResetPartitions: the listed partitions of topic, or every partition
// when the list is empty, move as to says, all at once.
func (c *Coordinator) reset(ctx context.Context, group, topic string, partitions []int32, to ResetTo) ([]PartitionOffset, error) {
	if err := checkNames(group, topic, 0); err != nil {
		return nil, err
	}
	if to.kind == resetNone {
		return nil, invalidf("no reset target")
	}
	if to.kind == resetOffset && to.offset < 0 {
		return nil, invalidf("negative offset %d", to.offset)
	}
	n, err := c.offsets.Partitions(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("group: topic %q: %w", topic, err)
	}
	ps := slices.Clone(partitions)
	slices.Sort(ps)
	what := fmt.Sprintf("partitions %v ", ps)
	if len(ps) == 0 {
		for p := range n {
			ps = append(ps, p)
		}
		what = ""
	}
	if len(slices.Compact(slices.Clone(ps))) != len(ps) {
		return nil, invalidf("partitions %v repeat one", partitions)
	}
	offsets := make(map[int32]int64, len(ps))
	out := make([]PartitionOffset, 0, len(ps))
	for _, p := range ps {
		if p < 0 || p >= n {
			return nil, invalidf("partition %d outside [0, %d) of topic %q", p, n, topic)
		}
		o, err := c.resetOffset(ctx, topic, p, to)
		if err != nil {
			return nil, err
		}
		offsets[p] = o
		out = append(out, PartitionOffset{Partition: p, Offset: o})
	}
	now := c.now()
	if err := c.ensureGroup(ctx, group, now); err != nil {
		return nil, err
	}
	if err := c.store.ResetCommits(ctx, group, topic, offsets, now); err != nil {
		return nil, fmt.Errorf("group: reset %s on %q %sto %s: %w", group, topic, what, to, err)
	}
	return out, nil
}
