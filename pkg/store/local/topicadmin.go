package local

import (
	"context"
	"fmt"

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
