package consumer_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
)

// largeCommits makes a log over objs and meta with one partition holding commits
// commits of perCommit records each.
func largeCommits(t *testing.T, s backendtest.Stores, objs store.ObjectStore, meta log.Meta, commits, perCommit int) *fixture {
	t.Helper()
	ctx := context.Background()
	l, err := log.New(log.Config{Objects: objs, Meta: meta})
	if err != nil {
		t.Fatal(err)
	}
	backendtest.Materialise(t, s, l)
	if _, err := l.CreateTopic(ctx, "orders", 1, 0); err != nil {
		t.Fatal(err)
	}
	p := int32(0)
	for c := range commits {
		recs := make([]log.Record, perCommit)
		for i := range recs {
			recs[i] = log.Record{Key: fmt.Appendf(nil, "order-%d", i%7), Value: fmt.Appendf(nil, "event-%d-%d", c, i), Partition: &p}
		}
		if _, err := l.Append(ctx, "orders", recs, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return &fixture{stores: s, log: l, coord: group.New(s.Meta, l, nil)}
}

// countOnce is a handler that counts how often each offset is handled.
func countOnce(n int) ([]atomic.Int32, consumer.Handler) {
	seen := make([]atomic.Int32, n)
	return seen, func(_ context.Context, r consumer.Record) error {
		seen[r.Offset].Add(1)
		return nil
	}
}

func onceEach(t *testing.T, seen []atomic.Int32) {
	t.Helper()
	for o := range seen {
		if n := seen[o].Load(); n != 1 {
			t.Fatalf("offset %d handled %d times; want once", o, n)
		}
	}
}

// TestCommitLargerThanAPollIsReadOnce: commits of 625 records (a producer's batch at the
// design workload's 10 producers) polled 500 records at a time are each read from their
// object once, not once per poll they would be cut into, and every record is handled
// and committed; a run following the log reads the partition's bounds and index
// eventually consistently.
func TestCommitLargerThanAPollIsReadOnce(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		const commits, perCommit = 4, 625
		objs := &backendtest.CountingGets{ObjectStore: s.Objects}
		meta := &backendtest.LaggingReplica{MetaStore: s.Meta}
		f := largeCommits(t, s, objs, meta, commits, perCommit)
		seen, h := countOnce(commits * perCommit)
		c := f.consumer(t, "billing", "b-1", h, func(c *consumer.Config) { c.PollRecords = 500 })
		before := objs.Gets.Load()
		ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
		defer stop()
		go func() {
			for f.committedOr(ctx, "billing") < commits*perCommit && ctx.Err() == nil {
				time.Sleep(5 * time.Millisecond)
			}
			stop()
		}()
		if _, err := c.Run(ctx, 0, consumer.RunOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := f.committedOr(context.Background(), "billing"); got != commits*perCommit {
			t.Fatalf("committed %d, want %d", got, commits*perCommit)
		}
		if got := objs.Gets.Load() - before; got != commits {
			t.Errorf("the consumer read segment objects %d times for %d commits; want one read a commit", got, commits)
		}
		if meta.Eventual.Load() == 0 || meta.EventualIndex.Load() == 0 {
			t.Errorf("a run following the log read the partition's bounds (%d) or its index (%d) only strongly consistently",
				meta.Eventual.Load(), meta.EventualIndex.Load())
		}
		onceEach(t, seen)
	})
}

// TestRunUntilCaughtUpSeesEveryAcknowledgedRecord: a run until caught up ends having
// handled every record acknowledged before it started, even when a replica of the
// partition's bounds lags behind the last commits: it reads the bounds strongly.
func TestRunUntilCaughtUpSeesEveryAcknowledgedRecord(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		const commits, perCommit = 3, 40
		meta := &backendtest.LaggingReplica{MetaStore: s.Meta}
		f := largeCommits(t, s, s.Objects, meta, commits, perCommit)
		topicID, err := f.log.TopicID(context.Background(), "orders")
		if err != nil {
			t.Fatal(err)
		}
		meta.Freeze(t, topicID, 0) // the replica has every commit; then one more lands on the leader only
		p := int32(0)
		if _, err := f.log.Append(context.Background(), "orders", []log.Record{{Value: []byte("late"), Partition: &p}}, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		seen, h := countOnce(commits*perCommit + 1)
		c := f.consumer(t, "billing", "b-1", h, nil)
		if _, err := c.Run(context.Background(), 0, consumer.RunOptions{UntilCaughtUp: true}); err != nil {
			t.Fatal(err)
		}
		onceEach(t, seen)
		if got := f.committed(t, "billing"); got != commits*perCommit+1 {
			t.Fatalf("committed %d, want %d", got, commits*perCommit+1)
		}
		if n := meta.Eventual.Load() + meta.EventualIndex.Load(); n != 0 {
			t.Fatalf("a run until caught up read a replica %d times", n)
		}
	})
}
