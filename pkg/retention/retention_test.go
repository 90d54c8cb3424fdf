package retention_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/retention"
	"github.com/stratalog/strata/pkg/store"
)

var t0 = time.UnixMilli(1_780_000_000_000)

// fixture is a topic with one partition, retention 1h, and a settable clock.
type fixture struct {
	s   backendtest.Stores
	now time.Time
	l   *log.Log
}

func newFixture(t *testing.T, s backendtest.Stores) *fixture {
	t.Helper()
	f := &fixture{s: s, now: t0}
	var err error
	if f.l, err = log.New(log.Config{Objects: s.Objects, Meta: s.Meta, Clock: func() time.Time { return f.now }}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.l.CreateTopic(context.Background(), "r", 1, time.Hour); err != nil {
		t.Fatal(err)
	}
	return f
}

// id is topic "r"'s store key (its name and incarnation), for tests that reach the
// index directly.
func (f *fixture) id(t *testing.T) string {
	t.Helper()
	id, err := f.l.TopicID(context.Background(), "r")
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func (f *fixture) append(t *testing.T, n int) {
	t.Helper()
	for i := range n {
		if _, err := f.l.Append(context.Background(), "r", []log.Record{{Value: fmt.Appendf(nil, "v%d", i)}}, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func (f *fixture) run(t *testing.T, j retention.Job) retention.Stats {
	t.Helper()
	j.Meta, j.Objects = f.s.Meta, f.s.Objects
	j.Clock = func() time.Time { return f.now }
	st, err := j.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func (f *fixture) bounds(t *testing.T) (int64, int64) {
	t.Helper()
	s, h, err := f.l.Bounds(context.Background(), "r", 0)
	if err != nil {
		t.Fatal(err)
	}
	return s, h
}

func (f *fixture) objects(t *testing.T) int {
	t.Helper()
	n := 0
	if err := f.s.Objects.List(context.Background(), "v1/r/", func(store.ObjectInfo) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestExpiry: entries older than the retention move the log start and are deleted with
// their objects (past the margin); younger ones stay; the high watermark never moves.
func TestExpiry(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		f := newFixture(t, s)
		f.append(t, 3) // at t0
		f.now = t0.Add(40 * time.Minute)
		f.append(t, 2)
		f.now = t0.Add(61 * time.Minute)
		st := f.run(t, retention.Job{ObjectMargin: 30 * time.Second})
		if start, hw := f.bounds(t); start != 3 || hw != 5 {
			t.Fatalf("bounds [%d, %d), want [3, 5)", start, hw)
		}
		if st.RecordsExpired != 3 || st.EntriesDeleted != 3 || st.ObjectsDeleted != 3 || st.PartitionsMoved != 1 {
			t.Fatalf("stats %+v, want 3 records, 3 entries, 3 objects, 1 partition", st)
		}
		if n := f.objects(t); n != 2 {
			t.Fatalf("%d objects left, want 2", n)
		}
		// A second pass at the same time does nothing more.
		if st := f.run(t, retention.Job{ObjectMargin: 30 * time.Second}); st != (retention.Stats{}) {
			t.Fatalf("second pass %+v, want nothing", st)
		}
	})
}

// TestObjectMargin: an object is deleted only once its name's time is older than the
// retention plus the margin, even when its entries have expired.
func TestObjectMargin(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		f := newFixture(t, s)
		f.append(t, 2)
		f.now = t0.Add(62 * time.Minute)
		st := f.run(t, retention.Job{ObjectMargin: 5 * time.Minute})
		if st.EntriesDeleted != 2 || st.ObjectsDeleted != 0 || f.objects(t) != 2 {
			t.Fatalf("inside the margin: %+v, %d objects; want entries deleted, objects kept", st, f.objects(t))
		}
		f.now = t0.Add(66 * time.Minute)
		if st := f.run(t, retention.Job{ObjectMargin: 5 * time.Minute}); st.ObjectsDeleted != 2 || f.objects(t) != 0 {
			t.Fatalf("past the margin: %+v, %d objects; want both deleted", st, f.objects(t))
		}
	})
}

// TestPaging: more expired entries than one page (100) of the index.
func TestPaging(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		f := newFixture(t, s)
		f.append(t, 130)
		f.now = t0.Add(2 * time.Hour)
		st := f.run(t, retention.Job{})
		if start, hw := f.bounds(t); start != 130 || hw != 130 || st.EntriesDeleted != 130 {
			t.Fatalf("bounds [%d, %d), %+v; want [130, 130) and 130 entries deleted", start, hw, st)
		}
		es, err := s.Meta.IndexEntries(context.Background(), f.id(t), 0, 0, 200)
		if err != nil || len(es) != 0 {
			t.Fatalf("index after the pass: %d entries, %v", len(es), err)
		}
	})
}

// TestGapBeforeExpiredEntry: entries at the log start that DynamoDB's TTL removed (or
// that are not materialised) count as expired when a later expired entry proves them
// older; with no entry left at all, the newest commit's time decides.
func TestGapBeforeExpiredEntry(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s)
		f.append(t, 4)
		for _, base := range []int64{0, 1} {
			if err := s.Meta.DeleteIndexEntry(ctx, f.id(t), 0, base); err != nil {
				t.Fatal(err)
			}
		}
		f.now = t0.Add(2 * time.Hour)
		f.run(t, retention.Job{})
		if start, hw := f.bounds(t); start != 4 || hw != 4 {
			t.Fatalf("gap then expired entries: bounds [%d, %d), want [4, 4)", start, hw)
		}
		// Every entry gone (a long outage): the newest commit is expired, so is all.
		f.append(t, 2)
		for _, base := range []int64{4, 5} {
			if err := s.Meta.DeleteIndexEntry(ctx, f.id(t), 0, base); err != nil {
				t.Fatal(err)
			}
		}
		f.now = f.now.Add(2 * time.Hour)
		f.run(t, retention.Job{})
		if start, hw := f.bounds(t); start != 6 || hw != 6 {
			t.Fatalf("no entries, newest commit expired: bounds [%d, %d), want [6, 6)", start, hw)
		}
	})
}

