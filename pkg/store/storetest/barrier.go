package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stratalog/strata/pkg/store"
)

// makeBarrier makes the harness's MetaStore and requires it to be a GroupBarrierStore
// and a GroupAdminStore too: every backend implements all three.
func makeBarrier(h Harness, ctx context.Context) (store.MetaStore, error) {
	m, err := h.MakeMetaStore(ctx)
	if err != nil {
		return nil, err
	}
	if _, ok := m.(store.GroupBarrierStore); !ok {
		return nil, fmt.Errorf("%T does not implement store.GroupBarrierStore", m)
	}
	if _, ok := m.(store.GroupAdminStore); !ok {
		return nil, fmt.Errorf("%T does not implement store.GroupAdminStore", m)
	}
	return m, nil
}

func barrierSections() []section[store.MetaStore] {
	return []section[store.MetaStore]{
		{"Barrier", []testCase[store.MetaStore]{
			{"UnknownGroupNotFound", testBarrierUnknownGroup},
			{"SwapComparesVersion", testBarrierSwap},
			{"ConcurrentSwapsOneWins", testBarrierConcurrent},
			{"SettingsAndBarrierApart", testBarrierKeepsSettings},
			{"DeletedWithGroup", testBarrierDeletedWithGroup},
			{"SizeBounded", testBarrierSize},
		}},
	}
}

func barriers(m store.MetaStore) store.GroupBarrierStore { return m.(store.GroupBarrierStore) }

func newBarrierGroup(ctx context.Context, t *testing.T, m store.MetaStore) string {
	t.Helper()
	g := UniqueName(t, "g")
	_, err := m.EnsureGroup(ctx, store.GroupConfig{Name: g, ResetPolicy: "earliest", MaxAttempts: 5, CreatedAt: at(1000)})
	must(t, "EnsureGroup", err)
	return g
}

func testBarrierUnknownGroup(ctx context.Context, t *testing.T, m store.MetaStore) {
	g := UniqueName(t, "g")
	if _, err := barriers(m).GetBarrier(ctx, g); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetBarrier of an unknown group = %v, want ErrNotFound", err)
	}
	if _, err := barriers(m).SwapBarrier(ctx, g, 0, []byte("s")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("SwapBarrier of an unknown group = %v, want ErrNotFound", err)
	}
	if _, err := m.GetGroup(ctx, g); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetGroup after a refused SwapBarrier = %v, want ErrNotFound (nothing created)", err)
	}
}

func testBarrierSwap(ctx context.Context, t *testing.T, m store.MetaStore) {
	g := newBarrierGroup(ctx, t, m)
	bs := barriers(m)
	b, err := bs.GetBarrier(ctx, g)
	must(t, "GetBarrier (none)", err)
	if b.Version != 0 || len(b.State) != 0 {
		t.Fatalf("GetBarrier of a group without one = %+v, want version 0 and no state", b)
	}
	b, err = bs.SwapBarrier(ctx, g, 0, []byte("one"))
	must(t, "SwapBarrier from 0", err)
	if b.Version != 1 || string(b.State) != "one" {
		t.Fatalf("SwapBarrier from 0 = %+v, want version 1 state one", b)
	}
	if _, err := bs.SwapBarrier(ctx, g, 0, []byte("two")); !errors.Is(err, store.ErrBarrierConflict) {
		t.Fatalf("SwapBarrier at a stale version 0 = %v, want ErrBarrierConflict", err)
	}
	if _, err := bs.SwapBarrier(ctx, g, 5, []byte("two")); !errors.Is(err, store.ErrBarrierConflict) {
		t.Fatalf("SwapBarrier at a future version = %v, want ErrBarrierConflict", err)
	}
	b, err = bs.GetBarrier(ctx, g)
	must(t, "GetBarrier", err)
	if b.Version != 1 || string(b.State) != "one" {
		t.Fatalf("GetBarrier after refused swaps = %+v, want version 1 state one", b)
	}
	b, err = bs.SwapBarrier(ctx, g, 1, []byte("two"))
	must(t, "SwapBarrier from 1", err)
	if b.Version != 2 || string(b.State) != "two" {
		t.Fatalf("SwapBarrier from 1 = %+v, want version 2 state two", b)
	}
}

