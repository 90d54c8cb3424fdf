package compact_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/internal/clocktest"
	"github.com/stratalog/strata/pkg/compact"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/store"
)

// fixture is a log and a compaction job over one backend's stores, on one test clock.
type fixture struct {
	t     testing.TB
	s     backendtest.Stores
	clock *clocktest.Clock
	log   *log.Log
	job   *compact.Job
}

func newFixture(t testing.TB, s backendtest.Stores) *fixture {
	t.Helper()
	clock := clocktest.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta, Clock: clock.Now, GapWait: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	job := &compact.Job{Meta: s.Meta.(compact.Meta), Objects: s.Objects, Clock: clock.Now, MinDirtyRatio: -1}
	return &fixture{t: t, s: s, clock: clock, log: l, job: job}
}

// topic creates a compacted topic, its settings as set changes them.
func (f *fixture) topic(name string, partitions int32, set func(*store.Topic)) store.Topic {
	f.t.Helper()
	want := store.Topic{Cleanup: store.CleanupCompact}
	if set != nil {
		set(&want)
	}
	tp, err := f.log.CreateTopicWith(context.Background(), name, log.TopicSpec{Partitions: partitions, Cleanup: want.CleanupSettings()})
	if err != nil {
		f.t.Fatal(err)
	}
	return tp
}

// put appends one record per key of kv ("k=v", "k=" for a tombstone) to partition p, in
// one append.
func (f *fixture) put(tp store.Topic, p int32, kv ...string) {
	f.t.Helper()
	recs := make([]log.Record, len(kv))
	for i, s := range kv {
		k, v, _ := strings.Cut(s, "=")
		recs[i] = log.Record{Key: []byte(k), Partition: &p}
		if v != "" {
			recs[i].Value = []byte(v)
		}
	}
	if _, err := f.log.Append(context.Background(), tp.Name, recs, log.AppendOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) pass(tp store.Topic) compact.Stats {
	f.t.Helper()
	var st compact.Stats
	if err := f.job.Topic(context.Background(), tp, &st); err != nil {
		f.t.Fatal(err)
	}
	return st
}

// read polls partition p from offset 0 to the high watermark, checking offsets increase.
func (f *fixture) read(tp store.Topic, p int32) []segment.Record {
	f.t.Helper()
	var out []segment.Record
	off := int64(0)
	for {
		res, err := f.log.Poll(context.Background(), tp.Name, p, off, log.PollOptions{MaxRecords: 7})
		if err != nil {
			f.t.Fatalf("poll %d: %v", off, err)
		}
		for _, r := range res.Records {
			if r.Offset < off || (len(out) > 0 && r.Offset <= out[len(out)-1].Offset) {
				f.t.Fatalf("offset %d after %d (poll from %d)", r.Offset, len(out), off)
			}
		}
		out = append(out, res.Records...)
		if res.NextOffset >= res.HighWatermark {
			return out
		}
		if res.NextOffset == off {
			f.t.Fatalf("poll from %d made no progress below %d", off, res.HighWatermark)
		}
		off = res.NextOffset
	}
}

// kv renders records as "offset:k=v" ("k=" for a tombstone).
func kv(recs []segment.Record) string {
	parts := make([]string, len(recs))
	for i, r := range recs {
		parts[i] = fmt.Sprintf("%d:%s=%s", r.Offset, r.Key, r.Value)
	}
	return strings.Join(parts, " ")
}

// objects lists the topic's stored keys (segment objects and markers).
func (f *fixture) objects(tp store.Topic) []string {
	f.t.Helper()
	var out []string
	err := f.s.Objects.List(context.Background(), segment.ObjectPrefix(tp.Name, tp.Incarnation), func(o store.ObjectInfo) error {
		out = append(out, o.Key)
		return nil
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

// TestCompactKeepsLatestPerKey: three rounds over four keys become the latest record of
// each key at its own offset, the rest holes; the high watermark and every offset stay;
// once the reader margin passes, the replaced objects are deleted and the log reads the
// same.
func TestCompactKeepsLatestPerKey(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		f := newFixture(t, s)
		tp := f.topic("latest", 1, nil)
		f.put(tp, 0, "a=1", "b=1", "c=1")
		f.put(tp, 0, "a=2", "d=1")
		f.put(tp, 0, "b=2", "a=3")
		before := len(f.objects(tp))
		f.clock.Advance(compact.HeadGuard + time.Second)
		st := f.pass(tp)
		const want = "2:c=1 4:d=1 5:b=2 6:a=3"
		if got := kv(f.read(tp, 0)); got != want || st.RecordsRemoved != 3 {
			t.Fatalf("after a pass: %s (removed %d), want %s (3)", got, st.RecordsRemoved, want)
		}
		f.clock.Advance(6 * time.Minute)
		st = f.pass(tp)
		if got := kv(f.read(tp, 0)); got != want {
			t.Fatalf("after the collecting pass: %s, want %s", got, want)
		}
		if after := f.objects(tp); st.ObjectsDeleted != before || len(after) != 1 {
			t.Fatalf("collect deleted %d objects, %v left; want the %d appended gone and the rewrite's one left", st.ObjectsDeleted, after, before)
		}
		res, err := f.log.Poll(context.Background(), tp.Name, 0, 3, log.PollOptions{})
		if err != nil || len(res.Records) == 0 || res.Records[0].Offset != 4 {
			t.Fatalf("poll from a removed offset: %+v, %v; want the next survivor at 4", res, err)
		}
	})
}

// TestTombstonesKeptForDeleteRetention: a tombstone hides its key's older records at
// once, is read for delete.retention after its append, and then goes with the key.
func TestTombstonesKeptForDeleteRetention(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		f := newFixture(t, s)
		tp := f.topic("tomb", 1, func(tp *store.Topic) { tp.DeleteRetention = time.Hour })
		f.put(tp, 0, "a=1", "b=1")
		f.put(tp, 0, "a=")
		f.clock.Advance(compact.HeadGuard + time.Second)
		f.pass(tp)
		if got, want := kv(f.read(tp, 0)), "1:b=1 2:a="; got != want {
			t.Fatalf("within delete.retention: %s, want %s", got, want)
		}
		f.clock.Advance(time.Hour)
		f.pass(tp)
		if got, want := kv(f.read(tp, 0)), "1:b=1"; got != want {
			t.Fatalf("past delete.retention: %s, want %s", got, want)
		}
		ks := s.Meta.(store.KeyIndexStore)
		if _, err := ks.GetKey(context.Background(), tp.ID(), 0, []byte("a")); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the removed tombstone's key entry: %v, want it deleted", err)
		}
		if got, err := f.log.Latest(context.Background(), tp.Name, []byte("b"), nil); err != nil || string(got.Record.Value) != "1" {
			t.Fatalf("Latest(b) after compaction: %+v, %v", got, err)
		}
	})
}

