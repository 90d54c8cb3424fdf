package storetest

import (
	"bytes"
	"cmp"
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

func (s *memStore) DeleteGroup(_ context.Context, group string, now time.Time) error {
	s.lock()
	defer s.mu.Unlock()
	if _, ok := s.groups[group]; !ok {
		return store.ErrNotFound
	}
	for k, a := range s.assignments {
		if k.group == group && s.live(a, now) {
			return store.ErrGroupActive
		}
	}
	for _, m := range s.members[group] {
		if m.ExpiresAt.After(now) && s.bug != "DeleteGroupIgnoresMembers" {
			return store.ErrGroupActive
		}
	}
	for k, a := range s.assignments {
		if k.group == group {
			if s.bug == "DeleteGroupDropsAssignments" {
				delete(s.assignments, k)
				continue
			}
			a.Owner = ""
			a.Generation++
			a.GroupDeleted = s.bug != "DeleteGroupLeavesNoMark"
			s.assignments[k] = a
		}
	}
	for k := range s.commits {
		if k.group == group {
			delete(s.commits, k)
		}
	}
	for k := range s.parked {
		if k.group == group && s.bug != "DeleteGroupKeepsParked" {
			delete(s.parked, k)
		}
	}
	delete(s.members, group)
	delete(s.groups, group)
	if s.bug != "DeleteGroupKeepsBarrier" {
		delete(s.barriers, group)
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

func (s *memStore) SetRetentionPin(_ context.Context, name string, pin time.Duration) (store.Topic, error) {
	s.lock()
	defer s.mu.Unlock()
	t, ok := s.topics[name]
	if !ok {
		return store.Topic{}, store.ErrNotFound
	}
	t.RetentionPin = pin
	s.topics[name] = t
	return t, nil
}

func (s *memStore) DeleteTopic(_ context.Context, name string, at time.Time) error {
	s.lock()
	defer s.mu.Unlock()
	t, ok := s.topics[name]
	if !ok {
		return store.ErrNotFound
	}
	delete(s.topics, name)
	if _, ok := s.graveyard[t.ID()]; !ok {
		s.graveyard[t.ID()] = store.DeletedTopic{Topic: t, DeletedAt: s.storeTime(at)}
	}
	return nil
}

func (s *memStore) DeletedTopics(context.Context) ([]store.DeletedTopic, error) {
	s.lock()
	defer s.mu.Unlock()
	var out []store.DeletedTopic
	for _, d := range s.graveyard {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b store.DeletedTopic) int { return strings.Compare(a.ID(), b.ID()) })
	return out, nil
}

func (s *memStore) PurgeTopic(_ context.Context, name, incarnation string) error {
	s.lock()
	defer s.mu.Unlock()
	id := store.TopicID(name, incarnation)
	d, ok := s.graveyard[id]
	if !ok {
		if t, live := s.topics[name]; live && t.Incarnation == incarnation {
			return store.ErrNotDeleted
		}
		return nil
	}
	for p := int32(0); p < d.Partitions; p++ {
		delete(s.seq, tpKey{id, p})
	}
	delete(s.graveyard, id)
	return nil
}

var _ store.LagHistoryStore = (*memStore)(nil)

func (s *memStore) RecordLag(_ context.Context, group string, at time.Time, lags []store.PartitionLag, keep int) error {
	s.lock()
	defer s.mu.Unlock()
	if s.bug == "LagKeepsAll" {
		keep = 1 << 20
	}
	next, changed := store.NextLagHistory(s.lag[group], at, lags, keep)
	if changed {
		s.lag[group] = next
	}
	return nil
}

func (s *memStore) LagHistory(_ context.Context, group string) ([]store.LagSeries, error) {
	s.lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.lag[group])
	if out == nil {
		out = []store.LagSeries{}
	}
	return out, nil
}

func (s *memStore) DeleteLagHistory(_ context.Context, group string) error {
	s.lock()
	defer s.mu.Unlock()
	delete(s.lag, group)
	return nil
}

type parkedMemKey struct {
	gtp
	key string
}

func (s *memStore) parkedRows() map[parkedMemKey]store.ParkedKey {
	if s.parked == nil {
		s.parked = map[parkedMemKey]store.ParkedKey{}
	}
	return s.parked
}

func (s *memStore) PutParked(_ context.Context, p store.ParkedKey, member string, generation int64) error {
	s.lock()
	defer s.mu.Unlock()
	k := gtp{p.Group, p.Topic, p.Partition}
	if a := s.assignments[k]; a.Owner != member || a.Generation != generation {
		return store.ErrFenced
	}
	pk := parkedMemKey{k, string(p.Key)}
	p.Key = append([]byte{}, p.Key...)
	p.ReleaseRequested = s.parkedRows()[pk].ReleaseRequested
	s.parkedRows()[pk] = p
	return nil
}

func (s *memStore) DeleteParked(_ context.Context, group, topic string, partition int32, key []byte, member string, generation int64) error {
	s.lock()
	defer s.mu.Unlock()
	k := gtp{group, topic, partition}
	if a := s.assignments[k]; a.Owner != member || a.Generation != generation {
		return store.ErrFenced
	}
	delete(s.parkedRows(), parkedMemKey{k, string(key)})
	return nil
}

func (s *memStore) RequestRelease(_ context.Context, group, topic string, partition int32, key []byte, at time.Time) (store.ParkedKey, error) {
	s.lock()
	defer s.mu.Unlock()
	pk := parkedMemKey{gtp{group, topic, partition}, string(key)}
	p, ok := s.parkedRows()[pk]
	if !ok {
		return store.ParkedKey{}, store.ErrNotFound
	}
	p.ReleaseRequested = at
	s.parkedRows()[pk] = p
	return p, nil
}

func (s *memStore) ListParked(_ context.Context, group string) ([]store.ParkedKey, error) {
	return s.listParked(func(k parkedMemKey) bool { return k.group == group }), nil
}

func (s *memStore) ListParkedPartition(_ context.Context, group, topic string, partition int32) ([]store.ParkedKey, error) {
	return s.listParked(func(k parkedMemKey) bool { return k.gtp == gtp{group, topic, partition} }), nil
}

func (s *memStore) listParked(keep func(parkedMemKey) bool) []store.ParkedKey {
	s.lock()
	defer s.mu.Unlock()
	out := []store.ParkedKey{}
	for k, p := range s.parkedRows() {
		if keep(k) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b store.ParkedKey) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition), bytes.Compare(a.Key, b.Key))
	})
	return out
}
