package compact_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/compact"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// compacted writes a=1 b=1 a=2 c=1 b=2 (offsets 0-4, one append each) and compacts: the
// survivors are 2:a=2 3:c=1 4:b=2, offsets 0 and 1 a hole.
func compacted(t *testing.T, f *fixture, name string) store.Topic {
	t.Helper()
	tp := f.topic(name, 1, nil)
	for _, r := range []string{"a=1", "b=1", "a=2", "c=1", "b=2"} {
		f.put(tp, 0, r)
		f.clock.Advance(time.Second)
	}
	f.clock.Advance(compact.HeadGuard)
	f.pass(tp)
	if got, want := kv(f.read(tp, 0)), "2:a=2 3:c=1 4:b=2"; got != want {
		t.Fatalf("compacted: %s, want %s", got, want)
	}
	return tp
}

// TestConsumerCommitsAcrossGaps: a consumer from the start of a compacted partition
// handles the survivors, and its contiguous commit passes the removed offsets to the high
// watermark; a group positioned inside the hole resumes at the next survivor; the
// group's lag counts offsets, and a compact-only topic has no time to data loss.
func TestConsumerCommitsAcrossGaps(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s)
		tp := compacted(t, f, "orders")
		coord := group.New(s.Meta, f.log, f.clock.Now)
		run := func(grp string) []int64 {
			var mu sync.Mutex
			var got []int64
			c, err := consumer.New(f.log, coord, consumer.Config{Group: grp, Topic: tp.Name, Member: "m", PollWait: 10 * time.Millisecond,
				CommitInterval: time.Millisecond, LeaseTTL: 10 * time.Second, Backoff: func(int) time.Duration { return time.Millisecond },
				Handler: func(_ context.Context, r consumer.Record) error {
					mu.Lock()
					got = append(got, r.Offset)
					mu.Unlock()
					return nil
				}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true}); err != nil {
				t.Fatal(err)
			}
			return got
		}
		if got := run("g"); len(got) != 3 || got[0] != 2 || got[2] != 4 {
			t.Fatalf("handled %v, want the survivors 2 3 4", got)
		}
		if c, err := coord.Committed(ctx, "g", tp.Name, 0); err != nil || c == nil || *c != 5 {
			t.Fatalf("committed %v, %v; want 5", c, err)
		}

		// A group positioned at offset 1, inside the hole.
		if _, err := s.Meta.EnsureGroup(ctx, store.GroupConfig{Name: "h", ResetPolicy: "earliest"}); err != nil {
			t.Fatal(err)
		}
		lease, err := coord.Acquire(ctx, "h", tp.Name, 0, "m0", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := coord.Commit(ctx, "h", tp.Name, 0, "m0", lease.Generation, 1); err != nil {
			t.Fatal(err)
		}
		info, err := coord.Describe(ctx, "h")
		if err != nil || len(info.Partitions) != 1 {
			t.Fatalf("describe: %+v, %v", info, err)
		}
		if pi := info.Partitions[0]; pi.LagRecords != 4 || pi.DataLoss != nil || pi.LagTime <= 0 {
			t.Fatalf("lag inside the hole: %+v; want 4 offsets, a lag time, no data loss", pi)
		}
		if err := coord.Release(ctx, "h", tp.Name, 0, "m0", lease.Generation); err != nil {
			t.Fatal(err)
		}
		if got := run("h"); len(got) != 3 || got[0] != 2 {
			t.Fatalf("resumed inside the hole: handled %v, want 2 3 4", got)
		}
	})
}

// TestOffsetForTimeOnGaps: the offset for a time that only removed records were
// appended at is at or before the first survivor appended after it, and a poll from it
// starts at that survivor: offsets-by-time never skip a surviving record.
func TestOffsetForTimeOnGaps(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s)
		start := f.clock.Now()
		tp := compacted(t, f, "times")
		for _, tc := range []struct {
			at   time.Duration
			want int64 // the first survivor appended at or after it
		}{{0, 2}, {time.Second, 2}, {2 * time.Second, 2}, {3 * time.Second, 3}, {4 * time.Second, 4}, {5 * time.Second, 5}} {
			off, err := f.log.OffsetForTime(ctx, tp.Name, 0, start.Add(tc.at))
			if err != nil {
				t.Fatal(err)
			}
			if off > tc.want {
				t.Fatalf("offset for +%s: %d, past the survivor at %d", tc.at, off, tc.want)
			}
			if tc.want == 5 {
				continue
			}
			res, err := f.log.Poll(ctx, tp.Name, 0, off, log.PollOptions{})
			if err != nil || len(res.Records) == 0 || res.Records[0].Offset > tc.want {
				t.Fatalf("poll from the offset for +%s (%d): %+v, %v", tc.at, off, res.Records, err)
			}
		}
	})
}