// TestHeadNewerThanMinLagKept: records appended less than min.compaction.lag ago are
// never compacted, even when overwritten; once older they are.
func TestHeadNewerThanMinLagKept(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		f := newFixture(t, s)
		tp := f.topic("minlag", 1, func(tp *store.Topic) { tp.MinCompactionLag = time.Hour })
		f.put(tp, 0, "a=1")
		f.clock.Advance(30 * time.Minute)
		f.put(tp, 0, "a=2")
		f.clock.Advance(29 * time.Minute)
		f.pass(tp)
		if got, want := kv(f.read(tp, 0)), "0:a=1 1:a=2"; got != want {
			t.Fatalf("a=1 appended 59 min ago: %s, want %s", got, want)
		}
		f.clock.Advance(2 * time.Minute)
		f.pass(tp)
		if got, want := kv(f.read(tp, 0)), "1:a=2"; got != want {
			t.Fatalf("past the lag: %s, want %s", got, want)
		}
	})
}

// TestMaxLagForcesCompaction: below the dirty ratio a pass leaves the partition alone,
// until an overwrite is older than max.compaction.lag.
func TestMaxLagForcesCompaction(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		f := newFixture(t, s)
		f.job.MinDirtyRatio = 0.9
		tp := f.topic("maxlag", 1, func(tp *store.Topic) { tp.MaxCompactionLag = time.Hour })
		f.put(tp, 0, "a=1", "b=1", "c=1", "d=1")
		f.put(tp, 0, "a=2")
		f.clock.Advance(compact.HeadGuard + time.Second)
		f.pass(tp)
		if got := len(f.read(tp, 0)); got != 5 {
			t.Fatalf("below the ratio, within the lag: %d records, want all 5", got)
		}
		f.clock.Advance(time.Hour)
		f.pass(tp)
		if got, want := kv(f.read(tp, 0)), "1:b=1 2:c=1 3:d=1 4:a=2"; got != want {
			t.Fatalf("past max.compaction.lag: %s, want %s", got, want)
		}
	})
}

// TestSharedObjectCompactedPerPartition: an append to two partitions writes one object;
// compacting one partition rewrites its blocks out and leaves the object, which the
// other partition still reads, until that one is compacted too.
func TestSharedObjectCompactedPerPartition(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		f := newFixture(t, s)
		tp := f.topic("shared", 2, nil)
		p0, p1 := int32(0), int32(1)
		rec := func(p *int32, k, v string) log.Record {
			return log.Record{Key: []byte(k), Value: []byte(v), Partition: p}
		}
		ctx := context.Background()
		if _, err := f.log.Append(ctx, tp.Name, []log.Record{rec(&p0, "a", "1"), rec(&p1, "x", "1")}, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		f.put(tp, 0, "a=2")
		f.clock.Advance(compact.HeadGuard + time.Second)
		f.pass(tp)
		f.clock.Advance(6 * time.Minute)
		f.pass(tp) // collects: the shared object is still partition 1's
		if got, want := kv(f.read(tp, 1)), "0:x=1"; got != want {
			t.Fatalf("partition 1 after partition 0's compaction: %s, want %s", got, want)
		}
		if got, want := kv(f.read(tp, 0)), "1:a=2"; got != want {
			t.Fatalf("partition 0: %s, want %s", got, want)
		}
		f.put(tp, 1, "x=2")
		f.clock.Advance(compact.HeadGuard + time.Second)
		f.pass(tp)
		f.clock.Advance(6 * time.Minute)
		f.pass(tp)
		if got, want := kv(f.read(tp, 1)), "1:x=2"; got != want {
			t.Fatalf("partition 1 compacted: %s, want %s", got, want)
		}
		if objs := f.objects(tp); len(objs) != 2 {
			t.Fatalf("objects left: %v, want the two partitions' rewrites", objs)
		}
	})
}

