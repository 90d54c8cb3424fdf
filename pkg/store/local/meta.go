package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/stratalog/strata/pkg/store"
)

// Buckets, one per table of docs/DESIGN.md §3.
const (
	bucketTopics      = "topics"
	bucketIndex       = "index"
	bucketPartitions  = "partitions"
	bucketAssignments = "assignments"
	bucketCommits     = "commits"
	bucketGroups      = "groups"
	bucketMembers     = "members"
	bucketIdempotency = "idempotency"
	bucketSequencer   = "sequencer"
	// bucketGraveyard holds deleted incarnations until their purge (name, incarnation →
	// graveRec).
	bucketGraveyard = "topic_graveyard"
	// bucketParked holds parked keys: group, topic, partition, key → parkedRec.
	bucketParked = "parked"
)

func allBuckets() []string {
	return []string{bucketTopics, bucketIndex, bucketPartitions, bucketAssignments,
		bucketCommits, bucketGroups, bucketMembers, bucketIdempotency, bucketSequencer, bucketGraveyard, bucketExpiry, bucketLag, bucketParked,
		bucketTopicBatches, bucketFences, bucketBarriers, bucketProducers, bucketKeys, bucketDirty}
}

// openTimeout bounds the wait for bbolt's file lock, so a second process on the same
// data directory fails instead of hanging.
const openTimeout = 2 * time.Second

// The file is opened with bbolt's NoFreelistSync: a commit does not write the list of
// free pages (one page of the six or seven an append's commit writes), and an open
// rebuilds it by walking the file instead, as etcd does; the hash-map freelist keeps
// allocation cheap when the file is fragmented. Durability is unchanged: a commit's
// pages and then its meta page are fdatasync'd before it returns, and the freelist is
// derived from the committed tree. Files written either way open either way.

// MetaStore implements store.MetaStore over one bbolt file. Each operation is one bbolt
// read or write transaction; bbolt serialises writers and fsyncs every commit, so each
// operation is atomic, durable when it returns, and conditional writes need no locking.
type MetaStore struct {
	db *bolt.DB
	// commits runs the log's commits (SequenceBatch), concurrent ones shared.
	commits *txQueue
	// sweepChunk bounds the rows one DeleteExpired transaction deletes.
	sweepChunk int
	// fenceLimits bound the request fences a topic holds.
	fenceLimits store.FenceLimits
}

// Option configures a MetaStore at OpenMetaStore.
type Option func(*MetaStore)

// WithFenceLimits bounds the request fences a topic holds by l (zero fields: the
// defaults of store.FenceLimits).
func WithFenceLimits(l store.FenceLimits) Option {
	return func(m *MetaStore) { m.fenceLimits = l }
}

// FenceLimits are the bounds this store holds a topic's request fences to.
func (m *MetaStore) FenceLimits() store.FenceLimits { return m.fenceLimits.OrDefault() }

var _ store.MetaStore = (*MetaStore)(nil)

// OpenMetaStore opens (creating if needed) the bbolt file at path and its buckets.
func OpenMetaStore(path string, opts ...Option) (*MetaStore, error) {
	if path == "" {
		return nil, errors.New("local: meta store path is empty")
	}
	dir := filepath.Dir(path)
	if err := mkdirAllDurable(dir); err != nil {
		return nil, fmt.Errorf("local: create meta store directory: %w", err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: openTimeout, NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("local: open %s: locked by another process: %w", path, err)
		}
		return nil, fmt.Errorf("local: open %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		newExpiry := tx.Bucket([]byte(bucketExpiry)) == nil
		for _, name := range allBuckets() {
			if _, err := tx.CreateBucketIfNotExists([]byte(name)); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		if newExpiry {
			if err := buildExpiry(tx); err != nil {
				return err
			}
		}
		return migrate(tx)
	})
	if err == nil {
		err = syncDir(dir) // make a newly created file's directory entry durable
	}
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("local: open %s: %w", path, err)
	}
	db.MaxBatchDelay = batchDelay
	m := &MetaStore{db: db, commits: &txQueue{db: db}, sweepChunk: defaultSweepChunk}
	for _, o := range opts {
		o(m)
	}
	return m, nil
}

