package log_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/segment"
)

// TestIdempotentMembersShareCommits (issue 20 item 1, folded claims): 8 idempotent
// requests of 2 partitions each, joining one group-commit batch, share its one object
// and one commit per partition like requests without a key (before, each kept a commit
// of its own per partition: 16 commits), and each request's records read back once, at
// the offsets it was acknowledged. A retry of each answers the same offsets and commits
// nothing.
func TestIdempotentMembersShareCommits(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l, objs, meta := groupLog(t, s, 2*time.Second, 0, nil)
		mustTopic(t, l, "fold", 2)
		warm(t, l, "fold")
		const n = 8
		body := func(k int) []log.Record {
			return []log.Record{
				{Value: fmt.Appendf(nil, "k%d-p0", k), Partition: i32(0)},
				{Value: fmt.Appendf(nil, "k%d-p1", k), Partition: i32(1)},
			}
		}
		puts, commits := objs.puts.Load(), meta.commits.Load()
		res := make([][]log.Result, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for k := range n {
			wg.Go(func() {
				res[k], errs[k] = l.Append(ctx, "fold", body(k), log.AppendOptions{IdempotencyKey: fmt.Sprintf("key-%d", k)})
			})
		}
		wg.Wait()
		for k, err := range errs {
			if err != nil {
				t.Fatalf("append %d: %v", k, err)
			}
		}
		if got := objs.puts.Load() - puts; got != 1 {
			t.Fatalf("%d objects for one batch of %d idempotent requests, want 1", got, n)
		}
		if got := meta.commits.Load() - commits; got > 2 {
			t.Fatalf("%d commits for one batch of %d idempotent requests over 2 partitions, want at most 2 (one per partition, or one topic commit)", got, n)
		}
		commits = meta.commits.Load()
		for k := range n {
			again, err := l.Append(ctx, "fold", body(k), log.AppendOptions{IdempotencyKey: fmt.Sprintf("key-%d", k)})
			if err != nil || fmt.Sprint(again) != fmt.Sprint(res[k]) {
				t.Fatalf("retry %d = %v, %v; first %v", k, again, err, res[k])
			}
		}
		if got := meta.commits.Load() - commits; got != 0 {
			t.Fatalf("retries of acknowledged requests made %d commits, want 0", got)
		}
		for p := int32(0); p < 2; p++ {
			at := map[int64]string{}
			for _, r := range readAll(t, l, "fold", p) {
				at[r.Offset] = string(r.Value)
			}
			if len(at) != n {
				t.Fatalf("partition %d holds %d records, want %d", p, len(at), n)
			}
			for k := range n {
				if want := string(body(k)[p].Value); at[res[k][p].Offset] != want {
					t.Fatalf("partition %d offset %d holds %q, want %q", p, res[k][p].Offset, at[res[k][p].Offset], want)
				}
			}
		}
	})
}

// TestRangesSkipAnAttemptInsideASharedCommit: two attempts of one idempotent request
// and a plain append in one batch share one commit; the attempt that does not own the
// key is a skip run inside the entry, which a raw-range poll leaves out (the range
// breaks around it) and a record poll passes over, both moving past its offsets.
func TestRangesSkipAnAttemptInsideASharedCommit(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l, _, meta := groupLog(t, s, time.Second, 0, nil)
		mustTopic(t, l, "skip", 1)
		warm(t, l, "skip")
		commits := meta.commits.Load()
		var wg sync.WaitGroup
		errs := make([]error, 3)
		for a := range 2 {
			wg.Go(func() {
				_, errs[a] = l.Append(ctx, "skip", []log.Record{{Value: []byte("idem")}}, log.AppendOptions{IdempotencyKey: "k"})
			})
		}
		wg.Go(func() {
			_, errs[2] = l.Append(ctx, "skip", []log.Record{{Value: []byte("plain")}}, log.AppendOptions{})
		})
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("append %d: %v", i, err)
			}
		}
		if got := meta.commits.Load() - commits; got != 1 {
			t.Skipf("the appends landed in %d commits, not 1: nothing skipped inside an entry", got)
		}
		_, hw, err := l.Bounds(ctx, "skip", 0)
		if err != nil {
			t.Fatal(err)
		}
		from := hw - 3
		rr, err := l.PollRanges(ctx, "skip", 0, from, log.PollOptions{MaxRecords: 100})
		if err != nil {
			t.Fatal(err)
		}
		var vals []string
		for _, r := range rr.Ranges {
			recs, err := segment.AppendBlocksRecords(nil, r.Data, r.BaseOffset)
			if err != nil {
				t.Fatal(err)
			}
			for _, rec := range recs {
				vals = append(vals, string(rec.Value))
			}
		}
		if fmt.Sprint(vals) != "[idem plain]" && fmt.Sprint(vals) != "[plain idem]" || rr.NextOffset != hw {
			t.Fatalf("ranges poll = %v, next %d; want idem and plain once each, next %d", vals, rr.NextOffset, hw)
		}
		res, err := l.Poll(ctx, "skip", 0, from, log.PollOptions{MaxRecords: 100})
		if err != nil || len(res.Records) != 2 || res.NextOffset != hw {
			t.Fatalf("record poll = %d records, next %d, %v; want 2, next %d", len(res.Records), res.NextOffset, err, hw)
		}
	})
}
