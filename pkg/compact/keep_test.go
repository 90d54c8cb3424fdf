package compact_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/compact"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
)

// newRetainingFixture is newFixture on a log with a deployment's maximum retention, so
// entries of topics that delete by time carry an expiry, as on AWS.
func newRetainingFixture(t testing.TB, s backendtest.Stores) *fixture {
	t.Helper()
	f := newFixture(t, s)
	l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta, Clock: f.clock.Now, GapWait: time.Millisecond,
		Topics: log.TopicDefaults{MaxRetention: 7 * 24 * time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	f.log = l
	return f
}

// entriesOf reads every index entry of the topic, all partitions.
func (f *fixture) entriesOf(tp store.Topic) []store.IndexEntry {
	f.t.Helper()
	var out []store.IndexEntry
	for p := int32(0); p < tp.Partitions; p++ {
		es, err := f.s.Meta.IndexEntries(context.Background(), tp.ID(), p, 0, 1000)
		if err != nil {
			f.t.Fatal(err)
		}
		out = append(out, es...)
	}
	return out
}

// marks counts the topic's entries with an expiry and, on a backend that keeps object
// marks (S3's tags), the distinct objects its entries refer to that are Expiring.
func (f *fixture) marks(tp store.Topic) (expiringEntries, expiringObjects int) {
	f.t.Helper()
	r, reads := f.s.Objects.(store.ExpiryReader)
	seen := map[string]bool{}
	for _, e := range f.entriesOf(tp) {
		if !e.ExpiresAt.IsZero() {
			expiringEntries++
		}
		if !reads || e.Duplicate || seen[e.ObjectKey] {
			continue
		}
		seen[e.ObjectKey] = true
		m, err := r.ObjectExpiry(context.Background(), e.ObjectKey)
		if err != nil {
			f.t.Fatalf("ObjectExpiry %s: %v", e.ObjectKey, err)
		}
		if m == store.Expiring {
			expiringObjects++
		}
	}
	return expiringEntries, expiringObjects
}

// TestObjectsMarkedByPolicy: the objects of topics that delete by time (delete,
// compact,delete) are Expiring, the lifecycle backstop's to take, and their entries
// carry an expiry; a compact-only topic's objects and entries carry neither, nor do a
// delete topic's on a log without a maximum retention, and a compaction rewrite of a
// compact-only topic stays Kept.
func TestObjectsMarkedByPolicy(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		f := newRetainingFixture(t, s)
		_, reads := s.Objects.(store.ExpiryReader)
		ctx := context.Background()
		for _, c := range []struct {
			name     string
			policy   store.CleanupPolicy
			expiring bool
		}{{"marked-delete", store.CleanupDelete, true}, {"marked-compact-delete", store.CleanupCompactDelete, true}, {"marked-compact", store.CleanupCompact, false}} {
			tp, err := f.log.CreateTopicWith(ctx, c.name, log.TopicSpec{Partitions: 1, Cleanup: store.TopicCleanup{Cleanup: c.policy}})
			if err != nil {
				t.Fatal(err)
			}
			f.put(tp, 0, "a=1", "b=1")
			f.put(tp, 0, "a=2")
			entries, objects := f.marks(tp)
			wantEntries, wantObjects := 0, 0
			if c.expiring {
				wantEntries = 2
				if reads {
					wantObjects = 2
				}
			}
			if entries != wantEntries || objects != wantObjects {
				t.Errorf("%s: %d expiring entries and %d Expiring objects, want %d and %d", c.policy, entries, objects, wantEntries, wantObjects)
			}
		}
		// Without a maximum retention entries get no expiry, so no object is Expiring:
		// the migration finds Expiring objects by their entries' expiries.
		unbounded := newFixture(t, s)
		tp, err := unbounded.log.CreateTopicWith(ctx, "marked-unbounded", log.TopicSpec{Partitions: 1})
		if err != nil {
			t.Fatal(err)
		}
		unbounded.put(tp, 0, "a=1")
		if entries, objects := unbounded.marks(tp); entries != 0 || objects != 0 {
			t.Errorf("a delete topic without a maximum retention: %d expiring entries and %d Expiring objects, want none", entries, objects)
		}
		tp = f.topic("marked-rewrite", 1, nil)
		f.put(tp, 0, "a=1")
		f.put(tp, 0, "a=2")
		f.clock.Advance(compact.HeadGuard + time.Second)
		if st := f.pass(tp); st.Rewrites == 0 {
			t.Fatalf("no rewrite: %+v", st)
		}
		if entries, objects := f.marks(tp); entries != 0 || objects != 0 {
			t.Errorf("after a rewrite of a compact topic: %d expiring entries and %d Expiring objects, want none", entries, objects)
		}
	})
}

