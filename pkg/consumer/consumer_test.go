package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
)

type fixture struct {
	stores backendtest.Stores
	log    *log.Log
	coord  *group.Coordinator
}

func newFixture(t *testing.T, s backendtest.Stores, topic string, records int) *fixture {
	t.Helper()
	ctx := context.Background()
	l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta})
	if err != nil {
		t.Fatal(err)
	}
	// A deployment indexes an append's commit whose index write failed from the
	// sequencer's stream (dispatch): without it a poll stops at the gap, on a loaded
	// emulator now and then.
	backendtest.Materialise(t, s, l)
	if _, err := l.CreateTopic(ctx, topic, 1, 0); err != nil {
		t.Fatal(err)
	}
	if records > 0 {
		p := int32(0)
		recs := make([]log.Record, records)
		for i := range recs {
			recs[i] = log.Record{Key: fmt.Appendf(nil, "order-%d", i%3), Value: fmt.Appendf(nil, "event-%d", i), Partition: &p}
		}
		if _, err := l.Append(ctx, topic, recs, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return &fixture{stores: s, log: l, coord: group.New(s.Meta, l, nil)}
}

func (f *fixture) consumer(t *testing.T, grp, member string, h consumer.Handler, mod func(*consumer.Config)) *consumer.Consumer {
	t.Helper()
	cfg := consumer.Config{Group: grp, Topic: "orders", Member: member, Handler: h,
		PollWait: 10 * time.Millisecond, CommitInterval: time.Millisecond, LeaseTTL: 10 * time.Second,
		Backoff: func(int) time.Duration { return time.Millisecond }}
	if mod != nil {
		mod(&cfg)
	}
	c, err := consumer.New(f.log, f.coord, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (f *fixture) committed(t *testing.T, grp string) int64 {
	t.Helper()
	c, err := f.coord.Committed(context.Background(), grp, "orders", 0)
	if err != nil || c == nil {
		t.Fatalf("committed: %v, %v", c, err)
	}
	return *c
}

// seen records the offsets a handler was given, in order.
type seen struct {
	mu      sync.Mutex
	offsets []int64
}

func (s *seen) add(o int64) {
	s.mu.Lock()
	s.offsets = append(s.offsets, o)
	s.mu.Unlock()
}

func (s *seen) get() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.offsets)
}

// TestOffsets10And11FinishOutOfOrderThenCrash is the brief's first scenario: 10 and 11
// are in flight, 11 finishes, the consumer dies before 10 does. The committed position
// stays 10, with 11 remembered as completed, so the restarted consumer redoes 10 alone
// and skips 11.
func TestOffsets10And11FinishOutOfOrderThenCrash(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s, "orders", 12)
		// Offsets 0–9 are done by an earlier run.
		first := f.consumer(t, "billing", "m-0", func(context.Context, consumer.Record) error { return nil }, func(c *consumer.Config) { c.PollRecords = 10 })
		runCtx, stop := context.WithCancel(ctx)
		go func() {
			for f.committedOr(ctx, "billing") < 10 {
				time.Sleep(time.Millisecond)
			}
			stop()
		}()
		if _, err := first.Run(runCtx, 0, consumer.RunOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := f.committed(t, "billing"); got < 10 {
			t.Fatalf("committed %d after the first run", got)
		}
		f.resetTo(t, "billing", 10)

		elevenDone := make(chan struct{})
		crashCtx, crash := context.WithCancel(ctx)
		h := func(ctx context.Context, r consumer.Record) error {
			switch r.Offset {
			case 10:
				<-elevenDone
				<-ctx.Done() // the crash comes before 10 finishes
				return ctx.Err()
			case 11:
				close(elevenDone)
				go func() { time.Sleep(50 * time.Millisecond); crash() }()
			}
			return nil
		}
		c := f.consumer(t, "billing", "m-1", h, func(c *consumer.Config) { c.Workers = 2 })
		if _, err := c.Run(crashCtx, 0, consumer.RunOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := f.committed(t, "billing"); got != 10 {
			t.Fatalf("committed %d: 11 finishing first must not move the checkpoint past 10", got)
		}
		var again seen
		restarted := f.consumer(t, "billing", "m-2", func(_ context.Context, r consumer.Record) error { again.add(r.Offset); return nil }, nil)
		st, err := restarted.Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := again.get(); !slices.Equal(got, []int64{10}) || st.Remembered != 1 {
			t.Fatalf("restarted consumer saw %v and skipped %d as remembered, want [10] and 1 (11 was finished)", got, st.Remembered)
		}
		if got := f.committed(t, "billing"); got != 12 {
			t.Fatalf("committed %d, want 12", got)
		}
	})
}

// runResult is what a consumer's Run returned.
type runResult struct {
	st  consumer.Stats
	err error
}