// batchDelay is how long a write waits for others to share its transaction: well under
// one fsync, so a lone write is barely slower and concurrent ones share the fsync.
const batchDelay = 500 * time.Microsecond

// commit runs fn, a commit of the log, in a write transaction shared with the commits
// waiting with it, with no wait for more (txQueue). A topic's commits come one after
// another, each once the batch before it is sequenced, so a delay for others to join
// would only add to every commit's latency; and the other writes (claims, producer
// rows) keep update's delay, so they share transactions among themselves rather than
// taking the writer between two commits one by one. fn must be safe to run more than
// once, as update's.
func (m *MetaStore) commit(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return m.commits.update(fn)
}

// Close releases the file; operations after Close fail.
func (m *MetaStore) Close() error {
	if err := m.db.Close(); err != nil {
		return fmt.Errorf("local: close meta store: %w", err)
	}
	return nil
}

// update runs fn in a write transaction. Concurrent calls share one transaction, and so
// one fsync (bbolt's Batch): group commit's parallel per-partition commits and
// concurrent requests' claims would otherwise each wait for their own fsync, in
// turn. fn must therefore be safe to run more than once (Batch re-runs the others when
// one fails, and the failing one alone) and must set, never accumulate into, anything
// outside the transaction; every fn of this package does.
func (m *MetaStore) update(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return m.db.Batch(fn)
}

func (m *MetaStore) view(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return m.db.View(fn)
}

// CreateTopic stores t if no topic has its name, else returns store.ErrExists.
func (m *MetaStore) CreateTopic(ctx context.Context, t store.Topic) error {
	if t.Name == "" {
		return errors.New("local: create topic: empty name")
	}
	return m.update(ctx, func(tx *bolt.Tx) error {
		key := []byte(t.Name)
		if tx.Bucket([]byte(bucketTopics)).Get(key) != nil {
			return fmt.Errorf("local: topic %q: %w", t.Name, store.ErrExists)
		}
		if err := putRec(tx, bucketTopics, key, topicToRec(t)); err != nil {
			return err
		}
		for p := int32(0); p < t.Partitions; p++ {
			if _, err := seqLocked(tx, t.ID(), p); err != nil {
				return err
			}
		}
		return nil
	})
}

// GetTopic returns the topic or store.ErrNotFound.
func (m *MetaStore) GetTopic(ctx context.Context, name string) (store.Topic, error) {
	var out store.Topic
	err := m.view(ctx, func(tx *bolt.Tx) error {
		rec, ok, err := getRec[topicRec](tx, bucketTopics, []byte(name))
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("local: topic %q: %w", name, store.ErrNotFound)
		}
		out = rec.toStore()
		return nil
	})
	return out, err
}

// ListTopics returns every topic name in lexical (byte) order.
func (m *MetaStore) ListTopics(ctx context.Context) ([]string, error) {
	return m.keys(ctx, bucketTopics)
}

// keys returns the keys of a bucket whose keys are names, in byte order.
func (m *MetaStore) keys(ctx context.Context, bucket string) ([]string, error) {
	var names []string
	err := m.view(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(bucket)).ForEach(func(k, _ []byte) error {
			names = append(names, string(k))
			return nil
		})
	})
	return names, err
}

// PutIndexEntry writes e unless its base offset is taken, in which case it returns a
// *store.ConflictError holding the existing entry.
func (m *MetaStore) PutIndexEntry(ctx context.Context, e store.IndexEntry) error {
	return m.update(ctx, func(tx *bolt.Tx) error {
		return putIndexIfAbsent(tx, e)
	})
}

func putIndexIfAbsent(tx *bolt.Tx, e store.IndexEntry) error {
	key := indexKey(e.Topic, e.Partition, e.BaseOffset)
	existing, ok, err := getRec[indexRec](tx, bucketIndex, key)
	if err != nil {
		return err
	}
	if ok {
		return &store.ConflictError{Existing: existing.toStore()}
	}
	return putExpiring(tx, expiryIndex, key, indexToRec(e), e.ExpiresAt)
}

