package local

import (
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/stratalog/strata/pkg/store"
)

// Stored values are JSON of the record types below rather than of the store structs, so
// the on-disk format does not shift when a Go field is renamed. Times are stored in UTC.

type topicRec struct {
	Name        string        `json:"name"`
	Incarnation string        `json:"incarnation,omitempty"`
	Partitions  int32         `json:"partitions"`
	Retention   time.Duration `json:"retention_ns"`
	// RetentionPin is absent in rows written before the pin (no pin).
	RetentionPin time.Duration `json:"retention_pin_ns,omitempty"`
	CreatedAt    time.Time     `json:"created_at"`
	// LogAppendTime is absent in rows written before it (the producer's timestamps).
	LogAppendTime bool `json:"log_append_time,omitempty"`
	// The cleanup policy and compaction settings are absent in rows written before them
	// (delete, no compaction settings).
	Cleanup          store.CleanupPolicy `json:"cleanup_policy,omitempty"`
	MinCompactionLag time.Duration       `json:"min_compaction_lag_ns,omitempty"`
	MaxCompactionLag time.Duration       `json:"max_compaction_lag_ns,omitempty"`
	DeleteRetention  time.Duration       `json:"delete_retention_ns,omitempty"`
}

func topicToRec(t store.Topic) topicRec {
	return topicRec{Name: t.Name, Incarnation: t.Incarnation, Partitions: t.Partitions, Retention: t.Retention, RetentionPin: t.RetentionPin, CreatedAt: t.CreatedAt.UTC(), LogAppendTime: t.LogAppendTime,
		Cleanup: t.Cleanup, MinCompactionLag: t.MinCompactionLag, MaxCompactionLag: t.MaxCompactionLag, DeleteRetention: t.DeleteRetention}
}

func (r topicRec) toStore() store.Topic {
	return store.Topic{Name: r.Name, Incarnation: r.Incarnation, Partitions: r.Partitions, Retention: r.Retention, RetentionPin: r.RetentionPin, CreatedAt: r.CreatedAt, LogAppendTime: r.LogAppendTime,
		Cleanup: r.Cleanup, MinCompactionLag: r.MinCompactionLag, MaxCompactionLag: r.MaxCompactionLag, DeleteRetention: r.DeleteRetention}
}

type indexRec struct {
	Topic        string    `json:"topic"`
	Partition    int32     `json:"partition"`
	BaseOffset   int64     `json:"base_offset"`
	Count        int64     `json:"count"`
	ObjectKey    string    `json:"object_key"`
	ByteOffset   int64     `json:"byte_offset"`
	ByteLength   int64     `json:"byte_length"`
	MaxTimestamp time.Time `json:"max_timestamp"`
	AppendedAt   time.Time `json:"appended_at"`
	ExpiresAt    time.Time `json:"expires_at"`
	Duplicate    bool      `json:"duplicate,omitempty"`
	Skip         string    `json:"skip,omitempty"`
	// MembersOffset and MembersLength locate the batch's members table (absent: none).
	MembersOffset int64 `json:"members_offset,omitempty"`
	MembersLength int64 `json:"members_length,omitempty"`
	// Batch is the entry's batch number on a topic commit topic (absent: none kept).
	Batch int64 `json:"batch,omitempty"`
}

func indexToRec(e store.IndexEntry) indexRec {
	return indexRec{
		Topic: e.Topic, Partition: e.Partition, BaseOffset: e.BaseOffset, Count: e.Count,
		ObjectKey: e.ObjectKey, ByteOffset: e.ByteOffset, ByteLength: e.ByteLength,
		MaxTimestamp: e.MaxTimestamp.UTC(), AppendedAt: e.AppendedAt.UTC(), ExpiresAt: e.ExpiresAt.UTC(),
		Duplicate: e.Duplicate, Skip: e.Skip, MembersOffset: e.MembersOffset, MembersLength: e.MembersLength,
		Batch: e.Batch,
	}
}

