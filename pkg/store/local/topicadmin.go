package local

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/stratalog/strata/pkg/store"
)

var _ store.TopicAdminStore = (*MetaStore)(nil)

// IncreasePartitions raises the topic's partition count and creates the new partitions'
// sequencer counters, in one transaction.
func (m *MetaStore) IncreasePartitions(ctx context.Context, name string, partitions int32) (store.Topic, error) {
	var out store.Topic
	err := m.update(ctx, func(tx *bolt.Tx) error {
		key := []byte(name)
		rec, ok, err := getRec[topicRec](tx, bucketTopics, key)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("local: topic %q: %w", name, store.ErrNotFound)
		}
		t := rec.toStore()
		if partitions <= t.Partitions {
			return fmt.Errorf("local: topic %q has %d partitions, asked for %d: %w", name, t.Partitions, partitions, store.ErrPartitionsNotRaised)
		}
		old := t.Partitions
		t.Partitions = partitions
		if err := putRec(tx, bucketTopics, key, topicToRec(t)); err != nil {
			return err
		}
		for p := old; p < partitions; p++ {
			if _, err := seqLocked(tx, name, p); err != nil {
				return err
			}
		}
		out = t
		return nil
	})
	return out, err
}

// bucketTombstones holds deleted topics' tombstones (name → tombstoneRec); it is
// created by the first DeleteTopic.
const bucketTombstones = "topic_tombstones"

type tombstoneRec struct {
	DeletedAt time.Time `json:"deleted_at"`
}

// DeleteTopic writes the topic's tombstone unless it has one.
func (m *MetaStore) DeleteTopic(ctx context.Context, name string, at time.Time) error {
	return m.update(ctx, func(tx *bolt.Tx) error {
		if tx.Bucket([]byte(bucketTopics)).Get([]byte(name)) == nil {
			return fmt.Errorf("local: topic %q: %w", name, store.ErrNotFound)
		}
		b, err := tx.CreateBucketIfNotExists([]byte(bucketTombstones))
		if err != nil {
			return err
		}
		if b.Get([]byte(name)) != nil {
			return nil
		}
		data, err := json.Marshal(tombstoneRec{DeletedAt: at.UTC()})
		if err != nil {
			return err
		}
		return b.Put([]byte(name), data)
	})
}

func tombstone(tx *bolt.Tx, name string) (tombstoneRec, bool, error) {
	b := tx.Bucket([]byte(bucketTombstones))
	if b == nil {
		return tombstoneRec{}, false, nil
	}
	v := b.Get([]byte(name))
	if v == nil {
		return tombstoneRec{}, false, nil
	}
	var rec tombstoneRec
	if err := decodeRec(bucketTombstones, []byte(name), v, &rec); err != nil {
		return tombstoneRec{}, false, err
	}
	return rec, true, nil
}

// TopicTombstone reads the topic's tombstone.
func (m *MetaStore) TopicTombstone(ctx context.Context, name string) (time.Time, bool, error) {
	var rec tombstoneRec
	var ok bool
	err := m.view(ctx, func(tx *bolt.Tx) error {
		var err error
		rec, ok, err = tombstone(tx, name)
		return err
	})
	return rec.DeletedAt, ok, err
}

// DeletedTopics returns the tombstoned topics whose rows remain, by name.
func (m *MetaStore) DeletedTopics(ctx context.Context) ([]store.DeletedTopic, error) {
	var out []store.DeletedTopic
	err := m.view(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(bucketTombstones))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var rec tombstoneRec
			if err := decodeRec(bucketTombstones, k, v, &rec); err != nil {
				return err
			}
			t, ok, err := getRec[topicRec](tx, bucketTopics, k)
			if err != nil || !ok {
				return err
			}
			out = append(out, store.DeletedTopic{Topic: t.toStore(), DeletedAt: rec.DeletedAt})
			return nil
		})
	})
	return out, err
}

// PurgeTopic removes a deleted topic's row and tombstone; its counters stay.
func (m *MetaStore) PurgeTopic(ctx context.Context, name string) error {
	return m.update(ctx, func(tx *bolt.Tx) error {
		if tx.Bucket([]byte(bucketTopics)).Get([]byte(name)) == nil {
			return nil
		}
		if _, ok, err := tombstone(tx, name); err != nil || !ok {
			if err == nil {
				err = fmt.Errorf("local: purge %q: %w", name, store.ErrNotDeleted)
			}
			return err
		}
		if err := tx.Bucket([]byte(bucketTopics)).Delete([]byte(name)); err != nil {
			return err
		}
		return tx.Bucket([]byte(bucketTombstones)).Delete([]byte(name))
	})
}
