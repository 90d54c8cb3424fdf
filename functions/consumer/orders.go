package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/lambdaconsumer"
)

// orderTable applies order events to the business table through the fenced business
// store (lambdaconsumer.EffectsFrom): each write checks, in the same DynamoDB
// transaction, that the invocation's lease generation is still the partition's and that
// the record was not applied before.
type orderTable struct {
	// effects returns the fenced store of the handler's invocation (default
	// lambdaconsumer.EffectsFrom).
	effects func(ctx context.Context) *group.Effects
}

// order is the event's value; unknown fields are kept in the raw value stored.
type order struct {
	OrderID string  `json:"order_id"`
	Amount  float64 `json:"amount"`
}

// errNotAnOrder is a poison record: retrying it cannot help, and the group's settings
// (max attempts, dead-letter topic) decide what becomes of it.
var errNotAnOrder = errors.New("not an order (want a JSON object with an order_id)")

// apply writes the order once, under its topic/partition/offset: a redelivered record
// (a crash before the commit) is refused as applied and counts as done; a zombie
// invocation's write (its partition moved to a newer generation) is refused as fenced,
// which stops its run. A value that is not an order is an error: the consumer library
// retries it up to the group's max attempts, then dead-letters it to the group's
// dead-letter topic (or drops it, counted, without one), so a poison value never
// stalls the partition.
func (t *orderTable) apply(ctx context.Context, r lambdaconsumer.Record) error {
	var o order
	if json.Unmarshal(r.Value, &o) != nil || o.OrderID == "" {
		return fmt.Errorf("orders: %s/%d@%d: %w", r.Topic, r.Partition, r.Offset, errNotAnOrder)
	}
	fx := t.effects(ctx)
	if fx == nil {
		return errors.New("orders: no fenced business store configured")
	}
	err := fx.Apply(ctx, r.Fence, r.Offset, deploy.BusinessID(r.Topic, r.Partition, r.Offset), r.Value)
	if errors.Is(err, group.ErrApplied) {
		return nil // applied by an earlier delivery
	}
	if err != nil {
		return fmt.Errorf("orders: apply %s/%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
	}
	return nil
}
