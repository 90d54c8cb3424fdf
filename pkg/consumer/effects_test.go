package consumer_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/group"
)

// TestZombieBusinessWriteRefusedAfterReassignment: a consumer (m-1) stalls in its
// handler on offset 3 while its process is paused past its lease; m-2 takes the
// partition over at the next generation and handles everything again. When m-1 wakes,
// its business write through group.Effects is refused as fenced — not only its commit —
// and m-2's redeliveries of the records m-1 applied before are refused as applied.
func TestZombieBusinessWriteRefusedAfterReassignment(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		const records = 6
		f := newFixture(t, s, "orders", records)
		fx := group.NewEffects(s.Effects(ctx, t), f.log)
		write := func(ctx context.Context, r consumer.Record) error {
			return fx.Apply(ctx, r.Fence, r.Offset, "order-"+strconv.FormatInt(r.Offset, 10), r.Value)
		}

		stalled, wake := make(chan struct{}), make(chan struct{})
		var zombieErr error
		var zombieFence group.Fence
		paused := newPausable(f.coord)
		h1 := func(ctx context.Context, r consumer.Record) error {
			if r.Offset == 3 {
				close(stalled)
				<-wake // the process was paused here
				zombieFence = r.Fence
				zombieErr = write(context.WithoutCancel(ctx), r)
				return zombieErr
			}
			return write(ctx, r)
		}
		c1, err := consumer.New(f.log, paused, consumer.Config{Group: "billing", Topic: "orders", Member: "m-1", Handler: h1,
			PollWait: 10 * time.Millisecond, CommitInterval: time.Hour, LeaseTTL: 300 * time.Millisecond, MaxAttempts: 3,
			Backoff: func(int) time.Duration { return time.Millisecond }})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var st1 consumer.Stats
		var err1 error
		wg.Add(1)
		go func() {
			defer wg.Done()
			st1, err1 = c1.Run(ctx, 0, consumer.RunOptions{})
		}()
		<-stalled
		paused.set(true) // no renewals: the lease lapses

		var applied, refused atomic.Int64
		h2 := func(ctx context.Context, r consumer.Record) error {
			err := write(ctx, r)
			if errors.Is(err, group.ErrApplied) {
				refused.Add(1)
				return nil // applied by the earlier owner: done
			}
			if err == nil {
				applied.Add(1)
			}
			return err
		}
		c2 := f.consumer(t, "billing", "m-2", h2, nil)
		var st consumer.Stats
		for {
			st, err = c2.Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true})
			if !errors.Is(err, group.ErrLeaseHeld) {
				break
			}
			time.Sleep(20 * time.Millisecond) // until m-1's lease lapses
		}
		if err != nil {
			t.Fatal(err)
		}
		close(wake)
		paused.set(false)
		wg.Wait()

		if !errors.Is(zombieErr, group.ErrFenced) {
			t.Fatalf("zombie m-1's business write at generation %d: %v, want ErrFenced", zombieFence.Generation, zombieErr)
		}
		// The fenced write stops the zombie's run at once, as a fenced commit would:
		// no retry, no dead letter, no commit.
		if !errors.Is(err1, group.ErrFenced) || !st1.Fenced || st1.Retries != 0 || st1.Dropped != 0 || st1.DeadLettered != 0 {
			t.Fatalf("zombie run: %+v, %v; want fenced, nothing retried or dropped", st1, err1)
		}
		// m-1 applied offsets 0–2; a lease renewal that fell due with progress to save
		// committed a prefix of them (st1.Committed), and m-2 met the rest as applied.
		if st1.Committed > 3 || refused.Load() != 3-st1.Committed || applied.Load() != records-3 || st.Committed != records {
			t.Fatalf("m-2 applied %d and was refused %d as applied (committed %d), m-1 committed %d; want %d applied, 3 − %d refused (offsets 0–2 were m-1's), %d committed",
				applied.Load(), refused.Load(), st.Committed, st1.Committed, records-3, st1.Committed, records)
		}
		v, err := fx.Get(ctx, "order-3")
		if err != nil || string(v) != "event-3" {
			t.Fatalf("order-3 = %q, %v; want m-2's write", v, err)
		}
	})
}
