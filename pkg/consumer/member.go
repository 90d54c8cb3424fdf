package consumer

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/stratalog/strata/pkg/group"
)

// Balancer is what RunMember needs of group.Balancer: one step per interval, and a way
// to give a partition back.
type Balancer interface {
	Step(ctx context.Context) (group.StepResult, error)
	Release(ctx context.Context, partition int32) error
	Leave(ctx context.Context) error
}

// RunMember consumes the topic as one member of a long-running group: every interval
// it steps the balancer (heartbeat, take free or expired partitions up to the fair
// share, hand back extras) and runs each held partition until it is lost or handed
// back. A handed-back partition is committed and released by its run before the
// balancer forgets it. When ctx ends, every run commits its contiguous prefix and
// releases, and the member leaves the group so the others rebalance at once.
func (c *Consumer) RunMember(ctx context.Context, bal Balancer, interval time.Duration) error {
	type running struct {
		cancel context.CancelFunc
		done   chan struct{}
	}
	runs := map[int32]*running{}
	exited := make(chan int32, 64)
	var wg sync.WaitGroup
	stop := func(p int32) {
		if r, ok := runs[p]; ok {
			r.cancel()
			<-r.done
			delete(runs, p)
		}
	}
	defer func() {
		for p := range runs {
			stop(p)
		}
		wg.Wait()
		_ = bal.Leave(context.WithoutCancel(ctx))
	}()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		res, err := bal.Step(ctx)
		if err != nil && ctx.Err() != nil {
			return nil
		}
		if err == nil {
			for _, p := range res.Lost {
				stop(p) // fenced: the run stops without committing
			}
			for _, l := range res.Release {
				stop(l.Partition) // commits and releases on its way out
				if err := bal.Release(ctx, l.Partition); err != nil && !errors.Is(err, group.ErrFenced) && ctx.Err() == nil {
					return err
				}
			}
			for _, l := range res.Acquired {
				runCtx, cancel := context.WithCancel(ctx)
				r := &running{cancel: cancel, done: make(chan struct{})}
				runs[l.Partition] = r
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer close(r.done)
					_, _ = c.RunLease(runCtx, l, RunOptions{})
					if runCtx.Err() == nil {
						exited <- l.Partition
					}
				}()
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case p := <-exited:
			// A run ended on its own (fenced, or an error): let the balancer forget the
			// partition so a later step can take it again.
			if r, ok := runs[p]; ok {
				<-r.done
				delete(runs, p)
			}
			if err := bal.Release(ctx, p); err != nil && !errors.Is(err, group.ErrFenced) && ctx.Err() == nil {
				return err
			}
		case <-tick.C:
		}
	}
}
