package retention

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

// purgeDeleted removes what is left of deleted incarnations whose deletion is older than
// the margin (by then no append that read the topic before its deletion can still
// commit, as the log commits only within its commit window, and every node's topic cache
// has expired): each partition's log start moves to its high watermark, its index
// entries and the incarnation's segment objects are deleted, the groups' positions and
// parked keys on it are dropped, its key index (a compacted topic's) goes, and last the
// store purges
// the incarnation's counters (and claims where it can) with its record. Nothing of
// another incarnation of the name is touched. A step that fails (or a group still
// holding a live lease there) leaves the record for the next pass, which starts over.
func (j *Job) purgeDeleted(ctx context.Context, now time.Time, margin time.Duration, st *Stats) error {
	admin, ok := j.Meta.(store.TopicAdminStore)
	if !ok {
		return nil
	}
	deleted, err := admin.DeletedTopics(ctx)
	if err != nil {
		return fmt.Errorf("retention: list deleted topics: %w", err)
	}
	var errs []error
	for _, d := range deleted {
		if now.Sub(d.DeletedAt) < margin {
			continue
		}
		if err := j.purge(ctx, admin, d.Topic, now, st); err != nil {
			errs = append(errs, fmt.Errorf("retention: purge deleted topic %s (incarnation %q): %w", d.Name, d.Incarnation, err))
		}
	}
	return errors.Join(errs...)
}

func (j *Job) purge(ctx context.Context, admin store.TopicAdminStore, t store.Topic, now time.Time, st *Stats) error {
	id := t.ID()
	for p := int32(0); p < t.Partitions; p++ {
		seq, err := j.Meta.Sequencer(ctx, id, p)
		if err != nil {
			return err
		}
		if err := j.Meta.AdvanceLogStart(ctx, id, p, seq.NextOffset); err != nil {
			return err
		}
		for {
			es, err := j.Meta.IndexEntries(ctx, id, p, 0, pageSize)
			if err != nil {
				return err
			}
			if len(es) == 0 {
				break
			}
			for _, e := range es {
				if err := j.Meta.DeleteIndexEntry(ctx, id, p, e.BaseOffset); err != nil {
					return err
				}
				st.EntriesDeleted++
			}
		}
	}
	// Every object of the incarnation: none can be written any more.
	if err := j.objects(ctx, t, now.Add(time.Hour), st); err != nil {
		return err
	}
	if err := j.dropPositions(ctx, id, now, st); err != nil {
		return err
	}
	// Only a compacted topic has key rows and dirty counters (and a compacted topic is
	// never turned back to delete): finding them costs DynamoDB a scan of the index
	// table, which no other topic's purge should pay.
	if p, ok := j.Meta.(store.IncarnationPurger); ok && t.Compacted() {
		kctx, cancel := context.WithTimeout(ctx, j.keyPurgeBudget())
		n, err := p.PurgeKeys(kctx, id, t.Partitions)
		cut := kctx.Err() != nil && ctx.Err() == nil
		cancel()
		st.KeysDeleted += n
		switch {
		case err != nil && cut:
			st.KeyPurgesCut++ // the rest are left: nothing reads them
		case err != nil:
			return fmt.Errorf("key index: %w", err)
		}
	}
	if err := admin.PurgeTopic(ctx, t.Name, t.Incarnation); err != nil {
		return err
	}
	st.TopicsPurged++
	return nil
}

// dropPositions deletes every group's positions on the incarnation id (fencing its
// leases), then the group's parked keys there: groups keep both per incarnation
// (group.ByIncarnation), so those of a topic created again under the name are not
// touched.
func (j *Job) dropPositions(ctx context.Context, id string, now time.Time, st *Stats) error {
	groups, ok := j.Meta.(store.GroupAdminStore)
	if !ok {
		return nil
	}
	parked, purges := j.Meta.(store.IncarnationPurger)
	names, err := groups.ListGroups(ctx)
	if err != nil {
		return err
	}
	for _, g := range names {
		if err := groups.DeleteCommits(ctx, g, id, now); err != nil {
			return fmt.Errorf("positions of group %s: %w", g, err)
		}
		if purges {
			n, err := parked.PurgeParked(ctx, g, id)
			st.ParkedDeleted += n
			if err != nil {
				return fmt.Errorf("parked keys of group %s: %w", g, err)
			}
		}
	}
	return nil
}
