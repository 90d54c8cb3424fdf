package storetest

import (
	"context"
	"strings"

	"github.com/stratalog/strata/pkg/store"
)

var _ store.IncarnationPurger = (*memStore)(nil)

func (s *memStore) PurgeKeys(_ context.Context, topic string, partitions int32) (int, error) {
	s.lock()
	defer s.mu.Unlock()
	n := 0
	for id, e := range s.keys() {
		if e.Topic == topic || (s.bug == "PurgeKeysByPrefix" && strings.HasPrefix(e.Topic, topic)) {
			delete(s.keys(), id)
			n++
		}
	}
	for p := range partitions {
		if s.bug != "PurgeKeepsCounters" {
			delete(s.dirtyCounters(), tpKey{topic, p})
		}
	}
	return n, nil
}

func (s *memStore) PurgeParked(_ context.Context, group, topic string) (int, error) {
	s.lock()
	defer s.mu.Unlock()
	n := 0
	for k := range s.parkedRows() {
		if k.group == group && (k.topic == topic || (s.bug == "PurgeParkedByPrefix" && strings.HasPrefix(k.topic, topic))) {
			delete(s.parkedRows(), k)
			n++
		}
	}
	return n, nil
}
