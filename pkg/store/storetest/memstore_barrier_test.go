package storetest

import (
	"context"
	"slices"

	"github.com/stratalog/strata/pkg/store"
)

var _ store.GroupBarrierStore = (*memStore)(nil)

func (s *memStore) GetBarrier(_ context.Context, group string) (store.Barrier, error) {
	s.lock()
	defer s.mu.Unlock()
	if _, ok := s.groups[group]; !ok {
		return store.Barrier{}, store.ErrNotFound
	}
	b, ok := s.barriers[group]
	if !ok {
		return store.Barrier{Group: group}, nil
	}
	b.State = slices.Clone(b.State)
	return b, nil
}

func (s *memStore) SwapBarrier(_ context.Context, group string, version int64, state []byte) (store.Barrier, error) {
	s.lock()
	defer s.mu.Unlock()
	if len(state) > store.MaxBarrierBytes {
		return store.Barrier{}, store.ErrBarrierTooLarge
	}
	if _, ok := s.groups[group]; !ok {
		return store.Barrier{}, store.ErrNotFound
	}
	cur := s.barriers[group].Version
	if s.bug == "BarrierSwapRace" {
		s.racy()
	}
	if cur != version && s.bug != "BarrierIgnoresVersion" {
		return store.Barrier{}, store.ErrBarrierConflict
	}
	if s.barriers == nil {
		s.barriers = map[string]store.Barrier{}
	}
	b := store.Barrier{Group: group, Version: cur + 1, State: slices.Clone(state)}
	if s.bug == "BarrierSwapRace" {
		b.Version = version + 1
	}
	s.barriers[group] = b
	b.State = slices.Clone(state)
	return b, nil
}
