package log_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// claimCountingMeta counts the claim reads and writes an append makes.
type claimCountingMeta struct {
	store.MetaStore
	claims atomic.Int64
}

func (c *claimCountingMeta) ClaimRequest(ctx context.Context, rec store.RequestClaim) (store.RequestClaim, error) {
	c.claims.Add(1)
	return c.MetaStore.ClaimRequest(ctx, rec)
}

func (c *claimCountingMeta) GetRequestClaim(ctx context.Context, key string, parts []int32) (store.RequestClaim, error) {
	c.claims.Add(1)
	return c.MetaStore.GetRequestClaim(ctx, key, parts)
}

func (c *claimCountingMeta) ClaimIdempotency(ctx context.Context, rec store.IdempotencyRecord) error {
	c.claims.Add(1)
	return c.MetaStore.ClaimIdempotency(ctx, rec)
}

// gatedMeta holds the first SequenceBatch until release is closed: an attempt in flight
// on a slow host, its object written, its commit not yet made.
type gatedMeta struct {
	store.MetaStore
	held    atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func newGatedMeta(m store.MetaStore) *gatedMeta {
	return &gatedMeta{MetaStore: m, entered: make(chan struct{}), release: make(chan struct{})}
}

func (g *gatedMeta) SequenceBatch(ctx context.Context, cs []store.SeqCommit) ([]store.SeqCommit, []error) {
	if g.held.CompareAndSwap(false, true) {
		close(g.entered)
		<-g.release
	}
	return g.MetaStore.SequenceBatch(ctx, cs)
}

// producerRecords are n records spread over parts partitions, their values tagged.
func producerRecords(tag string, n int, parts int32) []log.Record {
	recs := make([]log.Record, n)
	for i := range recs {
		p := int32(i) % parts
		recs[i] = log.Record{Partition: &p, Value: fmt.Appendf(nil, "%s-%d", tag, i)}
	}
	return recs
}

func firstSend(key string) log.AppendOptions {
	return log.AppendOptions{IdempotencyKey: key, Producer: true, Attempt: 0, FirstAttempt: true}
}

// retryOf is a retry whose client had seen no batch mark of the topic before its first
// send: its floor is the zero mark, below every batch.
func retryOf(key string, attempt int32) log.AppendOptions {
	return retryFrom(key, attempt, wire.BatchMark{})
}

// retryFrom is a retry whose client had seen the batch mark floor before its first send.
func retryFrom(key string, attempt int32, floor wire.BatchMark) log.AppendOptions {
	return log.AppendOptions{IdempotencyKey: key, Producer: true, Attempt: attempt, RetryElapsed: 10 * time.Second, BatchFloor: &floor}
}

// countValues reads every partition and counts each value.
func countValues(t *testing.T, l *log.Log, topic string, parts int32) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for p := range parts {
		for _, r := range readAll(t, l, topic, p) {
			seen[string(r.Value)]++
		}
	}
	return seen
}

// sameResults fails unless two answers to one request give every record the same place.
func sameResults(t *testing.T, what string, want, got []log.Result) {
	t.Helper()
	for i := range want {
		if want[i] != got[i] {
			t.Fatalf("%s: record %d at %+v, want %+v", what, i, got[i], want[i])
		}
	}
}

// mustAt fails unless each record is read at the place res answered for it.
func mustAt(t *testing.T, l *log.Log, topic string, res []log.Result, recs []log.Record) {
	t.Helper()
	for i, r := range res {
		at := false
		for _, g := range readAll(t, l, topic, r.Partition) {
			at = at || (g.Offset == r.Offset && string(g.Value) == string(recs[i].Value))
		}
		if !at {
			t.Fatalf("record %d is not at the answered %d/%d", i, r.Partition, r.Offset)
		}
	}
}

func mustOnce(t *testing.T, seen map[string]int, recs []log.Record) {
	t.Helper()
	for _, r := range recs {
		if n := seen[string(r.Value)]; n != 1 {
			t.Fatalf("record %q read %d times, want once", r.Value, n)
		}
	}
}

