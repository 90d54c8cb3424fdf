package local

import (
	"context"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/stratalog/strata/pkg/store"
)

var (
	_ store.RetentionStore = (*MetaStore)(nil)
	_ store.CleanupStore   = (*MetaStore)(nil)
)

// SetRetention replaces the live topic's retention in one transaction.
func (m *MetaStore) SetRetention(ctx context.Context, name string, retention time.Duration) (store.Topic, error) {
	return m.changeTopic(ctx, name, func(_ *bolt.Tx, t *store.Topic) error {
		t.Retention = retention
		return nil
	})
}

// SetCleanup replaces the live topic's cleanup policy and compaction settings in one
// transaction.
func (m *MetaStore) SetCleanup(ctx context.Context, name string, c store.TopicCleanup) (store.Topic, error) {
	return m.changeTopic(ctx, name, func(_ *bolt.Tx, t *store.Topic) error {
		*t = t.WithCleanup(c)
		return nil
	})
}
