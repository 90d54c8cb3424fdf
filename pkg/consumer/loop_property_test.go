package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
)

// wholeCommits answers every poll with whole commits, as the binary poll does: it
// keeps polling until the answer ends at a commit boundary the test knows, so one
// answer may hold many times MaxRecords.
type wholeCommits struct {
	consumer.Log
	ends map[int64]bool // offsets where a commit ends
}

func (w wholeCommits) Poll(ctx context.Context, topic string, partition int32, offset int64, opt log.PollOptions) (log.PollResult, error) {
	res, err := w.Log.Poll(ctx, topic, partition, offset, opt)
	for err == nil && len(res.Records) > 0 && !w.ends[res.NextOffset] {
		var more log.PollResult
		more, err = w.Log.Poll(ctx, topic, partition, res.NextOffset, log.PollOptions{MaxRecords: opt.MaxRecords})
		if err == nil {
			res.Records = append(res.Records, more.Records...)
			res.NextOffset, res.HighWatermark = more.NextOffset, more.HighWatermark
		}
	}
	return res, err
}

// TestRunLoopHandlesAndCommitsEverything: whatever the commit sizes (up to many times
// the poll size and the window), workers, key ordering and transient handler failures,
// a run until caught up handles every record, commits the high watermark, and with
// OrderedKeys completes each key's records in offset order.
func TestRunLoopHandlesAndCommitsEverything(t *testing.T) {
	ctx := context.Background()
	s := backendtest.Local(ctx, t)
	l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta})
	if err != nil {
		t.Fatal(err)
	}
	coord := group.New(s.Meta, l, nil)
	iteration := 0
	rapid.Check(t, func(rt *rapid.T) {
		iteration++
		topic := fmt.Sprintf("prop-%d", iteration)
		if _, err := l.CreateTopic(ctx, topic, 1, 0); err != nil {
			rt.Fatal(err)
		}
		p := int32(0)
		ends := map[int64]bool{}
		var total int64
		for _, n := range rapid.SliceOfN(rapid.IntRange(1, 300), 1, 6).Draw(rt, "commits") {
			recs := make([]log.Record, n)
			for i := range recs {
				recs[i] = log.Record{Key: fmt.Appendf(nil, "k%d", (int(total)+i)%5), Value: []byte("v"), Partition: &p}
			}
			if _, err := l.Append(ctx, topic, recs, log.AppendOptions{}); err != nil {
				rt.Fatal(err)
			}
			total += int64(n)
			ends[total] = true
		}
		workers := rapid.IntRange(1, 4).Draw(rt, "workers")
		ordered := rapid.Bool().Draw(rt, "ordered")
		pollRecords := rapid.IntRange(1, 50).Draw(rt, "pollRecords")
		maxInFlight := rapid.IntRange(1, 100).Draw(rt, "maxInFlight")
		failEvery := rapid.IntRange(0, 7).Draw(rt, "failEvery") // 0: no failures

		var mu sync.Mutex
		done := map[int64]int{}
		lastByKey := map[string]int64{}
		orderBroken := ""
		failed := map[int64]bool{}
		h := func(_ context.Context, r consumer.Record) error {
			mu.Lock()
			defer mu.Unlock()
			if failEvery > 0 && r.Offset%int64(failEvery) == 0 && !failed[r.Offset] {
				failed[r.Offset] = true
				return errors.New("transient")
			}
			done[r.Offset]++
			if last, ok := lastByKey[string(r.Key)]; ordered && ok && last > r.Offset && orderBroken == "" {
				orderBroken = fmt.Sprintf("key %s: offset %d after %d", r.Key, r.Offset, last)
			}
			lastByKey[string(r.Key)] = r.Offset
			return nil
		}
		cons, err := consumer.New(wholeCommits{Log: l, ends: ends}, coord, consumer.Config{Group: "g", Topic: topic, Member: "m",
			Handler: h, Workers: workers, OrderedKeys: ordered, PollRecords: pollRecords, MaxInFlight: maxInFlight,
			MaxAttempts: 3, Backoff: func(int) time.Duration { return 0 }, PollWait: time.Millisecond, CommitInterval: time.Millisecond,
			LeaseTTL: 30 * time.Second})
		if err != nil {
			rt.Fatal(err)
		}
		runCtx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		st, err := cons.Run(runCtx, 0, consumer.RunOptions{UntilCaughtUp: true})
		if err != nil {
			rt.Fatalf("run: %v", err)
		}
		if st.Committed != total || st.Handled != total || st.Dropped != 0 {
			rt.Fatalf("stats %+v; want %d handled and committed", st, total)
		}
		for o := range total {
			if done[o] != 1 {
				rt.Fatalf("offset %d handled %d times", o, done[o])
			}
		}
		if orderBroken != "" {
			rt.Fatal(orderBroken)
		}
	})
}
