package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
)

// recreate deletes topic and creates it again (a new incarnation, offsets from 0) with
// records records on partition 0, valued as newFixture's.
func (f *fixture) recreate(t *testing.T, topic string, records int) {
	t.Helper()
	ctx := context.Background()
	if err := f.log.DeleteTopic(ctx, topic); err != nil {
		t.Fatal(err)
	}
	if _, err := f.log.CreateTopic(ctx, topic, 1, 0); err != nil {
		t.Fatal(err)
	}
	p := int32(0)
	recs := make([]log.Record, records)
	for i := range recs {
		recs[i] = log.Record{Key: fmt.Appendf(nil, "order-%d", i%3), Value: fmt.Appendf(nil, "event-%d", i), Partition: &p}
	}
	if records > 0 {
		if _, err := f.log.Append(ctx, topic, recs, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDeadLetterKeyCarriesIncarnation: a poison record at an offset the deleted
// incarnation of the topic dead-lettered must be dead-lettered again on the new one.
// The key named the topic by name alone, so the new record's append was answered as
// a retry of the old one ("already landed"): counted, committed past, written nowhere.
func TestDeadLetterKeyCarriesIncarnation(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s, "orders", 4)
		if _, err := f.log.CreateTopic(ctx, "orders.dlq", 1, 0); err != nil {
			t.Fatal(err)
		}
		h := func(_ context.Context, r consumer.Record) error {
			if r.Offset == 2 {
				return errors.New("poison")
			}
			return nil
		}
		for run := range 2 {
			if run == 1 {
				f.recreate(t, "orders", 4)
			}
			c := f.consumer(t, "billing", fmt.Sprintf("m-%d", run), h, func(c *consumer.Config) {
				c.MaxAttempts, c.DeadLetterTopic = 1, "orders.dlq"
			})
			st, err := c.Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true})
			if err != nil || st.DeadLettered != 1 || f.committed(t, "billing") != 4 {
				t.Fatalf("run %d: stats %+v, %v, committed %d", run, st, err, f.committed(t, "billing"))
			}
		}
		res, err := f.log.Poll(ctx, "orders.dlq", 0, 0, log.PollOptions{})
		if err != nil || len(res.Records) != 2 {
			t.Fatalf("dead-letter topic: %d records, %v; want the poison record of each incarnation", len(res.Records), err)
		}
	})
}

// TestParkKeyCarriesIncarnation: a poison record at an offset the deleted incarnation
// parked must reach the parking topic again on the new one; the key of the parking
// append named the topic by name alone, so it was taken as already parked.
func TestParkKeyCarriesIncarnation(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s, "orders", 0)
		const grp = "billing"
		setParking(t, f, grp)
		h := func(_ context.Context, r consumer.Record) error {
			if string(r.Key) == "order-bad" {
				return errors.New("payment declined")
			}
			return nil
		}
		keys := []string{"order-1", "order-bad", "order-2"}
		for run := range 2 {
			if run == 1 {
				f.recreate(t, "orders", 0)
			}
			appendKeyed(t, f.log, "orders", keys)
			c := f.consumer(t, grp, fmt.Sprintf("m-%d", run), h, nil)
			st, err := c.Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true})
			if err != nil || st.Parked != 1 || f.committed(t, grp) != 3 {
				t.Fatalf("run %d: stats %+v, %v, committed %d", run, st, err, f.committed(t, grp))
			}
		}
		if got := parkedTopicOrigins(t, f.log, grp, "order-bad"); len(got) != 2 {
			t.Fatalf("parking topic holds the key's records from origin offsets %v; want one per incarnation", got)
		}
		parked, err := f.coord.ListParked(ctx, grp)
		if err != nil || len(parked) != 1 || parked[0].ParkOffset < 0 {
			t.Fatalf("ListParked = %+v, %v; want the new incarnation's key, with its parking position", parked, err)
		}
	})
}

// zombieRun starts a run of m-1 on the topic's current incarnation whose handler
// stalls on offset 0 until wake is closed, then calls act with the record; it ends
// after 5 s unless fenced before.
func zombieRun(t *testing.T, f *fixture, act func(context.Context, consumer.Record) error) (stalled, wake chan struct{}, done <-chan runResult) {
	t.Helper()
	stalled, wake = make(chan struct{}), make(chan struct{})
	var once sync.Once
	h := func(ctx context.Context, r consumer.Record) error {
		if r.Offset == 0 {
			once.Do(func() { close(stalled) })
			<-wake
			return act(context.WithoutCancel(ctx), r)
		}
		return nil
	}
	c, err := consumer.New(f.log, f.coord, consumer.Config{Group: "billing", Topic: "orders", Member: "m-1", Handler: h,
		PollWait: 10 * time.Millisecond, CommitInterval: time.Millisecond, LeaseTTL: 10 * time.Second, MaxAttempts: 1,
		Backoff: func(int) time.Duration { return time.Millisecond }})
	if err != nil {
		t.Fatal(err)
	}
	// A bound for the run should it never be fenced.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return stalled, wake, runAsync(ctx, c)
}