func testBarrierConcurrent(ctx context.Context, t *testing.T, m store.MetaStore) {
	g := newBarrierGroup(ctx, t, m)
	bs := barriers(m)
	_, err := bs.SwapBarrier(ctx, g, 0, []byte("base"))
	must(t, "SwapBarrier", err)
	const n = 4
	var mu sync.Mutex
	won := 0
	race(n, func(i int) {
		err := retryUnavailable(func() error {
			_, err := bs.SwapBarrier(ctx, g, 1, []byte{byte('a' + i)})
			return err
		})
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrBarrierConflict):
			t.Errorf("SwapBarrier racing: %v", err)
		}
	})
	if won != 1 {
		t.Fatalf("%d of %d swaps from one version won, want exactly 1", won, n)
	}
	b, err := bs.GetBarrier(ctx, g)
	must(t, "GetBarrier", err)
	if b.Version != 2 {
		t.Fatalf("barrier after the race at version %d, want 2", b.Version)
	}
}

func testBarrierKeepsSettings(ctx context.Context, t *testing.T, m store.MetaStore) {
	g := newBarrierGroup(ctx, t, m)
	_, err := barriers(m).SwapBarrier(ctx, g, 0, []byte("s"))
	must(t, "SwapBarrier", err)
	cfg, err := m.GetGroup(ctx, g)
	must(t, "GetGroup", err)
	if cfg.ResetPolicy != "earliest" || cfg.MaxAttempts != 5 {
		t.Fatalf("GetGroup after SwapBarrier = %+v, want the settings kept", cfg)
	}
	_, err = admin(m).PutGroupConfig(ctx, store.GroupConfig{Name: g, ResetPolicy: "latest", MaxAttempts: 2, CreatedAt: at(2000)})
	must(t, "PutGroupConfig", err)
	b, err := barriers(m).GetBarrier(ctx, g)
	must(t, "GetBarrier", err)
	if b.Version != 1 || string(b.State) != "s" {
		t.Fatalf("GetBarrier after PutGroupConfig = %+v, want version 1 state s", b)
	}
}

func testBarrierDeletedWithGroup(ctx context.Context, t *testing.T, m store.MetaStore) {
	g := newBarrierGroup(ctx, t, m)
	_, err := barriers(m).SwapBarrier(ctx, g, 0, []byte("s"))
	must(t, "SwapBarrier", err)
	must(t, "DeleteGroup", admin(m).DeleteGroup(ctx, g, at(5000)))
	if _, err := barriers(m).GetBarrier(ctx, g); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetBarrier of a deleted group = %v, want ErrNotFound", err)
	}
	_, err = m.EnsureGroup(ctx, store.GroupConfig{Name: g, ResetPolicy: "earliest", MaxAttempts: 5, CreatedAt: at(6000)})
	must(t, "EnsureGroup again", err)
	b, err := barriers(m).GetBarrier(ctx, g)
	must(t, "GetBarrier of the group created again", err)
	if b.Version != 0 || len(b.State) != 0 {
		t.Fatalf("GetBarrier of the group created again = %+v, want none", b)
	}
}

func testBarrierSize(ctx context.Context, t *testing.T, m store.MetaStore) {
	g := newBarrierGroup(ctx, t, m)
	big := bytes.Repeat([]byte{0xa5}, store.MaxBarrierBytes)
	b, err := barriers(m).SwapBarrier(ctx, g, 0, big)
	must(t, "SwapBarrier of MaxBarrierBytes", err)
	if _, err := barriers(m).SwapBarrier(ctx, g, b.Version, append(big, 1)); !errors.Is(err, store.ErrBarrierTooLarge) {
		t.Fatalf("SwapBarrier above MaxBarrierBytes = %v, want ErrBarrierTooLarge", err)
	}
	got, err := barriers(m).GetBarrier(ctx, g)
	must(t, "GetBarrier", err)
	if got.Version != 1 || !bytes.Equal(got.State, big) {
		t.Fatalf("GetBarrier after a refused oversize swap: version %d, %d bytes; want version 1, the %d bytes stored", got.Version, len(got.State), len(big))
	}
}