// TestIdempotentRetryAcrossCompaction: a retry of an idempotent append is answered from
// its claim — the original offsets, nothing appended again — after a compaction removed
// the record it overwrote (remembered acks are offsets, which never move).
func TestIdempotentRetryAcrossCompaction(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s)
		tp := f.topic("acks", 1, nil)
		p := int32(0)
		f.put(tp, 0, "a=1")
		rec := []log.Record{{Key: []byte("a"), Value: []byte("2"), Partition: &p}}
		first, err := f.log.Append(ctx, tp.Name, rec, log.AppendOptions{IdempotencyKey: "req-1"})
		if err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(time.Second)
		f.job.MinDirtyRatio = -1
		if st := f.pass(tp); st.RecordsRemoved != 0 {
			t.Fatalf("a pass compacted inside the head guard: %+v", st)
		}
		f.clock.Advance(compact.HeadGuard) // the claim lives 20 minutes; a=1 is past the guard now
		if st := f.pass(tp); st.RecordsRemoved != 1 {
			t.Fatalf("pass: %+v, want a=1 removed", st)
		}
		again, err := f.log.Append(ctx, tp.Name, rec, log.AppendOptions{IdempotencyKey: "req-1"})
		if err != nil || again[0].Offset != first[0].Offset {
			t.Fatalf("retry after compaction: %+v, %v; want offset %d", again, err, first[0].Offset)
		}
		if got, want := kv(f.read(tp, 0)), "1:a=2"; got != want {
			t.Fatalf("after the retry: %s, want %s", got, want)
		}
	})
}

// TestParkingOnGaps: on a compacted partition whose survivors sit after a hole, a key
// whose record fails every attempt is parked (its record, with its origin offset, in
// the group's parking topic) while the other survivors are handled and the partition
// commits past the hole to its end; released, the parked record is handed to the handler
// at its origin offset.
func TestParkingOnGaps(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s)
		tp := compacted(t, f, "parks")
		coord := group.New(s.Meta, f.log, f.clock.Now)
		if _, err := coord.SetSettings(ctx, "g", group.Settings{ResetPolicy: "earliest", MaxAttempts: 1, OnFailure: group.OnFailurePark}); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var handled []string
		failA := true
		run := func() {
			c, err := consumer.New(f.log, coord, consumer.Config{Group: "g", Topic: tp.Name, Member: "m", PollWait: 10 * time.Millisecond,
				CommitInterval: time.Millisecond, LeaseTTL: 10 * time.Second, Backoff: func(int) time.Duration { return time.Millisecond },
				Handler: func(_ context.Context, r consumer.Record) error {
					mu.Lock()
					defer mu.Unlock()
					if string(r.Key) == "a" && failA {
						return errCrash
					}
					handled = append(handled, fmt.Sprintf("%d:%s", r.Offset, r.Key))
					return nil
				}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true}); err != nil {
				t.Fatal(err)
			}
		}
		run()
		if got := strings.Join(handled, " "); got != "3:c 4:b" {
			t.Fatalf("handled %q, want the other survivors 3:c 4:b", got)
		}
		if c, err := coord.Committed(ctx, "g", tp.Name, 0); err != nil || c == nil || *c != 5 {
			t.Fatalf("committed %v, %v; want 5", c, err)
		}
		res, err := f.log.Poll(ctx, wire.ParkingTopic("g"), 0, 0, log.PollOptions{})
		if err != nil || len(res.Records) != 1 {
			t.Fatalf("parking topic: %+v, %v", res.Records, err)
		}
		for _, h := range res.Records[0].Headers {
			if h.Key == wire.HeaderOriginOffset && string(h.Value) != "2" {
				t.Fatalf("parked with origin offset %s, want 2", h.Value)
			}
		}
		if _, err := coord.ReleaseParked(ctx, "g", tp.Name, []byte("a")); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		failA, handled = false, nil
		mu.Unlock()
		run()
		if got := strings.Join(handled, " "); got != "2:a" {
			t.Fatalf("after the release handled %q, want the parked 2:a", got)
		}
	})
}
