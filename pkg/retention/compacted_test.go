package retention_test

import (
	"context"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/retention"
	"github.com/stratalog/strata/pkg/store"
)

// compactOnly reads every topic as cleanup.policy=compact.
type compactOnly struct{ retention.Meta }

func (c compactOnly) GetTopic(ctx context.Context, name string) (store.Topic, error) {
	t, err := c.Meta.GetTopic(ctx, name)
	t.Cleanup = store.CleanupCompact
	return t, err
}

// TestCompactOnlyTopicNotExpiredByTime: retention leaves a compact-only topic's log start,
// entries and objects alone however old its records are; a compact,delete one expires
// by time as any other.
func TestCompactOnlyTopicNotExpiredByTime(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		f := newFixture(t, s)
		f.append(t, 3)
		objs := f.objects(t)
		f.now = f.now.Add(3 * time.Hour)
		st, err := (&retention.Job{Meta: compactOnly{s.Meta}, Objects: s.Objects, Clock: func() time.Time { return f.now }}).Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if start, _ := f.bounds(t); start != 0 || st.RecordsExpired != 0 || f.objects(t) != objs {
			t.Fatalf("compact only: log start %d, %+v, %d objects of %d", start, st, f.objects(t), objs)
		}
		f.run(t, retention.Job{})
		if start, _ := f.bounds(t); start != 3 {
			t.Fatalf("delete: log start %d, want 3", start)
		}
	})
}
