package main

import (
	"context"
	"errors"
	"testing"

	"github.com/stratalog/strata/pkg/lambdaconsumer"
	"github.com/stratalog/strata/pkg/segment"
)

// TestPoisonRecordIsAnError: a value that is not an order fails the handler (so the
// group's max attempts and dead-letter topic apply) before any write; it used to be
// stored as is and counted handled, so nothing could ever be dead-lettered.
func TestPoisonRecordIsAnError(t *testing.T) {
	orders := &orderTable{} // no client: a poison record must not reach the table
	for _, v := range []string{"this is not an order", `{"amount": 3}`, `[1, 2]`, `{"order_id": ""}`, ``} {
		err := orders.apply(context.Background(), lambdaconsumer.Record{Topic: "orders", Partition: 1, Record: segment.Record{Offset: 7, Value: []byte(v)}})
		if !errors.Is(err, errNotAnOrder) {
			t.Errorf("apply(%q) = %v, want errNotAnOrder", v, err)
		}
	}
}
