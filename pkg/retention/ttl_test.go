package retention_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/retention"
	"github.com/stratalog/strata/pkg/store"
)

// TestExpiredEntriesLeftToTTL: on a deployment with a maximum retention every index
// entry carries an expiry of that maximum plus a day, and where the store's own TTL
// deletes entries (DynamoDB) the pass advances the log start past the expired ones and
// leaves them to it — no paid delete — while the embedded backend's pass deletes them
// as before. Either way a record past retention is gone to readers, one within it is
// kept, and one a lagging group pins past retention is kept.
func TestExpiredEntriesLeftToTTL(t *testing.T) {
	const maxRetention = 48 * time.Hour
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		ts, ttl := s.Meta.(store.IndexTTLStore)
		ttl = ttl && ts.IndexEntriesExpire()
		if ttl != (s.Name == "aws") {
			t.Fatalf("%s backend: the index TTL deletes entries = %v", s.Name, ttl)
		}
		f := &fixture{s: s, now: t0}
		var err error
		if f.l, err = log.New(log.Config{Objects: s.Objects, Meta: s.Meta, Clock: func() time.Time { return f.now },
			Topics: log.TopicDefaults{MaxRetention: maxRetention}}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.l.CreateTopicWith(ctx, "r", log.TopicSpec{Partitions: 1, Retention: time.Hour, RetentionPin: time.Hour}); err != nil {
			t.Fatal(err)
		}
		f.append(t, 3) // offsets 0–2 at t0
		f.now = t0.Add(40 * time.Minute)
		f.append(t, 2) // offsets 3–4 at t0+40m
		coord := group.New(s.Meta, f.l, func() time.Time { return f.now })
		l, err := coord.Acquire(ctx, "billing", "r", 0, "m", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := coord.Commit(ctx, "billing", "r", 0, "m", l.Generation, 3); err != nil {
			t.Fatal(err)
		}
		if err := coord.Release(ctx, "billing", "r", 0, "m", l.Generation); err != nil {
			t.Fatal(err)
		}
		job := retention.Job{ObjectMargin: 30 * time.Second}

		f.now = t0.Add(61 * time.Minute) // 0–2 past retention, the group past them
		st := f.run(t, job)
		if start, _ := f.bounds(t); start != 3 {
			t.Fatalf("log start %d, want 3", start)
		}
		wantDeleted, wantLeft := 3, 0
		if ttl {
			wantDeleted, wantLeft = 0, 3
		}
		if st.RecordsExpired != 3 || st.EntriesDeleted != wantDeleted || st.EntriesLeftToTTL != wantLeft || st.ObjectsDeleted != 3 {
			t.Fatalf("stats %+v, want 3 records expired, %d entries deleted, %d left to the TTL, 3 objects deleted", st, wantDeleted, wantLeft)
		}
		es, err := s.Meta.IndexEntries(ctx, f.id(t), 0, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		below := 0
		for _, e := range es {
			if want := e.AppendedAt.Add(maxRetention + 24*time.Hour); !e.ExpiresAt.Equal(want) {
				t.Errorf("entry @%d expires %s, want %s (the maximum retention + a day)", e.BaseOffset, e.ExpiresAt, want)
			}
			if e.End() <= 3 {
				below++
			}
		}
		if below != wantLeft {
			t.Fatalf("%d entries below the log start, want %d", below, wantLeft)
		}
		var oor *log.OffsetOutOfRangeError
		if _, err := f.l.Poll(ctx, "r", 0, 0, log.PollOptions{MaxRecords: 10}); !errors.As(err, &oor) {
			t.Fatalf("poll below the log start: %v, want out of range", err)
		}

		// A second pass reads the entries from the log start on: nothing more to do,
		// the entries left below it are not deleted either.
		if st := f.run(t, job); st != (retention.Stats{}) {
			t.Fatalf("second pass %+v, want nothing", st)
		}

		f.now = t0.Add(101 * time.Minute) // 3–4 past retention, pinned by the group at 3
		f.append(t, 1)                    // offset 5, within retention
		st = f.run(t, job)
		if start, _ := f.bounds(t); start != 3 || st.RecordsPinned != 2 || st.EntriesDeleted != 0 || st.EntriesLeftToTTL != 0 {
			t.Fatalf("pinned: log start %d, stats %+v; want 3, 2 records pinned, no entry touched", start, st)
		}
		res, err := f.l.Poll(ctx, "r", 0, 3, log.PollOptions{MaxRecords: 10})
		if err != nil || len(res.Records) != 3 {
			t.Fatalf("poll at the pinned log start: %d records, %v; want offsets 3–5", len(res.Records), err)
		}
	})
}

// TestRunTopicPassesOneTopic: a pass fanned out per topic (RunTopic of each, then
// RunDeleted) does what Run does: each RunTopic expires its own topic's records and
// objects and touches no other topic.
func TestRunTopicPassesOneTopic(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s) // topic "r", retention 1h
		if _, err := f.l.CreateTopic(ctx, "q", 1, time.Hour); err != nil {
			t.Fatal(err)
		}
		f.append(t, 2)
		if _, err := f.l.Append(ctx, "q", []log.Record{{Value: []byte("x")}}, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		f.now = t0.Add(2 * time.Hour)
		job := retention.Job{Meta: s.Meta, Objects: s.Objects, Clock: func() time.Time { return f.now }, ObjectMargin: 30 * time.Second}
		st, err := job.RunTopic(ctx, "r")
		if err != nil || st.RecordsExpired != 2 || st.ObjectsDeleted != 2 {
			t.Fatalf("RunTopic(r) = %+v, %v; want r's 2 records and 2 objects", st, err)
		}
		if start, _, err := f.l.Bounds(ctx, "q", 0); err != nil || start != 0 {
			t.Fatalf("q's log start %d, %v after r's pass, want 0", start, err)
		}
		if st, err := job.RunTopic(ctx, "q"); err != nil || st.RecordsExpired != 1 {
			t.Fatalf("RunTopic(q) = %+v, %v; want q's record", st, err)
		}
		if _, err := job.RunTopic(ctx, "missing"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("RunTopic of a missing topic: %v, want ErrNotFound", err)
		}
		if st, err := job.RunDeleted(ctx); err != nil || st != (retention.Stats{}) {
			t.Fatalf("RunDeleted with nothing deleted: %+v, %v", st, err)
		}
		if st, err := job.Run(ctx); err != nil || st != (retention.Stats{}) {
			t.Fatalf("a whole pass after the fanned-out one: %+v, %v; want nothing left", st, err)
		}
	})
}
