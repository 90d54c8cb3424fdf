package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
)

func testServer(t *testing.T, s backendtest.Stores) *Server {
	t.Helper()
	l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Log: l})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

func idemReq(t *testing.T, topic string, b producerBatch, values ...string) *kmsg.ProduceRequest {
	var recs []kmsg.Record
	for _, v := range values {
		recs = append(recs, rec("", v))
	}
	data := testBatch(t, codecNone, recs, func(kb *kmsg.RecordBatch) {
		kb.ProducerID, kb.ProducerEpoch, kb.FirstSequence = b.ID, b.Epoch, b.Seq
	}, true)
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks = -1
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = data
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func producedAt(t *testing.T, srv *Server, req *kmsg.ProduceRequest) int64 {
	t.Helper()
	resp, err := srv.produce(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("produce: code %d: %v", p.ErrorCode, *p.ErrorMessage)
	}
	return p.BaseOffset
}

// TestIdempotentRetryOfUnrecordedAttempt: a gateway that recorded a batch in flight
// and stopped — after appending it, or before — leaves the row without its outcome; the
// client's retry through another gateway fences that attempt and searches the log
// down to the recorded floor: it answers the first append's offset and appends nothing
// when the attempt was appended, and appends the batch once when it was not. On every
// backend.
func TestIdempotentRetryOfUnrecordedAttempt(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		a, b := testServer(t, s), testServer(t, s)
		topic, err := a.log.CreateTopic(ctx, "crash", 1, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		ps, err := a.log.ProducerStore()
		if err != nil {
			t.Fatal(err)
		}
		id, err := ps.NextProducerID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		first := producerBatch{ID: id, Seq: 0, Count: 2}
		if off := producedAt(t, a, idemReq(t, "crash", first, "a", "b")); off != 0 {
			t.Fatalf("first batch at %d", off)
		}
		key := seqRowKey(keyPrincipal(ctx), topic.ID(), 0, id)
		// crash records batch bt in flight as gateway a does and, if appended, appends it
		// as a's first attempt would, then stops before recording the outcome.
		crash := func(bt producerBatch, appended bool, values ...string) int64 {
			var row seqRow
			ver, err := loadRow(ctx, ps, key, &row)
			if err != nil {
				t.Fatal(err)
			}
			p := planBatch(row, true, bt, a.batchFloor(ctx, "crash"), time.Now())
			if p.action != seqAppend || p.attempt != 0 {
				t.Fatalf("plan %+v", p)
			}
			if ok, err := putRow(ctx, ps, key, p.next, ver, time.Now()); !ok || err != nil {
				t.Fatalf("put row: %v %v", ok, err)
			}
			if !appended {
				return -1
			}
			recs, berr := decodeBatches(idemReq(t, "crash", bt, values...).Topics[0].Partitions[0].Records, a.cfg.MaxMessageBytes)
			if berr != nil {
				t.Fatal(berr)
			}
			for i := range recs {
				recs[i].Partition = new(int32)
			}
			res, err := a.log.Append(ctx, "crash", recs, log.AppendOptions{IdempotencyKey: producerKey(bt, 0), Producer: true,
				FirstAttempt: true, BatchFloor: &p.floor, Principal: keyPrincipal(ctx)})
			if err != nil {
				t.Fatal(err)
			}
			return res[0].Offset
		}
		// Other producers' appends between the attempt and its retry.
		other := func() {
			if _, err := b.log.Append(ctx, "crash", []log.Record{{Value: []byte("other"), Partition: new(int32)}}, log.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
		}

		second := producerBatch{ID: id, Seq: 2, Count: 2}
		at := crash(second, true, "c", "d")
		other()
		if off := producedAt(t, b, idemReq(t, "crash", second, "c", "d")); off != at {
			t.Fatalf("the retry of an appended attempt answered %d, the attempt was appended at %d", off, at)
		}
		if _, hw, _ := b.log.Bounds(ctx, "crash", 0); hw != 5 {
			t.Fatalf("high watermark %d, want 5: the retry appended again", hw)
		}

		third := producerBatch{ID: id, Seq: 4, Count: 1}
		crash(third, false)
		other()
		if off := producedAt(t, b, idemReq(t, "crash", third, "e")); off != 6 {
			t.Fatalf("the retry of an attempt never appended answered %d, want 6", off)
		}
		if off := producedAt(t, a, idemReq(t, "crash", third, "e")); off != 6 {
			t.Fatalf("a further retry answered %d, want 6", off)
		}
		if _, hw, _ := b.log.Bounds(ctx, "crash", 0); hw != 7 {
			t.Fatalf("high watermark %d, want 7", hw)
		}
	})
}
