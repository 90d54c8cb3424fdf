package log

import (
	"context"
	"fmt"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

// CleanupChange is an alter of a topic's cleanup policy and compaction settings: each
// field set replaces the topic's, the others are kept.
type CleanupChange struct {
	Cleanup          *store.CleanupPolicy
	MinCompactionLag *time.Duration
	MaxCompactionLag *time.Duration
	DeleteRetention  *time.Duration
}

// checkCleanup validates c and returns it normalised: the delete policy is stored as ""
// (what topics created before policies hold), a compacted policy needs a store that
// keeps the key index, and no setting is negative nor the maximum lag below the minimum.
func (l *Log) checkCleanup(c store.TopicCleanup) (store.TopicCleanup, error) {
	p, err := store.ParseCleanupPolicy(string(c.Cleanup))
	if err != nil {
		return c, invalidf("%v", err)
	}
	c.Cleanup = p
	if p == store.CleanupDelete {
		c.Cleanup = ""
	}
	switch {
	case c.MinCompactionLag < 0 || c.MaxCompactionLag < 0 || c.DeleteRetention < 0:
		return c, invalidf("min_compaction_lag_ms, max_compaction_lag_ms and delete_retention_ms must not be negative")
	case c.MaxCompactionLag > 0 && c.MaxCompactionLag < c.MinCompactionLag:
		return c, invalidf("max_compaction_lag_ms %d is below min_compaction_lag_ms %d", c.MaxCompactionLag.Milliseconds(), c.MinCompactionLag.Milliseconds())
	}
	if _, ok := l.meta.(store.KeyIndexStore); !ok && (store.Topic{Cleanup: c.Cleanup}).Compacted() {
		return c, fmt.Errorf("log: the metadata store keeps no key index, which cleanup.policy=%s needs: %w", p, store.ErrUnavailable)
	}
	return c, nil
}

// AlterCleanup changes a topic's cleanup policy and compaction settings
// (store.CleanupStore): the fields of ch set replace the topic's, validated as at
// creation. Kafka's changes are allowed — delete to compact or compact,delete, and
// between those two — except from a compacted policy back to plain delete, which is
// refused: the key index is written only while the topic is compacted, so a key
// written meanwhile would read stale once compacted again. Turning compaction on
// refuses keyless appends from then on (every node within TopicCacheTTL); records
// already there, keyless or not, stay as they are, and the key index holds only keys
// appended after the change (a key appended before reads 404 until written again).
// Every node sees the change within TopicCacheTTL.
func (l *Log) AlterCleanup(ctx context.Context, name string, ch CleanupChange) (store.Topic, error) {
	cs, ok := l.meta.(store.CleanupStore)
	if !ok {
		return store.Topic{}, fmt.Errorf("log: the metadata store cannot change a topic's cleanup policy: %w", store.ErrUnavailable)
	}
	cur, err := l.reloadTopic(ctx, name)
	if err != nil {
		return store.Topic{}, err
	}
	c := cur.CleanupSettings()
	if ch.Cleanup != nil {
		c.Cleanup = *ch.Cleanup
	}
	for _, f := range []struct {
		set *time.Duration
		dst *time.Duration
	}{{ch.MinCompactionLag, &c.MinCompactionLag}, {ch.MaxCompactionLag, &c.MaxCompactionLag}, {ch.DeleteRetention, &c.DeleteRetention}} {
		if f.set != nil {
			*f.dst = *f.set
		}
	}
	if c, err = l.checkCleanup(c); err != nil {
		return store.Topic{}, err
	}
	if cur.Compacted() && !(store.Topic{Cleanup: c.Cleanup}).Compacted() {
		return store.Topic{}, invalidf("topic %s is compacted (cleanup.policy=%s): it can become compact or compact,delete, not delete, since its key index would go stale", name, cur.Cleanup)
	}
	t, err := cs.SetCleanup(ctx, name, c)
	return l.changedTopic(name, t, err)
}
