package retention_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/retention"
	"github.com/stratalog/strata/pkg/store"
)

// TestPurgeDeletedTopic: a deleted topic refuses appends at once; past the margin the
// pass deletes its objects, index entries and groups' positions, then its row; the name
// can be created again and continues at the old offsets.
func TestPurgeDeletedTopic(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s)
		f.append(t, 3)
		coord := group.New(s.Meta, f.l, func() time.Time { return f.now })
		l, err := coord.Acquire(ctx, "billing", "r", 0, "m", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := coord.Commit(ctx, "billing", "r", 0, "m", l.Generation, 2); err != nil {
			t.Fatal(err)
		}
		if err := coord.Release(ctx, "billing", "r", 0, "m", l.Generation); err != nil {
			t.Fatal(err)
		}
		if err := f.l.DeleteTopic(ctx, "r"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.l.Append(ctx, "r", []log.Record{{Value: []byte("late")}}, log.AppendOptions{}); !errors.Is(err, log.ErrTopicNotFound) {
			t.Fatalf("append to a deleted topic: %v, want ErrTopicNotFound", err)
		}
		if names, err := f.l.ListTopics(ctx); err != nil || len(names) != 0 {
			t.Fatalf("ListTopics after delete = %v, %v", names, err)
		}
		if err := f.l.DeleteTopic(ctx, "r"); !errors.Is(err, log.ErrTopicNotFound) {
			t.Fatalf("second delete: %v", err)
		}
		if _, err := f.l.CreateTopic(ctx, "r", 1, time.Hour); !errors.Is(err, log.ErrTopicExists) {
			t.Fatalf("create before the purge: %v, want ErrTopicExists", err)
		}

		// Within the margin nothing is purged.
		if st := f.run(t, retention.Job{}); st.TopicsPurged != 0 || f.objects(t) == 0 {
			t.Fatalf("purged within the margin: %+v", st)
		}
		f.now = f.now.Add(6 * time.Minute)
		st := f.run(t, retention.Job{})
		if st.TopicsPurged != 1 || f.objects(t) != 0 {
			t.Fatalf("after the margin: %+v, %d objects left", st, f.objects(t))
		}
		if es, err := s.Meta.IndexEntries(ctx, "r", 0, 0, 10); err != nil || len(es) != 0 {
			t.Fatalf("index entries left: %+v, %v", es, err)
		}
		if _, err := s.Meta.GetCommit(ctx, "billing", "r", 0); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the group's position survived: %v", err)
		}
		if _, err := s.Meta.GetTopic(ctx, "r"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the row survived: %v", err)
		}

		// Re-created, the name continues at the old offsets: nothing is reused.
		if _, err := f.l.CreateTopic(ctx, "r", 1, time.Hour); err != nil {
			t.Fatal(err)
		}
		res, err := f.l.Append(ctx, "r", []log.Record{{Value: []byte("again")}}, log.AppendOptions{})
		if err != nil || res[0].Offset != 3 {
			t.Fatalf("append to the re-created topic: %+v, %v; want offset 3", res, err)
		}
		if start, hw := f.bounds(t); start != 3 || hw != 4 {
			t.Fatalf("bounds of the re-created topic [%d, %d), want [3, 4)", start, hw)
		}
	})
}
