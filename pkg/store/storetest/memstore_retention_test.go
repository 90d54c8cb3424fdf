package storetest

import (
	"context"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

var _ store.RetentionStore = (*memStore)(nil)

func (s *memStore) SetRetention(_ context.Context, name string, retention time.Duration) (store.Topic, error) {
	s.lock()
	defer s.mu.Unlock()
	t, ok := s.topics[name]
	if !ok {
		return store.Topic{}, store.ErrNotFound
	}
	if s.bug == "RetentionChangesPin" {
		t.RetentionPin = retention
	}
	t.Retention = retention
	s.topics[name] = t
	return t, nil
}
