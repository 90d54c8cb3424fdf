package dispatch_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/dispatch"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/lambdaconsumer"
	"github.com/stratalog/strata/pkg/log"
)

// leaving runs hook once, the first time the consumer is about to leave its partition:
// when its idle long poll came back empty (pollEmpty), or when it sends the commit or
// the request that releases the lease (release).
type leaving struct {
	log   *log.Log
	coord *group.Coordinator
	at    string
	hook  func()
	fired atomic.Bool
}

func (l *leaving) fire(at string) {
	if l.at == at && l.fired.CompareAndSwap(false, true) {
		l.hook()
	}
}

type leavingLog struct{ *leaving }

func (l leavingLog) Poll(ctx context.Context, topic string, partition int32, offset int64, opt log.PollOptions) (log.PollResult, error) {
	res, err := l.log.Poll(ctx, topic, partition, offset, opt)
	if err == nil && opt.Wait > 0 && len(res.Records) == 0 {
		l.fire("idle poll")
	}
	return res, err
}

func (l leavingLog) Append(ctx context.Context, topic string, recs []log.Record, opt log.AppendOptions) ([]log.Result, error) {
	return l.log.Append(ctx, topic, recs, opt)
}

func (l leavingLog) Bounds(ctx context.Context, topic string, partition int32) (int64, int64, error) {
	return l.log.Bounds(ctx, topic, partition)
}

type leavingCoord struct {
	*group.Coordinator
	*leaving
}

func (c leavingCoord) CommitAt(ctx context.Context, grp, topic string, partition int32, member string, generation, next int64, opts group.CommitOptions) error {
	if opts.Release {
		c.fire("release")
	}
	return c.Coordinator.CommitAt(ctx, grp, topic, partition, member, generation, next, opts)
}

func (c leavingCoord) Release(ctx context.Context, grp, topic string, partition int32, member string, generation int64) error {
	c.fire("release")
	return c.Coordinator.Release(ctx, grp, topic, partition, member, generation)
}

// TestNoLostWakeupAsTheConsumerLeaves is the lost wake-up race, run with the real
// dispatcher and the real consumer function on both backends: a record is appended, and
// its commit dispatched, just as a caught-up invocation leaves — after its idle poll came
// back empty, or as it sends the write that releases its lease. Dispatch finds the lease
// still live and invokes nothing; the invocation, reading the high watermark after its
// release, takes the partition again and consumes the record. Before, the record waited
// for the next commit or the scheduled sweep.
func TestNoLostWakeupAsTheConsumerLeaves(t *testing.T) {
	for _, at := range []string{"idle poll", "release"} {
		t.Run(at, func(t *testing.T) {
			backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
				ctx := context.Background()
				l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := l.CreateTopic(ctx, "orders", 1, time.Hour); err != nil {
					t.Fatal(err)
				}
				n := &node{meta: s.Meta, log: l, coord: group.New(s.Meta, l, nil)}
				lv := &leaving{log: l, coord: n.coord, at: at}
				eff := &effects{applied: map[int64]bool{}}
				inv := &inProcess{timeout: 20 * time.Second, handler: lambdaconsumer.Handler(lambdaconsumer.Config{
					IdleWait: 50 * time.Millisecond, DeadlineMargin: time.Second, Metrics: nopMetrics{},
					Open: func(context.Context) (lambdaconsumer.Backend, error) {
						return lambdaconsumer.Backend{Log: leavingLog{lv}, Groups: leavingCoord{n.coord, lv}}, nil
					},
				}, eff.apply)}
				d, err := dispatch.New(dispatch.Config{Subscriptions: subs("orders", "billing", "fn"), Leases: s.Meta, Offsets: l, Invoker: inv})
				if err != nil {
					t.Fatal(err)
				}
				var (
					mu      sync.Mutex
					leaving dispatch.Stats
				)
				lv.hook = func() {
					st, err := d.HandleCommits(ctx, n.appendN(t, "orders", 0, 1))
					if err != nil {
						t.Error(err)
					}
					mu.Lock()
					leaving = st
					mu.Unlock()
				}
				first, err := d.HandleCommits(ctx, n.appendN(t, "orders", 0, 3))
				if err != nil {
					t.Fatal(err)
				}
				inv.wg.Wait()

				if first.Invocations != 1 {
					t.Fatalf("first batch: %+v, want one invocation", first)
				}
				if !lv.fired.Load() {
					t.Fatalf("the consumer never reached %q", at)
				}
				mu.Lock()
				defer mu.Unlock()
				if leaving.SkippedLive != 1 || leaving.Invocations != 0 {
					t.Fatalf("dispatch of the record appended at %q: %+v, want it skipped as live (the race)", at, leaving)
				}
				for _, err := range inv.errs {
					t.Errorf("invocation: %v", err)
				}
				if len(inv.results) != 1 || inv.results[0].Rewoken != 1 || inv.results[0].Handled != 4 {
					t.Fatalf("invocations: %+v, want one that handled 4 records, taking the partition again once", inv.results)
				}
				c, err := n.coord.Committed(ctx, "billing", "orders", 0)
				if err != nil || c == nil || *c != 4 {
					t.Fatalf("committed %v, %v; want 4", c, err)
				}
				for off := range int64(4) {
					if !eff.applied[off] {
						t.Errorf("offset %d never applied", off)
					}
				}
				t.Logf("%s at %q: invocations %d, rewoken %d", s.Name, at, len(inv.results), inv.results[0].Rewoken)
			})
		})
	}
}
