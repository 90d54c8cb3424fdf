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

// TestRaisedPinKeepsPinnedEntries: a pin cap raised by days after records were
// appended still holds them with their index entries. The entries' TTL covers the
// deployment's maximum retention, which every retention + cap fits, so no TTL (DynamoDB's,
// or the embedded sweep's) takes an entry under a pinned log start: the lagging group
// reads its records, and its time to data loss counts the new cap. Before, entries
// expired retention + the old cap + a day after their append, under the pinned start:
// the group stalled at the gap while its time to data loss read null and 0 records lost.
func TestRaisedPinKeepsPinnedEntries(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := &fixture{s: s, now: t0}
		var err error
		if f.l, err = log.New(log.Config{Objects: s.Objects, Meta: s.Meta, Clock: func() time.Time { return f.now },
			Topics: log.TopicDefaults{MaxRetention: 30 * 24 * time.Hour}}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.l.CreateTopicWith(ctx, "r", log.TopicSpec{Partitions: 1, Retention: time.Hour, RetentionPin: time.Hour}); err != nil {
			t.Fatal(err)
		}
		f.append(t, 3) // offsets 0–2 at t0
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
		if _, err := f.l.SetRetentionPin(ctx, "r", 5*24*time.Hour); err != nil {
			t.Fatal(err)
		}
		// Two days on: past retention + the old cap + a day, within the new cap.
		f.now = t0.Add(48 * time.Hour)
		es, err := s.Meta.IndexEntries(ctx, f.id(t), 0, 0, 10)
		if err != nil || len(es) != 3 {
			t.Fatalf("entries %v, %v", es, err)
		}
		for _, e := range es { // what a TTL takes by now
			if !e.ExpiresAt.IsZero() && !e.ExpiresAt.After(f.now) {
				if err := s.Meta.DeleteIndexEntry(ctx, f.id(t), 0, e.BaseOffset); err != nil {
					t.Fatal(err)
				}
			}
		}
		f.run(t, retention.Job{ObjectMargin: 30 * time.Second})
		if start, _ := f.bounds(t); start != 1 {
			t.Fatalf("log start %d, want 1 (held for the group within the raised cap)", start)
		}
		res, err := f.l.Poll(ctx, "r", 0, 1, log.PollOptions{MaxRecords: 10})
		if err != nil || len(res.Records) != 2 {
			t.Fatalf("poll at the pinned log start: %d records, %v; want offsets 1–2", len(res.Records), err)
		}
		info, err := coord.Describe(ctx, "billing")
		if err != nil || len(info.Partitions) != 1 {
			t.Fatalf("describe: %+v, %v", info, err)
		}
		dl := info.Partitions[0].DataLoss
		if want := time.Hour + 5*24*time.Hour - 48*time.Hour; dl == nil || dl.TimeLeft != want || dl.RecordsLost != 0 {
			t.Fatalf("time to data loss %+v, want %s left and none lost", dl, want)
		}
	})
}
