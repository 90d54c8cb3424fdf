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

// LaggingReplica is a log's metadata whose eventually consistent reads are counted and,
// once Freeze has been called for a partition, answered with its state and its index
// entries at that call: a replica that has seen none of the writes since (neither the
// commits nor the deletes).
type LaggingReplica struct {
	store.MetaStore
	// IndexOnly freezes the index entries alone: the bounds are read as they are.
	IndexOnly               bool
	Eventual, EventualIndex atomic.Int64
	mu                      sync.Mutex
	frozen                  map[int32]store.SeqState
	entries                 map[int32][]store.IndexEntry
}

// Freeze makes the replica answer partition's reads with its state and entries now.
func (m *LaggingReplica) Freeze(t testing.TB, topic string, partition int32) {
	t.Helper()
	ctx := context.Background()
	st, err := m.MetaStore.Sequencer(ctx, topic, partition)
	if err != nil {
		t.Fatal(err)
	}
	es, err := m.MetaStore.IndexEntries(ctx, topic, partition, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.frozen == nil {
		m.frozen, m.entries = map[int32]store.SeqState{}, map[int32][]store.IndexEntry{}
	}
	m.frozen[partition], m.entries[partition] = st, es
}

// SequencerEventual counts the read and answers from the frozen state, if any.
func (m *LaggingReplica) SequencerEventual(ctx context.Context, topic string, partition int32) (store.SeqState, error) {
	m.Eventual.Add(1)
	m.mu.Lock()
	st, ok := m.frozen[partition]
	m.mu.Unlock()
	if ok && !m.IndexOnly {
		return st, nil
	}
	return m.MetaStore.SequencerEventual(ctx, topic, partition)
}

// IndexEntriesEventual counts the read and answers from the frozen entries, if any, as
// IndexEntries would have then: the one holding from, and those after it.
func (m *LaggingReplica) IndexEntriesEventual(ctx context.Context, topic string, partition int32, from int64, limit int) ([]store.IndexEntry, error) {
	m.EventualIndex.Add(1)
	m.mu.Lock()
	es, ok := m.entries[partition]
	m.mu.Unlock()
	if !ok {
		return m.MetaStore.IndexEntriesEventual(ctx, topic, partition, from, limit)
	}
	first := 0
	for i, e := range es {
		if e.BaseOffset <= from {
			first = i
		}
	}
	out := es[first:]
	return out[:min(len(out), limit)], nil
}