func (r indexRec) toStore() store.IndexEntry {
	return store.IndexEntry{
		Topic: r.Topic, Partition: r.Partition, BaseOffset: r.BaseOffset, Count: r.Count,
		ObjectKey: r.ObjectKey, ByteOffset: r.ByteOffset, ByteLength: r.ByteLength,
		MaxTimestamp: r.MaxTimestamp, AppendedAt: r.AppendedAt, ExpiresAt: r.ExpiresAt,
		Duplicate: r.Duplicate, Skip: r.Skip, MembersOffset: r.MembersOffset, MembersLength: r.MembersLength,
		Batch: r.Batch,
	}
}

type partitionRec struct {
	LogStartOffset int64 `json:"log_start_offset"`
}

type idempotencyRec struct {
	Key        string    `json:"key"`
	Partition  int32     `json:"partition"`
	BodyHash   string    `json:"body_hash"`
	BaseOffset int64     `json:"base_offset"`
	Count      int64     `json:"count"`
	Partitions int32     `json:"partitions,omitempty"`
	ExpiresAt  time.Time `json:"expires_at"`
	// Folded marks a request row in the folded format (RequestClaim), Parts its slots.
	Folded bool           `json:"folded,omitempty"`
	Parts  []partClaimRec `json:"parts,omitempty"`
}

type partClaimRec struct {
	Partition  int32 `json:"p"`
	BaseOffset int64 `json:"base"`
	Count      int64 `json:"n"`
}

func requestClaimToRec(c store.RequestClaim) idempotencyRec {
	r := idempotencyRec{Key: c.Key, Partition: -1, BodyHash: c.BodyHash, BaseOffset: -1, Count: c.Count,
		Partitions: c.Partitions, ExpiresAt: c.ExpiresAt.UTC(), Folded: true}
	for _, p := range c.Parts {
		r.Parts = append(r.Parts, partClaimRec{Partition: p.Partition, BaseOffset: p.BaseOffset, Count: p.Count})
	}
	return r
}

func (r idempotencyRec) toRequestClaim() store.RequestClaim {
	c := store.RequestClaim{Key: r.Key, BodyHash: r.BodyHash, Count: r.Count, Partitions: r.Partitions, ExpiresAt: r.ExpiresAt}
	for _, p := range r.Parts {
		c.Parts = append(c.Parts, store.PartClaim{Partition: p.Partition, BaseOffset: p.BaseOffset, Count: p.Count})
	}
	return c
}

func idempotencyToRec(r store.IdempotencyRecord) idempotencyRec {
	return idempotencyRec{
		Key: r.Key, Partition: r.Partition, BodyHash: r.BodyHash,
		BaseOffset: r.BaseOffset, Count: r.Count, Partitions: r.Partitions, ExpiresAt: r.ExpiresAt.UTC(),
	}
}

func (r idempotencyRec) toStore() store.IdempotencyRecord {
	return store.IdempotencyRecord{
		Key: r.Key, Partition: r.Partition, BodyHash: r.BodyHash,
		BaseOffset: r.BaseOffset, Count: r.Count, Partitions: r.Partitions, ExpiresAt: r.ExpiresAt,
	}
}

type assignmentRec struct {
	Group      string    `json:"group"`
	Topic      string    `json:"topic"`
	Partition  int32     `json:"partition"`
	Owner      string    `json:"owner"`
	Generation int64     `json:"generation"`
	ExpiresAt  time.Time `json:"expires_at"`
	// GroupDeleted marks a row DeleteGroup fenced (store.Assignment.GroupDeleted).
	GroupDeleted bool `json:"group_deleted,omitempty"`
}

func (r assignmentRec) toStore() store.Assignment {
	return store.Assignment{
		Group: r.Group, Topic: r.Topic, Partition: r.Partition,
		Owner: r.Owner, Generation: r.Generation, ExpiresAt: r.ExpiresAt, GroupDeleted: r.GroupDeleted,
	}
}

