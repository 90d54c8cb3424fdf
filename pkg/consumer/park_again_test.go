package consumer_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/wire"
)

// TestKeyParkedAgainAfterResetReplays: a key parked, released and replayed, then
// redelivered by a reset to earliest and parked again within the idempotency window,
// is a new parking of the same origin records: its row gets a parking position and its
// release replays every record again. Before, the parking appends were taken as
// "already in the parking topic" from the first parking, the row kept position −1, and
// the release replayed nothing: the records were skipped.
func TestKeyParkedAgainAfterResetReplays(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s, "orders", 0)
		const grp = "billing"
		setParking(t, f, grp)
		offsets := appendKeyed(t, f.log, "orders", []string{"a", "bad", "b", "bad"})
		bad := []int64{offsets[1], offsets[3]}
		var poisoned atomic.Bool
		var kl keyLog
		h := func(_ context.Context, r consumer.Record) error {
			if string(r.Key) == "bad" && poisoned.Load() {
				return errors.New("poison")
			}
			kl.add(r.Key, r.Offset)
			return nil
		}
		run := func(member string) consumer.Stats {
			t.Helper()
			st, err := f.consumer(t, grp, member, h, nil).Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true})
			if err != nil {
				t.Fatal(err)
			}
			return st
		}
		for round := range 2 {
			poisoned.Store(true)
			if st := run("park"); st.Parked != 2 {
				t.Fatalf("round %d: parked %d records, want 2", round, st.Parked)
			}
			rows, err := f.coord.ListParked(ctx, grp)
			if err != nil || len(rows) != 1 {
				t.Fatalf("round %d: ListParked = %v, %v; want the key", round, rows, err)
			}
			if rows[0].ParkOffset < 0 {
				t.Fatalf("round %d: the parked row has no parking position: %+v", round, rows[0])
			}
			poisoned.Store(false)
			if _, err := f.coord.ReleaseParked(ctx, grp, "orders", []byte("bad")); err != nil {
				t.Fatal(err)
			}
			if st := run("release"); st.Replayed != 2 {
				t.Fatalf("round %d: the release replayed %d records, want 2", round, st.Replayed)
			}
			if got := kl.get("bad"); !slices.Equal(got, slices.Repeat(bad, round+1)) {
				t.Fatalf("round %d: the key was handled as %v, want %v once per round", round, got, bad)
			}
			if _, err := f.coord.Reset(ctx, grp, "orders", group.ResetEarliest()); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestReleaseOfExpiredParkedRecordsCountsLoss: the parking topic's retention took some
// of a parked key's records (its log start passed the row's parking position). The
// release replays what is left, in order, counts the rest as lost (Stats.ParkedLost)
// and unparks the key; the run ends normally and the partition flows. Before, the
// replay's poll at the parking position was out of range: the run failed, and every
// later run of the partition failed the same way (a crash loop stopping every key).
func TestReleaseOfExpiredParkedRecordsCountsLoss(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s, "orders", 0)
		const grp = "billing"
		setParking(t, f, grp)
		offsets := appendKeyed(t, f.log, "orders", []string{"bad", "a", "bad", "b", "bad"})
		var poisoned atomic.Bool
		poisoned.Store(true)
		var kl keyLog
		h := func(_ context.Context, r consumer.Record) error {
			if string(r.Key) == "bad" && poisoned.Load() {
				return errors.New("poison")
			}
			kl.add(r.Key, r.Offset)
			return nil
		}
		if _, err := f.consumer(t, grp, "park", h, nil).Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true}); err != nil {
			t.Fatal(err)
		}
		rows, err := f.coord.ListParked(ctx, grp)
		if err != nil || len(rows) != 1 || rows[0].Records != 3 || rows[0].ParkOffset < 0 {
			t.Fatalf("ListParked = %+v, %v; want the key with 3 records and a position", rows, err)
		}
		row := rows[0]
		// Retention takes the parking partition's first two records: the key's first two.
		id, err := f.log.TopicID(ctx, wire.ParkingTopic(grp))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Meta.AdvanceLogStart(ctx, id, row.ParkPartition, row.ParkOffset+2); err != nil {
			t.Fatal(err)
		}
		poisoned.Store(false)
		if _, err := f.coord.ReleaseParked(ctx, grp, "orders", []byte("bad")); err != nil {
			t.Fatal(err)
		}
		more := appendKeyed(t, f.log, "orders", []string{"bad", "c"})
		st, err := f.consumer(t, grp, "release", h, nil).Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true})
		if err != nil {
			t.Fatalf("the release run failed: %v", err)
		}
		if st.Replayed != 1 || st.ParkedLost != 2 {
			t.Fatalf("release run stats %+v, want 1 replayed and 2 lost", st)
		}
		if got, want := kl.get("bad"), []int64{offsets[4], more[0]}; !slices.Equal(got, want) {
			t.Fatalf("the released key was handled as %v, want %v (what the parking topic still held, then the newer record)", got, want)
		}
		if rows, err := f.coord.ListParked(ctx, grp); err != nil || len(rows) != 0 {
			t.Fatalf("ListParked after the release = %v, %v; want none", rows, err)
		}
		if got := kl.get("c"); len(got) != 1 {
			t.Fatalf("the partition did not flow past the release: c handled %v", got)
		}
	})
}

// TestReplayStopsAtAnUnindexedParkedCommit: a commit of the parking topic without an
// index entry (its appender between the commit and the entry, or the materialiser
// behind) holds records that are not lost: the replay handles what precedes it and
// leaves the key parked for the next run, counting nothing as lost. Before, the replay
// stopped there and unparked the key: the records after the gap were skipped.
func TestReplayStopsAtAnUnindexedParkedCommit(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s, "orders", 0)
		const grp = "billing"
		setParking(t, f, grp)
		offsets := appendKeyed(t, f.log, "orders", []string{"bad", "bad", "bad"})
		var poisoned atomic.Bool
		poisoned.Store(true)
		var kl keyLog
		h := func(_ context.Context, r consumer.Record) error {
			if string(r.Key) == "bad" && poisoned.Load() {
				return errors.New("poison")
			}
			kl.add(r.Key, r.Offset)
			return nil
		}
		if _, err := f.consumer(t, grp, "park", h, nil).Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true}); err != nil {
			t.Fatal(err)
		}
		rows, err := f.coord.ListParked(ctx, grp)
		if err != nil || len(rows) != 1 || rows[0].Records != 3 {
			t.Fatalf("ListParked = %+v, %v", rows, err)
		}
		id, err := f.log.TopicID(ctx, wire.ParkingTopic(grp))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Meta.DeleteIndexEntry(ctx, id, rows[0].ParkPartition, rows[0].ParkOffset+1); err != nil {
			t.Fatal(err)
		}
		poisoned.Store(false)
		if _, err := f.coord.ReleaseParked(ctx, grp, "orders", []byte("bad")); err != nil {
			t.Fatal(err)
		}
		st, err := f.consumer(t, grp, "release", h, nil).Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true})
		if err != nil {
			t.Fatal(err)
		}
		if st.Replayed != 1 || st.ParkedLost != 0 {
			t.Fatalf("release run stats %+v, want 1 replayed, none lost", st)
		}
		if got := kl.get("bad"); !slices.Equal(got, offsets[:1]) {
			t.Fatalf("handled %v, want %v (the records before the unindexed commit)", got, offsets[:1])
		}
		if rows, err := f.coord.ListParked(ctx, grp); err != nil || len(rows) != 1 {
			t.Fatalf("ListParked after the stopped replay = %v, %v; want the key still parked", rows, err)
		}
	})
}