var errCrash = errors.New("crash")

// TestCrashPoints stops a pass after each of its steps, then runs passes to the end:
// every reader sees the latest record of every key throughout, no object an entry refers
// to is ever deleted, and once the reader margin has passed nothing is left but the
// objects the index refers to.
func TestCrashPoints(t *testing.T) {
	steps := []string{compact.StepMarker, compact.StepObject, compact.StepSwap, compact.StepCollect, compact.StepDone}
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		for _, step := range steps {
			t.Run(step, func(t *testing.T) {
				f := newFixture(t, s)
				tp := f.topic("crash-"+step, 1, nil)
				f.put(tp, 0, "a=1", "b=1")
				f.put(tp, 0, "a=2", "c=1")
				f.clock.Advance(compact.HeadGuard + time.Second)
				if step == compact.StepCollect || step == compact.StepDone {
					f.pass(tp)
					f.clock.Advance(6 * time.Minute)
				}
				f.job.Hook = func(got string) error {
					if got == step {
						return errCrash
					}
					return nil
				}
				var st compact.Stats
				if err := f.job.Topic(context.Background(), tp, &st); !errors.Is(err, errCrash) {
					t.Fatalf("pass stopped at %s: %v", step, err)
				}
				f.job.Hook = nil
				check := func(when string) {
					got := kv(f.read(tp, 0))
					if got != "1:b=1 2:a=2 3:c=1" && got != "0:a=1 1:b=1 2:a=2 3:c=1" {
						t.Fatalf("%s: %s", when, got)
					}
				}
				check("after the crash")
				f.pass(tp)
				check("after a pass")
				f.clock.Advance(6 * time.Minute)
				f.pass(tp)
				f.clock.Advance(6 * time.Minute)
				f.pass(tp)
				if got := kv(f.read(tp, 0)); got != "1:b=1 2:a=2 3:c=1" {
					t.Fatalf("in the end: %s", got)
				}
				if objs := f.objects(tp); len(objs) != 1 {
					t.Fatalf("in the end %d objects %v, want only the rewrite's", len(objs), objs)
				}
			})
		}
	})
}

// racingObjects runs race once, before the first GetRange it serves after arm is set.
type racingObjects struct {
	store.ObjectStore
	arm  bool
	race func()
}

func (r *racingObjects) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if r.arm {
		r.arm = false
		r.race()
	}
	return r.ObjectStore.GetRange(ctx, key, off, n)
}

// TestReaderHoldingOldEntriesRereads: a poll that read the index before a compaction
// swapped it, and finds the objects it was pointed at deleted, reads the new layout and
// answers the survivors: a reader never sees a torn state nor a false corruption — also
// when it reads a replica that still holds the old entries (EventualReads): the reread
// is strongly consistent.
func TestReaderHoldingOldEntriesRereads(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		for _, eventual := range []bool{false, true} {
			t.Run(fmt.Sprintf("eventual=%v", eventual), func(t *testing.T) {
				f := newFixture(t, s)
				ro := &racingObjects{ObjectStore: s.Objects}
				meta := &backendtest.LaggingReplica{MetaStore: s.Meta, IndexOnly: true}
				keyed := struct {
					*backendtest.LaggingReplica
					store.KeyIndexStore
				}{meta, s.Meta.(store.KeyIndexStore)}
				l, err := log.New(log.Config{Objects: ro, Meta: keyed, Clock: f.clock.Now, GapWait: time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				f.log = l
				tp := f.topic(fmt.Sprintf("reread-%v", eventual), 1, nil)
				f.put(tp, 0, "a=1", "b=1")
				f.put(tp, 0, "a=2")
				meta.Freeze(t, tp.ID(), 0) // the replica keeps the entries before the pass
				f.clock.Advance(compact.HeadGuard + time.Second)
				f.job.ReaderMargin = time.Second
				f.job.Hook = func(step string) error {
					if step == compact.StepSwap {
						f.clock.Advance(2 * time.Second)
					}
					return nil
				}
				ro.race = func() {
					st := f.pass(tp)
					if st.ObjectsDeleted == 0 {
						t.Errorf("the racing pass deleted nothing: %+v", st)
					}
				}
				ro.arm = true
				res, err := l.Poll(context.Background(), tp.Name, 0, 0, log.PollOptions{EventualReads: eventual})
				if err != nil {
					t.Fatalf("poll across a compaction: %v", err)
				}
				if got, want := kv(res.Records), "1:b=1 2:a=2"; got != want {
					t.Fatalf("poll across a compaction: %s, want %s", got, want)
				}
			})
		}
	})
}