// runAsync runs c on partition 0 in a goroutine; its result arrives on the channel.
func runAsync(ctx context.Context, c *consumer.Consumer) <-chan runResult {
	done := make(chan runResult, 1)
	go func() {
		st, err := c.Run(ctx, 0, consumer.RunOptions{})
		done <- runResult{st, err}
	}()
	return done
}

func (f *fixture) committedOr(ctx context.Context, grp string) int64 {
	c, err := f.coord.Committed(ctx, grp, "orders", 0)
	if err != nil || c == nil {
		return -1
	}
	return *c
}

func (f *fixture) resetTo(t *testing.T, grp string, off int64) {
	t.Helper()
	if _, err := f.coord.Reset(context.Background(), grp, "orders", group.ResetOffset(off)); err != nil {
		t.Fatal(err)
	}
}

// pausable blocks every coordinator call while paused, as a stopped process would.
type pausable struct {
	consumer.Coordinator
	mu     sync.Mutex
	cond   *sync.Cond
	paused bool
}

func newPausable(c consumer.Coordinator) *pausable {
	p := &pausable{Coordinator: c}
	p.cond = sync.NewCond(&p.mu)
	return p
}

func (p *pausable) set(paused bool) {
	p.mu.Lock()
	p.paused = paused
	p.mu.Unlock()
	p.cond.Broadcast()
}

func (p *pausable) wait() {
	p.mu.Lock()
	for p.paused {
		p.cond.Wait()
	}
	p.mu.Unlock()
}

func (p *pausable) Renew(ctx context.Context, g, t string, part int32, m string, gen int64, ttl time.Duration) (group.Lease, error) {
	p.wait()
	return p.Coordinator.Renew(ctx, g, t, part, m, gen, ttl)
}

func (p *pausable) Commit(ctx context.Context, g, t string, part int32, m string, gen, next int64, completed ...store.OffsetRange) error {
	p.wait()
	return p.Coordinator.Commit(ctx, g, t, part, m, gen, next, completed...)
}

// CommitAt is the commit that renews or releases the lease (consumer.LeaseCommitter),
// paused as Commit is.
func (p *pausable) CommitAt(ctx context.Context, g, t string, part int32, m string, gen, next int64, opts group.CommitOptions) error {
	p.wait()
	return p.Coordinator.(consumer.LeaseCommitter).CommitAt(ctx, g, t, part, m, gen, next, opts)
}

// TestPausedConsumerResumesAfterReassignment is the brief's second scenario: a paused
// consumer holding generation g resumes after its partition moved to g+1. Its commit
// is fenced, the committed offset never regresses, and it handles nothing more there.
func TestPausedConsumerResumesAfterReassignment(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s, "orders", 20)
		gate := newPausable(f.coord)
		var zombieSeen seen
		paused := make(chan struct{})
		resume := make(chan struct{})
		h := func(ctx context.Context, r consumer.Record) error {
			zombieSeen.add(r.Offset)
			if r.Offset == 5 {
				close(paused)
				<-resume
			}
			return nil
		}
		cfg := consumer.Config{Group: "billing", Topic: "orders", Member: "zombie", Handler: h,
			PollWait: 10 * time.Millisecond, CommitInterval: time.Millisecond, LeaseTTL: 300 * time.Millisecond}
		zombie, err := consumer.New(f.log, gate, cfg)
		if err != nil {
			t.Fatal(err)
		}
		done := runAsync(ctx, zombie)
		<-paused
		for f.committedOr(ctx, "billing") < 5 {
			time.Sleep(time.Millisecond)
		}
		// The whole process stops: no renewals, no commits.
		gate.set(true)
		old, err := group.ByIncarnation(f.stores.Meta, f.log).GetAssignment(ctx, "billing", "orders", 0)
		if err != nil {
			t.Fatal(err)
		}
		// A replacement takes the partition once the zombie's lease lapses.
		var replSeen seen
		repl := f.consumer(t, "billing", "replacement", func(_ context.Context, r consumer.Record) error { replSeen.add(r.Offset); return nil }, nil)
		var st consumer.Stats
		for {
			st, err = repl.Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true})
			if !errors.Is(err, group.ErrLeaseHeld) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			t.Fatal(err)
		}
		now, err := group.ByIncarnation(f.stores.Meta, f.log).GetAssignment(ctx, "billing", "orders", 0)
		if err != nil || now.Generation <= old.Generation {
			t.Fatalf("generation %d after reassignment from %d (%v)", now.Generation, old.Generation, err)
		}
		if f.committed(t, "billing") != 20 || st.Committed != 20 {
			t.Fatalf("replacement committed %d", f.committed(t, "billing"))
		}
		// The zombie wakes up.
		gate.set(false)
		close(resume)
		res := <-done
		if !errors.Is(res.err, group.ErrFenced) || !res.st.Fenced {
			t.Fatalf("zombie run ended with %v (fenced %v), want ErrFenced", res.err, res.st.Fenced)
		}
		if got := f.committed(t, "billing"); got != 20 {
			t.Fatalf("committed offset regressed to %d", got)
		}
		handled := len(zombieSeen.get())
		time.Sleep(50 * time.Millisecond)
		if len(zombieSeen.get()) != handled {
			t.Fatal("the fenced consumer handled records after its run returned")
		}
		if slices.Max(zombieSeen.get()) != 5 {
			t.Fatalf("zombie went on past the paused record: %v", zombieSeen.get())
		}
	})
}

