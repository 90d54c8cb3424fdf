package storetest

import (
	"context"

	"github.com/stratalog/strata/pkg/store"
)

var _ store.CleanupStore = (*memStore)(nil)

func (s *memStore) SetCleanup(_ context.Context, name string, c store.TopicCleanup) (store.Topic, error) {
	s.lock()
	defer s.mu.Unlock()
	t, ok := s.topics[name]
	if !ok {
		return store.Topic{}, store.ErrNotFound
	}
	if s.bug == "CleanupKeepsLags" {
		c.MinCompactionLag, c.MaxCompactionLag = t.MinCompactionLag, t.MaxCompactionLag
	}
	t = t.WithCleanup(c)
	s.topics[name] = t
	return t, nil
}
