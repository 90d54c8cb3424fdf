package local

import (
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/stratalog/strata/pkg/store"
)

// bucketLag holds each group's lag history (store.EncodeLagHistory), keyed by group.
const bucketLag = "lag_history"

var _ store.LagHistoryStore = (*MetaStore)(nil)

// RecordLag replaces the group's history by its next step, in one transaction.
func (m *MetaStore) RecordLag(ctx context.Context, group string, at time.Time, lags []store.PartitionLag, keep int) error {
	return m.update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(bucketLag))
		old, err := decodeLag(group, b.Get([]byte(group)))
		if err != nil {
			return err
		}
		next, changed := store.NextLagHistory(old, at, lags, keep)
		if !changed {
			return nil
		}
		return b.Put([]byte(group), store.EncodeLagHistory(next))
	})
}

// LagHistory returns the group's stored history.
func (m *MetaStore) LagHistory(ctx context.Context, group string) ([]store.LagSeries, error) {
	var out []store.LagSeries
	err := m.view(ctx, func(tx *bolt.Tx) error {
		var err error
		out, err = decodeLag(group, tx.Bucket([]byte(bucketLag)).Get([]byte(group)))
		return err
	})
	if out == nil {
		out = []store.LagSeries{}
	}
	return out, err
}

// DeleteLagHistory removes the group's history.
func (m *MetaStore) DeleteLagHistory(ctx context.Context, group string) error {
	return m.update(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(bucketLag)).Delete([]byte(group))
	})
}

func decodeLag(group string, v []byte) ([]store.LagSeries, error) {
	if v == nil {
		return nil, nil
	}
	h, err := store.DecodeLagHistory(v)
	if err != nil {
		return nil, fmt.Errorf("local: lag history of %q: %w", group, err)
	}
	return h, nil
}
