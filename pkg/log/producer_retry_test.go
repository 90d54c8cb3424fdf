package log_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/internal/clocktest"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// Producer retries decided by the state the store holds, whatever the hosts' clocks,
// commit windows and the retry's delay: each host is a Log of its own over the same
// stores, with its own clock and commit window.

// host is a Log over s with its own clock and commit window (0: the default), and its
// metadata store meta (s.Meta when nil).
func host(t testing.TB, s backendtest.Stores, clock func() time.Time, window time.Duration, meta store.MetaStore) *log.Log {
	t.Helper()
	if meta == nil {
		meta = s.Meta
	}
	l, err := log.New(log.Config{Objects: s.Objects, Meta: meta, Clock: clock, CommitWindow: window})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// markOf is the batch mark a client has after an answer of l about topic (the zero
// mark when l knows none).
func markOf(l *log.Log, topic string) wire.BatchMark {
	m, _ := l.BatchMark(topic)
	return m
}

// delayedRetry is a retry whose client sent it elapsed after the first attempt.
func delayedRetry(key string, attempt int32, floor wire.BatchMark, elapsed time.Duration) log.AppendOptions {
	opt := retryFrom(key, attempt, floor)
	opt.RetryElapsed = elapsed
	return opt
}

// TestProducerRetryDelayedInTransitNotDuplicated: the client sends its retry a second
// after the first attempt, whose answer was lost, and the retry spends 90 s on the way
// (a slow upload, a cold start) while other producers' batches are appended. The retry
// finds the first attempt and appends nothing.
func TestProducerRetryDelayedInTransitNotDuplicated(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		clk := clocktest.New(time.Now())
		a := host(t, s, clk.Now, 0, nil)
		mustTopic(t, a, "orders", 2)
		backendtest.Materialise(t, s, a)
		if _, err := a.Append(ctx, "orders", producerRecords("before", 2, 2), firstSend("p0.0")); err != nil {
			t.Fatal(err)
		}
		floor := markOf(a, "orders")
		recs := producerRecords("lost", 4, 2)
		first, err := a.Append(ctx, "orders", recs, firstSend("p1.0"))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			clk.Advance(20 * time.Second)
			if _, err := a.Append(ctx, "orders", producerRecords(fmt.Sprintf("other%d", i), 2, 2), firstSend(fmt.Sprintf("p2.%d", i))); err != nil {
				t.Fatal(err)
			}
		}
		clk.Advance(10 * time.Second)
		hw := hws(t, a, "orders")
		b := host(t, s, clk.Now, 0, nil)
		again, err := b.Append(ctx, "orders", recs, delayedRetry("p1.0", 1, floor, time.Second))
		if err != nil {
			t.Fatal(err)
		}
		sameResults(t, "the delayed retry's answer", first, again)
		if hw2 := hws(t, b, "orders"); !slices.Equal(hw2, hw) {
			t.Fatalf("the delayed retry appended: high watermarks %v → %v", hw, hw2)
		}
		mustOnce(t, countValues(t, b, "orders", 2), recs)
	})
}

// keyedOn are n keyed records whose keys PartitionForKey places, over parts partitions,
// on partitions from lo up only.
func keyedOn(tag string, n int, parts, lo int32) []log.Record {
	var recs []log.Record
	for i := 0; len(recs) < n; i++ {
		k := fmt.Appendf(nil, "%s-key-%d", tag, i)
		if log.PartitionForKey(k, parts) >= lo {
			recs = append(recs, log.Record{Key: k, Value: fmt.Appendf(nil, "%s-%d", tag, len(recs))})
		}
	}
	return recs
}

// TestProducerRetryStalePartitionCountNotDuplicated: the topic grew from 2 partitions to
// 4; the first attempt of a request of keyed records (JSON), on a host that knows it,
// lands on partitions 2 and 3 only and its answer is lost; the retry reaches a host
// whose cached count is still 2. The retry finds the attempt on the partitions its host
// does not know of, answers its offsets and appends nothing.
func TestProducerRetryStalePartitionCountNotDuplicated(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		clk := clocktest.New(time.Now())
		a := host(t, s, clk.Now, 0, nil)
		mustTopic(t, a, "orders", 2)
		backendtest.Materialise(t, s, a)
		stale := host(t, s, clk.Now, 0, nil)
		if _, err := stale.Append(ctx, "orders", producerRecords("before", 2, 2), firstSend("p0.0")); err != nil {
			t.Fatal(err)
		}
		floor := markOf(stale, "orders")
		if _, err := a.IncreasePartitions(ctx, "orders", 4); err != nil {
			t.Fatal(err)
		}
		recs := keyedOn("k", 4, 4, 2)
		first, err := a.Append(ctx, "orders", recs, firstSend("p1.0"))
		if err != nil {
			t.Fatal(err)
		}
		hw := hws(t, a, "orders")
		again, err := stale.Append(ctx, "orders", recs, retryFrom("p1.0", 1, floor))
		if err != nil {
			t.Fatal(err)
		}
		sameResults(t, "the stale host's answer", first, again)
		if hw2 := hws(t, a, "orders"); !slices.Equal(hw2, hw) {
			t.Fatalf("the retry on the stale host appended: high watermarks %v → %v", hw, hw2)
		}
		mustOnce(t, countValues(t, a, "orders", 4), recs)
	})
}

