package main

import (
	"encoding/json"
	"fmt"
	"sync"
)

// orderEvent is the demo's record value.
type orderEvent struct {
	OrderID string `json:"order_id"`
	Seq     int    `json:"seq"`
	Amount  int    `json:"amount_cents"`
	Note    string `json:"note"`
}

// idempotentSink stands for a business store with its own idempotency boundary: a
// conditional put keyed by topic/partition/offset, so redelivered records change
// nothing. It also checks that each order's events are applied in sequence.
type idempotentSink struct {
	mu         sync.Mutex
	applied    map[string]struct{}
	lastSeq    map[string]int
	duplicates int64
	outOfOrder int64
}

func newIdempotentSink() *idempotentSink {
	return &idempotentSink{applied: map[string]struct{}{}, lastSeq: map[string]int{}}
}

// put applies an event once; a second delivery of the same offset is absorbed.
func (s *idempotentSink) put(topic string, partition int32, offset int64, value []byte) error {
	var ev orderEvent
	if err := json.Unmarshal(value, &ev); err != nil {
		return fmt.Errorf("sink: bad event at %s/%d@%d: %w", topic, partition, offset, err)
	}
	k := fmt.Sprintf("%s/%d/%d", topic, partition, offset)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.applied[k]; dup {
		s.duplicates++
		return nil
	}
	s.applied[k] = struct{}{}
	prev, ok := s.lastSeq[ev.OrderID]
	if !ok {
		prev = -1
	}
	if ev.Seq != prev+1 {
		s.outOfOrder++
	}
	s.lastSeq[ev.OrderID] = ev.Seq
	return nil
}

func (s *idempotentSink) counts() (applied int, duplicates, outOfOrder int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.applied), s.duplicates, s.outOfOrder
}
