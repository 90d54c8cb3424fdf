package local

import (
	"context"

	bolt "go.etcd.io/bbolt"

	"github.com/stratalog/strata/pkg/store"
)

var _ store.IncarnationPurger = (*MetaStore)(nil)

// purgeChunk bounds the rows one purge transaction deletes, so a topic of a million keys
// never holds the write lock for long.
const purgeChunk = 1000

// PurgeKeys deletes the incarnation's dirty counters, then its key entries in
// transactions of purgeChunk rows (the DynamoDB store's order: a purge cut short leaves
// only key rows).
func (m *MetaStore) PurgeKeys(ctx context.Context, topic string, partitions int32) (int, error) {
	err := m.update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(bucketDirty))
		for p := range partitions {
			if err := b.Delete(dirtyKey(topic, p)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return m.deletePrefixChunked(ctx, bucketKeys, appendString(nil, topic))
}

// PurgeParked deletes the group's parked rows of the incarnation.
func (m *MetaStore) PurgeParked(ctx context.Context, group, topic string) (int, error) {
	return m.deletePrefixChunked(ctx, bucketParked, appendString(appendString(nil, group), topic))
}

// deletePrefixChunked deletes every key of bucket that starts with prefix, purgeChunk a
// transaction, and returns how many it deleted.
func (m *MetaStore) deletePrefixChunked(ctx context.Context, bucket string, prefix []byte) (int, error) {
	total := 0
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		var n int
		// Not m.update: a batched transaction may run twice, and this one counts.
		err := m.db.Update(func(tx *bolt.Tx) (err error) {
			n, err = deletePrefix(tx.Bucket([]byte(bucket)), prefix, purgeChunk)
			return err
		})
		total += n
		if err != nil || n < purgeChunk {
			return total, err
		}
	}
}