// TestAlterToCompactKeepsEntriesAndObjects: a delete topic's entries carry expiries and
// its objects are Expiring; altered to compact, a pass stopped after its first cleared
// entry leaves the rest expiring, and the next pass takes every entry's expiry and every
// referenced object's mark off (a shared object, holding blocks of both partitions,
// once per partition), the records reading as before, and a pass after it does nothing.
func TestAlterToCompactKeepsEntriesAndObjects(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		f := newRetainingFixture(t, s)
		ctx := context.Background()
		_, reads := s.Objects.(store.ExpiryReader)
		tp, err := f.log.CreateTopicWith(ctx, "altered", log.TopicSpec{Partitions: 2})
		if err != nil {
			t.Fatal(err)
		}
		f.put(tp, 0, "a=1", "b=1")
		f.put(tp, 1, "c=1")
		p0, p1 := int32(0), int32(1)
		if _, err := f.log.Append(ctx, tp.Name, []log.Record{{Key: []byte("a"), Value: []byte("2"), Partition: &p0},
			{Key: []byte("c"), Value: []byte("2"), Partition: &p1}}, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		before0, before1 := kv(f.read(tp, 0)), kv(f.read(tp, 1))
		entries, objects := f.marks(tp)
		wantObjects := 0
		if reads {
			wantObjects = 3
		}
		if entries != 4 || objects != wantObjects {
			t.Fatalf("delete topic: %d expiring entries and %d Expiring objects, want 4 and %d", entries, objects, wantObjects)
		}

		compactOnly := store.CleanupCompact
		tp, err = f.log.AlterCleanup(ctx, tp.Name, log.CleanupChange{Cleanup: &compactOnly})
		if err != nil {
			t.Fatal(err)
		}
		clears := 0
		f.job.Hook = func(step string) error {
			if step == compact.StepClear {
				if clears++; clears == 1 {
					return errors.New("crash")
				}
			}
			return nil
		}
		var st compact.Stats
		if err := f.job.Topic(ctx, tp, &st); !errors.Is(err, compact.ErrStopped) {
			t.Fatalf("stopped pass: %v, want ErrStopped", err)
		}
		if entries, _ := f.marks(tp); entries != 3 {
			t.Fatalf("after a pass stopped at its first clear: %d expiring entries, want 3", entries)
		}
		f.job.Hook = nil
		st = f.pass(tp)
		if entries, objects := f.marks(tp); entries != 0 || objects != 0 {
			t.Fatalf("after the next pass: %d expiring entries and %d Expiring objects, want none", entries, objects)
		}
		if st.EntriesKept != 3 || st.Keeps != 3 {
			t.Errorf("the finishing pass cleared %d entries with %d keeps, want 3 and 3 (the shared object once per partition): %+v", st.EntriesKept, st.Keeps, st)
		}
		if after0, after1 := kv(f.read(tp, 0)), kv(f.read(tp, 1)); after0 != before0 || after1 != before1 {
			t.Errorf("records after the migration %q %q, want %q %q", after0, after1, before0, before1)
		}
		if st := f.pass(tp); st.Keeps != 0 || st.ExpiryClears != 0 {
			t.Errorf("a pass after the migration made %d keeps and %d clears, want none", st.Keeps, st.ExpiryClears)
		}
	})
}

// TestKeepResumesAfterAStopAtAnyStep: a migration pass stopped after any of its keeps
// and clears, as a crash there would, is finished by the next pass: no entry left with
// an expiry, no referenced object Expiring, every record as appended.
func TestKeepResumesAfterAStopAtAnyStep(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		f := newRetainingFixture(t, s)
		ctx := context.Background()
		compactOnly := store.CleanupCompact
		for stop := 1; ; stop++ {
			tp, err := f.log.CreateTopicWith(ctx, fmt.Sprintf("resumed-%d", stop), log.TopicSpec{Partitions: 2})
			if err != nil {
				t.Fatal(err)
			}
			f.put(tp, 0, "a=1")
			p0, p1 := int32(0), int32(1)
			if _, err := f.log.Append(ctx, tp.Name, []log.Record{{Key: []byte("a"), Value: []byte("2"), Partition: &p0},
				{Key: []byte("c"), Value: []byte("1"), Partition: &p1}}, log.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
			before0, before1 := kv(f.read(tp, 0)), kv(f.read(tp, 1))
			if tp, err = f.log.AlterCleanup(ctx, tp.Name, log.CleanupChange{Cleanup: &compactOnly}); err != nil {
				t.Fatal(err)
			}
			steps, stopped := 0, ""
			f.job.Hook = func(step string) error {
				if step != compact.StepKeep && step != compact.StepClear {
					return nil
				}
				if steps++; steps == stop {
					stopped = step
					return errors.New("crash")
				}
				return nil
			}
			var st compact.Stats
			err = f.job.Topic(ctx, tp, &st)
			f.job.Hook = nil
			if stopped == "" {
				if err != nil || stop < 4 {
					t.Fatalf("an unstopped pass after %d steps: %v", steps, err)
				}
				return // every step has been a stop point
			}
			if !errors.Is(err, compact.ErrStopped) {
				t.Fatalf("stop %d (%s): %v, want ErrStopped", stop, stopped, err)
			}
			f.pass(tp)
			if entries, objects := f.marks(tp); entries != 0 || objects != 0 {
				t.Fatalf("stop %d (%s), then a pass: %d expiring entries and %d Expiring objects, want none", stop, stopped, entries, objects)
			}
			if after0, after1 := kv(f.read(tp, 0)), kv(f.read(tp, 1)); after0 != before0 || after1 != before1 {
				t.Fatalf("stop %d (%s): records %q %q, want %q %q", stop, stopped, after0, after1, before0, before1)
			}
		}
	})
}
