package log_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
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
