package store

import (
	"context"
	"errors"
)

// ErrPartitionsNotRaised is IncreasePartitions asked for no more partitions than the
// topic has: partition counts only grow (a partition's records never move).
var ErrPartitionsNotRaised = errors.New("store: partition count can only grow")

// TopicAdminStore changes a topic after its creation. Backends implement it beside
// MetaStore.
type TopicAdminStore interface {
	// IncreasePartitions must raise the topic's partition count to partitions when it
	// is below it, atomically with respect to concurrent callers, and return the
	// stored topic; ErrPartitionsNotRaised (changing nothing) when the count is already
	// partitions or more, ErrNotFound for an unknown topic. It must leave every existing
	// partition's sequencer counter as it is, and the new partitions' counters start at
	// their index (zero for partitions never written).
	IncreasePartitions(ctx context.Context, name string, partitions int32) (Topic, error)
}
