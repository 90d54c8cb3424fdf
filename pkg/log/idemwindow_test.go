package log_test

import (
	"context"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
)

// TestIdempotencyClaimsKeptForTheWindow (issue 18 item 15): an idempotent append's
// claims, request-level and per partition, expire IdempotencyWindow after the append,
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
		for _, p := range []int32{-1, 0} {
			rec, err := s.Meta.GetIdempotency(ctx, topic.ID()+"#k", p)
			if err != nil {
				t.Fatalf("claim of partition %d: %v", p, err)
			}
			if !rec.ExpiresAt.Equal(want) {
				t.Fatalf("claim of partition %d expires at %s, want %s (the append + %s)",
					p, rec.ExpiresAt.UTC(), want.UTC(), log.IdempotencyWindow)
			}
		}
	})
}
