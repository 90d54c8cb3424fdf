package log_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/retention"
	"github.com/stratalog/strata/pkg/store"
)

// TestIdempotencyKeyRaceWithTwoBodies (issue 13, defect 10): two concurrent requests
// with one Idempotency-Key and different bodies, each touching two partitions. Before
// the request-level claim each could win some partitions, both got 422 although records
// were written, and the key stayed unusable. Now exactly one request wins and appends
// everything; the other is refused with nothing of it readable (with folded claims a
// loser that raced past the claim read has committed blocks readers skip, so its
// offsets are holes); a retry of the winner returns its offsets.
func TestIdempotencyKeyRaceWithTwoBodies(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l := newLog(t, s)
		mustTopic(t, l, "race", 2)
		for round := range 10 {
			key := fmt.Sprintf("k-%d", round)
			bodies := [2][]log.Record{}
			for b := range bodies {
				bodies[b] = []log.Record{
					{Value: fmt.Appendf(nil, "r%d-body%d-p0", round, b), Partition: i32(0)},
					{Value: fmt.Appendf(nil, "r%d-body%d-p1", round, b), Partition: i32(1)},
				}
			}
			hosts := [2]*log.Log{newLog(t, s), newLog(t, s)}
			var res [2][]log.Result
			var errs [2]error
			var wg sync.WaitGroup
			for b := range bodies {
				wg.Go(func() {
					res[b], errs[b] = hosts[b].Append(ctx, "race", bodies[b], log.AppendOptions{IdempotencyKey: key})
				})
			}
			wg.Wait()
			winner := -1
			for b, err := range errs {
				switch {
				case err == nil && winner < 0:
					winner = b
				case err == nil:
					t.Fatalf("round %d: both bodies were accepted under one key", round)
				case !errors.Is(err, log.ErrIdempotencyKeyReused):
					t.Fatalf("round %d: body %d: %v, want idempotency_key_reused", round, b, err)
				}
			}
			if winner < 0 {
				t.Fatalf("round %d: both requests refused: %v", round, errs)
			}
			again, err := l.Append(ctx, "race", bodies[winner], log.AppendOptions{IdempotencyKey: key})
			if err != nil || again[0] != res[winner][0] || again[1] != res[winner][1] {
				t.Fatalf("round %d: retry of the winner = %+v, %v; want %+v", round, again, err, res[winner])
			}
		}
		for p := int32(0); p < 2; p++ {
			recs := readAll(t, l, "race", p)
			for i := 1; i < len(recs); i++ {
				if recs[i].Offset <= recs[i-1].Offset {
					t.Fatalf("partition %d: offset %d read after %d", p, recs[i].Offset, recs[i-1].Offset)
				}
			}
			for _, r := range recs {
				if !bytes.Contains(r.Value, []byte("-body")) {
					t.Fatalf("partition %d: unexpected record %q", p, r.Value)
				}
			}
			if len(recs) != 10 {
				t.Fatalf("partition %d holds %d records after 10 rounds, want 10 (one per round)", p, len(recs))
			}
		}
	})
}

// retentionMidPoll runs a retention pass between a poll's bounds read and its index
// read, once: the race of issue 13's defect 5.
type retentionMidPoll struct {
	store.MetaStore
	once sync.Once
	run  func()
}

func (r *retentionMidPoll) IndexEntries(ctx context.Context, topic string, p int32, from int64, limit int) ([]store.IndexEntry, error) {
	r.once.Do(r.run)
	return r.MetaStore.IndexEntries(ctx, topic, p, from, limit)
}

// TestPollRacingRetention (issue 13, defect 5): a poll whose offset retention expires
// between the poll's read of the bounds and its read of the index answers
// offset_out_of_range with the new bounds, not an internal error.
func TestPollRacingRetention(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		now := time.Now()
		clock := func() time.Time { return now }
		l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.CreateTopic(ctx, "exp", 1, time.Minute); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if _, err := l.Append(ctx, "exp", []log.Record{{Value: fmt.Appendf(nil, "v%d", i)}}, log.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		job := retention.Job{Meta: s.Meta, Objects: s.Objects, Clock: func() time.Time { return now.Add(time.Hour) }, ObjectMargin: time.Second}
		racy := &retentionMidPoll{MetaStore: s.Meta, run: func() {
			if _, err := job.Run(ctx); err != nil {
				t.Errorf("retention: %v", err)
			}
		}}
		reader, err := log.New(log.Config{Objects: s.Objects, Meta: racy, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		_, err = reader.Poll(ctx, "exp", 0, 1, log.PollOptions{})
		var oor *log.OffsetOutOfRangeError
		if !errors.As(err, &oor) || oor.LogStartOffset != 3 || oor.HighWatermark != 3 {
			t.Fatalf("poll racing retention = %v, want offset_out_of_range with bounds [3, 3]", err)
		}
	})
}
