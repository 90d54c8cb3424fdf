package lambdaconsumer_test

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/lambdaconsumer"
)

// TestHandlerWritesFencedEffects: a handler gets its record's fencing token and the
// fenced business store (EffectsFrom); after a reset of the group (a new generation)
// the next invocation redelivers the records, and their effects are refused as applied.
func TestHandlerWritesFencedEffects(t *testing.T) {
	n := newNode(t, 1, time.Hour, 5)
	fx := group.NewEffects(n.stores.Effects(context.Background(), t), n.log)
	open := func(ctx context.Context) (lambdaconsumer.Backend, error) {
		b, err := n.backend(ctx)
		b.Effects = fx
		return b, err
	}
	var applied, refused atomic.Int64
	var gens []int64
	h := lambdaconsumer.Handler(lambdaconsumer.Config{Open: open, Metrics: nopMetrics{}, IdleWait: 20 * time.Millisecond},
		func(ctx context.Context, r lambdaconsumer.Record) error {
			if r.Fence.Group != "billing" || r.Fence.Topic != "orders" || r.Fence.Partition != 0 {
				t.Errorf("record %d fence %+v", r.Offset, r.Fence)
			}
			gens = append(gens, r.Fence.Generation)
			err := lambdaconsumer.EffectsFrom(ctx).Apply(ctx, r.Fence, r.Offset, "order-"+strconv.FormatInt(r.Offset, 10), r.Value)
			switch {
			case errors.Is(err, group.ErrApplied):
				refused.Add(1)
				return nil
			case err == nil:
				applied.Add(1)
			}
			return err
		})
	ctx := context.Background()
	if res, err := h(ctx, ev); err != nil || res.Handled != 5 {
		t.Fatalf("first invocation: %+v, %v", res, err)
	}
	if _, err := n.coord.Reset(ctx, "billing", "orders", group.ResetOffset(0)); err != nil {
		t.Fatal(err)
	}
	if res, err := h(ctx, ev); err != nil || res.Handled != 5 {
		t.Fatalf("invocation after the reset: %+v, %v", res, err)
	}
	if applied.Load() != 5 || refused.Load() != 5 || gens[0] == gens[len(gens)-1] {
		t.Fatalf("applied %d, refused as applied %d, generations %v; want 5, 5 and a newer generation after the reset", applied.Load(), refused.Load(), gens)
	}
}
