package compact

import (
	"context"
	"fmt"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

// TriggerPolicy decides from a partition's dirty counter (store.DirtyCounter) whether
// an append should ask for a compaction pass of it, without reading the partition.
type TriggerPolicy struct {
	// MinDirtyRatio is the estimated superseded share that makes a partition due
	// (DefaultMinDirtyRatio when 0), the pass's own threshold (Job.MinDirtyRatio).
	MinDirtyRatio float64
	// Cooldown is how long after a request the next one may be made (default
	// HeadGuard, and never less than the topic's min.compaction.lag in Overwrote):
	// records newer than that wait whatever is asked, so asking again sooner would only
	// repeat a pass.
	Cooldown time.Duration
	// MinDirty is the fewest superseded records worth a pass (default 1).
	MinDirty int64
}

// DirtyEstimate is the trigger's estimate of a partition's superseded and visible
// records from its counter and its next offset: superseded = overwrites − removed
// (each overwrite superseded one record; each removed record was one, or an expired
// tombstone), visible = next − removed (every offset ever appended, less those
// compaction removed). The log start is not subtracted, so on a topic that also deletes
// by time the estimate errs towards a smaller ratio (fewer requests); the scheduled pass
// is the backstop.
func DirtyEstimate(c store.DirtyCounter, next int64) (superseded, visible int64) {
	return max(c.Overwrites-c.Removed, 0), max(next-c.Removed, 0)
}

// Due reports whether c, with the partition's next offset next, asks for a pass now:
// the estimated ratio reaches MinDirtyRatio, at least MinDirty records are superseded,
// and the last request is at least Cooldown old (or none was made).
func (p TriggerPolicy) Due(c store.DirtyCounter, next int64, now time.Time) bool {
	ratio, cooldown, minDirty := p.MinDirtyRatio, p.Cooldown, p.MinDirty
	if ratio <= 0 {
		ratio = DefaultMinDirtyRatio
	}
	if cooldown <= 0 {
		cooldown = HeadGuard
	}
	minDirty = max(minDirty, 1)
	dirty, visible := DirtyEstimate(c, next)
	if dirty < minDirty || visible <= 0 || float64(dirty) < ratio*float64(visible) {
		return false
	}
	return c.RequestedAt.IsZero() || !now.Before(c.RequestedAt.Add(cooldown))
}

// Trigger is the dirty-ratio trigger of the append path, for any number of hosts: each
// append request that overwrote keys of a compacted partition adds them to the
// partition's shared counter (one write: store.DirtyCounterStore.AddOverwrites answers
// the counter after it), and when the counter says the partition is due, the host
// claims the request with a conditional write on the time of the last one
// (ClaimCompaction), so that of the hosts finding it due at once exactly one asks; the
// winner asks for a pass with Start (an asynchronous invocation of the compaction
// function). A request without overwrites costs nothing.
type Trigger struct {
	Store  store.DirtyCounterStore
	Policy TriggerPolicy
	// Clock returns the current time; time.Now when nil.
	Clock func() time.Time
	// Start asks for a pass of the topic's partition.
	Start func(ctx context.Context, topic string, partition int32) error
}

// Overwrote records that an append request replaced n key index entries of partition
// of t (the records they named are superseded), next being the partition's next offset
// after the request's records, and asks for a pass when that makes the partition due.
// It reports whether it asked.
func (tr *Trigger) Overwrote(ctx context.Context, t store.Topic, partition int32, n, next int64) (bool, error) {
	if n <= 0 {
		return false, nil
	}
	c, err := tr.Store.AddOverwrites(ctx, t.ID(), partition, n)
	if err != nil {
		return false, fmt.Errorf("compact: count overwrites of %s/%d: %w", t.Name, partition, err)
	}
	now := time.Now()
	if tr.Clock != nil {
		now = tr.Clock()
	}
	policy := tr.Policy
	if policy.Cooldown <= 0 {
		policy.Cooldown = HeadGuard
	}
	policy.Cooldown = max(policy.Cooldown, t.MinCompactionLag)
	if !policy.Due(c, next, now) {
		return false, nil
	}
	won, err := tr.Store.ClaimCompaction(ctx, t.ID(), partition, c.RequestedAt, now)
	if err != nil {
		return false, fmt.Errorf("compact: claim the pass of %s/%d: %w", t.Name, partition, err)
	}
	if !won {
		return false, nil // another host asked for it
	}
	if err := tr.Start(ctx, t.Name, partition); err != nil {
		return false, fmt.Errorf("compact: ask for the pass of %s/%d: %w", t.Name, partition, err)
	}
	return true, nil
}
