package local

import (
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/stratalog/strata/pkg/store"
)

// bucketKeys holds the key index of compacted topics: topic ID, partition, key →
// keyRec.
const bucketKeys = "key_index"

var _ store.KeyIndexStore = (*MetaStore)(nil)

type keyRec struct {
	Offset     int64     `json:"offset"`
	Tombstone  bool      `json:"tombstone,omitempty"`
	AppendedAt time.Time `json:"appended_at"`
}

func keyIndexKey(topic string, partition int32, key []byte) []byte {
	return append(appendInt32(appendString(nil, topic), partition), key...)
}

// PutKey replaces the key's entry in one transaction unless the stored one is as new.
func (m *MetaStore) PutKey(ctx context.Context, e store.KeyEntry) (bool, bool, error) {
	var stored, superseded bool
	err := m.update(ctx, func(tx *bolt.Tx) error {
		stored, superseded = false, false
		k := keyIndexKey(e.Topic, e.Partition, e.Key)
		old, ok, err := getRec[keyRec](tx, bucketKeys, k)
		if err != nil {
			return err
		}
		if ok && old.Offset >= e.Offset {
			superseded = old.Offset > e.Offset
			return nil
		}
		stored, superseded = true, ok
		return putRec(tx, bucketKeys, k, keyRec{Offset: e.Offset, Tombstone: e.Tombstone, AppendedAt: e.AppendedAt.UTC().Truncate(time.Millisecond)})
	})
	return stored, superseded && err == nil, err
}

// GetKey reads the key's entry.
func (m *MetaStore) GetKey(ctx context.Context, topic string, partition int32, key []byte) (store.KeyEntry, error) {
	var e store.KeyEntry
	err := m.view(ctx, func(tx *bolt.Tx) error {
		rec, ok, err := getRec[keyRec](tx, bucketKeys, keyIndexKey(topic, partition, key))
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("local: key entry of %s/%d: %w", topic, partition, store.ErrNotFound)
		}
		e = store.KeyEntry{Topic: topic, Partition: partition, Key: append([]byte{}, key...), Offset: rec.Offset, Tombstone: rec.Tombstone, AppendedAt: rec.AppendedAt}
		return nil
	})
	return e, err
}

// DeleteKey removes the key's entry in one transaction if its offset is offset.
func (m *MetaStore) DeleteKey(ctx context.Context, topic string, partition int32, key []byte, offset int64) (bool, error) {
	var deleted bool
	err := m.update(ctx, func(tx *bolt.Tx) error {
		deleted = false
		k := keyIndexKey(topic, partition, key)
		old, ok, err := getRec[keyRec](tx, bucketKeys, k)
		if err != nil || !ok || old.Offset != offset {
			return err
		}
		deleted = true
		return tx.Bucket([]byte(bucketKeys)).Delete(k)
	})
	return deleted, err
}