// LastIndexEntry returns the partition's entry with the greatest base offset.
func (m *MetaStore) LastIndexEntry(ctx context.Context, topic string, partition int32) (store.IndexEntry, bool, error) {
	var (
		out   store.IndexEntry
		found bool
	)
	err := m.view(ctx, func(tx *bolt.Tx) error {
		prefix := partitionKey(topic, partition)
		c := tx.Bucket([]byte(bucketIndex)).Cursor()
		k, v := seekLastBefore(c, prefixEnd(prefix))
		if k == nil || !bytes.HasPrefix(k, prefix) {
			return nil
		}
		var rec indexRec
		if err := decodeRec(bucketIndex, k, v, &rec); err != nil {
			return err
		}
		out, found = rec.toStore(), true
		return nil
	})
	return out, found, err
}

// seekLastBefore positions c on the greatest key < end (the last key when end is nil).
func seekLastBefore(c *bolt.Cursor, end []byte) ([]byte, []byte) {
	if end == nil {
		return c.Last()
	}
	if k, _ := c.Seek(end); k == nil {
		return c.Last()
	}
	return c.Prev()
}

// IndexEntriesEventual is IndexEntries: the embedded store has no replica to lag.
func (m *MetaStore) IndexEntriesEventual(ctx context.Context, topic string, partition int32, from int64, limit int) ([]store.IndexEntry, error) {
	return m.IndexEntries(ctx, topic, partition, from, limit)
}

// IndexEntries returns the entry with the greatest base offset <= from, if any, and the
// entries after it, at most limit in all.
func (m *MetaStore) IndexEntries(ctx context.Context, topic string, partition int32, from int64, limit int) ([]store.IndexEntry, error) {
	if limit <= 0 {
		return nil, nil
	}
	var out []store.IndexEntry
	err := m.view(ctx, func(tx *bolt.Tx) error {
		prefix := partitionKey(topic, partition)
		c := tx.Bucket([]byte(bucketIndex)).Cursor()
		// Start at the greatest key <= from: the last key before from+1.
		var k, v []byte
		if from == 1<<63-1 {
			k, v = seekLastBefore(c, prefixEnd(prefix))
		} else {
			k, v = seekLastBefore(c, indexKey(topic, partition, from+1))
		}
		if k == nil || !bytes.HasPrefix(k, prefix) {
			// No entry at or below from: start at the partition's first entry.
			k, v = c.Seek(prefix)
		}
		for ; k != nil && bytes.HasPrefix(k, prefix) && len(out) < limit; k, v = c.Next() {
			var rec indexRec
			if err := decodeRec(bucketIndex, k, v, &rec); err != nil {
				return err
			}
			out = append(out, rec.toStore())
		}
		return nil
	})
	return out, err
}

// GetIdempotency returns the record of (key, partition) or store.ErrNotFound.
func (m *MetaStore) GetIdempotency(ctx context.Context, key string, partition int32) (store.IdempotencyRecord, error) {
	var out store.IdempotencyRecord
	err := m.view(ctx, func(tx *bolt.Tx) error {
		rec, ok, err := getRec[idempotencyRec](tx, bucketIdempotency, idempotencyKey(key, partition))
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("local: idempotency key %q partition %d: %w", key, partition, store.ErrNotFound)
		}
		out = rec.toStore()
		return nil
	})
	return out, err
}

// DeleteIndexEntry removes the entry at baseOffset; a missing entry is not an error.
func (m *MetaStore) DeleteIndexEntry(ctx context.Context, topic string, partition int32, baseOffset int64) error {
	return m.update(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(bucketIndex)).Delete(indexKey(topic, partition, baseOffset))
	})
}

