package kafka_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

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

// TestLogAppendTimeTopic: a topic created with message.timestamp.type=LogAppendTime
// stamps records with their append time: Produce answers it (log_append_time), Fetch
// batches carry the timestamp-type attribute and the append time, whatever timestamp
// the producer gave; a topic created without the config keeps the producer's, on both
// backends.
func TestLogAppendTimeTopic(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		g := startGateway(t, s)
		cl := g.client(t)
		adm := kadm.NewClient(cl)
		resp, err := adm.CreateTopic(ctxT(t), 1, -1, map[string]*string{"message.timestamp.type": kmsgString("LogAppendTime")}, "stamped")
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			t.Fatal(err)
		}
		createTopic(t, adm, "kept", 1)
		old := time.UnixMilli(1000)
		before := time.Now().Add(-time.Second)
		for _, topic := range []string{"stamped", "kept"} {
			err := cl.ProduceSync(ctxT(t), &kgo.Record{Topic: topic, Value: []byte("a"), Timestamp: old}, &kgo.Record{Topic: topic, Value: []byte("b"), Timestamp: old}).FirstErr()
			if err != nil {
				t.Fatal(err)
			}
			got := consume(t, g, topic, 2)
			for i, r := range got {
				if topic == "kept" {
					if !r.Timestamp.Equal(old) || r.Attrs.TimestampType() != 0 {
						t.Errorf("kept record %d: timestamp %v type %d, want the producer's %v, CreateTime", i, r.Timestamp, r.Attrs.TimestampType(), old)
					}
					continue
				}
				if r.Timestamp.Before(before) || r.Attrs.TimestampType() != 1 {
					t.Errorf("stamped record %d: timestamp %v type %d, want the append time (after %v), LogAppendTime", i, r.Timestamp, r.Attrs.TimestampType(), before)
				}
			}
		}
		// franz-go does not read log_append_time back: ask with a raw Produce.
		r := dial(t, g.addr)
		for topic, stamped := range map[string]bool{"stamped": true, "kept": false} {
			p := r.roundTrip(produceReq(9, topic, 0, batchOf("c"))).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
			if p.ErrorCode != 0 {
				t.Fatalf("produce to %s: %v", topic, kerr.ErrorForCode(p.ErrorCode))
			}
			if got := p.LogAppendTime; stamped && got < before.UnixMilli() || !stamped && got != -1 {
				t.Errorf("produce to %s answered log_append_time %d (stamped: %v)", topic, got, stamped)
			}
		}
	})
}

func kmsgString(s string) *string { return &s }