// TestTwoGroupsIndependentPositions: two groups on one topic each see every record and
// keep their own committed offsets.
func TestTwoGroupsIndependentPositions(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s, "orders", 15)
		var billing, shipping seen
		b := f.consumer(t, "billing", "b-1", func(_ context.Context, r consumer.Record) error { billing.add(r.Offset); return nil }, nil)
		if _, err := b.Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true}); err != nil {
			t.Fatal(err)
		}
		f.resetTo(t, "shipping", 4)
		sh := f.consumer(t, "shipping", "s-1", func(_ context.Context, r consumer.Record) error { shipping.add(r.Offset); return nil },
			func(c *consumer.Config) { c.PollRecords = 3 })
		runCtx, stop := context.WithCancel(ctx)
		go func() {
			for f.committedOr(ctx, "shipping") < 10 {
				time.Sleep(time.Millisecond)
			}
			stop()
		}()
		if _, err := sh.Run(runCtx, 0, consumer.RunOptions{}); err != nil {
			t.Fatal(err)
		}
		if len(billing.get()) != 15 || f.committed(t, "billing") != 15 {
			t.Fatalf("billing saw %v, committed %d", billing.get(), f.committed(t, "billing"))
		}
		sc := f.committed(t, "shipping")
		if sc < 10 || sc == 15 && len(shipping.get()) != 11 || shipping.get()[0] != 4 {
			t.Fatalf("shipping saw %v, committed %d", shipping.get(), sc)
		}
	})
}

// TestPoisonRecordDeadLettered: a record failing every attempt goes to the dead-letter
// topic with its origin and attempts (the error is logged, not stored: see
// TestDeadLetterRedeliveryWithAnotherErrorIsARetry), counts as completed, and the
// partition moves on.
func TestPoisonRecordDeadLettered(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s, "orders", 8)
		if _, err := f.log.CreateTopic(ctx, "orders.dlq", 1, 0); err != nil {
			t.Fatal(err)
		}
		attempts := map[int64]int{}
		var mu sync.Mutex
		h := func(_ context.Context, r consumer.Record) error {
			mu.Lock()
			defer mu.Unlock()
			attempts[r.Offset]++
			if r.Offset == 3 {
				return errors.New("cannot parse order")
			}
			return nil
		}
		c := f.consumer(t, "billing", "m-1", h, func(c *consumer.Config) { c.MaxAttempts = 3; c.DeadLetterTopic = "orders.dlq" })
		st, err := c.Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true})
		if err != nil {
			t.Fatal(err)
		}
		if attempts[3] != 3 || st.DeadLettered != 1 || st.Retries != 2 || st.Handled != 7 {
			t.Fatalf("attempts %v stats %+v", attempts, st)
		}
		if got := f.committed(t, "billing"); got != 8 {
			t.Fatalf("committed %d, want 8: the partition must move past the poison record", got)
		}
		res, err := f.log.Poll(ctx, "orders.dlq", 0, 0, log.PollOptions{})
		if err != nil || len(res.Records) != 1 {
			t.Fatalf("dead-letter topic: %d records, %v", len(res.Records), err)
		}
		hs := map[string]string{}
		for _, h := range res.Records[0].Headers {
			hs[h.Key] = string(h.Value)
		}
		if hs[consumer.HeaderOriginTopic] != "orders" || hs[consumer.HeaderOriginPartition] != "0" ||
			hs[consumer.HeaderOriginOffset] != "3" || hs[consumer.HeaderAttempts] != "3" || hs["strata-error"] != "" ||
			string(res.Records[0].Value) != "event-3" {
			t.Fatalf("dead-lettered record %q headers %v", res.Records[0].Value, hs)
		}
	})
}