// DeleteIndexRange deletes the partition's entries lying wholly below offset below, in
// one transaction that reads only those entries (and the one holding below, kept).
func (m *MetaStore) DeleteIndexRange(ctx context.Context, topic string, partition int32, below int64) (int, error) {
	deleted := 0
	err := m.update(ctx, func(tx *bolt.Tx) error {
		deleted = 0
		b := tx.Bucket([]byte(bucketIndex))
		prefix := partitionKey(topic, partition)
		end := indexKey(topic, partition, below)
		var doomed []indexRec
		c := b.Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.Compare(k, end) < 0; k, v = c.Next() {
			var rec indexRec
			if err := decodeRec(bucketIndex, k, v, &rec); err != nil {
				return err
			}
			if rec.BaseOffset+rec.Count <= below {
				doomed = append(doomed, rec)
			}
		}
		eb := tx.Bucket([]byte(bucketExpiry))
		for _, rec := range doomed {
			key := indexKey(topic, partition, rec.BaseOffset)
			if err := b.Delete(key); err != nil {
				return fmt.Errorf("local: delete index entry %s/%d@%d: %w", topic, partition, rec.BaseOffset, err)
			}
			if !rec.ExpiresAt.IsZero() {
				if err := eb.Delete(expiryKey(rec.ExpiresAt, expiryIndex, key)); err != nil {
					return fmt.Errorf("local: delete expiry key: %w", err)
				}
			}
		}
		deleted = len(doomed)
		return nil
	})
	return deleted, err
}

// AcquireLease takes the lease for member when it is free, expired at now, or already
// member's, incrementing the generation; a live lease of another member is a
// *store.LeaseHeldError.
func (m *MetaStore) AcquireLease(ctx context.Context, group, topic string, partition int32, member string, now, expiresAt time.Time) (store.Assignment, error) {
	if member == "" {
		return store.Assignment{}, errors.New("local: acquire lease: empty member")
	}
	var out store.Assignment
	err := m.update(ctx, func(tx *bolt.Tx) error {
		key := groupTopicPartitionKey(group, topic, partition)
		rec, _, err := getRec[assignmentRec](tx, bucketAssignments, key)
		if err != nil {
			return err
		}
		if cur := rec.toStore(); cur.Live(now) && cur.Owner != member {
			return &store.LeaseHeldError{Owner: cur.Owner, ExpiresAt: cur.ExpiresAt}
		}
		deleted := rec.GroupDeleted
		rec = assignmentRec{
			Group: group, Topic: topic, Partition: partition,
			Owner: member, Generation: rec.Generation + 1, ExpiresAt: expiresAt.UTC(),
		}
		out = rec.toStore()
		out.GroupDeleted = deleted
		return putRec(tx, bucketAssignments, key, rec)
	})
	if err != nil {
		return store.Assignment{}, err
	}
	return out, nil
}

// ownedLease returns the assignment row if member owns it at generation, else ErrFenced.
func ownedLease(tx *bolt.Tx, group, topic string, partition int32, member string, generation int64) (assignmentRec, error) {
	rec, ok, err := getRec[assignmentRec](tx, bucketAssignments, groupTopicPartitionKey(group, topic, partition))
	if err != nil {
		return rec, err
	}
	if !ok || member == "" || rec.Owner != member || rec.Generation != generation {
		return rec, fmt.Errorf("local: lease %s/%s/%d: member %q generation %d: %w",
			group, topic, partition, member, generation, store.ErrFenced)
	}
	return rec, nil
}

// RenewLease moves the expiry if member owns the lease at generation, else ErrFenced.
func (m *MetaStore) RenewLease(ctx context.Context, group, topic string, partition int32, member string, generation int64, expiresAt time.Time) (store.Assignment, error) {
	var out store.Assignment
	err := m.update(ctx, func(tx *bolt.Tx) error {
		rec, err := ownedLease(tx, group, topic, partition, member, generation)
		if err != nil {
			return err
		}
		rec.ExpiresAt = expiresAt.UTC()
		out = rec.toStore()
		return putRec(tx, bucketAssignments, groupTopicPartitionKey(group, topic, partition), rec)
	})
	if err != nil {
		return store.Assignment{}, err
	}
	return out, nil
}

// ReleaseLease clears the owner if member owns the lease at generation, else ErrFenced;
// the generation stays.
func (m *MetaStore) ReleaseLease(ctx context.Context, group, topic string, partition int32, member string, generation int64) error {
	return m.update(ctx, func(tx *bolt.Tx) error {
		rec, err := ownedLease(tx, group, topic, partition, member, generation)
		if err != nil {
			return err
		}
		rec.Owner = ""
		return putRec(tx, bucketAssignments, groupTopicPartitionKey(group, topic, partition), rec)
	})
}

