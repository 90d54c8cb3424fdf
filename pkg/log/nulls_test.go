package log_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/segment"
)

// nullsSample is a tombstone, an empty value, and a record whose headers repeat a key
// and hold a null and an empty value, in an order that is not sorted.
func nullsSample() []log.Record {
	p := int32(0)
	return []log.Record{
		{Key: []byte("k"), Value: nil, Partition: &p},
		{Key: []byte("k"), Value: []byte{}, Partition: &p},
		{Value: []byte("v"), Partition: &p, Headers: []segment.Header{
			{Key: "z", Value: nil}, {Key: "a", Value: []byte{}}, {Key: "z", Value: []byte("2")}}},
	}
}

// sameRecords fails unless got holds want's keys, values and headers, nil apart from
// empty.
func sameRecords(t *testing.T, got []segment.Record, want []log.Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if (g.Value == nil) != (w.Value == nil) || !bytes.Equal(g.Value, w.Value) {
			t.Fatalf("record %d: value %q (nil %v), want %q (nil %v)", i, g.Value, g.Value == nil, w.Value, w.Value == nil)
		}
		if len(g.Headers) != len(w.Headers) {
			t.Fatalf("record %d: headers %+v, want %+v", i, g.Headers, w.Headers)
		}
		for j, h := range w.Headers {
			gh := g.Headers[j]
			if gh.Key != h.Key || (gh.Value == nil) != (h.Value == nil) || !bytes.Equal(gh.Value, h.Value) {
				t.Fatalf("record %d header %d: %q=%q (nil %v), want %q=%q (nil %v)", i, j, gh.Key, gh.Value, gh.Value == nil, h.Key, h.Value, h.Value == nil)
			}
		}
	}
}

// TestNullValuesKept: a tombstone reads back as a nil value and an empty value as an
// empty one, and headers come back in order with repeated keys and null values, appended
// as records or as blocks, on both backends.
func TestNullValuesKept(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l := newLog(t, s)
		mustTopic(t, l, "nulls", 1)
		mustTopic(t, l, "nullblocks", 1)
		if _, err := l.Append(ctx, "nulls", nullsSample(), log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		sameRecords(t, readAll(t, l, "nulls", 0), nullsSample())

		var srecs []segment.Record
		for _, r := range nullsSample() {
			srecs = append(srecs, segment.Record{Timestamp: 1, Key: r.Key, Value: r.Value, Headers: r.Headers})
		}
		b, err := segment.EncodeBlock(srecs)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.AppendBlocks(ctx, "nullblocks", []log.Block{{Partition: 0, Data: b}}, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		sameRecords(t, readAll(t, l, "nullblocks", 0), nullsSample())
	})
}

// TestIdempotencyTellsNullFromEmpty: under one Idempotency-Key, a request with a null
// value and one with an empty value are two requests, not a retry.
func TestIdempotencyTellsNullFromEmpty(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l := newLog(t, s)
		mustTopic(t, l, "idem", 1)
		p := int32(0)
		opt := log.AppendOptions{IdempotencyKey: "key-1"}
		if _, err := l.Append(ctx, "idem", []log.Record{{Value: nil, Partition: &p}}, opt); err != nil {
			t.Fatal(err)
		}
		_, err := l.Append(ctx, "idem", []log.Record{{Value: []byte{}, Partition: &p}}, opt)
		if !errors.Is(err, log.ErrIdempotencyKeyReused) {
			t.Fatalf("empty value under the key of a null one: err = %v, want ErrIdempotencyKeyReused", err)
		}
	})
}
