package consumer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// keyLog records, per key, the origin offsets a handler succeeded on, in order.
type keyLog struct {
	mu   sync.Mutex
	seen map[string][]int64
}

func (k *keyLog) add(key []byte, off int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.seen == nil {
		k.seen = map[string][]int64{}
	}
	k.seen[string(key)] = append(k.seen[string(key)], off)
}

func (k *keyLog) get(key string) []int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.seen[key])
}

// appendKeyed appends one record per key to partition 0 and returns their offsets.
func appendKeyed(t *testing.T, l *log.Log, topic string, keys []string) []int64 {
	t.Helper()
	p := int32(0)
	recs := make([]log.Record, len(keys))
	for i, k := range keys {
		recs[i] = log.Record{Key: []byte(k), Value: fmt.Appendf(nil, "v-%d", i), Partition: &p}
	}
	res, err := l.Append(context.Background(), topic, recs, log.AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int64, len(res))
	for i, r := range res {
		out[i] = r.Offset
	}
	return out
}

func setParking(t *testing.T, f *fixture, grp string) {
	t.Helper()
	if _, err := f.coord.SetSettings(context.Background(), grp, group.Settings{ResetPolicy: "earliest", MaxAttempts: 2, OnFailure: group.OnFailurePark}); err != nil {
		t.Fatal(err)
	}
}

// parkedTopicOrigins reads the parking topic and returns the origin offsets of key's
// records there, in the parking topic's order.
func parkedTopicOrigins(t *testing.T, l *log.Log, grp, key string) []int64 {
	t.Helper()
	ctx := context.Background()
	topic := wire.ParkingTopic(grp)
	n, err := l.Partitions(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for p := range n {
		res, err := l.Poll(ctx, topic, p, 0, log.PollOptions{MaxRecords: wire.MaxPollRecords})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Records {
			if string(r.Key) != key {
				continue
			}
			h := headers(r)
			if h[wire.HeaderOriginTopic] != "orders" || h[wire.HeaderOriginPartition] != "0" || h[wire.HeaderError] == "" || h[wire.HeaderParkedAt] == "" {
				t.Fatalf("parked record %+v lacks origin headers: %v", r, h)
			}
			o, err := strconv.ParseInt(h[wire.HeaderOriginOffset], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, o)
		}
	}
	return out
}

func headers(r segment.Record) map[string]string {
	m := map[string]string{}
	for _, h := range r.Headers {
		m[h.Key] = string(h.Value)
	}
	return m
}

// TestPoisonKeyParkedWhileOthersFlowThenReleased is issue 22.1's must-show: one key's
// record fails every attempt; with on_failure "park" that record and every later one
// of the key go, in order, to "<group>.parked" while 1,000 records of other keys pass
// (in order per key) and the partition commits to its end. Released, the key's parked
// records are handed to the handler in origin order before the key's newer records,
// and the key is unparked.
func TestPoisonKeyParkedWhileOthersFlowThenReleased(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s, "orders", 0)
		const grp = "billing"
		setParking(t, f, grp)
		var keys []string
		for i := range 1000 {
			keys = append(keys, fmt.Sprintf("order-%d", i%7))
			if i%200 == 100 {
				keys = append(keys, "order-bad")
			}
		}
		offsets := appendKeyed(t, f.log, "orders", keys)
		var badOffsets []int64
		for i, k := range keys {
			if k == "order-bad" {
				badOffsets = append(badOffsets, offsets[i])
			}
		}
		var poisoned atomic.Bool
		poisoned.Store(true)
		var kl keyLog
		h := func(_ context.Context, r consumer.Record) error {
			if string(r.Key) == "order-bad" && poisoned.Load() {
				return errors.New("payment declined: card expired")
			}
			kl.add(r.Key, r.Offset)
			return nil
		}
		c := f.consumer(t, grp, "m-1", h, func(c *consumer.Config) { c.Workers, c.CommitInterval = 4, 50*time.Millisecond })
		st, err := c.Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true})
		if err != nil {
			t.Fatal(err)
		}
		if st.Handled != 1000 || st.Parked != int64(len(badOffsets)) || f.committed(t, grp) != int64(len(keys)) {
			t.Fatalf("stats %+v, committed %d; want 1000 handled, %d parked, committed %d", st, f.committed(t, grp), len(badOffsets), len(keys))
		}
		for k := range 7 {
			got := kl.get(fmt.Sprintf("order-%d", k))
			if len(got) == 0 || !slices.IsSorted(got) {
				t.Fatalf("key order-%d handled out of order or not at all: %v", k, got)
			}
		}
		if got := parkedTopicOrigins(t, f.log, grp, "order-bad"); !slices.Equal(got, badOffsets) {
			t.Fatalf("parking topic holds %v of the key, want %v in order", got, badOffsets)
		}
		parked, err := f.coord.ListParked(ctx, grp)
		if err != nil || len(parked) != 1 {
			t.Fatalf("ListParked = %v, %v; want one key", parked, err)
		}
		if p := parked[0]; string(p.Key) != "order-bad" || p.FirstOffset != badOffsets[0] || p.Records != int64(len(badOffsets)) ||
			p.Error != "payment declined: card expired" || p.Partition != 0 || p.Topic != "orders" {
			t.Fatalf("parked row %+v", p)
		}

		// Newer records of the key arrive; the cause is fixed; the key is released.
		newer := appendKeyed(t, f.log, "orders", []string{"order-bad", "order-1", "order-bad"})
		poisoned.Store(false)
		if _, err := f.coord.ReleaseParked(ctx, grp, "orders", []byte("order-bad")); err != nil {
			t.Fatal(err)
		}
		c2 := f.consumer(t, grp, "m-2", h, func(c *consumer.Config) { c.Workers = 4 })
		st, err = c2.Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true})
		if err != nil {
			t.Fatal(err)
		}
		want := append(slices.Clone(badOffsets), newer[0], newer[2])
		if got := kl.get("order-bad"); !slices.Equal(got, want) {
			t.Fatalf("the released key was handled as %v, want the parked records then the newer ones: %v", got, want)
		}
		if st.Replayed != int64(len(badOffsets)) || st.Parked != 0 {
			t.Fatalf("release run stats %+v, want %d replayed and none parked", st, len(badOffsets))
		}
		if parked, err := f.coord.ListParked(ctx, grp); err != nil || len(parked) != 0 {
			t.Fatalf("ListParked after the release = %v, %v; want none", parked, err)
		}
	})
}

