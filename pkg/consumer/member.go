package consumer

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/stratalog/strata/pkg/group"
)

// Balancer is what RunMember needs of group.Balancer: one step per interval, and a way
// to give a partition back.
type Balancer interface {
	Step(ctx context.Context) (group.StepResult, error)
	// Release must give back a partition the balancer holds (nil or group.ErrFenced
	// when it is no longer the member's); RunMember calls it only for partitions the
	// balancer acquired and has not reported lost since.
	Release(ctx context.Context, partition int32) error
	Leave(ctx context.Context) error
}

// RunMember consumes the topic as one member of a long-running group: every interval
// it steps the balancer (heartbeat, take free or expired partitions up to the fair
// share, hand back extras) and runs each held partition until it is lost or handed
// back. A handed-back partition is committed and released by its run before the
// balancer forgets it; a run that ends on its own (fenced, or an error) has its
// partition released so a later step can take it again. When ctx ends, every run
// commits its contiguous prefix and releases, and the member leaves the group so the
// others rebalance at once.
//
// Nothing but ctx ends RunMember, which then returns nil: a failed step, a failed
// release or a run that ended on its own is logged (Config.Logger) and the step or
// release is tried again at the next interval, since a store outage or a routine
// rebalance must not kill a long-running member.
func (c *Consumer) RunMember(ctx context.Context, bal Balancer, interval time.Duration) error {
	lg := c.cfg.Logger.With("group", c.cfg.Group, "topic", c.cfg.Topic, "member", c.cfg.Member)
	type running struct {
		partition int32
		cancel    context.CancelFunc
		done      chan struct{} // closed when RunLease returned
	}
	runs := map[int32]*running{}
	// held is what the balancer holds as far as its results tell: acquired and not yet
	// reported lost or released. Only those are handed back to it.
	held := map[int32]bool{}
	// unreleased are held partitions without a run whose release failed; each step
	// retries them (the balancer renews them meanwhile, but no run would start).
	unreleased := map[int32]bool{}
	// exited carries runs that ended on its own; quit lets a run that ends while
	// RunMember is returning give up sending, so however many runs end at once (all of
	// them, say, in a store outage) the shutdown never waits on the channel. A run
	// closes done before it sends, so stopping it never waits on the channel either.
	// An exit is stale when the run was stopped or replaced meanwhile: runs holds
	// another run (or none) for its partition.
	exited := make(chan *running, 64)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	stop := func(p int32) {
		if r, ok := runs[p]; ok {
			r.cancel()
			<-r.done
			delete(runs, p)
		}
	}
	release := func(p int32) {
		if !held[p] {
			return // the balancer already forgot it (lost to another member)
		}
		err := bal.Release(ctx, p)
		if err != nil && !errors.Is(err, group.ErrFenced) {
			if ctx.Err() == nil {
				lg.Warn("consumer: release failed; retrying at the next step", "partition", p, "err", err)
			}
			unreleased[p] = true
			return
		}
		delete(held, p)
		delete(unreleased, p)
	}
	defer func() {
		close(quit)
		for p := range runs {
			stop(p)
		}
		wg.Wait()
		if err := bal.Leave(context.WithoutCancel(ctx)); err != nil {
			lg.Warn("consumer: leaving the group failed; the others take over at lease expiry", "err", err)
		}
	}()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	step := true
	for {
		if step {
			c.memberStep(ctx, bal, lg, held, unreleased, stop, release, func(l group.Lease) {
				runCtx, cancel := context.WithCancel(ctx)
				r := &running{partition: l.Partition, cancel: cancel, done: make(chan struct{})}
				runs[l.Partition] = r
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, err := c.RunLease(runCtx, l, RunOptions{})
					close(r.done)
					if runCtx.Err() != nil {
						return // stopped by RunMember
					}
					level := slog.LevelWarn
					if errors.Is(err, group.ErrFenced) {
						level = slog.LevelInfo // the partition moved: routine
					}
					lg.Log(context.WithoutCancel(runCtx), level, "consumer: partition run ended", "partition", l.Partition,
						"generation", l.Generation, "err", err)
					select {
					case exited <- r:
					case <-quit:
					}
				}()
			})
		}
		select {
		case <-ctx.Done():
			return nil
		case r := <-exited:
			// Let the balancer forget the partition so a later step can take it again.
			if runs[r.partition] == r {
				delete(runs, r.partition)
				release(r.partition)
			}
			step = false
		case <-tick.C:
			step = true
		}
	}
}

// memberStep is one balancer step of RunMember: stop lost partitions, hand back extras
// and failed releases, start runs of acquired ones.
func (c *Consumer) memberStep(ctx context.Context, bal Balancer, lg *slog.Logger, held, unreleased map[int32]bool,
	stop, release func(int32), start func(group.Lease)) {
	res, err := bal.Step(ctx)
	if err != nil {
		if ctx.Err() == nil {
			lg.Warn("consumer: balancer step failed; retrying at the next interval", "err", err)
		}
		return
	}
	for _, p := range res.Lost {
		stop(p) // fenced: the run stops without committing
		delete(held, p)
		delete(unreleased, p)
	}
	for _, l := range res.Release {
		stop(l.Partition) // commits and releases on its way out
		release(l.Partition)
	}
	for p := range unreleased {
		release(p)
	}
	for _, l := range res.Acquired {
		held[l.Partition] = true
		start(l)
	}
}
