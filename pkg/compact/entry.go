package compact

import (
	"context"
	"fmt"

	"github.com/stratalog/strata/pkg/store"
)

// Collect deletes the objects earlier rewrites of t replaced, once no reader can hold
// them: the step Topic takes after its partitions, for a caller that compacts t's
// partitions one invocation each (the compaction function's fan-out) and collects once
// per topic.
func (j *Job) Collect(ctx context.Context, t store.Topic, st *Stats) error {
	if err := j.collect(ctx, t, st); err != nil {
		return fmt.Errorf("compact: collect %s: %w", t.Name, err)
	}
	return nil
}

// Add returns the sum of s and o, field by field: the stats of passes run one after
// another.
func (s Stats) Add(o Stats) Stats {
	return Stats{
		PartitionsCompacted: s.PartitionsCompacted + o.PartitionsCompacted,
		Rewrites:            s.Rewrites + o.Rewrites,
		RecordsRemoved:      s.RecordsRemoved + o.RecordsRemoved,
		ObjectsDeleted:      s.ObjectsDeleted + o.ObjectsDeleted,
		EntriesKept:         s.EntriesKept + o.EntriesKept,
		ObjectsKept:         s.ObjectsKept + o.ObjectsKept,
		Gets:                s.Gets + o.Gets, Puts: s.Puts + o.Puts, Lists: s.Lists + o.Lists,
		Deletes: s.Deletes + o.Deletes, IndexReads: s.IndexReads + o.IndexReads, Swaps: s.Swaps + o.Swaps,
		Keeps: s.Keeps + o.Keeps, ExpiryClears: s.ExpiryClears + o.ExpiryClears,
	}
}
