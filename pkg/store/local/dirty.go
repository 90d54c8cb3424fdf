package local

import (
	"context"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/stratalog/strata/pkg/store"
)

// bucketDirty holds the compacted partitions' dirty counters: topic ID, partition →
// dirtyRec.
const bucketDirty = "dirty_counters"

var _ store.DirtyCounterStore = (*MetaStore)(nil)

type dirtyRec struct {
	Overwrites  int64     `json:"overwrites,omitempty"`
	Removed     int64     `json:"removed,omitempty"`
	RequestedAt time.Time `json:"requested_at,omitzero"`
}

func dirtyKey(topic string, partition int32) []byte {
	return appendInt32(appendString(nil, topic), partition)
}

// changeDirty applies fn to the partition's counter in one transaction.
func (m *MetaStore) changeDirty(ctx context.Context, topic string, partition int32, fn func(*dirtyRec) bool) (store.DirtyCounter, error) {
	var c store.DirtyCounter
	err := m.update(ctx, func(tx *bolt.Tx) error {
		k := dirtyKey(topic, partition)
		rec, _, err := getRec[dirtyRec](tx, bucketDirty, k)
		if err != nil {
			return err
		}
		c = store.DirtyCounter{}
		if !fn(&rec) {
			return nil
		}
		c = store.DirtyCounter(rec)
		return putRec(tx, bucketDirty, k, rec)
	})
	return c, err
}

// AddOverwrites adds n to the counter's overwrites in one transaction.
func (m *MetaStore) AddOverwrites(ctx context.Context, topic string, partition int32, n int64) (store.DirtyCounter, error) {
	return m.changeDirty(ctx, topic, partition, func(r *dirtyRec) bool { r.Overwrites += n; return true })
}

// AddRemoved adds n to the counter's removed records in one transaction.
func (m *MetaStore) AddRemoved(ctx context.Context, topic string, partition int32, n int64) error {
	_, err := m.changeDirty(ctx, topic, partition, func(r *dirtyRec) bool { r.Removed += n; return true })
	return err
}

// ClaimCompaction sets the requested time in one transaction while it is seen.
func (m *MetaStore) ClaimCompaction(ctx context.Context, topic string, partition int32, seen, at time.Time) (bool, error) {
	claimed := false
	_, err := m.changeDirty(ctx, topic, partition, func(r *dirtyRec) bool {
		claimed = r.RequestedAt.Equal(seen.UTC().Truncate(time.Millisecond))
		if claimed {
			r.RequestedAt = at.UTC().Truncate(time.Millisecond)
		}
		return claimed
	})
	return claimed && err == nil, err
}
