package httpconsumer_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
)

// TestAdapterGetSettings: the adapter reads the group's stored settings over HTTP,
// and an unknown group matches group.ErrNotFound (a consumer then applies a new
// group's defaults).
func TestAdapterGetSettings(t *testing.T) {
	ctx := context.Background()
	n := newNode(t)
	if _, err := n.log.CreateTopic(ctx, "dlq", 1, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := n.ad.GetSettings(ctx, "nobody"); !errors.Is(err, group.ErrNotFound) {
		t.Fatalf("unknown group: %v, want group.ErrNotFound", err)
	}
	want := group.Settings{ResetPolicy: "fail", MaxAttempts: 7, DeadLetterTopic: "dlq"}
	if _, err := n.coord.SetSettings(ctx, "billing", want); err != nil {
		t.Fatal(err)
	}
	got, err := n.ad.GetSettings(ctx, "billing")
	if err != nil || got.ResetPolicy != want.ResetPolicy || got.MaxAttempts != want.MaxAttempts || got.DeadLetterTopic != want.DeadLetterTopic {
		t.Fatalf("settings = %+v, %v; want %+v", got, err, want)
	}
}

// TestHTTPConsumerAppliesGroupSettings is issue 17.4 over HTTP: a consumer on the
// adapter with nothing configured tries a poison record the group's max attempts and
// dead-letters it to the group's topic.
func TestHTTPConsumerAppliesGroupSettings(t *testing.T) {
	ctx := context.Background()
	n := newNode(t)
	for _, tp := range []string{"orders", "dlq"} {
		if _, err := n.log.CreateTopic(ctx, tp, 1, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	appendN(t, n.log, "orders", 0, 4)
	if _, err := n.coord.SetSettings(ctx, "billing", group.Settings{ResetPolicy: "earliest", MaxAttempts: 2, DeadLetterTopic: "dlq"}); err != nil {
		t.Fatal(err)
	}
	var attempts atomic.Int64
	cons, err := consumer.New(n.ad, n.ad, consumer.Config{Group: "billing", Topic: "orders", Member: "m-0",
		PollWait: 10 * time.Millisecond, CommitInterval: time.Millisecond, Backoff: func(int) time.Duration { return time.Millisecond },
		Handler: func(_ context.Context, r consumer.Record) error {
			if r.Offset == 1 {
				attempts.Add(1)
				return errors.New("poison")
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := cons.Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true})
	if err != nil || attempts.Load() != 2 || st.DeadLettered != 1 || st.Committed != 4 {
		t.Fatalf("%d attempts, stats %+v, %v; want 2 attempts, 1 dead-lettered, committed 4", attempts.Load(), st, err)
	}
	dl, err := n.log.Poll(ctx, "dlq", 0, 0, log.PollOptions{})
	if err != nil || len(dl.Records) != 1 {
		t.Fatalf("dead letters: %+v, %v", dl, err)
	}
}
