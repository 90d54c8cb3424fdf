package consumer_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/segment"
)

// TestHandlerSeesTombstonesAsNil: a consumer's handler gets a tombstone's value as nil
// and an empty value as empty, headers in order with a repeated name and a null value,
// on both backends.
func TestHandlerSeesTombstonesAsNil(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		f := newFixture(t, s, "orders", 0)
		p := int32(0)
		hs := []segment.Header{{Key: "z", Value: nil}, {Key: "a", Value: []byte{}}, {Key: "z", Value: []byte("2")}}
		if _, err := f.log.Append(ctx, "orders", []log.Record{
			{Key: []byte("k"), Value: nil, Partition: &p},
			{Key: []byte("k"), Value: []byte{}, Partition: &p, Headers: hs},
		}, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var got []consumer.Record
		c := f.consumer(t, "g", "m-1", func(_ context.Context, r consumer.Record) error {
			mu.Lock()
			got = append(got, r)
			mu.Unlock()
			return nil
		}, nil)
		if _, err := c.Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true}); err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].Value != nil || got[1].Value == nil || len(got[1].Value) != 0 {
			t.Fatalf("handled %+v: want a nil value, then an empty one", got)
		}
		h := got[1].Headers
		if len(h) != 3 || h[0].Key != "z" || h[0].Value != nil || h[1].Key != "a" || h[1].Value == nil || h[2].Key != "z" || string(h[2].Value) != "2" {
			t.Fatalf("headers %+v", h)
		}
	})
}