// TestBehindLogStartAppliesResetPolicy: a group whose position fell below the log
// start gets its reset policy applied and the skipped records counted as lost.
func TestBehindLogStartAppliesResetPolicy(t *testing.T) {
	cases := []struct {
		policy   string
		wantLost int64
		wantSeen int
		wantErr  error
	}{
		{consumer.ResetEarliest, 4, 4, nil},
		{consumer.ResetLatest, 8, 0, nil},
		{consumer.ResetFail, 0, 0, consumer.ErrResetPolicyFail},
	}
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s, "orders", 10)
		for _, c := range cases {
			f.resetTo(t, "g-"+c.policy, 2)
		}
		// Retention removes offsets 2–5 below every group's position.
		if err := f.stores.Meta.AdvanceLogStart(ctx, mustTopicID(t, f.log, "orders"), 0, 6); err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			t.Run(c.policy, func(t *testing.T) {
				grp := "g-" + c.policy
				var got seen
				cons := f.consumer(t, grp, "m", func(_ context.Context, r consumer.Record) error { got.add(r.Offset); return nil },
					func(cfg *consumer.Config) { cfg.ResetPolicy = c.policy })
				st, err := cons.Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true})
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("err = %v, want %v", err, c.wantErr)
				}
				if st.RecordsLost != c.wantLost || len(got.get()) != c.wantSeen {
					t.Fatalf("lost %d saw %v, want lost %d and %d records", st.RecordsLost, got.get(), c.wantLost, c.wantSeen)
				}
				if c.wantErr == nil && f.committed(t, grp) != 10 {
					t.Fatalf("committed %d", f.committed(t, grp))
				}
			})
		}
	})
}

// TestPoisonRecordWithoutDeadLetterTopicIsDropped: with no dead-letter topic the record
// is skipped and counted as dropped, and the partition still moves on.
func TestPoisonRecordWithoutDeadLetterTopicIsDropped(t *testing.T) {
	s := backendtest.Local(context.Background(), t)
	f := newFixture(t, s, "orders", 4)
	c := f.consumer(t, "billing", "m-1", func(_ context.Context, r consumer.Record) error {
		if r.Offset == 1 {
			return errors.New("boom")
		}
		return nil
	}, func(c *consumer.Config) { c.MaxAttempts = 2 })
	st, err := c.Run(context.Background(), 0, consumer.RunOptions{UntilCaughtUp: true})
	if err != nil {
		t.Fatal(err)
	}
	if st.Dropped != 1 || st.DeadLettered != 0 || st.Handled != 3 || f.committed(t, "billing") != 4 {
		t.Fatalf("stats %+v committed %d", st, f.committed(t, "billing"))
	}
}

// TestDuplicateCommitsAreSkipped: an idempotent append committed twice (the retry of an
// append whose answer was lost) leaves a duplicate block that readers skip; the consumer
// handles every record once and its commit passes the duplicate's offsets.
func TestDuplicateCommitsAreSkipped(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s, "orders", 2)
		tp, err := f.log.Topic(ctx, "orders")
		if err != nil {
			t.Fatal(err)
		}
		key := tp.ID() + "#retry-1"
		e := store.IndexEntry{Topic: tp.ID(), Partition: 0, Count: 1}
		// Two commits of one request (the first attempt's block and the retry's) written
		// straight to the store, then a normal record after them.
		res, err := f.log.Append(ctx, "orders", []log.Record{{Value: []byte("first"), Partition: i32(0)}}, log.AppendOptions{IdempotencyKey: "retry-1"})
		if err != nil {
			t.Fatal(err)
		}
		ent, err := s.Meta.IndexEntries(ctx, tp.ID(), 0, res[0].Offset, 1)
		if err != nil || len(ent) != 1 {
			t.Fatalf("entry of the first attempt: %v, %v", ent, err)
		}
		e = ent[0]
		e.ByteOffset = ent[0].ByteOffset // same block, a second commit of it
		dup, err := s.Meta.Sequence(ctx, store.SeqCommit{Entry: e, IdempotencyKey: key, BodyHash: "other-attempt"})
		if err != nil {
			t.Fatal(err)
		}
		if !dup.Materialized {
			dup.Entry.Duplicate = true
			if err := s.Meta.PutIndexEntry(ctx, dup.Entry); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := f.log.Append(ctx, "orders", []log.Record{{Value: []byte("after"), Partition: i32(0)}}, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		var got seen
		c := f.consumer(t, "billing", "m-1", func(_ context.Context, r consumer.Record) error { got.add(r.Offset); return nil }, nil)
		if _, err := c.Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true}); err != nil {
			t.Fatal(err)
		}
		if want := []int64{0, 1, 2, 4}; !slices.Equal(got.get(), want) {
			t.Fatalf("handled offsets %v, want %v (3 is the duplicate)", got.get(), want)
		}
		if c := f.committed(t, "billing"); c != 5 {
			t.Fatalf("committed %d, want 5 (past the duplicate)", c)
		}
	})
}

func i32(v int32) *int32 { return &v }

// mustTopicID is the store key (store.TopicID) of the live incarnation of topic name.
func mustTopicID(t *testing.T, l *log.Log, name string) string {
	t.Helper()
	id, err := l.TopicID(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
