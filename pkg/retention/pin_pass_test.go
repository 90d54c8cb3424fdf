package retention_test

import (
	"context"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/retention"
)

// TestRetentionPinHoldsLaggingGroup: on topic "r" (retention 1h, pin cap 2h) a group
// stalled at offset 1 holds the log start there while its records are within
// retention + cap — their segment objects stay, the records stay readable and its time
// to data loss counts the cap —, past the cap the log start moves on record by record
// as without the pin (the group, now below it, pins on from the log start), and once the
// group is deleted nothing pins any more.
func TestRetentionPinHoldsLaggingGroup(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s)
		if _, err := f.l.SetRetentionPin(ctx, "r", 2*time.Hour); err != nil {
			t.Fatal(err)
		}
		f.append(t, 3) // offsets 0–2 at t0, one entry and object each
		f.now = t0.Add(30 * time.Minute)
		f.append(t, 2) // offsets 3–4 at t0+30m
		coord := group.New(s.Meta, f.l, func() time.Time { return f.now })
		l, err := coord.Acquire(ctx, "billing", "r", 0, "m", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := coord.Commit(ctx, "billing", "r", 0, "m", l.Generation, 1); err != nil {
			t.Fatal(err)
		}
		if err := coord.Release(ctx, "billing", "r", 0, "m", l.Generation); err != nil {
			t.Fatal(err)
		}
		job := retention.Job{ObjectMargin: 30 * time.Second}

		// Past retention (offsets 0–2 would expire), within the cap: held at 1.
		f.now = t0.Add(61 * time.Minute)
		st := f.run(t, job)
		if start, _ := f.bounds(t); start != 1 {
			t.Fatalf("within the cap: log start %d, want 1 (the group's position)", start)
		}
		if st.RecordsExpired != 1 || st.RecordsPinned != 2 || st.ObjectsDeleted != 0 {
			t.Fatalf("within the cap: stats %+v, want 1 expired, 2 pinned, no object deleted", st)
		}
		res, err := f.l.Poll(ctx, "r", 0, 1, log.PollOptions{MaxRecords: 10})
		if err != nil || len(res.Records) != 4 {
			t.Fatalf("poll at the pinned log start: %d records, %v; want offsets 1–4", len(res.Records), err)
		}
		info, err := coord.Describe(ctx, "billing")
		if err != nil || len(info.Partitions) != 1 || info.Partitions[0].DataLoss == nil {
			t.Fatalf("describe: %+v, %v", info, err)
		}
		if dl := info.Partitions[0].DataLoss; dl.TimeLeft != 2*time.Hour-time.Minute || dl.RecordsLost != 0 {
			t.Fatalf("time to data loss %+v, want retention + cap − 61m = 1h59m left, none lost", *dl)
		}

		// Past the cap for offsets 0–2, not for 3–4: the log start moves to 3, not 5.
		f.now = t0.Add(3*time.Hour + time.Minute)
		st = f.run(t, job)
		if start, _ := f.bounds(t); start != 3 {
			t.Fatalf("past the cap: log start %d, want 3", start)
		}
		if st.RecordsExpired != 2 || st.RecordsPinned != 2 || st.ObjectsDeleted != 3 {
			t.Fatalf("past the cap: stats %+v, want 2 expired, 2 pinned, the 3 objects of t0 deleted", st)
		}
		info, err = coord.Describe(ctx, "billing")
		if err != nil || info.Partitions[0].DataLoss == nil || info.Partitions[0].DataLoss.RecordsLost != 2 {
			t.Fatalf("describe past the cap: %+v, %v; want 2 records lost", info.Partitions, err)
		}
		// Below the log start now, the group still pins what it reads on from: offsets
		// 3–4, within the cap until t0+3h30m, as its time to data loss says.
		if dl := info.Partitions[0].DataLoss; dl.TimeLeft != 29*time.Minute {
			t.Fatalf("time to data loss past the cap %+v, want 29m (offset 3's append + 3h − now)", *dl)
		}
		f.now = f.now.Add(time.Minute)
		if st = f.run(t, job); st.RecordsExpired != 0 || st.RecordsPinned != 2 {
			t.Fatalf("a pass later: stats %+v, want nothing expired, 2 pinned", st)
		}
		if start, _ := f.bounds(t); start != 3 {
			t.Fatalf("a pass later: log start %d, want 3", start)
		}

		// The group deleted, nothing pins: the rest expires with retention.
		if err := coord.DeleteGroup(ctx, "billing"); err != nil {
			t.Fatal(err)
		}
		f.now = f.now.Add(time.Minute)
		st = f.run(t, job)
		if start, hw := f.bounds(t); start != 5 || hw != 5 {
			t.Fatalf("group deleted: bounds [%d, %d), want [5, 5)", start, hw)
		}
		if st.RecordsPinned != 0 || st.ObjectsDeleted != 2 {
			t.Fatalf("group deleted: stats %+v, want nothing pinned, 2 objects deleted", st)
		}
	})
}

