package local

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/store/storetest"
)

// harness gives every sub-test of the conformance suite its own temporary directory.
type harness struct {
	t     *testing.T
	metas []*MetaStore
}

func newHarness(_ context.Context, t *testing.T) (storetest.Harness, error) {
	return &harness{t: t}, nil
}

func (h *harness) MakeObjectStore(context.Context) (store.ObjectStore, error) {
	return NewObjectStore(h.t.TempDir())
}

// conformanceFenceLimits are the conformance stores' bounds on a topic's fences, as
// small as the emulator-backed stores' (the defaults are tested on a store of their own).
var conformanceFenceLimits = store.FenceLimits{Fences: 24, OwnerFences: 8}

func (h *harness) MakeMetaStore(context.Context) (store.MetaStore, error) {
	m, err := OpenMetaStore(filepath.Join(h.t.TempDir(), "meta.db"), WithFenceLimits(conformanceFenceLimits))
	if err != nil {
		return nil, err
	}
	h.metas = append(h.metas, m)
	return m, nil
}

func (h *harness) Close() {
	for _, m := range h.metas {
		if err := m.Close(); err != nil {
			h.t.Errorf("close meta store: %v", err)
		}
	}
}

func TestConformance(t *testing.T) {
	storetest.RunConformanceTests(t, newHarness)
}

// TestPackConformance runs the object store cases against the pack store, which the
// node opens; TestConformance runs them against the store of files it replaced, which
// the pack store reads when it adopts an earlier data directory.
func TestPackConformance(t *testing.T) {
	storetest.RunObjectStoreTests(t, func(_ context.Context, t *testing.T) (storetest.Harness, error) {
		return packHarness{t}, nil
	})
}

// packHarness makes pack stores, each in its own directory, closed with the test.
type packHarness struct{ t *testing.T }

func (h packHarness) MakeObjectStore(ctx context.Context) (store.ObjectStore, error) {
	return openPacks(ctx, h.t, h.t.TempDir())
}

func (packHarness) MakeMetaStore(context.Context) (store.MetaStore, error) {
	return nil, errors.ErrUnsupported
}

func (packHarness) Close() {}

// openPacks opens a pack store in dir, closed when t ends.
func openPacks(ctx context.Context, t testing.TB, dir string, opts ...PackOption) (*PackStore, error) {
	s, err := OpenPackStore(ctx, dir, opts...)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close pack store: %v", err)
		}
	})
	return s, nil
}

// TestFenceBoundsAtDefaultLimits: the bounds on a topic's fences hold at the limits a
// deployment runs with, not only at the conformance stores' small ones.
func TestFenceBoundsAtDefaultLimits(t *testing.T) {
	storetest.RunFenceBoundTests(t, func(_ context.Context, t *testing.T) (storetest.Harness, error) {
		return &defaultLimitsHarness{t: t}, nil
	})
}

// defaultLimitsHarness opens meta stores with the default fence limits.
type defaultLimitsHarness struct {
	t     *testing.T
	metas []*MetaStore
}

func (h *defaultLimitsHarness) MakeObjectStore(context.Context) (store.ObjectStore, error) {
	return NewObjectStore(h.t.TempDir())
}

func (h *defaultLimitsHarness) MakeMetaStore(context.Context) (store.MetaStore, error) {
	m, err := OpenMetaStore(filepath.Join(h.t.TempDir(), "meta.db"))
	if err != nil {
		return nil, err
	}
	h.metas = append(h.metas, m)
	if got := m.FenceLimits(); got != (store.FenceLimits{Fences: store.MaxFences, OwnerFences: store.MaxOwnerFences}) {
		h.t.Fatalf("a store opened without options has fence limits %+v", got)
	}
	return m, nil
}

func (h *defaultLimitsHarness) Close() {
	for _, m := range h.metas {
		if err := m.Close(); err != nil {
			h.t.Errorf("close meta store: %v", err)
		}
	}
}

func TestEffectConformance(t *testing.T) {
	storetest.RunEffectTests(t, func(_ context.Context, t *testing.T) (store.MetaStore, store.EffectStore) {
		m, err := OpenMetaStore(filepath.Join(t.TempDir(), "meta.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Close() })
		return m, m
	})
}
