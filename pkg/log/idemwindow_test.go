package log_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
)

// TestIdempotencyClaimsKeptForTheWindow (issue 18 item 15): an idempotent append's
// claim (one per request since folded claims, issue 20) expires IdempotencyWindow after the append,
// not after the topic's retention plus a day, which let them fill half of the local
// meta.db at the brief's rate.
func TestIdempotencyClaimsKeptForTheWindow(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		now := time.UnixMilli(1_780_000_000_000)
		l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta, Clock: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		topic, err := l.CreateTopic(ctx, "w", 1, 2*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(ctx, "w", []log.Record{{Value: []byte("v")}}, log.AppendOptions{IdempotencyKey: "k"}); err != nil {
			t.Fatal(err)
		}
		want := now.Add(log.IdempotencyWindow)
		claim, err := s.Meta.GetRequestClaim(ctx, topic.ID()+"#k", []int32{0})
		if err != nil {
			t.Fatalf("claim: %v", err)
		}
		if !claim.ExpiresAt.Equal(want) {
			t.Fatalf("claim expires at %s, want %s (the append + %s)", claim.ExpiresAt.UTC(), want.UTC(), log.IdempotencyWindow)
		}
		if _, err := s.Meta.GetIdempotency(ctx, topic.ID()+"#k", 0); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a per-partition claim: %v, want none (the request's claim carries the partition)", err)
		}
	})
}
