package consumer_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
)

// eventualReads counts the eventually consistent sequencer reads the log makes.
type eventualReads struct {
	log.Meta
	n atomic.Int64
}

func (m *eventualReads) SequencerEventual(ctx context.Context, topic string, partition int32) (store.SeqState, error) {
	m.n.Add(1)
	return m.Meta.SequencerEventual(ctx, topic, partition)
}

// TestCommitLargerThanAPollIsReadOnce: commits of 625 records (a producer's batch at the
// design workload's 10 producers) polled 500 records at a time are each read from their
// object once, not once per poll they would be cut into, and every record is handled
// and committed; the polls read the partition's bounds eventually consistently. A poll cut inside a commit made the next poll fetch the same block
// again: about two GETs a commit where one is priced.
func TestCommitLargerThanAPollIsReadOnce(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		objs := &backendtest.CountingGets{ObjectStore: s.Objects}
		meta := &eventualReads{Meta: s.Meta}
		l, err := log.New(log.Config{Objects: objs, Meta: meta})
		if err != nil {
			t.Fatal(err)
		}
		backendtest.Materialise(t, s, l)
		if _, err := l.CreateTopic(ctx, "orders", 1, 0); err != nil {
			t.Fatal(err)
		}
		const commits, perCommit = 4, 625
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
		f := &fixture{stores: s, log: l, coord: group.New(s.Meta, l, nil)}
		var handled atomic.Int64
		seenAt := make([]atomic.Int32, commits*perCommit)
		c := f.consumer(t, "billing", "b-1", func(_ context.Context, r consumer.Record) error {
			seenAt[r.Offset].Add(1)
			handled.Add(1)
			return nil
		}, func(c *consumer.Config) { c.PollRecords = 500 })
		before := objs.Gets.Load()
		if _, err := c.Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true}); err != nil {
			t.Fatal(err)
		}
		if got := objs.Gets.Load() - before; got != commits {
			t.Errorf("the consumer read segment objects %d times for %d commits; want one read a commit", got, commits)
		}
		if meta.n.Load() == 0 {
			t.Errorf("the consumer's polls read the partition's bounds only strongly consistently")
		}
		for o := range seenAt {
			if n := seenAt[o].Load(); n != 1 {
				t.Fatalf("offset %d handled %d times; want once (handled %d in all)", o, n, handled.Load())
			}
		}
		if got := f.committed(t, "billing"); got != commits*perCommit {
			t.Fatalf("committed %d, want %d", got, commits*perCommit)
		}
	})
}
