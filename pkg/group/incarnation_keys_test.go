package group_test

import (
	"context"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
)

// TestLagHistoryCarriesIncarnation: the lag history filed its series by topic name,
// so a topic created again under a name continued the deleted incarnation's history
// (its lag samples charted as the new topic's). The new incarnation starts its own.
func TestLagHistoryCarriesIncarnation(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta})
		if err != nil {
			t.Fatal(err)
		}
		c := group.New(s.Meta, l, nil)
		fill := func(n int) {
			if _, err := l.CreateTopic(ctx, "orders", 1, 0); err != nil {
				t.Fatal(err)
			}
			p := int32(0)
			recs := make([]log.Record, n)
			for i := range recs {
				recs[i] = log.Record{Value: []byte("v"), Partition: &p}
			}
			if _, err := l.Append(ctx, "orders", recs, log.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
			lease, err := c.Acquire(ctx, "billing", "orders", 0, "m-1", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Commit(ctx, "billing", lease.TopicRef(), 0, "m-1", lease.Generation, 1); err != nil {
				t.Fatal(err)
			}
			if err := c.Release(ctx, "billing", lease.TopicRef(), 0, "m-1", lease.Generation); err != nil {
				t.Fatal(err)
			}
			if _, err := c.SampleLag(ctx); err != nil {
				t.Fatal(err)
			}
		}
		fill(5)
		if err := l.DeleteTopic(ctx, "orders"); err != nil {
			t.Fatal(err)
		}
		fill(3)
		h, err := c.LagHistory(ctx, "billing")
		if err != nil {
			t.Fatal(err)
		}
		if len(h) != 1 || h[0].Topic != "orders" || h[0].Partition != 0 || len(h[0].Samples) != 1 || h[0].Samples[0].Records != 2 {
			t.Fatalf("lag history %+v; want one sample of orders/0 (lag 2), the new incarnation's", h)
		}
	})
}
