package local

import (
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/stratalog/strata/pkg/store"
)

// SwapIndexEntries replaces old with new in one bbolt transaction, after checking every
// old entry is stored as read.
func (m *MetaStore) SwapIndexEntries(ctx context.Context, topic string, partition int32, old, new []store.IndexEntry) error {
	if err := store.CheckSwap(topic, partition, old, new); err != nil {
		return err
	}
	return m.update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(bucketIndex))
		eb := tx.Bucket([]byte(bucketExpiry))
		for _, e := range old {
			key := indexKey(topic, partition, e.BaseOffset)
			rec, ok, err := getRec[indexRec](tx, bucketIndex, key)
			if err != nil {
				return err
			}
			if !ok || !store.SameBlock(rec.toStore(), e) {
				return fmt.Errorf("local: swap of %s/%d: entry @%d changed: %w", topic, partition, e.BaseOffset, store.ErrConflict)
			}
		}
		for _, e := range old {
			key := indexKey(topic, partition, e.BaseOffset)
			rec, _, _ := getRec[indexRec](tx, bucketIndex, key)
			if err := b.Delete(key); err != nil {
				return fmt.Errorf("local: swap of %s/%d: delete @%d: %w", topic, partition, e.BaseOffset, err)
			}
			if !rec.ExpiresAt.IsZero() {
				if err := eb.Delete(expiryKey(rec.ExpiresAt, expiryIndex, key)); err != nil {
					return fmt.Errorf("local: delete expiry key: %w", err)
				}
			}
		}
		for _, e := range new {
			if err := putExpiring(tx, expiryIndex, indexKey(topic, partition, e.BaseOffset), indexToRec(e), e.ExpiresAt); err != nil {
				return err
			}
		}
		return nil
	})
}

var _ store.IndexExpiryClearer = (*MetaStore)(nil)

// ClearIndexExpiry rewrites the entry without its expiry, and drops its key of the
// expiry bucket so the sweep never deletes it, in one bbolt transaction, after checking
// it is stored as e.
func (m *MetaStore) ClearIndexExpiry(ctx context.Context, e store.IndexEntry) error {
	return m.update(ctx, func(tx *bolt.Tx) error {
		key := indexKey(e.Topic, e.Partition, e.BaseOffset)
		rec, ok, err := getRec[indexRec](tx, bucketIndex, key)
		if err != nil {
			return err
		}
		if !ok || !store.SameBlock(rec.toStore(), e) {
			return fmt.Errorf("local: entry %s/%d@%d is not stored as read: %w", e.Topic, e.Partition, e.BaseOffset, store.ErrConflict)
		}
		if rec.ExpiresAt.IsZero() {
			return nil
		}
		if err := tx.Bucket([]byte(bucketExpiry)).Delete(expiryKey(rec.ExpiresAt, expiryIndex, key)); err != nil {
			return fmt.Errorf("local: delete expiry key: %w", err)
		}
		rec.ExpiresAt = time.Time{}
		return putRec(tx, bucketIndex, key, rec)
	})
}
