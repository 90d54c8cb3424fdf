package consumer

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/stratalog/strata/pkg/checkpoint"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// Remembered acks: every commit carries, besides the next offset, the ranges above it
// that this run has completed (at most wire.MaxCompletedRanges, lowest first), and a run
// seeds its tracker with the ranges its lease returns, so a crash or a move replays only
// what was in flight instead of everything after the first straggler.

// remember seeds the tracker with the completed ranges of the lease's last commit.
func (r *run) remember(rs []store.OffsetRange) {
	if len(rs) == 0 {
		return
	}
	cs := make([]checkpoint.Range, len(rs))
	for i, x := range rs {
		cs[i] = checkpoint.Range{From: x.From, To: x.To}
	}
	r.tracker.Remember(cs)
	r.saved = cs
}

// leaseWrite is what a commit does to the lease besides checking it, when the
// coordinator can (LeaseCommitter): renew it (a commit while the run goes on) or release
// it (the run's last commit).
type leaseWrite int

const (
	leaseRenew leaseWrite = iota
	leaseRelease
)

// commitCheckpoint commits the tracker's checkpoint when it moved since the last
// commit: a higher next offset, or other completed ranges above it. With a
// LeaseCommitter the commit also renews or releases the lease, as lw says.
func (r *run) commitCheckpoint(ctx context.Context, lw leaseWrite) error {
	at := r.tracker.Completions()
	next, completed := r.tracker.Checkpoint(wire.MaxCompletedRanges)
	if next < r.committed || (next == r.committed && slices.Equal(completed, r.saved)) {
		r.savedAt = at
		return nil
	}
	cfg := r.c.cfg
	rs := make([]store.OffsetRange, len(completed))
	for i, x := range completed {
		rs[i] = store.OffsetRange{From: x.From, To: x.To}
	}
	sent := cfg.Clock()
	var err error
	if r.leaseCommits != nil {
		opts := group.CommitOptions{Completed: rs, RenewTTL: cfg.LeaseTTL, Release: lw == leaseRelease}
		err = r.leaseCommits.CommitAt(ctx, cfg.Group, r.lease.TopicRef(), r.p, cfg.Member, r.lease.Generation, next, opts)
	} else {
		err = r.c.coord.Commit(ctx, cfg.Group, r.lease.TopicRef(), r.p, cfg.Member, r.lease.Generation, next, rs...)
	}
	if err != nil {
		if errors.Is(err, group.ErrFenced) {
			return r.fence(err)
		}
		return fmt.Errorf("consumer: commit %s/%d@%d: %w", cfg.Topic, r.p, next, err)
	}
	switch {
	case r.leaseCommits != nil && lw == leaseRelease:
		r.released = true
	case r.leaseCommits != nil:
		r.renewed(sent)
	}
	r.committed, r.stats.Committed = next, next
	r.saved, r.savedAt = completed, at
	return nil
}
