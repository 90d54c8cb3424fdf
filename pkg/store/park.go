package store

import (
	"context"
	"time"
)

// ParkedKey is a key one group parked on one partition: after a record of the key failed
// every attempt, that record and every later record of the key go to the group's
// parking topic, in order, until the key is released. The row is what the partition's
// next owner reads to keep forwarding the key after a crash or a reassignment.
type ParkedKey struct {
	Group     string
	Topic     string
	Partition int32
	Key       []byte
	// FirstOffset and LastOffset are the origin offsets of the first and the newest
	// record parked; Records counts the records parked (each origin offset once).
	FirstOffset, LastOffset int64
	Records                 int64
	// Error is the handler's error on the record that parked the key, after Attempts
	// attempts.
	Error    string
	Attempts int
	ParkedAt time.Time
	// ParkPartition and ParkOffset are where the first parked record lies in the
	// parking topic (a replay reads from there); ParkOffset is -1 until it is appended.
	ParkPartition int32
	ParkOffset    int64
	// ReleaseRequested is when a release was asked for (zero: none); the partition's
	// owner replays the parked records, then deletes the row.
	ReleaseRequested time.Time
}

// ParkStore holds a group's parked keys. Backends implement it beside MetaStore.
type ParkStore interface {
	// PutParked must store p as the row of (group, topic, partition, key) only if
	// member owns the assignment of (group, topic, partition) at generation, else
	// return ErrFenced and change nothing. It must keep the stored ReleaseRequested
	// (p's is ignored), so an owner's update never loses a release asked for meanwhile.
	PutParked(ctx context.Context, p ParkedKey, member string, generation int64) error
	// DeleteParked must delete the row of (group, topic, partition, key) only if member
	// owns the assignment at generation (else ErrFenced, nothing changed); a missing
	// row is not an error.
	DeleteParked(ctx context.Context, group, topic string, partition int32, key []byte, member string, generation int64) error
	// RequestRelease must set ReleaseRequested = at on the row and return it, or return
	// ErrNotFound when the key is not parked there; it is not fenced (the API asks it).
	RequestRelease(ctx context.Context, group, topic string, partition int32, key []byte, at time.Time) (ParkedKey, error)
	// ListParked must return every parked row of the group ordered by topic, partition,
	// then key bytes; an unknown group yields an empty list.
	ListParked(ctx context.Context, group string) ([]ParkedKey, error)
	// ListParkedPartition must return the group's rows of (topic, partition), ordered by key bytes.
	ListParkedPartition(ctx context.Context, group, topic string, partition int32) ([]ParkedKey, error)
}
