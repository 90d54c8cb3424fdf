package retention

import (
	"context"
	"fmt"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

// PinInput is what PlanPin decides from: one partition's pass so far and the positions
// of the groups that have committed on the topic.
type PinInput struct {
	// Start is the partition's log start before the pass; Expired is the log start
	// retention alone moves it to (Start when nothing expired).
	Start, Expired int64
	// Entries are the index entries the pass found expired, in offset order, each
	// wholly below Expired.
	Entries []store.IndexEntry
	// Newest stands for the append time of offsets in [Start, Expired) past the last of
	// Entries (offsets without an entry, passed as expired): the partition's newest
	// commit's time, an upper bound of theirs.
	Newest time.Time
	// Committed are the committed offsets (next offset to read) of the groups with a
	// commit row on the partition, below Start too.
	Committed []int64
	// Retention and Pin are the topic's retention and pin cap; Now is the pass's clock.
	Retention, Pin time.Duration
	Now            time.Time
}

// PinPlan is where the partition's log start goes.
type PinPlan struct {
	// Start is the new log start: Expired, or lower where a group pins it.
	Start int64
	// Pinned reports that a group holds Start below Expired.
	Pinned bool
	// KeepFrom, when Pinned, bounds from below the append times of the records at and
	// above Start (every segment object they are in is named at or after it, give or
	// take the commit window): objects named after it minus the margin must stay.
	KeepFrom time.Time
}

// PlanPin holds a partition's log start for the groups that still need records
// retention would expire (DESIGN.md §4, "Retention pin"). A group pins from its
// committed offset c, or from Start when c is below it (records were lost already, but
// the group reads on from the oldest retained one, as its time to data loss counts),
// unless c is at or above Expired (nothing it needs expires). The log start stays at the
// lowest such c — at the end of the last expired entry at or below it, an entry
// boundary, so the entry holding c is kept whole — except that records appended at or
// before Now − Retention − Pin expire all the same: past the cap the log start moves on
// as it would without the pin, record by record, so a group's oldest unread record is
// lost exactly when its append time + Retention + Pin passes (what
// group.PlanDataLoss counts with store.Topic.KeptFor). An offset without an entry (a
// gap) is kept while the entry after it is within the cap: that entry's time bounds the
// gap's from above. With Pin 0, or no group pinning, the plan is Expired.
func PlanPin(in PinInput) PinPlan {
	plan := PinPlan{Start: in.Expired}
	if in.Pin <= 0 || in.Expired <= in.Start {
		return plan
	}
	lowest, found := in.Expired, false
	for _, c := range in.Committed {
		if c < in.Expired {
			lowest, found = min(lowest, max(c, in.Start)), true
		}
	}
	if !found {
		return plan
	}
	capCutoff := in.Now.Add(-store.SatAdd(in.Retention, in.Pin))
	hold, capStart := in.Start, in.Start
	past := true // every entry so far is past the cap
	for _, e := range in.Entries {
		if e.End() <= lowest {
			hold = e.End()
		}
		if past && !e.AppendedAt.After(capCutoff) {
			capStart = e.End()
		} else {
			past = false
		}
	}
	if past && !in.Newest.After(capCutoff) {
		capStart = in.Expired // the offsets past the last entry are past the cap too
	}
	start := max(hold, capStart)
	if start >= in.Expired {
		return plan
	}
	plan.Start, plan.Pinned = start, true
	// The records at and above start were appended no earlier than the first entry at
	// or after start, give or take the commit window (offsets follow commit order);
	// when a gap begins at start, its commits followed the entry ending there, so that
	// entry's time bounds them instead.
	plan.KeepFrom = in.Newest
	var prev time.Time
	for _, e := range in.Entries {
		if e.End() == start {
			prev = e.AppendedAt
		}
		if e.End() > start {
			plan.KeepFrom = e.AppendedAt
			if e.BaseOffset > start && !prev.IsZero() && prev.Before(plan.KeepFrom) {
				plan.KeepFrom = prev
			}
			break
		}
	}
	return plan
}

// Positions is what the pass reads of the groups to honour a topic's pin (both
// backends' MetaStore has it).
type Positions interface {
	ListGroups(ctx context.Context) ([]string, error)
	ListCommits(ctx context.Context, group string) ([]store.CommitRow, error)
}

// committed maps each topic incarnation (store.TopicID) and partition to the committed
// offsets of the groups with a commit row there. A group deleted (or whose positions on
// the topic were deleted) has no row, so it no longer pins.
func committed(ctx context.Context, pos Positions) (map[string]map[int32][]int64, error) {
	groups, err := pos.ListGroups(ctx)
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	out := map[string]map[int32][]int64{}
	for _, g := range groups {
		rows, err := pos.ListCommits(ctx, g)
		if err != nil {
			return nil, fmt.Errorf("commits of group %s: %w", g, err)
		}
		for _, r := range rows {
			if out[r.Topic] == nil {
				out[r.Topic] = map[int32][]int64{}
			}
			out[r.Topic][r.Partition] = append(out[r.Topic][r.Partition], r.NextOffset)
		}
	}
	return out, nil
}
