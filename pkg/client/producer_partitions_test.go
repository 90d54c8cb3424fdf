package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/wire"
)

// TestProducerFollowsPartitionIncrease (issue 18 item 8): a Producer used to keep the
// partition count it started with for life, so after `topics alter` its keys kept
// landing on the old partitions while other clients used the new count — one key's
// records in two partitions, for good. It now re-reads the count every
// PartitionRefresh: a key that moves from 2 to 4 partitions reaches its new partition.
func TestProducerFollowsPartitionIncrease(t *testing.T) {
	key := []byte{}
	for i := 0; ; i++ {
		k := []byte{byte('a' + i%26), byte('a' + i/26)}
		if wire.PartitionForKey(k, 2) != wire.PartitionForKey(k, 4) {
			key = k
			break
		}
	}
	f := newFake(t, 2)
	p := newProducer(t, f, client.ProducerConfig{PartitionRefresh: 10 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := p.SendSync(ctx, client.Record{Key: key, Value: []byte("before")})
	if err != nil || res.Partition != wire.PartitionForKey(key, 2) {
		t.Fatalf("before the increase: %+v, %v; want partition %d", res, err, wire.PartitionForKey(key, 2))
	}
	f.partitions.Store(4)
	want := wire.PartitionForKey(key, 4)
	for p.Partitions() != 4 {
		select {
		case <-ctx.Done():
			t.Fatalf("the producer still places by %d partitions after the topic went to 4", p.Partitions())
		case <-time.After(10 * time.Millisecond):
		}
	}
	res, err = p.SendSync(ctx, client.Record{Key: key, Value: []byte("after")})
	if err != nil || res.Partition != want {
		t.Fatalf("after the increase: %+v, %v; want partition %d", res, err, want)
	}
	// A partition of the new count may be named explicitly too.
	if _, err := p.SendSync(ctx, client.Record{Value: []byte("explicit"), Partition: i32(3)}); err != nil {
		t.Fatalf("explicit new partition: %v", err)
	}
}

// TestProducerNoJSONFallbackAfterPossibleAppend (issue 18 item 9): a binary append
// applied with its answer lost, whose retry is refused with a 400, used to be read as
// "an old server, nothing appended" and re-sent as JSON under a new key: the record was
// stored twice. Only the refusal of a first attempt may switch to JSON; this one fails
// with the 400, and the record is stored once.
func TestProducerNoJSONFallbackAfterPossibleAppend(t *testing.T) {
	f := newFake(t, 1)
	f.inject = func(n int, _ appendCall) fault {
		switch n {
		case 0:
			return faultDrop // appended, answer lost
		case 1:
			return fault400
		}
		return faultNone
	}
	p := newProducer(t, f, client.ProducerConfig{Partitions: 1, Backoff: time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := p.SendSync(ctx, client.Record{Value: []byte("once")})
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 400 {
		t.Fatalf("SendSync = %v, want the retry's 400", err)
	}
	calls, logs, _, _ := f.snapshot()
	if n := len(logs[0]); n != 1 {
		t.Fatalf("%d records stored, want 1 (no re-send under a new key):\n%s", n, callsSummary(calls))
	}
	for _, c := range calls {
		if !c.Binary {
			t.Fatalf("a JSON request followed a binary attempt that may have been appended:\n%s", callsSummary(calls))
		}
	}
	// The Client still speaks binary: nothing proved the server does not.
	if _, err := p.SendSync(ctx, client.Record{Value: []byte("next")}); err != nil {
		t.Fatal(err)
	}
	if calls, _, _, _ := f.snapshot(); !calls[len(calls)-1].Binary {
		t.Fatalf("the next request went as JSON:\n%s", callsSummary(calls))
	}
}

// TestProducerFallsBackOnFirstRefusal (issue 18 item 9): the refusal of a first attempt
// (a server predating the binary format answers 400) still switches to JSON, and the
// record is stored once.
func TestProducerFallsBackOnFirstRefusal(t *testing.T) {
	f := newFake(t, 1)
	f.blocks = blocksLegacy
	p := newProducer(t, f, client.ProducerConfig{Partitions: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.SendSync(ctx, client.Record{Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	if _, logs, _, _ := f.snapshot(); len(logs[0]) != 1 {
		t.Fatalf("%d records stored, want 1", len(logs[0]))
	}
}

// TestProducerFollowsCountFromAppendAnswers: a producer that appends learns a raised
// partition count from its answers (wire.HeaderPartitions) and describes the topic no
// more; against a server without the header it describes every PartitionRefresh.
func TestProducerFollowsCountFromAppendAnswers(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		f := newFake(t, 2)
		f.noCount = legacy
		p := newProducer(t, f, client.ProducerConfig{Partitions: 2, PartitionRefresh: 20 * time.Millisecond})
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		send := func(n int) {
			for i := range n {
				if _, err := p.SendSync(ctx, client.Record{Value: []byte{byte(i)}}); err != nil {
					t.Fatal(err)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		send(20)
		f.partitions.Store(4)
		for p.Partitions() != 4 {
			if ctx.Err() != nil {
				t.Fatalf("legacy %v: the producer still places by %d partitions after the topic went to 4", legacy, p.Partitions())
			}
			send(1)
		}
		cancel()
		switch d := f.describes.Load(); {
		case !legacy && d != 0:
			t.Errorf("the producer described the topic %d times while its append answers told the count", d)
		case legacy && d == 0:
			t.Error("against a server without the header the producer never described the topic")
		}
	}
}