// TestProducerFirstAttemptWritesNoClaim: a producer request's first attempt reads and
// writes no claim (fenced idempotency), on either backend, and its records are read once.
func TestProducerFirstAttemptWritesNoClaim(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		cm := &claimCountingMeta{MetaStore: s.Meta}
		l, err := log.New(log.Config{Objects: s.Objects, Meta: cm})
		if err != nil {
			t.Fatal(err)
		}
		mustTopic(t, l, "orders", 4)
		recs := producerRecords("a", 8, 4)
		if _, err := l.Append(ctx, "orders", recs, firstSend("p1.0")); err != nil {
			t.Fatal(err)
		}
		if n := cm.claims.Load(); n != 0 {
			t.Fatalf("the first attempt made %d claim reads or writes, want 0", n)
		}
		mustOnce(t, countValues(t, l, "orders", 4), recs)
	})
}

// TestProducerRetryAfterLostAnswer: the first attempt is appended and its answer lost;
// the retry, on another host, finds it in the log and answers its offsets, appending
// nothing.
func TestProducerRetryAfterLostAnswer(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		a := newLog(t, s)
		mustTopic(t, a, "orders", 4)
		backendtest.Materialise(t, s, a)
		// Other producers' requests around it, in other batches.
		if _, err := a.Append(ctx, "orders", producerRecords("before", 4, 4), firstSend("p0.0")); err != nil {
			t.Fatal(err)
		}
		recs := producerRecords("lost", 8, 4)
		first, err := a.Append(ctx, "orders", recs, firstSend("p1.7"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Append(ctx, "orders", producerRecords("after", 4, 4), firstSend("p2.0")); err != nil {
			t.Fatal(err)
		}
		hw := hws(t, a, "orders")
		b := newLog(t, s)
		again, err := b.Append(ctx, "orders", recs, retryOf("p1.7", 1))
		if err != nil {
			t.Fatal(err)
		}
		sameResults(t, "the retry's answer", first, again)
		if hw2 := hws(t, b, "orders"); !slices.Equal(hw2, hw) {
			t.Fatalf("the retry appended: high watermarks %v → %v", hw, hw2)
		}
		mustOnce(t, countValues(t, b, "orders", 4), recs)
	})
}

// TestProducerRetryFencesInFlightAttempt: the first attempt's host is slow — its object
// written, its commit not yet made — when the retry reaches another host. The retry
// fences it, finds nothing and appends itself; the first attempt's commit lands after
// the fence, so its block is skipped and it answers ErrSuperseded. Readers see the
// records once, at the retry's offsets.
func TestProducerRetryFencesInFlightAttempt(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		setup := newLog(t, s)
		mustTopic(t, setup, "orders", 4)
		backendtest.Materialise(t, s, setup)
		gm := newGatedMeta(s.Meta)
		slow, err := log.New(log.Config{Objects: s.Objects, Meta: gm})
		if err != nil {
			t.Fatal(err)
		}
		recs := producerRecords("slow", 8, 4)
		slowErr := make(chan error, 1)
		go func() {
			_, err := slow.Append(ctx, "orders", recs, firstSend("p1.3"))
			slowErr <- err
		}()
		<-gm.entered
		retry := newLog(t, s)
		res, err := retry.Append(ctx, "orders", recs, retryOf("p1.3", 1))
		if err != nil {
			t.Fatal(err)
		}
		close(gm.release)
		if err := <-slowErr; !errors.Is(err, log.ErrSuperseded) {
			t.Fatalf("the fenced first attempt answered %v, want ErrSuperseded", err)
		}
		seen := countValues(t, setup, "orders", 4)
		mustOnce(t, seen, recs)
		mustAt(t, setup, "orders", res, recs)
		// A second retry (the retry's answer lost too) finds the retry's attempt.
		again, err := newLog(t, s).Append(ctx, "orders", recs, retryOf("p1.3", 2))
		if err != nil {
			t.Fatal(err)
		}
		sameResults(t, "the second retry's answer", res, again)
		mustOnce(t, countValues(t, setup, "orders", 4), recs)
	})
}

// TestProducerStaleAttemptSuperseded: an attempt arriving after a later one fenced the
// request is refused at once with nothing appended.
func TestProducerStaleAttemptSuperseded(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l := newLog(t, s)
		mustTopic(t, l, "orders", 2)
		recs := producerRecords("r", 4, 2)
		if _, err := l.Append(ctx, "orders", recs, retryOf("p1.0", 2)); err != nil {
			t.Fatal(err)
		}
		hw := hws(t, l, "orders")
		for _, attempt := range []int32{1, 2} {
			if _, err := newLog(t, s).Append(ctx, "orders", recs, retryOf("p1.0", attempt)); !errors.Is(err, log.ErrSuperseded) {
				t.Fatalf("attempt %d after attempt 2: %v, want ErrSuperseded", attempt, err)
			}
		}
		if hw2 := hws(t, l, "orders"); !slices.Equal(hw2, hw) {
			t.Fatalf("a superseded attempt appended: high watermarks %v → %v", hw, hw2)
		}
		mustOnce(t, countValues(t, l, "orders", 2), recs)
	})
}