// GetAssignment returns the lease row or store.ErrNotFound.
func (m *MetaStore) GetAssignment(ctx context.Context, group, topic string, partition int32) (store.Assignment, error) {
	var out store.Assignment
	err := m.view(ctx, func(tx *bolt.Tx) error {
		rec, ok, err := getRec[assignmentRec](tx, bucketAssignments, groupTopicPartitionKey(group, topic, partition))
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("local: assignment %s/%s/%d: %w", group, topic, partition, store.ErrNotFound)
		}
		out = rec.toStore()
		return nil
	})
	return out, err
}

// Commit stores c if member owns the lease at c.Generation (else ErrFenced) and
// c.NextOffset is not below the committed one unless c.Backward (else ErrStaleCommit).
func (m *MetaStore) Commit(ctx context.Context, c store.CommitRow, member string) error {
	return m.update(ctx, func(tx *bolt.Tx) error {
		lease, err := ownedLease(tx, c.Group, c.Topic, c.Partition, member, c.Generation)
		if err != nil {
			return err
		}
		key := groupTopicPartitionKey(c.Group, c.Topic, c.Partition)
		cur, ok, err := getRec[commitRec](tx, bucketCommits, key)
		if err != nil {
			return err
		}
		if ok && !c.Backward && c.NextOffset < cur.NextOffset {
			return fmt.Errorf("local: commit %s/%s/%d: offset %d below committed %d: %w",
				c.Group, c.Topic, c.Partition, c.NextOffset, cur.NextOffset, store.ErrStaleCommit)
		}
		switch {
		case c.ReleaseLease:
			lease.Owner = ""
		case !c.LeaseExpiresAt.IsZero():
			lease.ExpiresAt = c.LeaseExpiresAt.UTC()
		}
		if c.ReleaseLease || !c.LeaseExpiresAt.IsZero() {
			if err := putRec(tx, bucketAssignments, key, lease); err != nil {
				return err
			}
		}
		return putRec(tx, bucketCommits, key, commitToRec(c))
	})
}

// GetCommit returns the commit row or store.ErrNotFound.
func (m *MetaStore) GetCommit(ctx context.Context, group, topic string, partition int32) (store.CommitRow, error) {
	var out store.CommitRow
	err := m.view(ctx, func(tx *bolt.Tx) error {
		rec, ok, err := getRec[commitRec](tx, bucketCommits, groupTopicPartitionKey(group, topic, partition))
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("local: commit %s/%s/%d: %w", group, topic, partition, store.ErrNotFound)
		}
		out = rec.toStore()
		return nil
	})
	return out, err
}

// ResetCommits sets the commit rows of the given partitions to the given offsets unless
// a lease of the group on topic is live at now (ErrGroupActive). A reset row keeps its
// generation, drops its metadata and is stamped with now. In the same transaction every
// assignment row of (group, topic), and one for each partition reset, moves to the next
// generation with no owner, fencing any earlier owner whose lease lapsed.
func (m *MetaStore) ResetCommits(ctx context.Context, group, topic string, offsets map[int32]int64, now time.Time) error {
	return m.update(ctx, func(tx *bolt.Tx) error {
		prefix := appendString(appendString(nil, group), topic)
		rows := map[int32]assignmentRec{}
		c := tx.Bucket([]byte(bucketAssignments)).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var rec assignmentRec
			if err := decodeRec(bucketAssignments, k, v, &rec); err != nil {
				return err
			}
			if a := rec.toStore(); a.Live(now) {
				return fmt.Errorf("local: reset %s/%s: partition %d leased by %q until %s: %w",
					group, topic, a.Partition, a.Owner, a.ExpiresAt.UTC().Format(time.RFC3339), store.ErrGroupActive)
			}
			rows[rec.Partition] = rec
		}
		for partition := range offsets {
			if _, ok := rows[partition]; !ok {
				rows[partition] = assignmentRec{Group: group, Topic: topic, Partition: partition}
			}
		}
		for partition, rec := range rows {
			rec.Owner = ""
			rec.Generation++
			if err := putRec(tx, bucketAssignments, groupTopicPartitionKey(group, topic, partition), rec); err != nil {
				return err
			}
		}
		for partition, offset := range offsets {
			key := groupTopicPartitionKey(group, topic, partition)
			cur, _, err := getRec[commitRec](tx, bucketCommits, key)
			if err != nil {
				return err
			}
			rec := commitRec{
				Group: group, Topic: topic, Partition: partition, NextOffset: offset,
				Generation: cur.Generation, CommittedAt: now.UTC(),
			}
			if err := putRec(tx, bucketCommits, key, rec); err != nil {
				return err
			}
		}
		return nil
	})
}