type commitRec struct {
	Group       string    `json:"group"`
	Topic       string    `json:"topic"`
	Partition   int32     `json:"partition"`
	NextOffset  int64     `json:"next_offset"`
	Generation  int64     `json:"generation"`
	CommittedAt time.Time `json:"committed_at"`
	Metadata    string    `json:"metadata"`
	// Completed holds [from, to) pairs; absent in rows written before remembered acks.
	Completed [][2]int64 `json:"completed,omitempty"`
}

func commitToRec(c store.CommitRow) commitRec {
	r := commitRec{
		Group: c.Group, Topic: c.Topic, Partition: c.Partition, NextOffset: c.NextOffset,
		Generation: c.Generation, CommittedAt: c.CommittedAt.UTC(), Metadata: c.Metadata,
	}
	for _, o := range c.Completed {
		r.Completed = append(r.Completed, [2]int64{o.From, o.To})
	}
	return r
}

func (r commitRec) toStore() store.CommitRow {
	c := store.CommitRow{
		Group: r.Group, Topic: r.Topic, Partition: r.Partition, NextOffset: r.NextOffset,
		Generation: r.Generation, CommittedAt: r.CommittedAt, Metadata: r.Metadata,
	}
	for _, o := range r.Completed {
		c.Completed = append(c.Completed, store.OffsetRange{From: o[0], To: o[1]})
	}
	return c
}

type groupRec struct {
	Name            string    `json:"name"`
	ResetPolicy     string    `json:"reset_policy"`
	MaxAttempts     int       `json:"max_attempts"`
	DeadLetterTopic string    `json:"dead_letter_topic"`
	OnFailure       string    `json:"on_failure,omitempty"`
	CreatedAt       time.Time `json:"created_at"`
}

func groupToRec(g store.GroupConfig) groupRec {
	return groupRec{
		Name: g.Name, ResetPolicy: g.ResetPolicy, MaxAttempts: g.MaxAttempts,
		DeadLetterTopic: g.DeadLetterTopic, OnFailure: g.OnFailure, CreatedAt: g.CreatedAt.UTC(),
	}
}

func (r groupRec) toStore() store.GroupConfig {
	return store.GroupConfig{
		Name: r.Name, ResetPolicy: r.ResetPolicy, MaxAttempts: r.MaxAttempts,
		DeadLetterTopic: r.DeadLetterTopic, OnFailure: r.OnFailure, CreatedAt: r.CreatedAt,
	}
}

type memberRec struct {
	Group     string    `json:"group"`
	ID        string    `json:"id"`
	ExpiresAt time.Time `json:"expires_at"`
}

func (r memberRec) toStore() store.Member {
	return store.Member{Group: r.Group, ID: r.ID, ExpiresAt: r.ExpiresAt}
}

// getRec decodes the value at key of the named bucket into a T; ok is false when the key
// is absent.
func getRec[T any](tx *bolt.Tx, bucket string, key []byte) (rec T, ok bool, err error) {
	v := tx.Bucket([]byte(bucket)).Get(key)
	if v == nil {
		return rec, false, nil
	}
	if err := decodeRec(bucket, key, v, &rec); err != nil {
		return rec, false, err
	}
	return rec, true, nil
}

// decodeRec decodes stored bytes, returning an error (never panicking) when they are not
// a valid record.
func decodeRec(bucket string, key, v []byte, rec any) error {
	if err := json.Unmarshal(v, rec); err != nil {
		return fmt.Errorf("local: decode %s row %x: %w", bucket, key, err)
	}
	return nil
}

// putRec encodes rec as the value at key of the named bucket.
func putRec(tx *bolt.Tx, bucket string, key []byte, rec any) error {
	v, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("local: encode %s row: %w", bucket, err)
	}
	if err := tx.Bucket([]byte(bucket)).Put(key, v); err != nil {
		return fmt.Errorf("local: write %s row: %w", bucket, err)
	}
	return nil
}
