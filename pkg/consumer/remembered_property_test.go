package consumer_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
)

// checkedCommits fails a commit whose position or completed ranges cover an offset no
// handler has finished yet.
type checkedCommits struct {
	*crashable
	mu       *sync.Mutex
	finished map[int64]bool
	bad      *atomic.Value // the first violation, a string
	commits  *atomic.Int64 // commits that carried completed ranges
}

func (c checkedCommits) Commit(ctx context.Context, g, t string, p int32, m string, gen, next int64, completed ...store.OffsetRange) error {
	c.check(next, completed)
	return c.crashable.Commit(ctx, g, t, p, m, gen, next, completed...)
}

// CommitAt is the commit that renews or releases the lease, checked as Commit is.
func (c checkedCommits) CommitAt(ctx context.Context, g, t string, p int32, m string, gen, next int64, opts group.CommitOptions) error {
	c.check(next, opts.Completed)
	return c.crashable.CommitAt(ctx, g, t, p, m, gen, next, opts)
}

// check records the first commit that covers an offset no handler finished.
func (c checkedCommits) check(next int64, completed []store.OffsetRange) {
	c.mu.Lock()
	for o := int64(0); o < next; o++ {
		if !c.finished[o] {
			c.bad.CompareAndSwap(nil, fmt.Sprintf("commit of next offset %d passes unfinished offset %d", next, o))
		}
	}
	for _, r := range completed {
		for o := r.From; o < r.To; o++ {
			if !c.finished[o] {
				c.bad.CompareAndSwap(nil, fmt.Sprintf("commit of %d remembers unfinished offset %d in %v", next, o, completed))
			}
		}
	}
	c.mu.Unlock()
	if len(completed) > 0 {
		c.commits.Add(1)
	}
}

// TestPropertyRememberedAcksNeverSkipUnfinished: over lives that each crash at a random
// point, with random workers and records stuck at their workers until the crash, no
// commit's position or completed ranges covers an offset not finished yet, and a last
// life, skipping what the commits remembered, leaves every offset finished.
func TestPropertyRememberedAcksNeverSkipUnfinished(t *testing.T) {
	ctx := context.Background()
	s := backendtest.Local(ctx, t)
	l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta})
	if err != nil {
		t.Fatal(err)
	}
	coord := group.New(s.Meta, l, nil)
	var withRanges atomic.Int64
	iteration := 0
	rapid.Check(t, func(rt *rapid.T) {
		iteration++
		topic := fmt.Sprintf("acks-%d", iteration)
		if _, err := l.CreateTopic(ctx, topic, 1, 0); err != nil {
			rt.Fatal(err)
		}
		p := int32(0)
		total := rapid.IntRange(1, 120).Draw(rt, "records")
		recs := make([]log.Record, total)
		for i := range recs {
			recs[i] = log.Record{Value: []byte("v"), Partition: &p}
		}
		if _, err := l.Append(ctx, topic, recs, log.AppendOptions{}); err != nil {
			rt.Fatal(err)
		}
		var mu sync.Mutex
		finished := map[int64]bool{}
		var bad atomic.Value
		lives := rapid.IntRange(0, 4).Draw(rt, "crashing lives")
		for life := 0; life <= lives; life++ {
			last := life == lives
			stuck := map[int64]bool{}
			if !last {
				for _, o := range rapid.SliceOfN(rapid.Int64Range(0, int64(total-1)), 0, 4).Draw(rt, "stuck") {
					stuck[o] = true
				}
			}
			crashAfter := rapid.IntRange(1, total).Draw(rt, "crash after")
			cc := &crashable{Coordinator: coord}
			runCtx, stop := context.WithCancel(ctx)
			var handled atomic.Int64
			h := func(ctx context.Context, r consumer.Record) error {
				if stuck[r.Offset] {
					<-ctx.Done()
					return ctx.Err()
				}
				mu.Lock()
				finished[r.Offset] = true
				mu.Unlock()
				if !last && handled.Add(1) == int64(crashAfter) {
					cc.dead.Store(true)
					stop()
				}
				return nil
			}
			cons, err := consumer.New(l, checkedCommits{crashable: cc, mu: &mu, finished: finished, bad: &bad, commits: &withRanges},
				consumer.Config{Group: "g", Topic: topic, Member: "m", Handler: h,
					Workers: rapid.IntRange(1, 4).Draw(rt, "workers"), PollRecords: rapid.IntRange(1, 20).Draw(rt, "poll records"),
					PollWait: time.Millisecond, CommitInterval: time.Millisecond, LeaseTTL: 30 * time.Second})
			if err != nil {
				rt.Fatal(err)
			}
			if !last {
				// A life that never reaches its crash point (its records are stuck)
				// crashes anyway, soon.
				go func() {
					select {
					case <-runCtx.Done():
					case <-time.After(20 * time.Millisecond):
						cc.dead.Store(true)
						stop()
					}
				}()
			}
			st, err := cons.Run(runCtx, 0, consumer.RunOptions{UntilCaughtUp: last})
			stop()
			if last && (err != nil || st.Committed != int64(total)) {
				rt.Fatalf("last life: %+v, %v; want everything committed", st, err)
			}
		}
		if v := bad.Load(); v != nil {
			rt.Fatal(v)
		}
		for o := int64(0); o < int64(total); o++ {
			if !finished[o] {
				rt.Fatalf("offset %d was never finished: a commit skipped it", o)
			}
		}
	})
	if withRanges.Load() == 0 {
		t.Fatal("no commit carried completed ranges: the property tested nothing")
	}
}