// crashAfterPark fails every commit once the run has written a parked row: the process
// "crashes" between the park write and the commit that passes the record.
type crashAfterPark struct {
	*group.Coordinator
	parkWrites atomic.Int64
}

func (c *crashAfterPark) PutParked(ctx context.Context, p group.Parked, member string, generation int64) error {
	err := c.Coordinator.PutParked(ctx, p, member, generation)
	if err == nil {
		c.parkWrites.Add(1)
	}
	return err
}

func (c *crashAfterPark) Commit(ctx context.Context, g, t string, part int32, m string, gen, next int64, completed ...store.OffsetRange) error {
	if c.parkWrites.Load() > 0 {
		return errors.New("crashed before the commit")
	}
	return c.Coordinator.Commit(ctx, g, t, part, m, gen, next, completed...)
}

// CommitAt is the commit that renews or releases the lease (consumer.LeaseCommitter):
// it crashes as Commit does.
func (c *crashAfterPark) CommitAt(ctx context.Context, g, t string, part int32, m string, gen, next int64, opts group.CommitOptions) error {
	if c.parkWrites.Load() > 0 {
		return errors.New("crashed before the commit")
	}
	return c.Coordinator.CommitAt(ctx, g, t, part, m, gen, next, opts)
}

// TestCrashBetweenParkWriteAndCommitRedelivers is issue 22.1's crash case: the key's
// row is written and its records forwarded, then the process dies before committing.
// The next owner reads the row, forwards the key's records again without handling
// them (the idempotent append lands each once, in order), handles the other keys, and
// commits; nothing of the key is lost or reordered, and a release replays it in order.
func TestCrashBetweenParkWriteAndCommitRedelivers(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s, "orders", 0)
		const grp = "billing"
		setParking(t, f, grp)
		keys := []string{"a", "bad", "b", "bad", "a", "c", "bad", "b"}
		offsets := appendKeyed(t, f.log, "orders", keys)
		badOffsets := []int64{offsets[1], offsets[3], offsets[6]}
		var poisoned atomic.Bool
		poisoned.Store(true)
		var kl keyLog
		var badCalls atomic.Int64
		h := func(_ context.Context, r consumer.Record) error {
			if string(r.Key) == "bad" {
				badCalls.Add(1)
				if poisoned.Load() {
					return errors.New("poison")
				}
			}
			kl.add(r.Key, r.Offset)
			return nil
		}
		crashing := &crashAfterPark{Coordinator: f.coord}
		cfg := consumer.Config{Group: grp, Topic: "orders", Member: "m-1", Handler: h, PollWait: 10 * time.Millisecond,
			CommitInterval: time.Millisecond, LeaseTTL: 10 * time.Second, Backoff: func(int) time.Duration { return time.Millisecond }}
		c1, err := consumer.New(f.log, crashing, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c1.Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true}); err == nil {
			t.Fatal("the crashing run ended without an error")
		}
		if crashing.parkWrites.Load() == 0 {
			t.Fatal("the crashing run parked nothing")
		}
		if c, _ := f.coord.Committed(ctx, grp, "orders", 0); c != nil && *c > offsets[1] {
			t.Fatalf("committed %d past the parked record %d before the crash", *c, offsets[1])
		}
		callsBefore := badCalls.Load()

		// The same member restarts (a new process): it takes the lease at a new
		// generation, reads the parked key and forwards its records.
		c2 := f.consumer(t, grp, "m-1", h, nil)
		st, err := c2.Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true})
		if err != nil {
			t.Fatal(err)
		}
		if f.committed(t, grp) != int64(len(keys)) {
			t.Fatalf("committed %d after the restart, want %d (stats %+v)", f.committed(t, grp), len(keys), st)
		}
		if got := badCalls.Load() - callsBefore; got != 0 {
			t.Fatalf("the restarted run handled the parked key %d times, want 0 (forwarded)", got)
		}
		if got := parkedTopicOrigins(t, f.log, grp, "bad"); !slices.Equal(got, badOffsets) {
			t.Fatalf("parking topic holds %v of the key, want each of %v once, in order", got, badOffsets)
		}
		parked, err := f.coord.ListParked(ctx, grp)
		if err != nil || len(parked) != 1 || parked[0].Records != 3 || parked[0].FirstOffset != badOffsets[0] {
			t.Fatalf("ListParked = %+v, %v; want key bad, 3 records from %d", parked, err, badOffsets[0])
		}
		for _, k := range []string{"a", "b", "c"} {
			if got := kl.get(k); !slices.IsSorted(got) || len(got) == 0 {
				t.Fatalf("key %s handled as %v", k, got)
			}
		}

		poisoned.Store(false)
		if _, err := f.coord.ReleaseParked(ctx, grp, "orders", []byte("bad")); err != nil {
			t.Fatal(err)
		}
		if _, err := f.consumer(t, grp, "m-2", h, nil).Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true}); err != nil {
			t.Fatal(err)
		}
		if got := kl.get("bad"); !slices.Equal(got, badOffsets) {
			t.Fatalf("released key replayed as %v, want %v", got, badOffsets)
		}
		if !bytes.Equal([]byte("bad"), parked[0].Key) {
			t.Fatal("unreachable")
		}
	})
}

