package consumer_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/store"
)

var errCrashed = errors.New("process crashed")

// crashable passes coordinator calls through until crash, then refuses them all, as a
// dead process sends nothing: what the group keeps is what was committed before.
type crashable struct {
	consumer.Coordinator
	dead atomic.Bool
}

func (c *crashable) Renew(ctx context.Context, g, t string, p int32, m string, gen int64, ttl time.Duration) (group.Lease, error) {
	if c.dead.Load() {
		return group.Lease{}, errCrashed
	}
	return c.Coordinator.Renew(ctx, g, t, p, m, gen, ttl)
}

func (c *crashable) Commit(ctx context.Context, g, t string, p int32, m string, gen, next int64, completed ...store.OffsetRange) error {
	if c.dead.Load() {
		return errCrashed
	}
	return c.Coordinator.Commit(ctx, g, t, p, m, gen, next, completed...)
}

// CommitAt is the commit that renews or releases the lease (consumer.LeaseCommitter),
// refused after the crash as Commit is.
func (c *crashable) CommitAt(ctx context.Context, g, t string, p int32, m string, gen, next int64, opts group.CommitOptions) error {
	if c.dead.Load() {
		return errCrashed
	}
	return c.Coordinator.(consumer.LeaseCommitter).CommitAt(ctx, g, t, p, m, gen, next, opts)
}

func (c *crashable) Release(ctx context.Context, g, t string, p int32, m string, gen int64) error {
	if c.dead.Load() {
		return errCrashed
	}
	return c.Coordinator.Release(ctx, g, t, p, m, gen)
}

// TestRestartAfterOutOfOrderCompletionReplaysOnlyInFlight: offset 5 is stuck at its
// worker, and with 4 workers taking offsets round-robin (offset mod 4) so are the
// offsets queued behind it (9, 13, …, 57); the other workers finish everything else. A
// crash (or a hand-off to another member) then replays exactly that in-flight window —
// 14 records — and none of the 41 finished offsets above the checkpoint, which the
// commits remembered as completed (a plain checkpoint at 5 would replay all 55).
func TestRestartAfterOutOfOrderCompletionReplaysOnlyInFlight(t *testing.T) {
	const records, straggler, workers = 60, 5, 4
	var inFlight []int64 // the straggler and what queues behind it at its worker
	var want []store.OffsetRange
	for o := int64(straggler); o < records; o++ {
		switch {
		case o%workers == straggler%workers:
			inFlight = append(inFlight, o)
		case len(want) > 0 && want[len(want)-1].To == o:
			want[len(want)-1].To++
		default:
			want = append(want, store.OffsetRange{From: o, To: o + 1})
		}
	}
	finished := records - len(inFlight)
	for _, tc := range []struct {
		name        string
		crash       bool // the process dies (no last commit, no release), else it stops
		restartedBy string
	}{
		{"crash", true, "m-1"},
		{"handoff", false, "m-2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
				ctx := context.Background()
				f := newFixture(t, s, "orders", records)
				coord := &crashable{Coordinator: f.coord}
				var first seen
				var handled atomic.Int64
				h := func(ctx context.Context, r consumer.Record) error {
					if r.Offset%workers == straggler%workers && r.Offset >= straggler {
						<-ctx.Done() // stuck until the process goes
						return ctx.Err()
					}
					first.add(r.Offset)
					handled.Add(1)
					return nil
				}
				c, err := consumer.New(f.log, coord, consumer.Config{Group: "billing", Topic: "orders", Member: "m-1", Handler: h,
					Workers: workers, PollWait: 10 * time.Millisecond, CommitInterval: time.Millisecond, LeaseTTL: 10 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				runCtx, stop := context.WithCancel(ctx)
				var wg sync.WaitGroup
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, _ = c.Run(runCtx, 0, consumer.RunOptions{})
				}()
				// Wait until every offset outside the in-flight window is handled and
				// committed, below the straggler or as completed above it.
				topicID := mustTopicID(t, f.log, "orders")
				for deadline := time.Now().Add(time.Minute); ; {
					if time.Now().After(deadline) {
						t.Fatalf("the commits never remembered %v above %d", want, straggler)
					}
					row, err := f.stores.Meta.GetCommit(ctx, "billing", topicID, 0)
					if err == nil && handled.Load() == int64(finished) && row.NextOffset == straggler && slices.Equal(row.Completed, want) {
						break
					}
					time.Sleep(2 * time.Millisecond)
				}
				if tc.crash {
					coord.dead.Store(true)
				}
				stop()
				wg.Wait()

				var again seen
				restarted := f.consumer(t, "billing", tc.restartedBy, func(_ context.Context, r consumer.Record) error { again.add(r.Offset); return nil }, nil)
				st, err := restarted.Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true})
				if err != nil {
					t.Fatal(err)
				}
				replayed := 0
				for _, o := range again.get() {
					if slices.Contains(first.get(), o) {
						replayed++
					}
				}
				t.Logf("%s: the restart handled %d records (%d of them finished before), skipped %d as remembered; a plain checkpoint would replay %d",
					tc.name, len(again.get()), replayed, st.Remembered, records-straggler)
				if got := again.get(); !slices.Equal(got, inFlight) || replayed != 0 || st.Remembered != int64(records-straggler-len(inFlight)) {
					t.Fatalf("restart handled %v (%d finished ones again) and skipped %d; want the in-flight window %v only and %d skipped",
						got, replayed, st.Remembered, inFlight, records-straggler-len(inFlight))
				}
				if got := f.committed(t, "billing"); got != records {
					t.Fatalf("committed %d after the restart, want %d", got, records)
				}
			})
		})
	}
}
