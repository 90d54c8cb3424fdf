package kafka_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stratalog/strata/internal/backendtest"
)

// sameKafkaRecord says how got differs from want in key, value and headers, nil told
// apart from empty, or "".
func sameKafkaRecord(got, want *kgo.Record) string {
	eq := func(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }
	if !eq(got.Key, want.Key) || !eq(got.Value, want.Value) {
		return fmt.Sprintf("key %q value %q (nil %v), want key %q value %q (nil %v)", got.Key, got.Value, got.Value == nil, want.Key, want.Value, want.Value == nil)
	}
	if len(got.Headers) != len(want.Headers) {
		return fmt.Sprintf("headers %v, want %v", got.Headers, want.Headers)
	}
	for i, h := range want.Headers {
		if g := got.Headers[i]; g.Key != h.Key || !eq(g.Value, h.Value) {
			return fmt.Sprintf("header %d: %q=%q (nil %v), want %q=%q (nil %v)", i, g.Key, g.Value, g.Value == nil, h.Key, h.Value, h.Value == nil)
		}
	}
	return ""
}

// TestTombstoneAndNullHeaders: a tombstone (null value), an empty value, and a record
// whose headers repeat a key and hold a null and an empty value, produced with
// franz-go, are fetched back identically, on both backends.
func TestTombstoneAndNullHeaders(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		g := startGateway(t, s)
		cl := g.client(t, kgo.DefaultProduceTopic("compactme"))
		createTopic(t, kadm.NewClient(cl), "compactme", 1)
		ts := time.UnixMilli(1750000000000)
		sent := []*kgo.Record{
			{Key: []byte("k"), Value: nil, Timestamp: ts},
			{Key: []byte("k"), Value: []byte{}, Timestamp: ts},
			{Key: []byte("h"), Value: []byte("v"), Timestamp: ts, Headers: []kgo.RecordHeader{
				{Key: "z", Value: nil}, {Key: "a", Value: []byte{}}, {Key: "z", Value: []byte("2")}}},
		}
		if err := cl.ProduceSync(ctxT(t), sent...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		got := consume(t, g, "compactme", len(sent))
		for i, want := range sent {
			if d := sameKafkaRecord(got[i], want); d != "" {
				t.Errorf("record %d: %s", i, d)
			}
		}
	})
}