// TestReleaseSeenByARunningMember: a member that keeps running (no UntilCaughtUp) sees
// a release at its next renew, replays the key in order on the key's worker and
// unparks it, without a restart.
func TestReleaseSeenByARunningMember(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		f := newFixture(t, s, "orders", 0)
		const grp = "billing"
		setParking(t, f, grp)
		offsets := appendKeyed(t, f.log, "orders", []string{"bad", "a", "bad", "b"})
		var poisoned atomic.Bool
		poisoned.Store(true)
		var kl keyLog
		h := func(_ context.Context, r consumer.Record) error {
			if string(r.Key) == "bad" && poisoned.Load() {
				return errors.New("poison")
			}
			kl.add(r.Key, r.Offset)
			return nil
		}
		c := f.consumer(t, grp, "m-1", h, func(c *consumer.Config) { c.LeaseTTL, c.Workers = 600*time.Millisecond, 2 })
		done := make(chan error, 1)
		go func() { _, err := c.Run(ctx, 0, consumer.RunOptions{}); done <- err }()
		waitFor(t, "the key parked with both records", func() bool {
			rows, err := f.coord.ListParked(ctx, grp)
			return err == nil && len(rows) == 1 && rows[0].Records == 2 && f.committedOr(ctx, grp) == 4
		})
		poisoned.Store(false)
		if _, err := f.coord.ReleaseParked(ctx, grp, "orders", []byte("bad")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the key replayed and unparked", func() bool {
			rows, err := f.coord.ListParked(ctx, grp)
			return err == nil && len(rows) == 0
		})
		if got := kl.get("bad"); !slices.Equal(got, []int64{offsets[0], offsets[2]}) {
			t.Fatalf("replayed %v, want %v", got, []int64{offsets[0], offsets[2]})
		}
		newer := appendKeyed(t, f.log, "orders", []string{"bad"})
		waitFor(t, "the key's newer record handled", func() bool { return len(kl.get("bad")) == 3 })
		if got := kl.get("bad"); got[2] != newer[0] {
			t.Fatalf("after release the key was handled as %v", got)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// waitFor polls cond until it holds; the bound is generous (a loaded machine), and the
// test asserts what happened, not how fast.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFencedReplayStopsTheRun: a released key's replay whose handler answers
// group.ErrFenced (a fenced business write: the partition moved to another generation)
// stops the run at once, fenced, as a fenced write of any other record does: the handler
// is not called again for it, and the key stays parked for the partition's owner. Before,
// the replay retried the fenced record up to the group's attempts, logged that the key
// stays parked, and the run went on.
func TestFencedReplayStopsTheRun(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s, "orders", 0)
		const grp = "billing"
		setParking(t, f, grp)
		appendKeyed(t, f.log, "orders", []string{"order-1", "order-bad", "order-2"})
		var fenced, calls atomic.Int64
		h := func(_ context.Context, r consumer.Record) error {
			if string(r.Key) != "order-bad" {
				return nil
			}
			if fenced.Load() > 0 {
				calls.Add(1)
				return fmt.Errorf("orders table: %w", group.ErrFenced)
			}
			return errors.New("payment declined")
		}
		c := f.consumer(t, grp, "m-1", h, func(c *consumer.Config) { c.MaxAttempts = 3 })
		if _, err := c.Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.coord.ReleaseParked(ctx, grp, "orders", []byte("order-bad")); err != nil {
			t.Fatal(err)
		}
		fenced.Store(1)
		_, err := f.consumer(t, grp, "m-2", h, func(c *consumer.Config) { c.MaxAttempts = 3 }).Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true})
		if !errors.Is(err, group.ErrFenced) {
			t.Fatalf("run replaying a fenced record: %v, want ErrFenced", err)
		}
		if n := calls.Load(); n != 1 {
			t.Fatalf("the fenced record was handled %d times, want once (a fenced write is not retried)", n)
		}
		if parked, err := f.coord.ListParked(ctx, grp); err != nil || len(parked) != 1 {
			t.Fatalf("ListParked after the fenced replay = %v, %v; want the key still parked", parked, err)
		}
	})
}
