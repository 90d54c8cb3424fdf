package backendtest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stratalog/strata/pkg/store"
)

// CountingGets is an object store that counts its ranged reads: what a reader's GETs
// of segment objects cost.
type CountingGets struct {
	store.ObjectStore
	Gets atomic.Int64
}

// GetRange counts the read and passes it on.
func (c *CountingGets) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	c.Gets.Add(1)
	return c.ObjectStore.GetRange(ctx, key, offset, length)
}

// Meta is what a log needs of the metadata tables (log.Meta's methods).
type Meta interface {
	store.TopicStore
	store.SequencerStore
	store.IndexStore
}

// LaggingReplica is a log's metadata whose eventually consistent sequencer reads are
// counted and, once Freeze has been called for a partition, answered with its state at
// that call: a replica that has not seen the writes since.
type LaggingReplica struct {
	Meta
	Eventual atomic.Int64
	mu       sync.Mutex
	frozen   map[int32]store.SeqState
}

// Freeze makes the replica answer partition's reads with its state now.
func (m *LaggingReplica) Freeze(t testing.TB, topic string, partition int32) {
	t.Helper()
	st, err := m.Meta.Sequencer(context.Background(), topic, partition)
	if err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.frozen == nil {
		m.frozen = map[int32]store.SeqState{}
	}
	m.frozen[partition] = st
}

// SequencerEventual counts the read and answers from the frozen state, if any.
func (m *LaggingReplica) SequencerEventual(ctx context.Context, topic string, partition int32) (store.SeqState, error) {
	m.Eventual.Add(1)
	m.mu.Lock()
	st, ok := m.frozen[partition]
	m.mu.Unlock()
	if ok {
		return st, nil
	}
	return m.Meta.SequencerEventual(ctx, topic, partition)
}
