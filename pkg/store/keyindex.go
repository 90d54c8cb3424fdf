package store

import (
	"context"
	"time"
)

// KeyEntry is where the latest record of one key of one partition of a compacted topic
// is: the key index's row, which answers a key's latest value without replaying the
// partition.
type KeyEntry struct {
	// Topic is the topic incarnation's ID (TopicID): a topic created again under the
	// name never reads the entries of the one deleted.
	Topic     string
	Partition int32
	// Key is the record's key, never nil (a compacted topic refuses keyless records).
	Key []byte
	// Offset is the record's offset in the partition.
	Offset int64
	// Tombstone says the record has a null value: the key was deleted at Offset.
	Tombstone bool
	// AppendedAt is when the record was appended (a tombstone's retention counts from
	// it), kept to the millisecond.
	AppendedAt time.Time
}

// KeyIndexStore keeps the key index of compacted topics: one entry per (topic
// incarnation, partition, key), naming the key's latest record. Appenders on any number
// of hosts write it concurrently, so every change is conditional on the stored offset.
// Backends implement it beside MetaStore.
type KeyIndexStore interface {
	// PutKey must store e as its key's entry unless the entry stored has an offset at
	// or above e.Offset, atomically with respect to every other caller: an entry never
	// moves back, whatever order concurrent puts land in. It reports whether e was
	// stored, and whether the put superseded a record of the key: stored over an entry
	// of a lower offset (that entry's record), or not stored under one of a higher
	// offset (e's own record) — what the dirty-ratio trigger counts. A key's first put
	// and a put at the offset stored (a retry) supersede nothing. An older e is not an
	// error. Knowing superseded must cost no further request.
	PutKey(ctx context.Context, e KeyEntry) (stored, superseded bool, err error)
	// GetKey must return the key's entry as of every PutKey and DeleteKey that
	// returned before it was called (strongly consistent), ErrNotFound when there is
	// none.
	GetKey(ctx context.Context, topic string, partition int32, key []byte) (KeyEntry, error)
	// DeleteKey must remove the key's entry only while its offset is offset (the
	// compaction pass dropping a tombstone it removed: a later record of the key keeps
	// its entry), reporting whether it did; no entry, or another offset, is (false, nil).
	DeleteKey(ctx context.Context, topic string, partition int32, key []byte, offset int64) (bool, error)
}

// TombstoneExpired reports whether e is a tombstone of t whose retention
// (Topic.TombstoneRetention, from its append) has passed at now: its key then reads as
// never written.
func (e KeyEntry) TombstoneExpired(t Topic, now time.Time) bool {
	return e.Tombstone && !now.Before(e.AppendedAt.Add(t.TombstoneRetention()))
}
