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
