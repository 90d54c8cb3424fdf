package dispatch_test

import (
	"context"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/dispatch"
	"github.com/stratalog/strata/pkg/lambdaconsumer"
)

// inProcess is an Invoker that runs the consumer library's handler in a goroutine, as
// an asynchronous Lambda invoke would, with the function's timeout as the deadline.
type inProcess struct {
	handler func(context.Context, lambdaconsumer.Event) (lambdaconsumer.Result, error)
	timeout time.Duration

	wg      sync.WaitGroup
	mu      sync.Mutex
	results []lambdaconsumer.Result
	errs    []error
}

func (p *inProcess) Invoke(_ context.Context, _ string, ev deploy.ConsumerEvent) error {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
		defer cancel()
		res, err := p.handler(ctx, ev)
		p.mu.Lock()
		p.results = append(p.results, res)
		if err != nil {
			p.errs = append(p.errs, err)
		}
		p.mu.Unlock()
	}()
	return nil
}

// effects is the consumer's side effect: a conditional "put" keyed by offset, counting
// deliveries that found the effect already applied.
type effects struct {
	mu       sync.Mutex
	applied  map[int64]bool
	replayed int
}

func (e *effects) apply(_ context.Context, r lambdaconsumer.Record) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.applied[r.Offset] {
		e.replayed++
		return nil
	}
	e.applied[r.Offset] = true
	return nil
}

// TestSteadyRate appends at a steady rate to one partition, hands the commits to
// dispatch in stream batches (one per batching window), and runs the consumers dispatch
// asks for in-process. It reports invocations and lease checks per commit and requires
// both well under one, then that every record was applied exactly once and the group's
// commit equals the high watermark. STRATA_STEADY_SECONDS sets the duration (default 20,
// 3 with -short); the rate is 50 appends/s.
func TestSteadyRate(t *testing.T) {
	seconds := 20
	if testing.Short() {
		seconds = 3
	}
	if v, err := strconv.Atoi(os.Getenv("STRATA_STEADY_SECONDS")); err == nil && v > 0 {
		seconds = v
	}
	const (
		rate        = 50                     // appends per second
		batchWindow = time.Second            // the stream's batching window
		fnTimeout   = 5 * time.Second        // the consumer function's timeout
		idleWait    = 1 * time.Second        // the consumer's idle long-poll
		margin      = 500 * time.Millisecond // the consumer's deadline margin
	)
	ctx := context.Background()
	n := newNode(t)
	n.topic(t, "orders", 1)
	eff := &effects{applied: map[int64]bool{}}
	inv := &inProcess{timeout: fnTimeout, handler: lambdaconsumer.Handler(lambdaconsumer.Config{
		Workers: 4, IdleWait: idleWait, DeadlineMargin: margin,
		Open: func(context.Context) (lambdaconsumer.Backend, error) {
			return lambdaconsumer.Backend{Log: n.log, Groups: n.coord}, nil
		},
		Metrics: nopMetrics{},
	}, eff.apply)}
	d, err := dispatch.New(dispatch.Config{
		Subscriptions: subs("orders", "billing", "fn-billing"), Leases: n.meta, Offsets: n.log, Invoker: inv,
	})
	if err != nil {
		t.Fatal(err)
	}

	var (
		mu      sync.Mutex
		pending []dispatch.Commit
		total   dispatch.Stats
		batches int
		done    atomic.Bool
	)
	streamDone := make(chan struct{})
	go func() { // the stream: one batch per window
		defer close(streamDone)
		tick := time.NewTicker(batchWindow)
		defer tick.Stop()
		for {
			<-tick.C
			mu.Lock()
			batch := pending
			pending = nil
			mu.Unlock()
			if len(batch) > 0 {
				st, err := d.HandleCommits(ctx, batch)
				if err != nil {
					t.Error(err)
				}
				total = total.Add(st)
				batches++
			}
			if done.Load() && len(batch) == 0 {
				return
			}
		}
	}()
	appends := seconds * rate
	p := int32(0)
	tick := time.NewTicker(time.Second / rate)
	for range appends {
		<-tick.C
		cs := n.appendN(t, "orders", p, 1)
		mu.Lock()
		pending = append(pending, cs...)
		mu.Unlock()
	}
	tick.Stop()
	done.Store(true)
	<-streamDone
	inv.wg.Wait()
	// The sweep picks up what a consumer stopped at its deadline left behind.
	sweep, err := d.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	inv.wg.Wait()

	_, hw, err := n.log.Bounds(ctx, "orders", 0)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := n.coord.Committed(ctx, "billing", "orders", 0)
	if err != nil || committed == nil {
		t.Fatalf("committed %v, %v", committed, err)
	}
	perCommitInv := float64(total.Invocations) / float64(total.Commits)
	perCommitChecks := float64(total.LeaseChecks) / float64(total.Commits)
	t.Logf("%d appends at %d/s in %d stream batches: %d invocations (%.4f per commit), %d lease checks (%.4f per commit), %d skipped as live; sweep after: %d invocations; %d replayed deliveries",
		total.Commits, rate, batches, total.Invocations, perCommitInv, total.LeaseChecks, perCommitChecks, total.SkippedLive, sweep.Invocations, eff.replayed)
	for _, err := range inv.errs {
		t.Errorf("consumer invocation failed: %v", err)
	}
	if total.Commits != appends {
		t.Errorf("dispatch saw %d commits, want %d", total.Commits, appends)
	}
	if perCommitInv > 0.1 || perCommitChecks > 0.1 {
		t.Errorf("per commit: %.3f invocations, %.3f lease checks; want well under one (≤ 0.1)", perCommitInv, perCommitChecks)
	}
	if *committed != hw || hw != int64(appends) {
		t.Errorf("group committed %d, high watermark %d, appends %d", *committed, hw, appends)
	}
	if len(eff.applied) != appends {
		t.Errorf("%d records applied, want %d", len(eff.applied), appends)
	}
}

type nopMetrics struct{}

func (nopMetrics) ConsumerRun(string, string, consumer.Stats) {}
