package group_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/internal/clocktest"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/store/local"
)

// forEachBackend runs fn once per metadata backend (bbolt, DynamoDB on the emulator),
// each with a fresh store.
func forEachBackend(t *testing.T, fn func(t *testing.T, st store.MetaStore)) {
	t.Helper()
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) { fn(t, s.Meta) })
}

// localStore opens a fresh embedded metadata store for tests that run on it alone. It
// lives in /dev/shm when there is one: those tests exercise the Balancer's logic, not
// durability, and on tmpfs bbolt's fsync per operation costs nothing (10x faster).
func localStore(t testing.TB) store.MetaStore {
	t.Helper()
	dir := t.TempDir()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "strata-group-test-"); err == nil {
			dir = d
			t.Cleanup(func() { _ = os.RemoveAll(d) })
		}
	}
	m, err := local.OpenMetaStore(filepath.Join(dir, "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// t0 is the fake clocks' origin: whole milliseconds, so every backend stores it exactly.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func newClock() *clocktest.Clock { return clocktest.New(t0) }

// fakeOffsets is an in-memory group.Offsets: per partition a log start and the append
// time of every offset (the HW is their count).
type fakeOffsets struct {
	mu     sync.Mutex
	topics map[string][]*fakePartition
}

type fakePartition struct {
	logStart int64
	appended []time.Time
}

func newOffsets() *fakeOffsets { return &fakeOffsets{topics: map[string][]*fakePartition{}} }

func (f *fakeOffsets) addTopic(name string, partitions int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ps := make([]*fakePartition, partitions)
	for i := range ps {
		ps[i] = &fakePartition{}
	}
	f.topics[name] = ps
}

// append adds n records to (topic, p), appended at the given times (or at t0 when none).
func (f *fakeOffsets) append(topic string, p int32, times ...time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.topics[topic][p].appended = append(f.topics[topic][p].appended, times...)
}

// appendN adds n records appended at t0.
func (f *fakeOffsets) appendN(topic string, p int32, n int) {
	ts := make([]time.Time, n)
	for i := range ts {
		ts[i] = t0
	}
	f.append(topic, p, ts...)
}

func (f *fakeOffsets) setLogStart(topic string, p int32, o int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.topics[topic][p].logStart = o
}

func (f *fakeOffsets) part(topic string, p int32) (*fakePartition, error) {
	ps, ok := f.topics[topic]
	if !ok {
		return nil, fmt.Errorf("fake: topic %q: %w", topic, store.ErrNotFound)
	}
	if p < 0 || int(p) >= len(ps) {
		return nil, fmt.Errorf("fake: partition %d of %q: %w", p, topic, group.ErrInvalid)
	}
	return ps[p], nil
}

func (f *fakeOffsets) Partitions(_ context.Context, topic string) (int32, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ps, ok := f.topics[topic]
	if !ok {
		return 0, fmt.Errorf("fake: topic %q: %w", topic, store.ErrNotFound)
	}
	return int32(len(ps)), nil
}

func (f *fakeOffsets) Bounds(_ context.Context, topic string, p int32) (int64, int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fp, err := f.part(topic, p)
	if err != nil {
		return 0, 0, err
	}
	return fp.logStart, int64(len(fp.appended)), nil
}

func (f *fakeOffsets) AppendedAt(_ context.Context, topic string, p int32, o int64) (time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fp, err := f.part(topic, p)
	if err != nil {
		return time.Time{}, err
	}
	if o < fp.logStart || o >= int64(len(fp.appended)) {
		return time.Time{}, fmt.Errorf("fake: offset %d outside [%d, %d)", o, fp.logStart, len(fp.appended))
	}
	return fp.appended[o], nil
}

// Topic is the topic with fakeRetention and no pin.
func (f *fakeOffsets) Topic(_ context.Context, topic string) (store.Topic, error) {
	n, err := f.Partitions(context.Background(), topic)
	if err != nil {
		return store.Topic{}, err
	}
	return store.Topic{Name: topic, Partitions: n, Retention: fakeRetention}, nil
}

// fakeRetention is every fake topic's retention.
const fakeRetention = 24 * time.Hour

func (f *fakeOffsets) OffsetForTime(_ context.Context, topic string, p int32, t time.Time) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fp, err := f.part(topic, p)
	if err != nil {
		return 0, err
	}
	rest := fp.appended[fp.logStart:]
	i := sort.Search(len(rest), func(i int) bool { return !rest[i].Before(t) })
	return fp.logStart + int64(i), nil
}

// countingStore counts the store calls that write commits, to prove a refused commit
// never reached the store.
type countingStore struct {
	group.Store
	commits atomic.Int64
	resets  atomic.Int64
}

func (s *countingStore) Commit(ctx context.Context, c store.CommitRow, member string) error {
	s.commits.Add(1)
	return s.Store.Commit(ctx, c, member)
}

func (s *countingStore) ResetCommits(ctx context.Context, g, topic string, offsets map[int32]int64, now time.Time) error {
	s.resets.Add(1)
	return s.Store.ResetCommits(ctx, g, topic, offsets, now)
}

// fixture is a coordinator over one backend with a fake log and clock.
type fixture struct {
	st    *countingStore
	off   *fakeOffsets
	clock *clocktest.Clock
	c     *group.Coordinator
}

func newFixture(st store.MetaStore) *fixture {
	f := &fixture{st: &countingStore{Store: st}, off: newOffsets(), clock: newClock()}
	f.c = group.New(f.st, f.off, f.clock.Now)
	return f
}

var groupSeq atomic.Int64

// uniqueGroup returns a group name no other test of this process uses, so tests can
// share one store.
func uniqueGroup(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1e6, groupSeq.Add(1))
}

// committed returns the group's committed offset, -1 when none.
func committed(t testing.TB, c *group.Coordinator, g, topic string, p int32) int64 {
	t.Helper()
	o, err := c.Committed(context.Background(), g, topic, p)
	if err != nil {
		t.Fatalf("Committed(%s, %s, %d): %v", g, topic, p, err)
	}
	if o == nil {
		return -1
	}
	return *o
}

// must turns a (value, error) result into the value, failing the test on an error:
// v := must(call())(t).
func must[T any](v T, err error) func(testing.TB) T {
	return func(t testing.TB) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func mustOK(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
