package retention

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

// purgeDeleted removes what is left of deleted topics whose tombstone is older than the
// margin (by then no append that read the topic before its deletion can still commit,
// as the log commits only within its commit window, and every node's topic cache has
// expired): each partition's log start moves to its high watermark, its index entries
// and the topic's segment objects are deleted, every group's positions on it are
// dropped, and last the row goes. The sequencer counters stay, so a topic created again
// under the name continues at the old offsets. A step that fails (or a group still
// holding a live lease there) leaves the row for the next pass, which starts over.
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
			errs = append(errs, fmt.Errorf("retention: purge deleted topic %s: %w", d.Name, err))
		}
	}
	return errors.Join(errs...)
}

func (j *Job) purge(ctx context.Context, admin store.TopicAdminStore, t store.Topic, now time.Time, st *Stats) error {
	for p := int32(0); p < t.Partitions; p++ {
		seq, err := j.Meta.Sequencer(ctx, t.Name, p)
		if err != nil {
			return err
		}
		if err := j.Meta.AdvanceLogStart(ctx, t.Name, p, seq.NextOffset); err != nil {
			return err
		}
		for {
			es, err := j.Meta.IndexEntries(ctx, t.Name, p, 0, pageSize)
			if err != nil {
				return err
			}
			if len(es) == 0 {
				break
			}
			for _, e := range es {
				if err := j.Meta.DeleteIndexEntry(ctx, t.Name, p, e.BaseOffset); err != nil {
					return err
				}
				st.EntriesDeleted++
			}
		}
	}
	// Every object of the topic: none can be written any more.
	if err := j.objects(ctx, t, now.Add(time.Hour), st); err != nil {
		return err
	}
	if groups, ok := j.Meta.(store.GroupAdminStore); ok {
		names, err := groups.ListGroups(ctx)
		if err != nil {
			return err
		}
		for _, g := range names {
			if err := groups.DeleteCommits(ctx, g, t.Name, now); err != nil {
				return fmt.Errorf("positions of group %s: %w", g, err)
			}
		}
	}
	if err := admin.PurgeTopic(ctx, t.Name); err != nil {
		return err
	}
	st.TopicsPurged++
	return nil
}