// TestRunOfDeletedIncarnationCannotCommitIntoSuccessor: a run of the deleted
// incarnation (stalled in its handler) wakes after the topic was created again and the
// same member took the new incarnation's lease, at generation 1 as the old one was.
// Its commit and release went to the live incarnation's lease, which matched: the new
// records were committed past, unhandled, and the new lease freed. They must be fenced.
func TestRunOfDeletedIncarnationCannotCommitIntoSuccessor(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s, "orders", 3)
		stalled, wake, done := zombieRun(t, f, func(context.Context, consumer.Record) error { return nil })
		<-stalled
		f.recreate(t, "orders", 10)
		l, err := f.coord.Acquire(ctx, "billing", "orders", 0, "m-1", 10*time.Second)
		if err != nil || l.Generation != 1 {
			t.Fatalf("lease of the new incarnation: %+v, %v; want generation 1", l, err)
		}
		close(wake)
		res := <-done
		if c, err := f.coord.Committed(ctx, "billing", "orders", 0); err != nil || c != nil {
			t.Fatalf("the new incarnation's position is %v (%v) after the old run (stats %+v, %v); want none", ptrStr(c), err, res.st, res.err)
		}
		if !res.st.Fenced {
			t.Fatalf("old run: stats %+v, %v; want fenced", res.st, res.err)
		}
		if err := f.coord.Commit(ctx, "billing", "orders", 0, "m-1", l.Generation, 1); err != nil {
			t.Fatalf("the new lease cannot commit: %v (the old run released it?)", err)
		}
		info, err := f.coord.Describe(ctx, "billing")
		if err != nil || len(info.Partitions) != 1 || info.Partitions[0].Owner != "m-1" {
			t.Fatalf("describe %+v, %v; want the new lease held by m-1", info, err)
		}
	})
}

// TestZombieOfDeletedIncarnationFencedFromEffects: a zombie of the deleted incarnation
// applies a fenced effect after the topic was created again and the new incarnation's
// lease was taken at generation 1. It passed the fence (the check read the live
// incarnation's row at the same generation) and its marker then refused the new
// record's effect as applied. It must be fenced, and the new record's effect applied.
func TestZombieOfDeletedIncarnationFencedFromEffects(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s, "orders", 3)
		fx := group.NewEffects(s.Effects(ctx, t), f.log)
		write := func(ctx context.Context, r consumer.Record) error {
			return fx.Apply(ctx, r.Fence, r.Offset, "order-"+strconv.FormatInt(r.Offset, 10), r.Value)
		}
		var zombieErr error
		stalled, wake, done := zombieRun(t, f, func(ctx context.Context, r consumer.Record) error {
			zombieErr = write(ctx, r)
			return zombieErr
		})
		<-stalled
		f.recreate(t, "orders", 3)
		l, err := f.coord.Acquire(ctx, "billing", "orders", 0, "m-1", 10*time.Second)
		if err != nil || l.Generation != 1 {
			t.Fatalf("lease of the new incarnation: %+v, %v; want generation 1", l, err)
		}
		close(wake)
		<-done
		if !errors.Is(zombieErr, group.ErrFenced) {
			t.Fatalf("the old incarnation's effect: %v; want fenced", zombieErr)
		}
		// The new incarnation's owner handles its offset 0 under its own fence.
		c, err := consumer.New(f.log, f.coord, consumer.Config{Group: "billing", Topic: "orders", Member: "m-1",
			Handler: write, PollWait: 10 * time.Millisecond, CommitInterval: time.Millisecond, LeaseTTL: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		st, err := c.RunLease(ctx, l, consumer.RunOptions{UntilCaughtUp: true})
		if err != nil || st.Handled != 3 {
			t.Fatalf("new incarnation's run: %+v, %v; want its 3 effects applied", st, err)
		}
		if v, err := fx.Get(ctx, "order-0"); err != nil || string(v) != "event-0" {
			t.Fatalf("effect of the new offset 0: %q, %v", v, err)
		}
	})
}

func ptrStr(p *int64) string {
	if p == nil {
		return "nil"
	}
	return strconv.FormatInt(*p, 10)
}
