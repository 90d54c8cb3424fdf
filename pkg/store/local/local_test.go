package local

import (
	"context"
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
