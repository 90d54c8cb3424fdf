package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

// makeProducers makes the harness's MetaStore and requires it to be a ProducerStore
// too: every backend keeps the Kafka front's producer state beside its metadata.
func makeProducers(h Harness, ctx context.Context) (store.MetaStore, error) {
	m, err := h.MakeMetaStore(ctx)
	if err != nil {
		return nil, err
	}
	if _, ok := m.(store.ProducerStore); !ok {
		return nil, fmt.Errorf("%T does not implement store.ProducerStore", m)
	}
	return m, nil
}

func producerSections() []section[store.MetaStore] {
	return []section[store.MetaStore]{
		{"Producers", []testCase[store.MetaStore]{
			{"IDsUniqueAcrossCallers", testProducerIDsUnique},
			{"RowPutIsConditionalOnVersion", testProducerRowVersions},
			{"ConcurrentPutsOneWins", testProducerRowRace},
		}},
	}
}

func producers(m store.MetaStore) store.ProducerStore { return m.(store.ProducerStore) }

func testProducerIDsUnique(ctx context.Context, t *testing.T, m store.MetaStore) {
	ps := producers(m)
	const callers, each = 6, 5
	var mu sync.Mutex
	seen := map[int64]bool{}
	var wg sync.WaitGroup
	errs := make(chan error, callers*each)
	for range callers {
		wg.Go(func() {
			for range each {
				id, err := ps.NextProducerID(ctx)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				if id < 1 || seen[id] {
					errs <- fmt.Errorf("producer id %d handed out twice or below 1", id)
				}
				seen[id] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(seen) != callers*each {
		t.Fatalf("%d distinct ids, want %d", len(seen), callers*each)
	}
}

func testProducerRowVersions(ctx context.Context, t *testing.T, m store.MetaStore) {
	ps := producers(m)
	key, other := UniqueName(t, "p"), UniqueName(t, "q")
	exp := time.UnixMilli(1_900_000_000_000)
	if _, _, err := ps.GetProducerRow(ctx, key); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get of a missing row: %v, want ErrNotFound", err)
	}
	if err := ps.PutProducerRow(ctx, key, []byte("one"), 1, exp); !errors.Is(err, store.ErrVersionMismatch) {
		t.Fatalf("put at version 1 of a missing row: %v, want ErrVersionMismatch", err)
	}
	if err := ps.PutProducerRow(ctx, key, []byte("one"), 0, exp); err != nil {
		t.Fatalf("first put: %v", err)
	}
	want := func(data string, ver int64) {
		t.Helper()
		got, v, err := ps.GetProducerRow(ctx, key)
		if err != nil || !bytes.Equal(got, []byte(data)) || v != ver {
			t.Fatalf("row = %q v%d (%v), want %q v%d", got, v, err, data, ver)
		}
	}
	want("one", 1)
	if err := ps.PutProducerRow(ctx, key, []byte("again"), 0, exp); !errors.Is(err, store.ErrVersionMismatch) {
		t.Fatalf("second put as new: %v, want ErrVersionMismatch", err)
	}
	want("one", 1)
	if err := ps.PutProducerRow(ctx, key, []byte("two"), 1, time.Time{}); err != nil {
		t.Fatalf("put at version 1: %v", err)
	}
	want("two", 2)
	if err := ps.PutProducerRow(ctx, key, []byte("stale"), 1, exp); !errors.Is(err, store.ErrVersionMismatch) {
		t.Fatalf("put from a stale version: %v, want ErrVersionMismatch", err)
	}
	want("two", 2)
	if _, _, err := ps.GetProducerRow(ctx, other); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another key: %v, want ErrNotFound", err)
	}
}

func testProducerRowRace(ctx context.Context, t *testing.T, m store.MetaStore) {
	ps := producers(m)
	key := UniqueName(t, "p")
	if err := ps.PutProducerRow(ctx, key, []byte("base"), 0, time.Time{}); err != nil {
		t.Fatal(err)
	}
	const writers = 6
	var wg sync.WaitGroup
	results := make([]error, writers)
	for i := range writers {
		wg.Go(func() { results[i] = ps.PutProducerRow(ctx, key, fmt.Appendf(nil, "w%d", i), 1, time.Time{}) })
	}
	wg.Wait()
	won := -1
	for i, err := range results {
		switch {
		case err == nil && won >= 0:
			t.Fatalf("writers %d and %d both moved the row from version 1", won, i)
		case err == nil:
			won = i
		case !errors.Is(err, store.ErrVersionMismatch):
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no writer won")
	}
	got, v, err := ps.GetProducerRow(ctx, key)
	if err != nil || string(got) != fmt.Sprintf("w%d", won) || v != 2 {
		t.Fatalf("row = %q v%d (%v), want the winner w%d at v2", got, v, err, won)
	}
}
