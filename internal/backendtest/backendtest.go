// Package backendtest runs a test body against every storage backend: the embedded one
// (files + bbolt in a temp dir) and the AWS one (S3 + DynamoDB on the emulator, fresh
// bucket prefix and tables per call). The AWS run fails, not skips, when the emulator
// is required (STRATA_REQUIRE_EMULATOR=1) and absent.
package backendtest

import (
	"context"
	"testing"

	"github.com/stratalog/strata/pkg/store"
)

// Stores is one backend's pair of stores.
type Stores struct {
	Name    string
	Objects store.ObjectStore
	Meta    store.MetaStore
	// Commits reads the sequencer's commit stream until ctx ends (the materialiser's
	// input); nil for a backend that materialises every commit atomically (local).
	Commits func(ctx context.Context, fn func(context.Context, []store.SeqState) error) error
	// Effects makes the backend's fenced business store over Meta's assignments (on AWS
	// a fresh business table, removed when the test ends).
	Effects func(ctx context.Context, t testing.TB) store.EffectStore
}

// Maker makes fresh stores for one test; cleanup is registered on t.
type Maker func(ctx context.Context, t testing.TB) Stores

// ForEach runs fn as a sub-test per backend.
func ForEach(t *testing.T, fn func(t *testing.T, s Stores)) {
	t.Helper()
	ForEachWith(t, Options{}, fn)
}

// ForEachWith is ForEach with the stores opened as o says.
func ForEachWith(t *testing.T, o Options, fn func(t *testing.T, s Stores)) {
	t.Helper()
	makers := []backend{ // AWS last since it is the slowest
		{"local", func(ctx context.Context, t testing.TB) Stores { return localWith(ctx, t, o) }},
		{"aws", func(ctx context.Context, t testing.TB) Stores { return awsWith(ctx, t, nil, o) }},
	}
	for _, b := range makers {
		t.Run(b.name, func(t *testing.T) {
			fn(t, b.make(context.Background(), t))
		})
	}
}

type backend struct {
	name string
	make Maker
}

// Materializer indexes the commits of appenders that stopped between their commit and
// their index write (*log.Log's Materialize).
type Materializer interface {
	Materialize(ctx context.Context, states []store.SeqState) (int, error)
}

// Materialise runs m on s's commit stream until the test ends, as the dispatch function
// does on AWS, so a commit whose index write failed becomes readable as in a
// deployment; a backend without a stream (local) needs none.
func Materialise(t testing.TB, s Stores, m Materializer) {
	t.Helper()
	if s.Commits == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Commits(ctx, func(ctx context.Context, batch []store.SeqState) error {
			_, err := m.Materialize(ctx, batch)
			return err
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
}