// TestRetentionPinOff: without a cap a lagging group holds nothing (as before the pin).
func TestRetentionPinOff(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s)
		f.append(t, 3)
		coord := group.New(s.Meta, f.l, func() time.Time { return f.now })
		l, err := coord.Acquire(ctx, "billing", "r", 0, "m", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := coord.Commit(ctx, "billing", "r", 0, "m", l.Generation, 1); err != nil {
			t.Fatal(err)
		}
		f.now = t0.Add(61 * time.Minute)
		if st := f.run(t, retention.Job{ObjectMargin: 30 * time.Second}); st.RecordsExpired != 3 || st.RecordsPinned != 0 {
			t.Fatalf("stats %+v, want 3 expired, none pinned", st)
		}
	})
}

// TestRetentionPinKeepsSharedObjects: one append's segment object holds records of both
// partitions of a pinned topic; partition 1 has no group and expires, partition 0 is
// pinned by a group — the object stays, since a pinned record is in it.
func TestRetentionPinKeepsSharedObjects(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		now := t0
		l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta, Clock: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.CreateTopicWith(ctx, "two", log.TopicSpec{Partitions: 2, Retention: time.Hour, RetentionPin: 2 * time.Hour}); err != nil {
			t.Fatal(err)
		}
		p0, p1 := int32(0), int32(1)
		if _, err := l.Append(ctx, "two", []log.Record{{Value: []byte("a"), Partition: &p0}, {Value: []byte("b"), Partition: &p1}}, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		coord := group.New(s.Meta, l, func() time.Time { return now })
		lease, err := coord.Acquire(ctx, "billing", "two", 0, "m", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := coord.Commit(ctx, "billing", "two", 0, "m", lease.Generation, 0); err != nil {
			t.Fatal(err)
		}
		now = t0.Add(61 * time.Minute)
		job := retention.Job{Meta: s.Meta, Objects: s.Objects, ObjectMargin: 30 * time.Second, Clock: func() time.Time { return now }}
		st, err := job.Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.RecordsExpired != 1 || st.RecordsPinned != 1 || st.ObjectsDeleted != 0 {
			t.Fatalf("stats %+v, want partition 1's record expired, partition 0's pinned, no object deleted", st)
		}
		for p, want := range map[int32]int64{0: 0, 1: 1} {
			if start, _, err := l.Bounds(ctx, "two", p); err != nil || start != want {
				t.Fatalf("partition %d: log start %d, %v; want %d", p, start, err, want)
			}
		}
		if res, err := l.Poll(ctx, "two", 0, 0, log.PollOptions{MaxRecords: 10}); err != nil || len(res.Records) != 1 {
			t.Fatalf("poll of the pinned record: %d records, %v", len(res.Records), err)
		}
	})
}
