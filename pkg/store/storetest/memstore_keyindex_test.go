package storetest

import (
	"context"

	"github.com/stratalog/strata/pkg/store"
)

var _ store.KeyIndexStore = (*memStore)(nil)

func (s *memStore) keys() map[string]store.KeyEntry {
	if s.keyIndex == nil {
		s.keyIndex = map[string]store.KeyEntry{}
	}
	return s.keyIndex
}

func memKeyID(topic string, partition int32, key []byte) string {
	return string(tpKeyBytes(topic, partition)) + string(key)
}

func tpKeyBytes(topic string, partition int32) []byte {
	return append([]byte(topic+"\x00"), byte(partition>>24), byte(partition>>16), byte(partition>>8), byte(partition))
}

func (s *memStore) PutKey(_ context.Context, e store.KeyEntry) (bool, bool, error) {
	s.lock()
	defer s.mu.Unlock()
	id := memKeyID(e.Topic, e.Partition, e.Key)
	old, ok := s.keys()[id]
	if s.bug == "KeyPutBlind" {
		s.racy()
		ok = false
	}
	if ok && old.Offset >= e.Offset {
		return false, old.Offset > e.Offset && s.bug != "KeyReplacedNever", nil
	}
	e.Key = append([]byte{}, e.Key...)
	s.keys()[id] = e
	return true, ok && s.bug != "KeyReplacedNever", nil
}

func (s *memStore) GetKey(_ context.Context, topic string, partition int32, key []byte) (store.KeyEntry, error) {
	s.lock()
	defer s.mu.Unlock()
	e, ok := s.keys()[memKeyID(topic, partition, key)]
	if !ok {
		return store.KeyEntry{}, store.ErrNotFound
	}
	return e, nil
}

func (s *memStore) DeleteKey(_ context.Context, topic string, partition int32, key []byte, offset int64) (bool, error) {
	s.lock()
	defer s.mu.Unlock()
	id := memKeyID(topic, partition, key)
	old, ok := s.keys()[id]
	if !ok || (old.Offset != offset && s.bug != "KeyDeleteBlind") {
		return false, nil
	}
	delete(s.keys(), id)
	return true, nil
}
