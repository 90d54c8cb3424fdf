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
	// SetRetentionPin must set the live topic's RetentionPin to pin (0 removes it),
	// changing nothing else of it, and return the stored topic; ErrNotFound for an
	// unknown (or deleted) name.
	SetRetentionPin(ctx context.Context, name string, pin time.Duration) (Topic, error)
	// DeleteTopic must, atomically, remove the live topic of the name (GetTopic then
	// answers ErrNotFound and CreateTopic may create the name again at once, as a new
	// incarnation) and keep the deleted incarnation, deleted at at, for DeletedTopics
	// until PurgeTopic. ErrNotFound for an unknown (or already deleted) name.
	DeleteTopic(ctx context.Context, name string, at time.Time) error
	// DeletedTopics must return every deleted incarnation not yet purged, by name.
	DeletedTopics(ctx context.Context) ([]DeletedTopic, error)
	// PurgeTopic must remove the record of a deleted incarnation and its partitions'
	// sequencer counters, and nothing of any other incarnation of the name; it may
	// remove the incarnation's idempotency claims too (else they expire with their
	// TTL: no other incarnation can match them). Purging what is not there is not an
	// error; the live incarnation of the name must be refused with ErrNotDeleted.
	PurgeTopic(ctx context.Context, name, incarnation string) error
}

// ErrNotDeleted is PurgeTopic of a live topic.
var ErrNotDeleted = errors.New("store: topic is not deleted")

// DeletedTopic is a deleted incarnation waiting for its purge.
type DeletedTopic struct {
	Topic
	DeletedAt time.Time
}