// TestTopicCommitGapOfUntouchedPartition: on a topic commit topic, a partition whose
// entries are all gone and which the topic's newest batch did not touch has no newest
// commit on the item; the newest batch's time, one margin earlier, proves its offsets
// expired, but only once that batch is older than the retention and two margins. (Before,
// its log start stayed below the high watermark until a batch touched it again.)
func TestTopicCommitGapOfUntouchedPartition(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s)
		if _, err := f.l.CreateTopic(ctx, "m", 2, time.Hour); err != nil {
			t.Fatal(err)
		}
		id, err := f.l.TopicID(ctx, "m")
		if err != nil {
			t.Fatal(err)
		}
		p0, p1 := int32(0), int32(1)
		for i := range 2 {
			if _, err := f.l.Append(ctx, "m", []log.Record{{Partition: &p0, Value: fmt.Appendf(nil, "v%d", i)}}, log.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		for _, base := range []int64{0, 1} {
			if err := s.Meta.DeleteIndexEntry(ctx, id, 0, base); err != nil {
				t.Fatal(err)
			}
		}
		f.now = t0.Add(30 * time.Minute)
		if _, err := f.l.Append(ctx, "m", []log.Record{{Partition: &p1, Value: []byte("later")}}, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		// Older than the retention and two margins: one for the gap rule, one for a
		// commit of partition 0 landing up to the commit window after that batch.
		f.now = t0.Add(30*time.Minute + time.Hour + 11*time.Minute)
		f.run(t, retention.Job{})
		if start, hw, err := f.l.Bounds(ctx, "m", 0); err != nil || start != 2 || hw != 2 {
			t.Fatalf("partition 0 with no entries under an older batch elsewhere: bounds [%d, %d) (%v), want [2, 2)", start, hw, err)
		}
	})
}

// TestFreshGapKept: an unmaterialised commit at the log start whose successors are not
// expired keeps the log start where it is.
func TestFreshGapKept(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		f := newFixture(t, s)
		f.append(t, 2)
		if err := s.Meta.DeleteIndexEntry(context.Background(), f.id(t), 0, 0); err != nil {
			t.Fatal(err)
		}
		f.now = t0.Add(10 * time.Minute)
		if st := f.run(t, retention.Job{}); st.PartitionsMoved != 0 {
			t.Fatalf("a fresh gap moved the log start: %+v", st)
		}
		if start, _ := f.bounds(t); start != 0 {
			t.Fatalf("log start %d, want 0", start)
		}
	})
}

// TestGapNotPassedUntilItsAgeIsProven (issue 18 item 10): an entry's time is its
// object's name time, and a commit may land up to the commit window later, so the
// commit in a gap before a just-expired entry may be a newer, live one (its appender
// stalled between PUT and commit, or its clock is behind). The gap holds the log start
// until the entry after it is older than the cutoff by the object margin.
func TestGapNotPassedUntilItsAgeIsProven(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		f := newFixture(t, s)
		f.append(t, 2)
		// Offset 0's commit is not materialised (its entry is missing).
		if err := s.Meta.DeleteIndexEntry(context.Background(), f.id(t), 0, 0); err != nil {
			t.Fatal(err)
		}
		job := retention.Job{ObjectMargin: 5 * time.Minute}
		f.now = t0.Add(time.Hour + 30*time.Second) // entry 1 expired 30 s ago
		if st := f.run(t, job); st.PartitionsMoved != 0 {
			t.Fatalf("a gap of unproven age was passed: %+v", st)
		}
		if start, _ := f.bounds(t); start != 0 {
			t.Fatalf("log start %d, want 0 (the gap's commit may be live)", start)
		}
		f.now = t0.Add(time.Hour + 5*time.Minute) // proven: entry 1 is past cutoff + margin
		f.run(t, job)
		if start, hw := f.bounds(t); start != 2 || hw != 2 {
			t.Fatalf("bounds [%d, %d) once the gap's age is proven, want [2, 2)", start, hw)
		}
	})
}

