package dispatch_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/dispatch"
	"github.com/stratalog/strata/pkg/dispatch/invoke"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store/awstest"
)

// routed sends each function's invocations to its own Invoker, the rest to fallback.
type routed struct {
	by       map[string]dispatch.Invoker
	fallback dispatch.Invoker
}

func (r routed) Invoke(ctx context.Context, fn string, ev deploy.ConsumerEvent) error {
	if inv, ok := r.by[fn]; ok {
		return inv.Invoke(ctx, fn, ev)
	}
	return r.fallback.Invoke(ctx, fn, ev)
}

// TestOneSubscriptionsFailedInvokeDoesNotFailTheBatch: an attached subscription whose
// function dispatch cannot invoke (the real Lambda API on the emulator answers
// ResourceNotFoundException: the function does not exist) beside a working one on the
// same topic. The stream batch succeeds (the stream does not retry it, nothing stalls
// behind it), the other subscription's consumer is woken, and the failure is counted and
// logged naming the function; the sweep tries it again (and reports it) and wakes the
// other again. On both backends.
func TestOneSubscriptionsFailedInvokeDoesNotFailTheBatch(t *testing.T) {
	ctx := context.Background()
	lambdaAPI := lambda.NewFromConfig(awstest.Config(ctx, t))
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.CreateTopic(ctx, "orders", 1, time.Hour); err != nil {
			t.Fatal(err)
		}
		n := &node{meta: s.Meta, log: l}
		commits := n.appendN(t, "orders", 0, 2)
		missing := fmt.Sprintf("strata-missing-%d", time.Now().UnixNano())
		rec := &recorder{}
		var logs bytes.Buffer
		d, err := dispatch.New(dispatch.Config{
			Subscriptions: subs("orders", "ship", "shipFn"),
			Source:        source{subs: subs("orders", "bill", missing)},
			Logger:        slog.New(slog.NewTextHandler(&logs, nil)),
			Leases:        s.Meta, Offsets: l,
			Invoker: routed{by: map[string]dispatch.Invoker{missing: invoke.Async{Client: lambdaAPI}}, fallback: rec},
		})
		if err != nil {
			t.Fatal(err)
		}
		st, err := d.HandleCommits(ctx, commits)
		if err != nil {
			t.Fatalf("stream batch: %v; want it to succeed whatever one subscription's function does", err)
		}
		if got := rec.sorted(); !equal(got, []string{"shipFn:ship/orders/0"}) || st.Invocations != 1 || st.InvokeErrors != 1 {
			t.Errorf("stream: invoked %v, stats %+v; want shipFn woken and the failed invoke counted", got, st)
		}
		if !strings.Contains(logs.String(), missing) || !strings.Contains(logs.String(), "ResourceNotFound") {
			t.Errorf("the failed invoke is not logged with its function and cause:\n%s", logs.String())
		}
		st, err = d.Sweep(ctx)
		if err == nil || !strings.Contains(err.Error(), missing) {
			t.Errorf("sweep: %v; want it to retry and report the failed invoke of %s", err, missing)
		}
		if got := rec.sorted(); !equal(got, []string{"shipFn:ship/orders/0", "shipFn:ship/orders/0"}) || st.InvokeErrors != 1 {
			t.Errorf("sweep: invoked %v, stats %+v", got, st)
		}
	})
}
