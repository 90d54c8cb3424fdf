package log

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

// TopicCacheTTL bounds how long a Log uses a cached topic configuration. After
// IncreasePartitions, every node spreads keys over the new count within it (a node asked
// for a new partition by number learns of it at once).
const TopicCacheTTL = 5 * time.Second

// ErrPartitionsNotRaised: IncreasePartitions asked for no more partitions than the
// topic has. It matches ErrInvalid too.
var ErrPartitionsNotRaised = fmt.Errorf("%w: the partition count can only grow", ErrInvalid)

type cachedTopic struct {
	t  store.Topic
	at time.Time
}

// reloadTopic reads the topic from the store and caches it. One read answers both
// whether the name has a live topic and which incarnation: a delete removes the row
// (docs/DESIGN.md, "Topic deletion"), so nothing can change between two reads.
func (l *Log) reloadTopic(ctx context.Context, name string) (store.Topic, error) {
	if !ValidName(name) {
		return store.Topic{}, fmt.Errorf("%w: %q", ErrTopicNotFound, name)
	}
	t, err := l.meta.GetTopic(ctx, name)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			l.mu.Lock()
			delete(l.topics, name)
			l.mu.Unlock()
			return store.Topic{}, fmt.Errorf("%w: %s", ErrTopicNotFound, name)
		}
		return store.Topic{}, storeErr(err)
	}
	l.mu.Lock()
	l.topics[name] = cachedTopic{t: t, at: l.now()}
	l.mu.Unlock()
	return t, nil
}

// topicCovering returns t, re-read when a record names a partition beyond its count
// (the count may have grown since it was cached).
func (l *Log) topicCovering(ctx context.Context, t store.Topic, recs []Record) (store.Topic, error) {
	for _, r := range recs {
		if r.Partition != nil && *r.Partition >= t.Partitions {
			return l.reloadTopic(ctx, t.Name)
		}
	}
	return t, nil
}

// IncreasePartitions raises the topic's partition count (it never falls: existing
// partitions keep their records and offsets, the new ones start at offset 0). Keys
// hash over the new count from then on, so some keys move to other partitions: see
// docs/DESIGN.md, "More partitions", for what that does to per-key order.
func (l *Log) IncreasePartitions(ctx context.Context, name string, partitions int32) (store.Topic, error) {
	if partitions < 1 || partitions > MaxPartitions {
		return store.Topic{}, invalidf("partitions must be 1–%d, got %d", MaxPartitions, partitions)
	}
	a, err := l.topicAdmin("change topics")
	if err != nil {
		return store.Topic{}, err
	}
	cur, err := l.reloadTopic(ctx, name)
	if err != nil {
		return store.Topic{}, err
	}
	if partitions <= cur.Partitions {
		return store.Topic{}, fmt.Errorf("%w: %q has %d, asked for %d", ErrPartitionsNotRaised, name, cur.Partitions, partitions)
	}
	t, err := a.IncreasePartitions(ctx, name, partitions)
	if errors.Is(err, store.ErrPartitionsNotRaised) {
		return store.Topic{}, fmt.Errorf("%w: %q has %d or more already", ErrPartitionsNotRaised, name, partitions)
	}
	return l.changedTopic(name, t, err)
}

// changedTopic is the outcome of a change of topic name the store answered with t, err:
// a missing topic is ErrTopicNotFound, another failure ErrUnavailable, and a changed
// topic replaces this node's cached one at once (other nodes see it within
// TopicCacheTTL).
func (l *Log) changedTopic(name string, t store.Topic, err error) (store.Topic, error) {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.Topic{}, fmt.Errorf("%w: %s", ErrTopicNotFound, name)
	case err != nil:
		return store.Topic{}, storeErr(err)
	}
	l.mu.Lock()
	l.topics[name] = cachedTopic{t: t, at: l.now()}
	l.mu.Unlock()
	return t, nil
}

// topicAdmin returns the store's topic administration, or an error naming what the
// caller wanted.
func (l *Log) topicAdmin(what string) (store.TopicAdminStore, error) {
	a, ok := l.meta.(store.TopicAdminStore)
	if !ok {
		return nil, fmt.Errorf("log: the metadata store cannot %s: %w", what, store.ErrUnavailable)
	}
	return a, nil
}

// DeleteTopic deletes a topic: its row moves to the deleted incarnations in one step,
// which makes the name unknown to appends, polls and describes at once on this node
// and within TopicCacheTTL on every other, and frees it: CreateTopic may make a new
// incarnation of the name at once, from offset 0. The retention pass then purges the
// old incarnation — its index entries, counters, objects and claims (docs/DESIGN.md,
// "Topic deletion").
func (l *Log) DeleteTopic(ctx context.Context, name string) error {
	a, err := l.topicAdmin("delete topics")
	if err != nil {
		return err
	}
	if _, err := l.reloadTopic(ctx, name); err != nil {
		return err
	}
	err = a.DeleteTopic(ctx, name, l.now())
	l.mu.Lock()
	delete(l.topics, name)
	l.mu.Unlock()
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("%w: %s", ErrTopicNotFound, name)
	case err != nil:
		return storeErr(err)
	}
	return nil
}
