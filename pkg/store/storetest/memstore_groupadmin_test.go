package storetest

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

var _ store.GroupAdminStore = (*memStore)(nil)

func (s *memStore) PutGroupConfig(_ context.Context, cfg store.GroupConfig) (store.GroupConfig, error) {
	s.lock()
	defer s.mu.Unlock()
	cfg.CreatedAt = s.storeTime(cfg.CreatedAt)
	if old, ok := s.groups[cfg.Name]; ok {
		cfg.CreatedAt = old.CreatedAt
	}
	s.groups[cfg.Name] = cfg
	return cfg, nil
}

func (s *memStore) ListGroups(context.Context) ([]string, error) {
	s.lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.groups))
	for n := range s.groups {
		out = append(out, n)
	}
	slices.Sort(out)
	return out, nil
}

func (s *memStore) DeleteCommits(_ context.Context, group, topic string, now time.Time) error {
	s.lock()
	defer s.mu.Unlock()
	for k, a := range s.assignments {
		if k.group == group && k.topic == topic && s.live(a, now) {
			return store.ErrGroupActive
		}
	}
	for k, a := range s.assignments {
		if k.group == group && k.topic == topic {
			a.Owner = ""
			a.Generation++
			s.assignments[k] = a
		}
	}
	for k := range s.commits {
		if k.group == group && k.topic == topic {
			delete(s.commits, k)
		}
	}
	return nil
}

var _ store.TopicAdminStore = (*memStore)(nil)

func (s *memStore) IncreasePartitions(_ context.Context, name string, partitions int32) (store.Topic, error) {
	s.lock()
	defer s.mu.Unlock()
	t, ok := s.topics[name]
	if !ok {
		return store.Topic{}, store.ErrNotFound
	}
	if partitions <= t.Partitions {
		return store.Topic{}, store.ErrPartitionsNotRaised
	}
	t.Partitions = partitions
	s.topics[name] = t
	return t, nil
}

func (s *memStore) tombstones() map[string]time.Time { return s.tombstoned }

func (s *memStore) DeleteTopic(_ context.Context, name string, at time.Time) error {
	s.lock()
	defer s.mu.Unlock()
	if _, ok := s.topics[name]; !ok {
		return store.ErrNotFound
	}
	if _, ok := s.tombstones()[name]; !ok {
		s.tombstones()[name] = s.storeTime(at)
	}
	return nil
}

func (s *memStore) TopicTombstone(_ context.Context, name string) (time.Time, bool, error) {
	s.lock()
	defer s.mu.Unlock()
	at, ok := s.tombstones()[name]
	return at, ok, nil
}

func (s *memStore) DeletedTopics(context.Context) ([]store.DeletedTopic, error) {
	s.lock()
	defer s.mu.Unlock()
	var out []store.DeletedTopic
	for name, at := range s.tombstones() {
		out = append(out, store.DeletedTopic{Topic: s.topics[name], DeletedAt: at})
	}
	slices.SortFunc(out, func(a, b store.DeletedTopic) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (s *memStore) PurgeTopic(_ context.Context, name string) error {
	s.lock()
	defer s.mu.Unlock()
	if _, ok := s.topics[name]; !ok {
		return nil
	}
	if _, ok := s.tombstones()[name]; !ok {
		return store.ErrNotDeleted
	}
	delete(s.topics, name)
	delete(s.tombstones(), name)
	return nil
}
