package consumer_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/internal/clocktest"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
)

// writeCounter counts the lease and commit writes a run sends to the coordinator.
type writeCounter struct {
	*group.Coordinator
	renews, commits, renewingCommits, releases, releasingCommits atomic.Int64
}

func (c *writeCounter) Renew(ctx context.Context, g, t string, p int32, m string, gen int64, ttl time.Duration) (group.Lease, error) {
	c.renews.Add(1)
	return c.Coordinator.Renew(ctx, g, t, p, m, gen, ttl)
}

func (c *writeCounter) Commit(ctx context.Context, g, t string, p int32, m string, gen, next int64, completed ...store.OffsetRange) error {
	c.commits.Add(1)
	return c.Coordinator.Commit(ctx, g, t, p, m, gen, next, completed...)
}

func (c *writeCounter) CommitAt(ctx context.Context, g, t string, p int32, m string, gen, next int64, opts group.CommitOptions) error {
	c.commits.Add(1)
	switch {
	case opts.Release:
		c.releasingCommits.Add(1)
	case opts.RenewTTL > 0:
		c.renewingCommits.Add(1)
	}
	return c.Coordinator.CommitAt(ctx, g, t, p, m, gen, next, opts)
}

func (c *writeCounter) Release(ctx context.Context, g, t string, p int32, m string, gen int64) error {
	c.releases.Add(1)
	return c.Coordinator.Release(ctx, g, t, p, m, gen)
}

// tickingLog moves the clock by step at every poll, and while records is positive
// appends one record before the poll: the partition is busy, one record a step, then
// idle.
type tickingLog struct {
	*log.Log
	clock   *clocktest.Clock
	step    time.Duration
	records *atomic.Int64
	polls   atomic.Int64
	// marks are closed when the poll of their number is made (read-only once polling).
	marks map[int64]chan struct{}
	t     *testing.T
}

func (l *tickingLog) Poll(ctx context.Context, topic string, partition int32, offset int64, opt log.PollOptions) (log.PollResult, error) {
	l.clock.Advance(l.step)
	if ch, ok := l.marks[l.polls.Add(1)]; ok {
		close(ch)
	}
	if l.records.Add(-1) >= 0 {
		p := int32(0)
		if _, err := l.Log.Append(ctx, "orders", []log.Record{{Value: []byte("v"), Partition: &p}}, log.AppendOptions{}); err != nil {
			l.t.Error(err)
		}
	}
	return l.Log.Poll(ctx, topic, partition, offset, opt)
}

// TestWritesFollowProgress: a run commits only when its checkpoint moved, each commit
// renews the lease, and the renewal goes alone only every TTL/3 when nothing moved. A
// busy minute (a record a second, commit interval 10 s) writes a renewing commit each
// 10 s and no renewal besides; the idle minute after it writes no commit and a renewal
// each 10 s; the run's end releases the lease in its last commit or, with nothing to
// commit, alone.
func TestWritesFollowProgress(t *testing.T) {
	ctx := context.Background()
	s := backendtest.Local(ctx, t)
	f := newFixture(t, s, "orders", 0)
	clock := clocktest.New(time.Now())
	coord := &writeCounter{Coordinator: group.New(s.Meta, f.log, clock.Now)}
	var records atomic.Int64
	busyEnd, idleEnd := make(chan struct{}), make(chan struct{})
	tl := &tickingLog{Log: f.log, clock: clock, step: time.Second, records: &records, t: t,
		marks: map[int64]chan struct{}{61: busyEnd, 121: idleEnd}}
	c, err := consumer.New(tl, coord, consumer.Config{Group: "billing", Topic: "orders", Member: "m-1",
		Handler: func(context.Context, consumer.Record) error { return nil }, Clock: clock.Now,
		LeaseTTL: 30 * time.Second, CommitInterval: 10 * time.Second, PollWait: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	records.Store(60)
	done := make(chan consumer.Stats)
	go func() {
		st, err := c.Run(runCtx, 0, consumer.RunOptions{})
		if err != nil {
			t.Error(err)
		}
		done <- st
	}()
	<-busyEnd // the clock moves with the run's polls
	busyCommits, busyRenews, busyRenewing := coord.commits.Load(), coord.renews.Load(), coord.renewingCommits.Load()
	<-idleEnd
	stop()
	st := <-done

	if st.Committed != 60 {
		t.Fatalf("committed %d, want 60", st.Committed)
	}
	// The first commit records where the new group starts; then one per 10 s.
	if busyRenews != 0 || busyRenewing < 5 || busyCommits > 8 {
		t.Errorf("busy minute: %d commits (%d renewing) and %d renewals alone; want about 6 renewing commits and none alone", busyCommits, busyRenewing, busyRenews)
	}
	idleCommits := coord.commits.Load() - busyCommits - coord.releasingCommits.Load()
	idleRenews := coord.renews.Load() - busyRenews
	if idleCommits > 1 || idleRenews < 4 || idleRenews > 7 {
		t.Errorf("idle minute: %d commits and %d renewals; want at most the last busy one and a renewal each 10 s", idleCommits, idleRenews)
	}
	if coord.releasingCommits.Load()+coord.releases.Load() != 1 {
		t.Errorf("%d releasing commits and %d releases, want one release", coord.releasingCommits.Load(), coord.releases.Load())
	}
	t.Logf("busy minute: %d commits (%d renewing), %d renewals alone; idle minute: %d commits, %d renewals; end: %d releasing commits, %d releases",
		busyCommits, busyRenewing, busyRenews, idleCommits, idleRenews, coord.releasingCommits.Load(), coord.releases.Load())
}
