// Package storetest is the conformance suite of package store: every ObjectStore and
// MetaStore implementation runs RunConformanceTests from its own tests, so a behaviour is
// specified once, here (the gocloud blob/drivertest pattern).
//
// The suite uses fixed millisecond times (never the clock), small data, and names unique
// to each test, so a harness may share buckets and tables across sub-tests.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stratalog/strata/pkg/store"
)

// Harness makes fresh, isolated stores for one test: a random key prefix or fresh
// tables, so runs never see each other's data. Close must release what it made.
//
// A package that implements only one of the two interfaces returns an error wrapping
// errors.ErrUnsupported from the other Make method; the suite then skips that half.
type Harness interface {
	MakeObjectStore(ctx context.Context) (store.ObjectStore, error)
	MakeMetaStore(ctx context.Context) (store.MetaStore, error)
	Close()
}

// HarnessMaker makes a new Harness for each sub-test.
type HarnessMaker func(ctx context.Context, t *testing.T) (Harness, error)

// RunConformanceTests runs the whole suite against the implementation newHarness makes.
// Each sub-test makes its own harness and closes it when done.
func RunConformanceTests(t *testing.T, newHarness HarnessMaker) {
	t.Helper()
	runSections(t, "ObjectStore", newHarness, Harness.MakeObjectStore, objectStoreSections())
	runSections(t, "MetaStore", newHarness, Harness.MakeMetaStore, metaStoreSections())
	runSections(t, "GroupAdminStore", newHarness, makeGroupAdmin, groupAdminSections())
	runSections(t, "TopicAdminStore", newHarness, makeTopicAdmin, topicAdminSections())
	runSections(t, "LagHistoryStore", newHarness, makeLagHistory, lagHistorySections())
	runSections(t, "ParkStore", newHarness, makePark, parkSections())
	runSections(t, "GroupBarrierStore", newHarness, makeBarrier, barrierSections())
	runSections(t, "ProducerStore", newHarness, makeProducers, producerSections())
	runSections(t, "RetentionStore", newHarness, makeRetention, retentionSections())
	runSections(t, "IndexSwapper", newHarness, makeSwapper, swapSections())
	runSections(t, "IndexExpiryClearer", newHarness, makeExpiryClearer, expiryClearerSections())
	runSections(t, "CleanupStore", newHarness, makeCleanup, cleanupSections())
	runSections(t, "KeyIndexStore", newHarness, makeKeyIndex, keyIndexSections())
	runSections(t, "DirtyCounterStore", newHarness, makeDirty, dirtySections())
	runSections(t, "IncarnationPurger", newHarness, makePurger, purgeSections())
}

// RunObjectStoreTests runs the suite's ObjectStore cases alone: for a second object store
// of a package whose meta store RunConformanceTests already covers.
func RunObjectStoreTests(t *testing.T, newHarness HarnessMaker) {
	t.Helper()
	runSections(t, "ObjectStore", newHarness, Harness.MakeObjectStore, objectStoreSections())
}

// RunFenceBoundTests runs the suite's cases of the bounds on a topic's fences alone: for
// a harness opening stores with the deployment's limits (store.FenceLimits' defaults)
// beside one whose small limits RunConformanceTests takes.
func RunFenceBoundTests(t *testing.T, newHarness HarnessMaker) {
	t.Helper()
	runSections(t, "MetaStore", newHarness, Harness.MakeMetaStore, []section[store.MetaStore]{{"Fences", []testCase[store.MetaStore]{
		{"FencesBounded", testFencesBounded},
		{"FencesBoundedPerOwner", testFencesPerOwner},
	}}})
}

// testCase is one sub-test against a fresh store of type S.
type testCase[S any] struct {
	name string
	run  func(ctx context.Context, t *testing.T, s S)
}

// section groups related sub-tests under one t.Run name.
type section[S any] struct {
	name  string
	cases []testCase[S]
}

// runSections runs every case under t.Run(group/section/case), each with a fresh harness.
// The first case whose harness reports errors.ErrUnsupported skips the whole group.
func runSections[S comparable](t *testing.T, group string, newHarness HarnessMaker,
	makeStore func(Harness, context.Context) (S, error), sections []section[S]) {
	t.Helper()
	t.Run(group, func(t *testing.T) {
		unsupported := false
		for _, sec := range sections {
			if unsupported {
				break
			}
			t.Run(sec.name, func(t *testing.T) {
				for _, tc := range sec.cases {
					if unsupported {
						return
					}
					t.Run(tc.name, func(t *testing.T) {
						ctx := t.Context()
						h, err := newHarness(ctx, t)
						if err != nil {
							t.Fatalf("new harness: %v", err)
						}
						defer h.Close()
						s, err := makeStore(h, ctx)
						if errors.Is(err, errors.ErrUnsupported) {
							unsupported = true
							t.Skipf("harness does not implement %s: %v", group, err)
						}
						if err != nil {
							t.Fatalf("make %s: %v", group, err)
						}
						var zero S
						if s == zero {
							t.Fatalf("make %s returned a nil store and no error", group)
						}
						tc.run(ctx, t, s)
					})
				}
				if unsupported {
					t.SkipNow()
				}
			})
		}
		if unsupported {
			t.Skipf("harness does not implement %s", group)
		}
	})
}

var nameUnsafe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// UniqueName returns a name valid as a topic or group name (letters, digits, "._-"),
// made of kind, the test's own name and random hex, so tests sharing tables never meet.
func UniqueName(t testing.TB, kind string) string {
	t.Helper()
	var b [5]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("random name: %v", err)
	}
	base := t.Name()
	if i := strings.LastIndexByte(base, '/'); i >= 0 {
		base = base[i+1:]
	}
	base = nameUnsafe.ReplaceAllString(base, "-")
	if len(base) > 40 {
		base = base[:40]
	}
	return fmt.Sprintf("%s-%s-%s", kind, base, hex.EncodeToString(b[:]))
}

// AppendEntry commits e to its partition's sequencer and, when the store did not
// materialise the commit itself, writes the index entry as the appender does. It returns
// e with the BaseOffset it got.
func AppendEntry(ctx context.Context, m interface {
	store.SequencerStore
	store.IndexStore
}, e store.IndexEntry) (store.IndexEntry, error) {
	var c store.SeqCommit
	err := retryUnavailable(func() error {
		var err error
		c, err = m.Sequence(ctx, store.SeqCommit{Entry: e})
		return err
	})
	if err != nil {
		return e, fmt.Errorf("commit: %w", err)
	}
	if !c.Materialized {
		err := retryUnavailable(func() error { return m.PutIndexEntry(ctx, c.Entry) })
		var ce *store.ConflictError
		if errors.As(err, &ce) && ce.Existing.ObjectKey == c.Entry.ObjectKey && ce.Existing.ByteOffset == c.Entry.ByteOffset {
			err = nil
		}
		if err != nil {
			return c.Entry, fmt.Errorf("index entry at %d: %w", c.Entry.BaseOffset, err)
		}
	}
	return c.Entry, nil
}

// CheckTiling reports the first way entries fail to tile the offsets [first base, end):
// out of order, a gap, an overlap, or an entry with Count < 1.
func CheckTiling(entries []store.IndexEntry) error {
	for i, e := range entries {
		if e.Count < 1 {
			return fmt.Errorf("entry %d at %d has count %d", i, e.BaseOffset, e.Count)
		}
		if i > 0 && e.BaseOffset != entries[i-1].End() {
			return fmt.Errorf("entry %d at %d does not start at the previous end %d", i, e.BaseOffset, entries[i-1].End())
		}
	}
	return nil
}
