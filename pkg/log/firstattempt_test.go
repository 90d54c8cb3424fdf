package log_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
)

// claimReads counts the reads of request claims (GetRequestClaim) over a MetaStore.
type claimReads struct {
	store.MetaStore
	reads atomic.Int64
}

func (c *claimReads) GetRequestClaim(ctx context.Context, key string, parts []int32) (store.RequestClaim, error) {
	c.reads.Add(1)
	return c.MetaStore.GetRequestClaim(ctx, key, parts)
}

// TestFirstAttemptReadsNoClaim (issue 20): an idempotent append marked as its first
// attempt reads no claim, on both backends; its retry reads the claim once, answers the
// first attempt's offsets and appends nothing.
func TestFirstAttemptReadsNoClaim(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		meta := &claimReads{MetaStore: s.Meta}
		l, err := log.New(log.Config{Objects: s.Objects, Meta: meta})
		if err != nil {
			t.Fatal(err)
		}
		mustTopic(t, l, "first", 2)
		recs := []log.Record{{Value: []byte("a"), Partition: i32(0)}, {Value: []byte("b"), Partition: i32(1)}}
		first, err := l.Append(ctx, "first", recs, log.AppendOptions{IdempotencyKey: "k", FirstAttempt: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := meta.reads.Load(); got != 0 {
			t.Fatalf("a first attempt read %d claims, want 0", got)
		}
		before := hws(t, l, "first")
		again, err := l.Append(ctx, "first", recs, log.AppendOptions{IdempotencyKey: "k"})
		if err != nil || fmt.Sprint(again) != fmt.Sprint(first) {
			t.Fatalf("retry = %v, %v; first %v", again, err, first)
		}
		if got := meta.reads.Load(); got != 1 {
			t.Fatalf("a retry read %d claims, want 1", got)
		}
		if after := hws(t, l, "first"); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("the retry of an acknowledged request moved high watermarks %v → %v", before, after)
		}
	})
}

// TestFirstAttemptReusedKeyRefusedAndSkipped (issue 20): a key reused with another body
// by a request marked as its first attempt (no claim read before it) is refused with
// ErrIdempotencyKeyReused (422 over HTTP) after its commit, and its records are skipped:
// a poll never returns them, on both backends. A "first attempt" that is in fact a
// resend of the same body answers the first offsets and its copy is skipped too.
func TestFirstAttemptReusedKeyRefusedAndSkipped(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l := newLog(t, s)
		mustTopic(t, l, "reuse", 2)
		body := []log.Record{{Value: []byte("first-0"), Partition: i32(0)}, {Value: []byte("first-1"), Partition: i32(1)}}
		opt := log.AppendOptions{IdempotencyKey: "k", FirstAttempt: true}
		first, err := l.Append(ctx, "reuse", body, opt)
		if err != nil {
			t.Fatal(err)
		}
		other := []log.Record{{Value: []byte("other-0"), Partition: i32(0)}, {Value: []byte("other-1"), Partition: i32(1)}}
		if _, err := l.Append(ctx, "reuse", other, opt); !errors.Is(err, log.ErrIdempotencyKeyReused) {
			t.Fatalf("reused key on a first attempt: %v, want ErrIdempotencyKeyReused", err)
		}
		resent, err := l.Append(ctx, "reuse", body, opt)
		if err != nil || fmt.Sprint(resent) != fmt.Sprint(first) {
			t.Fatalf("a resend marked first = %v, %v; want the first offsets %v", resent, err, first)
		}
		for p := int32(0); p < 2; p++ {
			var vals []string
			for _, r := range readAll(t, l, "reuse", p) {
				vals = append(vals, string(r.Value))
			}
			if want := fmt.Sprintf("[first-%d]", p); fmt.Sprint(vals) != want {
				t.Fatalf("partition %d reads %v, want %s (the reused key's and the resend's records skipped)", p, vals, want)
			}
		}
	})
}
