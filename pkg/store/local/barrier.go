package local

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/stratalog/strata/pkg/store"
)

// bucketBarriers holds each group's barrier, keyed by group: the version (8 bytes, big
// endian) then the state. DeleteGroup removes it with the group's row.
const bucketBarriers = "group_barriers"

var _ store.GroupBarrierStore = (*MetaStore)(nil)

// GetBarrier returns the group's barrier.
func (m *MetaStore) GetBarrier(ctx context.Context, group string) (store.Barrier, error) {
	var out store.Barrier
	err := m.view(ctx, func(tx *bolt.Tx) error {
		if tx.Bucket([]byte(bucketGroups)).Get([]byte(group)) == nil {
			return fmt.Errorf("local: group %q: %w", group, store.ErrNotFound)
		}
		var err error
		out, err = decodeBarrier(group, tx.Bucket([]byte(bucketBarriers)).Get([]byte(group)))
		return err
	})
	return out, err
}

// SwapBarrier stores state when the barrier is still at version, in one transaction.
func (m *MetaStore) SwapBarrier(ctx context.Context, group string, version int64, state []byte) (store.Barrier, error) {
	if len(state) > store.MaxBarrierBytes {
		return store.Barrier{}, fmt.Errorf("local: barrier of %q: %d bytes: %w", group, len(state), store.ErrBarrierTooLarge)
	}
	var out store.Barrier
	err := m.update(ctx, func(tx *bolt.Tx) error {
		if tx.Bucket([]byte(bucketGroups)).Get([]byte(group)) == nil {
			return fmt.Errorf("local: group %q: %w", group, store.ErrNotFound)
		}
		b := tx.Bucket([]byte(bucketBarriers))
		cur, err := decodeBarrier(group, b.Get([]byte(group)))
		if err != nil {
			return err
		}
		if cur.Version != version {
			return fmt.Errorf("local: barrier of %q at version %d, not %d: %w", group, cur.Version, version, store.ErrBarrierConflict)
		}
		v := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(state)), uint64(version+1))
		if err := b.Put([]byte(group), append(v, state...)); err != nil {
			return err
		}
		out = store.Barrier{Group: group, Version: version + 1, State: slices.Clone(state)}
		return nil
	})
	return out, err
}

func decodeBarrier(group string, v []byte) (store.Barrier, error) {
	if v == nil {
		return store.Barrier{Group: group}, nil
	}
	if len(v) < 8 {
		return store.Barrier{}, fmt.Errorf("local: barrier of %q: %d bytes, below its version", group, len(v))
	}
	return store.Barrier{Group: group, Version: int64(binary.BigEndian.Uint64(v)), State: slices.Clone(v[8:])}, nil
}
