package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

var _ store.ProducerStore = (*memStore)(nil)

// memProducers is the reference's producer state, beside memStore's maps (kept apart so
// memStore's constructor stays as it is).
type memProducers struct {
	next int64
	rows map[string]memProducerRow
}

type memProducerRow struct {
	data    []byte
	version int64
}

var (
	memProducersMu sync.Mutex
	memProducerSet = map[*memStore]*memProducers{}
)

func (s *memStore) producers() *memProducers {
	memProducersMu.Lock()
	defer memProducersMu.Unlock()
	p, ok := memProducerSet[s]
	if !ok {
		p = &memProducers{rows: map[string]memProducerRow{}}
		memProducerSet[s] = p
	}
	return p
}

func (s *memStore) NextProducerID(context.Context) (int64, error) {
	p := s.producers()
	s.lock()
	defer s.mu.Unlock()
	n := p.next
	if s.bug == "ProducerIDRace" {
		s.racy()
	}
	p.next = n + 1
	return n + 1, nil
}

func (s *memStore) GetProducerRow(_ context.Context, key string) ([]byte, int64, error) {
	p := s.producers()
	s.lock()
	defer s.mu.Unlock()
	r, ok := p.rows[key]
	if !ok {
		return nil, 0, fmt.Errorf("producer row %q: %w", key, store.ErrNotFound)
	}
	return slices.Clone(r.data), r.version, nil
}

func (s *memStore) PutProducerRow(_ context.Context, key string, data []byte, prev int64, _ time.Time) error {
	p := s.producers()
	s.lock()
	defer s.mu.Unlock()
	if cur := p.rows[key].version; cur != prev && s.bug != "ProducerPutBlind" {
		return fmt.Errorf("producer row %q at %d, not %d: %w", key, cur, prev, store.ErrVersionMismatch)
	}
	p.rows[key] = memProducerRow{data: slices.Clone(data), version: prev + 1}
	return nil
}
