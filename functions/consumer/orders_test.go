package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/lambdaconsumer"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/store/dynamo"
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

// TestOrderWritesAreFenced: the example's write of an order lands once (a redelivery is
// done, not an error), and a zombie's write after the partition moved is refused as
// fenced, on both backends.
func TestOrderWritesAreFenced(t *testing.T) {
	if dynamo.EffectKeyAttribute != deploy.BusinessKey {
		t.Fatalf("the fenced store's key %q is not the order table's %q", dynamo.EffectKeyAttribute, deploy.BusinessKey)
	}
	if dynamo.EffectTTLAttribute != deploy.BusinessTTLAttribute {
		t.Fatalf("the fenced store's marker TTL attribute %q is not the order table's %q", dynamo.EffectTTLAttribute, deploy.BusinessTTLAttribute)
	}
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.CreateTopic(ctx, "orders", 1, 0); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		coord := group.New(s.Meta, l, func() time.Time { return now })
		fx := group.NewEffects(s.Effects(ctx, t), l)
		orders := &orderTable{effects: func(context.Context) *group.Effects { return fx }}
		old, err := coord.Acquire(ctx, "billing", "orders", 0, "invocation-1", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		rec := func(l group.Lease, off int64) lambdaconsumer.Record {
			return lambdaconsumer.Record{Topic: "orders", Partition: 0, Fence: group.Fence{Group: "billing", Topic: "orders", Partition: 0, Generation: l.Generation},
				Record: segment.Record{Offset: off, Value: []byte(`{"order_id": "o-1", "amount": 3}`)}}
		}
		for i := 0; i < 2; i++ { // the second is a redelivery
			if err := orders.apply(ctx, rec(old, 0)); err != nil {
				t.Fatalf("apply #%d: %v", i+1, err)
			}
		}
		now = now.Add(2 * time.Second) // the first invocation's lease lapses
		fresh, err := coord.Acquire(ctx, "billing", "orders", 0, "invocation-2", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := orders.apply(ctx, rec(old, 1)); !errors.Is(err, group.ErrFenced) {
			t.Fatalf("zombie apply: %v, want ErrFenced", err)
		}
		if err := orders.apply(ctx, rec(fresh, 1)); err != nil {
			t.Fatalf("apply by the new owner: %v", err)
		}
	})
}