// TestNewestCommitProvesGapOnlyPastMargin (issue 18 item 10): with no entry left, the
// newest commit's time proves the offsets below it expired only past the margin too.
func TestNewestCommitProvesGapOnlyPastMargin(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		f := newFixture(t, s)
		f.append(t, 1)
		if err := s.Meta.DeleteIndexEntry(context.Background(), f.id(t), 0, 0); err != nil {
			t.Fatal(err)
		}
		job := retention.Job{ObjectMargin: 5 * time.Minute}
		f.now = t0.Add(time.Hour + 30*time.Second)
		if st := f.run(t, job); st.PartitionsMoved != 0 {
			t.Fatalf("offsets of unproven age passed on the newest commit's time: %+v", st)
		}
		f.now = t0.Add(time.Hour + 5*time.Minute)
		f.run(t, job)
		if start, _ := f.bounds(t); start != 1 {
			t.Fatalf("log start %d once proven, want 1", start)
		}
	})
}

// failingDeletes fails index deletions, as a throttled table would.
type failingDeletes struct{ store.MetaStore }

func (failingDeletes) DeleteIndexEntry(context.Context, string, int32, int64) error {
	return fmt.Errorf("injected: %w", store.ErrUnavailable)
}

func (failingDeletes) DeleteIndexRange(context.Context, string, int32, int64) (int, error) {
	return 0, fmt.Errorf("injected: %w", store.ErrUnavailable)
}

// TestFailedPassKeepsObjects: a pass that could not finish a topic's partitions reports
// the error and deletes none of that topic's objects; the next pass deletes them. (The
// log start had moved before the failure, so the entries below it are left to their
// TTL; no reader reaches them.)
func TestFailedPassKeepsObjects(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		f := newFixture(t, s)
		f.append(t, 2)
		f.now = t0.Add(2 * time.Hour)
		job := retention.Job{Meta: failingDeletes{s.Meta}, Objects: s.Objects, Clock: func() time.Time { return f.now }}
		_, err := job.Run(context.Background())
		if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "r/0") {
			t.Fatalf("failed pass = %v, want the partition's unavailable error", err)
		}
		if n := f.objects(t); n != 2 {
			t.Fatalf("%d objects after a failed pass, want 2 kept", n)
		}
		if start, _ := f.bounds(t); start != 2 {
			t.Fatalf("log start %d after the failed pass, want 2", start)
		}
		if st := f.run(t, retention.Job{}); st.ObjectsDeleted != 2 {
			t.Fatalf("next pass %+v, want the 2 objects deleted", st)
		}
	})
}

// countingDeletes counts the index deletions a pass makes.
type countingDeletes struct {
	store.MetaStore
	single, ranges int
}

func (c *countingDeletes) DeleteIndexEntry(ctx context.Context, topic string, partition int32, base int64) error {
	c.single++
	return c.MetaStore.DeleteIndexEntry(ctx, topic, partition, base)
}

func (c *countingDeletes) DeleteIndexRange(ctx context.Context, topic string, partition int32, below int64) (int, error) {
	c.ranges++
	return c.MetaStore.DeleteIndexRange(ctx, topic, partition, below)
}

// TestExpiredEntriesGoInOneRangeDelete (issue 18 item 15): a pass deletes a partition's
// expired entries with one range delete, not one delete per entry, keeps the entries
// at and after the new log start, and a pass with nothing expired deletes nothing.
func TestExpiredEntriesGoInOneRangeDelete(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s)
		f.append(t, 30)
		f.now = t0.Add(30 * time.Minute)
		f.append(t, 2) // fresh: kept
		f.now = t0.Add(70 * time.Minute)
		meta := &countingDeletes{MetaStore: s.Meta}
		job := retention.Job{Meta: meta, Objects: s.Objects, Clock: func() time.Time { return f.now }}
		st, err := job.Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if meta.single != 0 || meta.ranges != 1 || st.EntriesDeleted != 30 {
			t.Fatalf("pass made %d single and %d range deletes, %d entries deleted; want 0, 1, 30",
				meta.single, meta.ranges, st.EntriesDeleted)
		}
		if start, hw := f.bounds(t); start != 30 || hw != 32 {
			t.Fatalf("bounds [%d, %d), want [30, 32)", start, hw)
		}
		topic, err := s.Meta.GetTopic(ctx, "r")
		if err != nil {
			t.Fatal(err)
		}
		es, err := s.Meta.IndexEntries(ctx, topic.ID(), 0, 0, 100)
		if err != nil || len(es) != 2 || es[0].BaseOffset != 30 || es[1].BaseOffset != 31 {
			t.Fatalf("entries left = %+v, %v; want those at 30 and 31", es, err)
		}
		meta.ranges = 0
		if _, err := job.Run(ctx); err != nil || meta.ranges != 0 {
			t.Fatalf("a pass with nothing expired made %d range deletes (%v), want 0", meta.ranges, err)
		}
	})
}
