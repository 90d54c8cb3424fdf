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

func (h *harness) MakeMetaStore(context.Context) (store.MetaStore, error) {
	m, err := OpenMetaStore(filepath.Join(h.t.TempDir(), "meta.db"))
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
