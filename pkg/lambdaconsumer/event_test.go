package lambdaconsumer_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/stratalog/strata/pkg/lambdaconsumer"
)

// TestEventFixture: dispatch's payload, decoded by aws-lambda-go as in the function.
func TestEventFixture(t *testing.T) {
	n := newNode(t, 1, time.Hour, 5)
	led := newLedger()
	h := lambda.NewHandler(lambdaconsumer.Handler(lambdaconsumer.Config{Open: n.backend, Metrics: nopMetrics{}, IdleWait: 20 * time.Millisecond},
		func(_ context.Context, r lambdaconsumer.Record) error { led.put(r.Offset); return nil }))
	payload, err := os.ReadFile(filepath.Join("testdata", "consumer-event.json"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := h.Invoke(ctx, payload)
	if err != nil {
		t.Fatal(err)
	}
	var res lambdaconsumer.Result
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	if res.Handled != 5 || res.Committed != 5 || res.LeaseHeld {
		t.Errorf("result %s", out)
	}
	led.check(t, 5)
}

// FuzzEvent: any payload is refused or consumed, never a panic; a refused one touches
// nothing.
func FuzzEvent(f *testing.F) {
	payload, err := os.ReadFile(filepath.Join("testdata", "consumer-event.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(payload)
	f.Add([]byte(`{"topic":"orders","partition":-3,"group":"billing"}`))
	f.Add([]byte(`{"topic":"orders","partition":99,"group":"billing"}`))
	f.Add([]byte(`[]`))
	n := newNode(f, 1, time.Hour, 0)
	h := lambda.NewHandler(lambdaconsumer.Handler(lambdaconsumer.Config{Open: n.backend, Metrics: nopMetrics{}, IdleWait: time.Millisecond},
		func(context.Context, lambdaconsumer.Record) error { return nil }))
	f.Fuzz(func(t *testing.T, payload []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		out, err := h.Invoke(ctx, payload)
		if err == nil && !json.Valid(out) {
			t.Fatalf("invalid result %q", out)
		}
	})
}