// TestProducerRetryAfterRetentionRefused: retention removes the first attempt (its
// answer lost) before the retry arrives. The retry cannot tell whether the request is in
// the log: it is refused (ErrRetryUndecided) with nothing appended, never appended again.
func TestProducerRetryAfterRetentionRefused(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		clk := clocktest.New(time.Now())
		a := host(t, s, clk.Now, 0, nil)
		mustTopic(t, a, "orders", 2)
		backendtest.Materialise(t, s, a)
		if _, err := a.Append(ctx, "orders", producerRecords("before", 2, 2), firstSend("p0.0")); err != nil {
			t.Fatal(err)
		}
		floor := markOf(a, "orders")
		recs := producerRecords("expired", 4, 2)
		if _, err := a.Append(ctx, "orders", recs, firstSend("p1.0")); err != nil {
			t.Fatal(err)
		}
		// Retention, as the retention job does it: the log start moves past every
		// record, then the entries below it go.
		id, err := a.TopicID(ctx, "orders")
		if err != nil {
			t.Fatal(err)
		}
		for p, hw := range hws(t, a, "orders") {
			if err := s.Meta.AdvanceLogStart(ctx, id, int32(p), hw); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Meta.DeleteIndexRange(ctx, id, int32(p), hw); err != nil {
				t.Fatal(err)
			}
		}
		clk.Advance(30 * time.Second)
		if _, err := a.Append(ctx, "orders", producerRecords("after", 2, 2), firstSend("p2.0")); err != nil {
			t.Fatal(err)
		}
		hw := hws(t, a, "orders")
		_, err = host(t, s, clk.Now, 0, nil).Append(ctx, "orders", recs, retryFrom("p1.0", 1, floor))
		if !errors.Is(err, log.ErrRetryUndecided) {
			t.Fatalf("a retry whose first attempt retention removed: %v, want ErrRetryUndecided", err)
		}
		if hw2 := hws(t, a, "orders"); !slices.Equal(hw2, hw) {
			t.Fatalf("the refused retry appended: high watermarks %v → %v", hw, hw2)
		}
	})
}

// TestProducerRetryHostsWithDifferentCommitWindows: host C (commit window 60 s) stamps
// a large batch and commits it 55 s later, after the first attempt of a request on host
// A committed below it; the retry reaches host B, whose commit window is 5 s. The retry
// finds the attempt under C's batch and appends nothing.
func TestProducerRetryHostsWithDifferentCommitWindows(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		clk := clocktest.New(time.Now())
		a := host(t, s, clk.Now, time.Minute, nil)
		mustTopic(t, a, "orders", 1)
		backendtest.Materialise(t, s, a)
		if _, err := a.Append(ctx, "orders", producerRecords("before", 1, 1), firstSend("p0.0")); err != nil {
			t.Fatal(err)
		}
		floor := markOf(a, "orders")
		clk.Advance(10 * time.Second)
		gm := newGatedMeta(s.Meta)
		c := host(t, s, clk.Now, time.Minute, gm)
		slowErr := make(chan error, 1)
		go func() {
			_, err := c.Append(ctx, "orders", producerRecords("big", 600, 1), log.AppendOptions{})
			slowErr <- err
		}()
		<-gm.entered
		clk.Advance(30 * time.Second)
		recs := producerRecords("lost", 4, 1)
		first, err := a.Append(ctx, "orders", recs, firstSend("p1.0"))
		if err != nil {
			t.Fatal(err)
		}
		clk.Advance(25 * time.Second)
		close(gm.release)
		if err := <-slowErr; err != nil {
			t.Fatal(err)
		}
		clk.Advance(5 * time.Second)
		hw := hws(t, a, "orders")
		b := host(t, s, clk.Now, 5*time.Second, nil)
		again, err := b.Append(ctx, "orders", recs, delayedRetry("p1.0", 1, floor, 30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		sameResults(t, "the retry's answer", first, again)
		if hw2 := hws(t, b, "orders"); !slices.Equal(hw2, hw) {
			t.Fatalf("the retry appended: high watermarks %v → %v", hw, hw2)
		}
		mustOnce(t, countValues(t, b, "orders", 1), recs)
	})
}