// TestProducerRetryOtherBodyRefused: a retry carrying another body under the key is
// ErrIdempotencyKeyReused, nothing appended.
func TestProducerRetryOtherBodyRefused(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l := newLog(t, s)
		mustTopic(t, l, "orders", 2)
		backendtest.Materialise(t, s, l)
		if _, err := l.Append(ctx, "orders", producerRecords("one", 4, 2), firstSend("p1.0")); err != nil {
			t.Fatal(err)
		}
		hw := hws(t, l, "orders")
		if _, err := newLog(t, s).Append(ctx, "orders", producerRecords("two", 4, 2), retryOf("p1.0", 1)); !errors.Is(err, log.ErrIdempotencyKeyReused) {
			t.Fatalf("retry with another body: %v, want ErrIdempotencyKeyReused", err)
		}
		if hw2 := hws(t, l, "orders"); !slices.Equal(hw2, hw) {
			t.Fatalf("high watermarks %v → %v", hw, hw2)
		}
	})
}

// TestProducerRetryAfterPartitionIncrease: a request of keyed records placed by two
// partitions is retried after the topic grew to four: the retry finds the first
// attempt (placed by two) and answers its offsets.
func TestProducerRetryAfterPartitionIncrease(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l := newLog(t, s)
		mustTopic(t, l, "orders", 2)
		backendtest.Materialise(t, s, l)
		recs := make([]log.Record, 8)
		for i := range recs {
			recs[i] = log.Record{Key: fmt.Appendf(nil, "order-%d", i), Value: fmt.Appendf(nil, "v%d", i)}
		}
		first, err := l.Append(ctx, "orders", recs, firstSend("p1.0"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.IncreasePartitions(ctx, "orders", 4); err != nil {
			t.Fatal(err)
		}
		again, err := newLog(t, s).Append(ctx, "orders", recs, retryOf("p1.0", 1))
		if err != nil {
			t.Fatal(err)
		}
		sameResults(t, "the retry's answer", first, again)
		mustOnce(t, countValues(t, l, "orders", 4), recs)
	})
}

// TestProducerRetryWaitsForTheIndex: the first attempt commits and its host dies before
// writing its entries; the retry waits until the materialiser indexes the commit and
// then finds it, appending nothing.
func TestProducerRetryWaitsForTheIndex(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		setup := newLog(t, s)
		mustTopic(t, setup, "orders", 4)
		// The embedded backend writes the entries inside the commit: there the first
		// attempt simply succeeds (no window to wait for) and the retry still finds it.
		fm := &faultyMeta{MetaStore: s.Meta, armed: s.Commits != nil}
		crashy, err := log.New(log.Config{Objects: s.Objects, Meta: fm})
		if err != nil {
			t.Fatal(err)
		}
		recs := producerRecords("dead", 8, 4)
		if _, err := crashy.Append(ctx, "orders", recs, firstSend("p1.0")); (err == nil) == (s.Commits != nil) {
			t.Fatalf("first attempt: %v (the append whose entries fail must fail)", err)
		}
		backendtest.Materialise(t, s, setup) // starts after the commit: the retry must wait for it
		res, err := newLog(t, s).Append(ctx, "orders", recs, retryOf("p1.0", 1))
		if err != nil {
			t.Fatal(err)
		}
		seen := countValues(t, setup, "orders", 4)
		mustOnce(t, seen, recs)
		if _, hw, _ := setup.Bounds(ctx, "orders", 0); hw != 2 || res[0].Offset != 0 {
			t.Fatalf("partition 0 high watermark %d, record 0 at %d: the retry appended again", hw, res[0].Offset)
		}
	})
}

