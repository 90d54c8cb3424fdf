package log

import (
	"context"
	"fmt"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

// SetRetention changes how long a topic keeps records (store.RetentionStore): at least
// MinRetention, and with its pin cap within Config.Topics.MaxRetention, as at creation
// (ErrInvalid otherwise). Every node sees it within TopicCacheTTL; the retention pass
// reads it at each pass, so a shorter retention removes the older records at the next
// pass. Index entries and effect markers written before a raise keep the expiry their
// write gave them, which covers the deployment's maximum retention when it has one.
func (l *Log) SetRetention(ctx context.Context, name string, retention time.Duration) (store.Topic, error) {
	rs, ok := l.meta.(store.RetentionStore)
	if !ok {
		return store.Topic{}, fmt.Errorf("log: the metadata store cannot change a topic's retention: %w", store.ErrUnavailable)
	}
	cur, err := l.reloadTopic(ctx, name)
	if err != nil {
		return store.Topic{}, err
	}
	if retention < MinRetention {
		return store.Topic{}, invalidf("retention must be at least %s, got %s", MinRetention, retention)
	}
	if err := l.checkPin(retention, cur.RetentionPin); err != nil {
		return store.Topic{}, err
	}
	t, err := rs.SetRetention(ctx, name, retention)
	return l.changedTopic(name, t, err)
}

// DefaultRetention is the retention a topic created without one gets
// (Config.Topics.Retention, else DefaultRetention).
func (l *Log) DefaultRetention() time.Duration { return l.defaults.retention() }

// DefaultPartitions is the partition count a topic created without one gets.
func (l *Log) DefaultPartitions() int32 { return l.defaults.partitions() }