// ListAssignments returns every lease row of the group, by topic then partition.
func (m *MetaStore) ListAssignments(ctx context.Context, group string) ([]store.Assignment, error) {
	var out []store.Assignment
	err := m.view(ctx, func(tx *bolt.Tx) error {
		return scanPrefix(tx, bucketAssignments, appendString(nil, group), func(rec assignmentRec) {
			out = append(out, rec.toStore())
		})
	})
	return out, err
}

// ListCommits returns every commit row of the group, by topic then partition.
func (m *MetaStore) ListCommits(ctx context.Context, group string) ([]store.CommitRow, error) {
	var out []store.CommitRow
	err := m.view(ctx, func(tx *bolt.Tx) error {
		return scanPrefix(tx, bucketCommits, appendString(nil, group), func(rec commitRec) {
			out = append(out, rec.toStore())
		})
	})
	return out, err
}

// scanPrefix decodes, in key order, every row of bucket whose key starts with prefix.
func scanPrefix[T any](tx *bolt.Tx, bucket string, prefix []byte, fn func(T)) error {
	c := tx.Bucket([]byte(bucket)).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var rec T
		if err := decodeRec(bucket, k, v, &rec); err != nil {
			return err
		}
		fn(rec)
	}
	return nil
}

// EnsureGroup creates the group with cfg if absent and returns the stored config.
func (m *MetaStore) EnsureGroup(ctx context.Context, cfg store.GroupConfig) (store.GroupConfig, error) {
	if cfg.Name == "" {
		return store.GroupConfig{}, errors.New("local: ensure group: empty name")
	}
	var out store.GroupConfig
	err := m.update(ctx, func(tx *bolt.Tx) error {
		key := []byte(cfg.Name)
		rec, ok, err := getRec[groupRec](tx, bucketGroups, key)
		if err != nil {
			return err
		}
		if !ok {
			rec = groupToRec(cfg)
			if err := putRec(tx, bucketGroups, key, rec); err != nil {
				return err
			}
		}
		out = rec.toStore()
		return nil
	})
	if err != nil {
		return store.GroupConfig{}, err
	}
	return out, nil
}

// GetGroup returns the group's config or store.ErrNotFound.
func (m *MetaStore) GetGroup(ctx context.Context, name string) (store.GroupConfig, error) {
	var out store.GroupConfig
	err := m.view(ctx, func(tx *bolt.Tx) error {
		rec, ok, err := getRec[groupRec](tx, bucketGroups, []byte(name))
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("local: group %q: %w", name, store.ErrNotFound)
		}
		out = rec.toStore()
		return nil
	})
	return out, err
}

// Heartbeat upserts the member's expiry.
func (m *MetaStore) Heartbeat(ctx context.Context, mem store.Member) error {
	return m.update(ctx, func(tx *bolt.Tx) error {
		rec := memberRec{Group: mem.Group, ID: mem.ID, ExpiresAt: mem.ExpiresAt.UTC()}
		return putRec(tx, bucketMembers, memberKey(mem.Group, mem.ID), rec)
	})
}

// RemoveMember deletes the member; a missing one is not an error.
func (m *MetaStore) RemoveMember(ctx context.Context, group, id string) error {
	return m.update(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(bucketMembers)).Delete(memberKey(group, id))
	})
}

// LiveMembers returns the group's members whose expiry is after now, ordered by ID.
func (m *MetaStore) LiveMembers(ctx context.Context, group string, now time.Time) ([]store.Member, error) {
	var out []store.Member
	err := m.view(ctx, func(tx *bolt.Tx) error {
		return scanPrefix(tx, bucketMembers, appendString(nil, group), func(rec memberRec) {
			if rec.ExpiresAt.After(now) {
				out = append(out, rec.toStore())
			}
		})
	})
	return out, err
}