// TestPropertyProducerAttemptsExactlyOnce: any number of attempts of one producer
// request, each on its own host, started at random moments so that they overlap in any
// order, each crashing at a random step (its commit refused, applied with the answer
// lost, or its entries not written), then the client's last attempt: the last attempt
// succeeds, every attempt that succeeded answered the same offsets, and readers see each
// record exactly once, at those offsets.
func TestPropertyProducerAttemptsExactlyOnce(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		setup := newLog(t, s)
		backendtest.Materialise(t, s, setup)
		histories := 60
		if s.Commits != nil {
			histories = 12 // the emulator serialises every request
		}
		for h := range histories {
			rng := rand.New(rand.NewPCG(uint64(h), 20))
			topic := fmt.Sprintf("prop-%d", h)
			mustTopic(t, setup, topic, 2)
			key := fmt.Sprintf("p%d.0", h)
			recs := producerRecords(fmt.Sprintf("h%d", h), 4, 2)
			n := 1 + rng.IntN(4)
			type outcome struct {
				res  []log.Result
				err  error
				mode int
			}
			outs := make([]outcome, n)
			var wg sync.WaitGroup
			for a := range n {
				mode, delay := 0, time.Duration(rng.IntN(20))*time.Millisecond
				if rng.IntN(2) == 0 {
					mode = 1 + rng.IntN(3)
				}
				wg.Go(func() {
					time.Sleep(delay)
					l, err := log.New(log.Config{Objects: s.Objects, Meta: crashingMeta{s.Meta, mode}})
					if err != nil {
						t.Error(err)
						return
					}
					opt := retryOf(key, int32(a))
					if a == 0 {
						opt = firstSend(key)
					}
					res, err := l.Append(ctx, topic, recs, opt)
					outs[a] = outcome{res, err, mode}
				})
			}
			wg.Wait()
			final, err := newLog(t, s).Append(ctx, topic, recs, retryOf(key, int32(n)))
			if err != nil {
				t.Fatalf("history %d (%d attempts): the last attempt: %v", h, n, err)
			}
			for a, o := range outs {
				if o.err != nil {
					continue
				}
				sameResults(t, fmt.Sprintf("history %d: attempt %d (crash mode %d) against the last", h, a, o.mode), final, o.res)
			}
			seen := countValues(t, setup, topic, 2)
			mustOnce(t, seen, recs)
			mustAt(t, setup, topic, final, recs)
		}
	})
}

// clockMeta moves its clock forward by jump when a fence is set: a retry whose search
// outlasted the commit window.
type clockMeta struct {
	store.MetaStore
	now  *atomic.Int64 // ms
	jump time.Duration
}

func (c clockMeta) FenceRequest(ctx context.Context, topic string, f store.RequestFence) (store.FencePoint, error) {
	fp, err := c.MetaStore.FenceRequest(ctx, topic, f)
	c.now.Add(c.jump.Milliseconds())
	return fp, err
}

// TestProducerRequestTooOldIsNotCommitted: a producer request that arrived more than a
// commit window before its batch would be written is answered ErrUnavailable with
// nothing appended, so no attempt commits later than two commit windows after it
// arrived (what store.FenceHorizon counts on).
func TestProducerRequestTooOldIsNotCommitted(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		var now atomic.Int64
		now.Store(time.Now().UnixMilli())
		l, err := log.New(log.Config{Objects: s.Objects, Meta: clockMeta{s.Meta, &now, 61 * time.Second},
			Clock: func() time.Time { return time.UnixMilli(now.Load()) }})
		if err != nil {
			t.Fatal(err)
		}
		mustTopic(t, l, "orders", 2)
		if _, err := l.Append(ctx, "orders", producerRecords("old", 4, 2), retryOf("p1.0", 1)); !errors.Is(err, log.ErrUnavailable) {
			t.Fatalf("a request older than the commit window at its write: %v, want ErrUnavailable", err)
		}
		for p := range int32(2) {
			if _, hw, _ := l.Bounds(ctx, "orders", p); hw != 0 {
				t.Fatalf("partition %d: high watermark %d, want nothing appended", p, hw)
			}
		}
	})
}

// TestCommitWindowBoundedForFences: a Log refuses a commit window under which a fenced
// attempt could commit after its fence expired.
func TestCommitWindowBoundedForFences(t *testing.T) {
	s := backendtest.Local(context.Background(), t)
	if _, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta, CommitWindow: store.MaxProducerCommitWindow + time.Second}); err == nil {
		t.Fatal("a commit window above store.MaxProducerCommitWindow was accepted")
	}
	if _, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta, CommitWindow: store.MaxProducerCommitWindow}); err != nil {
		t.Fatal(err)
	}
}
