package lambdaconsumer_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/lambdaconsumer"
	"github.com/stratalog/strata/pkg/log"
)

// TestLambdaConsumerParksAcrossInvocations: a group with on_failure "park" parks the
// poison key in one invocation (the other records pass and are committed), the next
// invocation — another execution environment — forwards the key's newer record without
// handling it, and once released an invocation replays the key in order and unparks it.
func TestLambdaConsumerParksAcrossInvocations(t *testing.T) {
	n := newNode(t, 1, time.Hour, 0)
	ctx := context.Background()
	p := int32(0)
	appendKeys := func(keys ...string) {
		for _, k := range keys {
			if _, err := n.log.Append(ctx, "orders", []log.Record{{Key: []byte(k), Value: []byte(k), Partition: &p}}, log.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendKeys("a", "bad", "b", "bad", "c") // offsets 0..4
	if _, err := n.coord.SetSettings(ctx, "billing", group.Settings{ResetPolicy: "earliest", MaxAttempts: 2, OnFailure: group.OnFailurePark}); err != nil {
		t.Fatal(err)
	}
	var poisoned atomic.Bool
	poisoned.Store(true)
	var mu sync.Mutex
	var badHandled []int64
	handler := func() lambda.Handler {
		return lambda.NewHandler(lambdaconsumer.Handler(lambdaconsumer.Config{Open: n.backend, Metrics: nopMetrics{}, IdleWait: 20 * time.Millisecond,
			Backoff: func(int) time.Duration { return time.Millisecond }},
			func(_ context.Context, r lambdaconsumer.Record) error {
				if string(r.Key) != "bad" {
					return nil
				}
				if poisoned.Load() {
					return errors.New("poison")
				}
				mu.Lock()
				badHandled = append(badHandled, r.Offset)
				mu.Unlock()
				return nil
			}))
	}
	res, err := invokeFixture(t, handler())
	if err != nil {
		t.Fatal(err)
	}
	if res.Parked != 2 || res.Handled != 3 || res.Committed != 5 || res.DeadLetter != 0 || res.Dropped != 0 {
		t.Fatalf("first invocation %+v; want 2 parked, 3 handled, committed 5", res)
	}
	appendKeys("bad", "d") // offsets 5, 6
	res, err = invokeFixture(t, handler())
	if err != nil {
		t.Fatal(err)
	}
	if res.Parked != 1 || res.Handled != 1 || res.Committed != 7 {
		t.Fatalf("second invocation %+v; want the key's newer record forwarded, d handled, committed 7", res)
	}
	poisoned.Store(false)
	if _, err := n.coord.ReleaseParked(ctx, "billing", "orders", []byte("bad")); err != nil {
		t.Fatal(err)
	}
	res, err = invokeFixture(t, handler())
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if res.Replayed != 3 || !slices.Equal(badHandled, []int64{1, 3, 5}) {
		t.Fatalf("release invocation %+v, handled %v; want offsets 1, 3, 5 replayed in order", res, badHandled)
	}
	if rows, err := n.coord.ListParked(ctx, "billing"); err != nil || len(rows) != 0 {
		t.Fatalf("parked after release: %v, %v", rows, err)
	}
}
