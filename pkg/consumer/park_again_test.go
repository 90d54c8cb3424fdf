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
