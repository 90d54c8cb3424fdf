package log_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
)

// as is opt sent by principal.
func as(principal string, opt log.AppendOptions) log.AppendOptions {
	opt.Principal = principal
	return opt
}

// TestProducerRetriesBoundedPerPrincipal: a principal's producer retries never take the
// share of a topic's fences kept for the others (store.FenceLimits.OwnerFences; small
// limits here, so that filling them takes a few dozen fences). Holding fences of
// all the rest, its retry of another request is refused with ErrRetryLimit, saying it
// appended nothing, and appends nothing; a later attempt of a request it holds a fence
// of still goes through; and another principal's retries, and the in-process
// principal's, still fence and append. A request's attempt past store.MaxFenceAttempts
// is refused alike, so no one piles attempts on a key. Both backends.
func TestProducerRetriesBoundedPerPrincipal(t *testing.T) {
	limits := store.FenceLimits{Fences: 24, OwnerFences: 8}
	backendtest.ForEachWith(t, backendtest.Options{FenceLimits: limits}, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l := newLog(t, s)
		mustTopic(t, l, "orders", 1)
		tp, err := l.Topic(ctx, "orders")
		if err != nil {
			t.Fatal(err)
		}
		// mallory's earlier retries, fenced on the store as they fence (each retry
		// through the log would cost a search), but for the last of her share.
		start := time.Now()
		for i := range limits.Share() - 1 {
			f := store.RequestFence{Key: log.ScopedKey(tp.ID(), "mallory", fmt.Sprintf("f.%d", i)), Owner: log.PrincipalScope("mallory"),
				Attempt: 1, At: start}
			if _, err := s.Meta.FenceRequest(ctx, tp.ID(), f); err != nil {
				t.Fatalf("fence %d of mallory: %v", i, err)
			}
		}
		if _, err := l.Append(ctx, "orders", producerRecords("m.0", 1, 1), as("mallory", retryOf("m.0", 1))); err != nil {
			t.Fatalf("mallory's last retry within her share: %v", err)
		}
		hw := hws(t, l, "orders")
		_, err = l.Append(ctx, "orders", producerRecords("m.more", 1, 1), as("mallory", retryOf("m.more", 1)))
		if !errors.Is(err, log.ErrRetryLimit) || !strings.Contains(err.Error(), "appended nothing") {
			t.Fatalf("mallory's retry past her share: %v, want ErrRetryLimit saying it appended nothing", err)
		}
		if got := hws(t, l, "orders"); !slices.Equal(got, hw) {
			t.Fatalf("a refused retry appended: high watermarks %v → %v", hw, got)
		}
		// A later attempt of a request mallory holds a fence of finds its attempt.
		if _, err := l.Append(ctx, "orders", producerRecords("m.0", 1, 1), as("mallory", retryOf("m.0", 2))); err != nil {
			t.Fatalf("mallory's next attempt of a fenced request: %v", err)
		}
		if got := hws(t, l, "orders"); !slices.Equal(got, hw) {
			t.Fatalf("the next attempt of an appended request appended: high watermarks %v → %v", hw, got)
		}
		for _, p := range []string{"alice", ""} {
			key := "a." + p
			recs := producerRecords(key, 1, 1)
			if _, err := l.Append(ctx, "orders", recs, as(p, retryOf(key, 1))); err != nil {
				t.Fatalf("principal %q's retry beside mallory's fences: %v", p, err)
			}
			mustOnce(t, countValues(t, l, "orders", 1), recs)
		}
		hw = hws(t, l, "orders")
		_, err = l.Append(ctx, "orders", producerRecords("a.alice", 1, 1), as("alice", retryOf("a.alice", store.MaxFenceAttempts+1)))
		if !errors.Is(err, log.ErrRetryLimit) || !strings.Contains(err.Error(), "appended nothing") {
			t.Fatalf("attempt %d of a request: %v, want ErrRetryLimit saying it appended nothing", store.MaxFenceAttempts+1, err)
		}
		if got := hws(t, l, "orders"); !slices.Equal(got, hw) {
			t.Fatalf("a refused attempt appended: high watermarks %v → %v", hw, got)
		}
	})
}

// TestKeysScopedByPrincipal: the same Idempotency-Key sent by two principals, or by a
// principal and the in-process one, names two requests: each is appended, none is
// refused as the other's key reused, and each one's retry is answered with its own
// first offsets.
func TestKeysScopedByPrincipal(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l := newLog(t, s)
		mustTopic(t, l, "orders", 2)
		backendtest.Materialise(t, s, l)
		first := map[string][]log.Result{}
		for _, p := range []string{"mallory", "alice", ""} {
			res, err := l.Append(ctx, "orders", producerRecords("by-"+p, 3, 2), as(p, log.AppendOptions{IdempotencyKey: "dlq:k"}))
			if err != nil {
				t.Fatalf("principal %q under a key another used first: %v", p, err)
			}
			first[p] = res
		}
		hw := hws(t, l, "orders")
		for p, res := range first {
			again, err := newLog(t, s).Append(ctx, "orders", producerRecords("by-"+p, 3, 2), as(p, log.AppendOptions{IdempotencyKey: "dlq:k"}))
			if err != nil {
				t.Fatalf("principal %q's retry: %v", p, err)
			}
			sameResults(t, fmt.Sprintf("principal %q's retry", p), res, again)
		}
		if got := hws(t, l, "orders"); !slices.Equal(got, hw) {
			t.Fatalf("a retry appended: high watermarks %v → %v", hw, got)
		}
		if a, b := log.ScopedKey("t#i", "x", "k"), log.ScopedKey("t#i", "", "@"+strings.Repeat("0", 16)+"#t#i#k"); a == b {
			t.Fatalf("a principal's scoped key %q is an in-process one's", a)
		}
	})
}
