package store

import (
	"context"
	"time"
)

// DirtyCounter is a compacted partition's shared count of what its appends superseded
// and what compaction removed, from which the dirty-ratio trigger estimates the
// partition's dirty ratio without reading it (pkg/compact, Trigger).
type DirtyCounter struct {
	// Overwrites counts, since the counter was created, the appended records whose key
	// already had a record in the key index (each made one older record superseded).
	Overwrites int64
	// Removed counts the records compaction passes removed from the partition.
	Removed int64
	// RequestedAt is when the trigger last asked for a pass of the partition (zero:
	// never).
	RequestedAt time.Time
}

// DirtyCounterStore keeps one DirtyCounter per (topic incarnation, partition), shared by
// every host appending to it.
type DirtyCounterStore interface {
	// AddOverwrites must add n to the partition's Overwrites atomically with respect to
	// every other caller (creating the counter at zero when missing) and return the
	// counter as that addition left it: one write.
	AddOverwrites(ctx context.Context, topic string, partition int32, n int64) (DirtyCounter, error)
	// AddRemoved must add n to the partition's Removed atomically (creating the counter
	// at zero when missing).
	AddRemoved(ctx context.Context, topic string, partition int32, n int64) error
	// ClaimCompaction must set the partition's RequestedAt to at only while it is seen
	// (the zero time: never set), reporting whether it did: of concurrent claims made
	// on one seen value exactly one wins. A missing counter has the zero RequestedAt.
	ClaimCompaction(ctx context.Context, topic string, partition int32, seen, at time.Time) (bool, error)
}
