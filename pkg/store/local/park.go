package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/stratalog/strata/pkg/store"
)

var _ store.ParkStore = (*MetaStore)(nil)

// parkedRec is a parked key's row.
type parkedRec struct {
	Group            string    `json:"group"`
	Topic            string    `json:"topic"`
	Partition        int32     `json:"partition"`
	Key              []byte    `json:"key"`
	FirstOffset      int64     `json:"first_offset"`
	LastOffset       int64     `json:"last_offset"`
	Records          int64     `json:"records"`
	Error            string    `json:"error"`
	Attempts         int       `json:"attempts"`
	ParkedAt         time.Time `json:"parked_at"`
	ParkPartition    int32     `json:"park_partition"`
	ParkOffset       int64     `json:"park_offset"`
	ReleaseRequested time.Time `json:"release_requested,omitzero"`
}

func parkedToRec(p store.ParkedKey) parkedRec {
	return parkedRec{Group: p.Group, Topic: p.Topic, Partition: p.Partition, Key: bytes.Clone(p.Key),
		FirstOffset: p.FirstOffset, LastOffset: p.LastOffset, Records: p.Records, Error: p.Error, Attempts: p.Attempts,
		ParkedAt: p.ParkedAt.UTC(), ParkPartition: p.ParkPartition, ParkOffset: p.ParkOffset,
		ReleaseRequested: p.ReleaseRequested.UTC()}
}

func (r parkedRec) toStore() store.ParkedKey {
	key := r.Key
	if key == nil {
		key = []byte{}
	}
	return store.ParkedKey{Group: r.Group, Topic: r.Topic, Partition: r.Partition, Key: key,
		FirstOffset: r.FirstOffset, LastOffset: r.LastOffset, Records: r.Records, Error: r.Error, Attempts: r.Attempts,
		ParkedAt: r.ParkedAt, ParkPartition: r.ParkPartition, ParkOffset: r.ParkOffset,
		ReleaseRequested: r.ReleaseRequested}
}

func parkedKey(group, topic string, partition int32, key []byte) []byte {
	return appendString(groupTopicPartitionKey(group, topic, partition), string(key))
}

// PutParked writes the row if member owns the lease at generation, keeping the stored
// release request, in one transaction.
func (m *MetaStore) PutParked(ctx context.Context, p store.ParkedKey, member string, generation int64) error {
	if p.Group == "" || p.Topic == "" {
		return errors.New("local: put parked: empty group or topic")
	}
	return m.update(ctx, func(tx *bolt.Tx) error {
		if _, err := ownedLease(tx, p.Group, p.Topic, p.Partition, member, generation); err != nil {
			return err
		}
		key := parkedKey(p.Group, p.Topic, p.Partition, p.Key)
		old, ok, err := getRec[parkedRec](tx, bucketParked, key)
		if err != nil {
			return err
		}
		rec := parkedToRec(p)
		rec.ReleaseRequested = time.Time{}
		if ok {
			rec.ReleaseRequested = old.ReleaseRequested
		}
		return putRec(tx, bucketParked, key, rec)
	})
}

// DeleteParked deletes the row if member owns the lease at generation.
func (m *MetaStore) DeleteParked(ctx context.Context, group, topic string, partition int32, key []byte, member string, generation int64) error {
	return m.update(ctx, func(tx *bolt.Tx) error {
		if _, err := ownedLease(tx, group, topic, partition, member, generation); err != nil {
			return err
		}
		return tx.Bucket([]byte(bucketParked)).Delete(parkedKey(group, topic, partition, key))
	})
}

// RequestRelease stamps the row's release request.
func (m *MetaStore) RequestRelease(ctx context.Context, group, topic string, partition int32, key []byte, at time.Time) (store.ParkedKey, error) {
	var out store.ParkedKey
	err := m.update(ctx, func(tx *bolt.Tx) error {
		k := parkedKey(group, topic, partition, key)
		rec, ok, err := getRec[parkedRec](tx, bucketParked, k)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("local: parked key %q of %s on %s/%d: %w", key, group, topic, partition, store.ErrNotFound)
		}
		rec.ReleaseRequested = at.UTC()
		out = rec.toStore()
		return putRec(tx, bucketParked, k, rec)
	})
	return out, err
}

// ListParked returns the group's rows in key order (topic, partition, key).
func (m *MetaStore) ListParked(ctx context.Context, group string) ([]store.ParkedKey, error) {
	return m.listParked(ctx, appendString(nil, group))
}

// ListParkedPartition returns the group's rows of one partition in key order.
func (m *MetaStore) ListParkedPartition(ctx context.Context, group, topic string, partition int32) ([]store.ParkedKey, error) {
	return m.listParked(ctx, groupTopicPartitionKey(group, topic, partition))
}

func (m *MetaStore) listParked(ctx context.Context, prefix []byte) ([]store.ParkedKey, error) {
	out := []store.ParkedKey{}
	err := m.view(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket([]byte(bucketParked)).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var rec parkedRec
			if err := decodeRec(bucketParked, k, v, &rec); err != nil {
				return err
			}
			out = append(out, rec.toStore())
		}
		return nil
	})
	return out, err
}
