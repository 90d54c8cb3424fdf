package store

import (
	"context"
	"errors"
	"time"
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
	// DeleteTopic must put a tombstone on the topic, deleted at at, keeping its row
	// (so the name stays taken: CreateTopic of it must still return ErrExists); a
	// second DeleteTopic must keep the first time. ErrNotFound for an unknown topic.
	DeleteTopic(ctx context.Context, name string, at time.Time) error
	// TopicTombstone must return when the topic was deleted, and false for a topic
	// without a tombstone or an unknown one.
	TopicTombstone(ctx context.Context, name string) (at time.Time, deleted bool, err error)
	// DeletedTopics must return every tombstoned topic, by name.
	DeletedTopics(ctx context.Context) ([]DeletedTopic, error)
	// PurgeTopic must remove the row and tombstone of a deleted topic, and nothing else:
	// the partitions' sequencer counters stay, so a topic created again under the name
	// continues at the old offsets and never reuses one. An unknown name is not an
	// error; a topic without a tombstone must be refused with ErrNotDeleted.
	PurgeTopic(ctx context.Context, name string) error
}

// ErrNotDeleted is PurgeTopic of a topic that has no tombstone.
var ErrNotDeleted = errors.New("store: topic is not deleted")

// DeletedTopic is a tombstoned topic.
type DeletedTopic struct {
	Topic
	DeletedAt time.Time
}
