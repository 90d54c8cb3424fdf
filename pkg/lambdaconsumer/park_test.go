package lambdaconsumer_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/lambdaconsumer"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/metrics/emf"
)

// TestLambdaConsumerParksAcrossInvocations: a group with on_failure "park" parks the
// poison key in one invocation (the other records pass and are committed), the next
// invocation — another execution environment — forwards the key's newer record without
// handling it, and once released an invocation replays the key in order and unparks it.
// The invocations' EMF lines count the records parked and replayed, under the names the
// stack reads (pkg/deploy).
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
	var lines syncBuffer
	sink := emf.New(&lines, deploy.MetricsNamespace, nil)
	handler := func() lambda.Handler {
		return lambda.NewHandler(lambdaconsumer.Handler(lambdaconsumer.Config{Open: n.backend, Metrics: sink, IdleWait: 20 * time.Millisecond,
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
	if got := emfSum(t, lines.String(), deploy.MetricParkedRecords); got != 3 {
		t.Errorf("EMF %s summed to %v over the invocations, want 3", deploy.MetricParkedRecords, got)
	}
	if got := emfSum(t, lines.String(), deploy.MetricReplayedRecords); got != 3 {
		t.Errorf("EMF %s summed to %v over the invocations, want 3", deploy.MetricReplayedRecords, got)
	}
}

// emfSum adds metric's values over the EMF lines of billing/orders.
func emfSum(t *testing.T, lines, metric string) float64 {
	t.Helper()
	sum := 0.0
	for _, line := range strings.Split(strings.TrimSpace(lines), "\n") {
		var doc map[string]any
		if err := json.Unmarshal([]byte(line), &doc); err != nil {
			t.Fatalf("EMF line %q: %v", line, err)
		}
		if v, ok := doc[metric].(float64); ok && doc["group"] == "billing" && doc["topic"] == "orders" {
			sum += v
		}
	}
	return sum
}

// syncBuffer is an EMF sink's output several runs write.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
