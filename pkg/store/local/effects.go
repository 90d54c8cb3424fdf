package local

import (
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/stratalog/strata/pkg/store"
)

// Buckets of the fenced business store (store.EffectStore), in the metadata file so
// that the lease check and the write are one transaction.
const (
	bucketEffects       = "effects"        // key → value
	bucketEffectMarkers = "effect_markers" // topic, partition, offset → expiry (UnixNano, order-preserving; empty: none)
)

var _ store.EffectStore = (*MetaStore)(nil)

// ApplyEffect puts value under key and the record's marker in one write transaction, if
// the assignment is at f.Generation (else ErrFenced) and the marker is absent (else
// ErrApplied). The marker's expiry goes in the expiry bucket with it, for DeleteExpired.
func (m *MetaStore) ApplyEffect(ctx context.Context, f store.Fence, offset int64, key string, value []byte, markerExpiresAt time.Time) error {
	op := fmt.Sprintf("apply effect of %s/%d@%d for %s generation %d", f.Topic, f.Partition, offset, f.Group, f.Generation)
	return m.update(ctx, func(tx *bolt.Tx) error {
		a, ok, err := getRec[assignmentRec](tx, bucketAssignments, groupTopicPartitionKey(f.Group, f.Topic, f.Partition))
		if err != nil {
			return err
		}
		if !ok || a.Generation != f.Generation {
			return fmt.Errorf("local: %s: assignment at generation %d: %w", op, a.Generation, store.ErrFenced)
		}
		markers, err := tx.CreateBucketIfNotExists([]byte(bucketEffectMarkers))
		if err != nil {
			return fmt.Errorf("local: %s: %w", op, err)
		}
		mk := appendInt64(appendInt32(appendString(nil, f.Topic), f.Partition), offset)
		if markers.Get(mk) != nil {
			return fmt.Errorf("local: %s: %w", op, store.ErrApplied)
		}
		effects, err := tx.CreateBucketIfNotExists([]byte(bucketEffects))
		if err != nil {
			return fmt.Errorf("local: %s: %w", op, err)
		}
		if err := effects.Put([]byte(key), append([]byte{}, value...)); err != nil {
			return fmt.Errorf("local: %s: %w", op, err)
		}
		var exp []byte
		if !markerExpiresAt.IsZero() {
			exp = appendInt64(nil, markerExpiresAt.UnixNano())
		}
		if err := markers.Put(mk, append([]byte{}, exp...)); err != nil {
			return fmt.Errorf("local: %s: %w", op, err)
		}
		return addExpiry(tx, expiryEffectMarker, mk, markerExpiresAt)
	})
}

// GetEffect returns the value under key, or ErrNotFound.
func (m *MetaStore) GetEffect(ctx context.Context, key string) ([]byte, error) {
	var out []byte
	err := m.view(ctx, func(tx *bolt.Tx) error {
		var v []byte
		if b := tx.Bucket([]byte(bucketEffects)); b != nil {
			v = b.Get([]byte(key))
		}
		if v == nil {
			return fmt.Errorf("local: effect %q: %w", key, store.ErrNotFound)
		}
		out = append([]byte{}, v...)
		return nil
	})
	return out, err
}
