package storetest

import (
	"context"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

var _ store.DirtyCounterStore = (*memStore)(nil)

func (s *memStore) dirtyCounters() map[tpKey]store.DirtyCounter {
	if s.dirty == nil {
		s.dirty = map[tpKey]store.DirtyCounter{}
	}
	return s.dirty
}

func (s *memStore) AddOverwrites(_ context.Context, topic string, partition int32, n int64) (store.DirtyCounter, error) {
	s.lock()
	defer s.mu.Unlock()
	k := tpKey{topic, partition}
	c := s.dirtyCounters()[k]
	c.Overwrites += n
	s.dirtyCounters()[k] = c
	return c, nil
}

func (s *memStore) AddRemoved(_ context.Context, topic string, partition int32, n int64) error {
	s.lock()
	defer s.mu.Unlock()
	k := tpKey{topic, partition}
	c := s.dirtyCounters()[k]
	c.Removed += n
	s.dirtyCounters()[k] = c
	return nil
}

func (s *memStore) ClaimCompaction(_ context.Context, topic string, partition int32, seen, at time.Time) (bool, error) {
	s.lock()
	defer s.mu.Unlock()
	k := tpKey{topic, partition}
	c := s.dirtyCounters()[k]
	if s.bug == "DirtyClaimBlind" {
		s.racy()
	} else if !c.RequestedAt.Equal(seen.UTC().Truncate(time.Millisecond)) {
		return false, nil
	}
	c.RequestedAt = at.UTC().Truncate(time.Millisecond)
	s.dirtyCounters()[k] = c
	return true, nil
}
