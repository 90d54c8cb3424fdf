package local

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/stratalog/strata/pkg/store"
)

var _ store.TopicAdminStore = (*MetaStore)(nil)

// IncreasePartitions raises the topic's partition count and creates the new partitions'
// sequencer counters, in one transaction.
func (m *MetaStore) IncreasePartitions(ctx context.Context, name string, partitions int32) (store.Topic, error) {
	return m.changeTopic(ctx, name, func(tx *bolt.Tx, t *store.Topic) error {
		if partitions <= t.Partitions {
			return fmt.Errorf("local: topic %q has %d partitions, asked for %d: %w", name, t.Partitions, partitions, store.ErrPartitionsNotRaised)
		}
		old := t.Partitions
		t.Partitions = partitions
		for p := old; p < partitions; p++ {
			if _, err := seqLocked(tx, t.ID(), p); err != nil {
				return err
			}
		}
		return nil
	})
}

// SetRetentionPin rewrites the topic's row with the pin, in one transaction.
func (m *MetaStore) SetRetentionPin(ctx context.Context, name string, pin time.Duration) (store.Topic, error) {
	return m.changeTopic(ctx, name, func(_ *bolt.Tx, t *store.Topic) error {
		t.RetentionPin = pin
		return nil
	})
}

// changeTopic applies change to the live topic name's row in one transaction and
// returns the topic as written; a missing topic is store.ErrNotFound, and a change
// that fails writes nothing.
func (m *MetaStore) changeTopic(ctx context.Context, name string, change func(tx *bolt.Tx, t *store.Topic) error) (store.Topic, error) {
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
		if err := change(tx, &t); err != nil {
			return err
		}
		if err := putRec(tx, bucketTopics, key, topicToRec(t)); err != nil {
			return err
		}
		out = t
		return nil
	})
	return out, err
}

// bucketTombstones held the tombstones of deleted topics whose rows stayed, before
// incarnations; the file's upgrade on open moves them to the graveyard.
const bucketTombstones = "topic_tombstones"

type tombstoneRec struct {
	DeletedAt time.Time `json:"deleted_at"`
}

// graveRec is a deleted incarnation waiting for its purge.
type graveRec struct {
	Topic     topicRec  `json:"topic"`
	DeletedAt time.Time `json:"deleted_at"`
}

func graveKey(name, incarnation string) []byte {
	return appendString(appendString(nil, name), incarnation)
}

// bury moves the live topic row t to the graveyard, deleted at at, in tx; an
// incarnation already buried keeps its first deletion time.
func bury(tx *bolt.Tx, t topicRec, at time.Time) error {
	if err := tx.Bucket([]byte(bucketTopics)).Delete([]byte(t.Name)); err != nil {
		return err
	}
	key := graveKey(t.Name, t.Incarnation)
	if tx.Bucket([]byte(bucketGraveyard)).Get(key) != nil {
		return nil
	}
	return putRec(tx, bucketGraveyard, key, graveRec{Topic: t, DeletedAt: at.UTC()})
}

// migrateTombstones buries every topic of the legacy tombstones bucket and drops the
// bucket.
func migrateTombstones(tx *bolt.Tx) error {
	b := tx.Bucket([]byte(bucketTombstones))
	if b == nil {
		return nil
	}
	type buried struct {
		t  topicRec
		at time.Time
	}
	var todo []buried
	err := b.ForEach(func(k, v []byte) error {
		var rec tombstoneRec
		if err := decodeRec(bucketTombstones, k, v, &rec); err != nil {
			return err
		}
		t, ok, err := getRec[topicRec](tx, bucketTopics, k)
		if err != nil || !ok {
			return err
		}
		todo = append(todo, buried{t, rec.DeletedAt})
		return nil
	})
	if err != nil {
		return fmt.Errorf("local: migrate tombstones: %w", err)
	}
	for _, d := range todo {
		if err := bury(tx, d.t, d.at); err != nil {
			return fmt.Errorf("local: migrate tombstone of %q: %w", d.t.Name, err)
		}
	}
	return tx.DeleteBucket([]byte(bucketTombstones))
}

// DeleteTopic moves the live topic to the graveyard in one transaction.
func (m *MetaStore) DeleteTopic(ctx context.Context, name string, at time.Time) error {
	return m.update(ctx, func(tx *bolt.Tx) error {
		t, ok, err := getRec[topicRec](tx, bucketTopics, []byte(name))
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("local: topic %q: %w", name, store.ErrNotFound)
		}
		return bury(tx, t, at)
	})
}

// DeletedTopics returns the buried incarnations, by name (then incarnation).
func (m *MetaStore) DeletedTopics(ctx context.Context) ([]store.DeletedTopic, error) {
	var out []store.DeletedTopic
	err := m.view(ctx, func(tx *bolt.Tx) error {
		out = out[:0]
		return tx.Bucket([]byte(bucketGraveyard)).ForEach(func(k, v []byte) error {
			var rec graveRec
			if err := decodeRec(bucketGraveyard, k, v, &rec); err != nil {
				return err
			}
			out = append(out, store.DeletedTopic{Topic: rec.Topic.toStore(), DeletedAt: rec.DeletedAt})
			return nil
		})
	})
	return out, err
}

// PurgeTopic removes a buried incarnation, its sequencer rows and, for an incarnation
// (not the legacy layout, whose claims' prefix is shared with the name's later
// incarnations), its idempotency claims, in one transaction.
func (m *MetaStore) PurgeTopic(ctx context.Context, name, incarnation string) error {
	return m.update(ctx, func(tx *bolt.Tx) error {
		key := graveKey(name, incarnation)
		rec, ok, err := getRec[graveRec](tx, bucketGraveyard, key)
		if err != nil {
			return err
		}
		if !ok {
			live, found, err := getRec[topicRec](tx, bucketTopics, []byte(name))
			if err == nil && found && live.Incarnation == incarnation {
				err = fmt.Errorf("local: purge %q: %w", name, store.ErrNotDeleted)
			}
			return err
		}
		id := rec.Topic.toStore().ID()
		seq := tx.Bucket([]byte(bucketSequencer))
		for p := int32(0); p < rec.Topic.Partitions; p++ {
			if err := seq.Delete(partitionKey(id, p)); err != nil {
				return err
			}
		}
		if incarnation != "" {
			if _, err := deletePrefix(tx.Bucket([]byte(bucketIdempotency)), []byte(id+"#"), math.MaxInt); err != nil {
				return err
			}
		}
		if err := tx.Bucket([]byte(bucketTopicBatches)).Delete(topicKey(id)); err != nil {
			return err
		}
		if _, err := deletePrefix(tx.Bucket([]byte(bucketFences)), topicKey(id), math.MaxInt); err != nil {
			return err
		}
		return tx.Bucket([]byte(bucketGraveyard)).Delete(key)
	})
}

// deletePrefix deletes the keys of b that start with prefix, at most max of them, and
// returns how many it deleted.
func deletePrefix(b *bolt.Bucket, prefix []byte, max int) (int, error) {
	c := b.Cursor()
	n := 0
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && n < max; k, _ = c.Seek(prefix) {
		if err := c.Delete(); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
