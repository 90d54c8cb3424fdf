package kafka_test

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/backendtest"
)

// idemTime is every idemBatch's timestamp: a batch built again for a retry is the same
// bytes, as a Kafka client's retry is (a body that differs is another batch under a
// taken sequence).
var idemTime = time.Now().UnixMilli()

// idemBatch is batchOf's records as a batch of producer id at epoch from base sequence seq.
func idemBatch(id int64, epoch int16, seq int32, values ...string) []byte {
	var body []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte(v)}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		body = r.AppendTo(body)
	}
	b := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: int32(len(values) - 1), FirstTimestamp: idemTime,
		ProducerID: id, ProducerEpoch: epoch, FirstSequence: seq, NumRecords: int32(len(values)), Records: body, Length: int32(49 + len(body))}
	b.MaxTimestamp = b.FirstTimestamp
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

func initProducer(t testing.TB, r *raw, version int16, id int64, epoch int16) *kmsg.InitProducerIDResponse {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.SetVersion(version)
	req.ProducerID, req.ProducerEpoch = id, epoch
	return r.roundTrip(req).(*kmsg.InitProducerIDResponse)
}

// produced is a produce answer's one partition.
func produced(resp kmsg.Response) kmsg.ProduceResponseTopicPartition {
	return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
}

// TestIdempotentProducerKgo: franz-go's producer, idempotent by default, gets a producer
// id from the gateway and produces through it on every backend; each record is read
// back once, in order per partition.
func TestIdempotentProducerKgo(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		g := startGateway(t, s)
		var inits int
		cl := g.client(t, kgo.DefaultProduceTopic("idem"), kgo.WithHooks(initCounter{&inits}))
		createTopic(t, kadm.NewClient(cl), "idem", 3)
		var recs []*kgo.Record
		for i := range 30 {
			recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint(i % 5)), Value: []byte(fmt.Sprint(i))})
		}
		for _, r := range recs {
			cl.Produce(ctxT(t), r, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce: %v", err)
				}
			})
		}
		if err := cl.Flush(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		if inits == 0 {
			t.Fatal("the producer never sent InitProducerId: it did not produce idempotently")
		}
		got := consume(t, g, "idem", len(recs))
		seen := map[string]bool{}
		last := map[string]int{}
		for _, r := range got {
			if seen[string(r.Value)] {
				t.Errorf("record %s read twice", r.Value)
			}
			seen[string(r.Value)] = true
			var i int
			fmt.Sscan(string(r.Value), &i)
			if prev, ok := last[string(r.Key)]; ok && prev > i {
				t.Errorf("key %s: %d after %d", r.Key, i, prev)
			}
			last[string(r.Key)] = i
		}
		if len(seen) != len(recs) {
			t.Fatalf("read %d distinct records, want %d", len(seen), len(recs))
		}
	})
}

// initCounter counts the InitProducerId requests a client wrote.
type initCounter struct{ n *int }

func (c initCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == 22 && err == nil {
		*c.n++
	}
}

// TestIdempotentRetryAppendsOnce: the same raw ProduceRequest of a producer's batch sent
// again, to the same gateway and to a second gateway on the same store, is answered the
// first append's base offset and appends nothing; a gap in sequence is
// OUT_OF_ORDER_SEQUENCE_NUMBER; after InitProducerId bumps the epoch, the old epoch's
// batches are INVALID_PRODUCER_EPOCH and reinitialising with it PRODUCER_FENCED; ids are
// unique across gateways. On every backend.
func TestIdempotentRetryAppendsOnce(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		g1, g2 := startGateway(t, s), startGateway(t, s)
		createTopic(t, kadm.NewClient(g1.client(t)), "retry", 2)
		r1, r2 := dial(t, g1.addr), dial(t, g2.addr)
		hw := func(p int32) int64 {
			t.Helper()
			_, h, err := g1.log.Bounds(ctxT(t), "retry", p)
			if err != nil {
				t.Fatal(err)
			}
			return h
		}
		ip := initProducer(t, r1, 4, -1, -1)
		if ip.ErrorCode != 0 || ip.ProducerID < 1 || ip.ProducerEpoch != 0 {
			t.Fatalf("InitProducerId: code %d id %d epoch %d", ip.ErrorCode, ip.ProducerID, ip.ProducerEpoch)
		}
		id, epoch := ip.ProducerID, ip.ProducerEpoch
		if other := initProducer(t, r2, 4, -1, -1); other.ErrorCode != 0 || other.ProducerID == id {
			t.Fatalf("a second gateway's producer id %d (code %d), the first's %d", other.ProducerID, other.ErrorCode, id)
		}

		req := produceReq(9, "retry", 0, idemBatch(id, epoch, 0, "a", "b", "c"))
		for i, r := range []*raw{r1, r1, r2} {
			p := produced(r.roundTrip(req))
			if p.ErrorCode != 0 || p.BaseOffset != 0 {
				t.Fatalf("send %d: code %d (%s) base %d, want 0 at 0", i, p.ErrorCode, deref(p.ErrorMessage), p.BaseOffset)
			}
		}
		if h := hw(0); h != 3 {
			t.Fatalf("high watermark %d after a batch sent three times, want 3", h)
		}
		// Sequences are per partition: sequence 0 on partition 1 is another batch.
		if p := produced(r2.roundTrip(produceReq(9, "retry", 1, idemBatch(id, epoch, 0, "x")))); p.ErrorCode != 0 || p.BaseOffset != 0 || hw(1) != 1 {
			t.Fatalf("partition 1: code %d base %d hw %d", p.ErrorCode, p.BaseOffset, hw(1))
		}
		if p := produced(r2.roundTrip(produceReq(9, "retry", 0, idemBatch(id, epoch, 3, "d")))); p.ErrorCode != 0 || p.BaseOffset != 3 {
			t.Fatalf("next batch: code %d base %d, want 0 at 3", p.ErrorCode, p.BaseOffset)
		}
		if p := produced(r1.roundTrip(produceReq(9, "retry", 0, idemBatch(id, epoch, 9, "gap")))); p.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
			t.Fatalf("a gap: code %d, want OUT_OF_ORDER_SEQUENCE_NUMBER", p.ErrorCode)
		}
		if h := hw(0); h != 4 {
			t.Fatalf("high watermark %d after a refused gap, want 4", h)
		}

		bump := initProducer(t, r2, 4, id, epoch)
		if bump.ErrorCode != 0 || bump.ProducerID != id || bump.ProducerEpoch != epoch+1 {
			t.Fatalf("reinitialising: code %d id %d epoch %d, want %d at %d", bump.ErrorCode, bump.ProducerID, bump.ProducerEpoch, id, epoch+1)
		}
		if p := produced(r2.roundTrip(produceReq(9, "retry", 0, idemBatch(id, epoch+1, 0, "new")))); p.ErrorCode != 0 || p.BaseOffset != 4 {
			t.Fatalf("new epoch's first batch: code %d base %d, want 0 at 4", p.ErrorCode, p.BaseOffset)
		}
		if p := produced(r1.roundTrip(produceReq(9, "retry", 0, idemBatch(id, epoch, 4, "zombie")))); p.ErrorCode != kerr.InvalidProducerEpoch.Code {
			t.Fatalf("the old epoch's batch: code %d, want INVALID_PRODUCER_EPOCH", p.ErrorCode)
		}
		if z := initProducer(t, r1, 4, id, epoch); z.ErrorCode != kerr.ProducerFenced.Code {
			t.Fatalf("reinitialising with the old epoch at v4: code %d, want PRODUCER_FENCED", z.ErrorCode)
		}
		if z := initProducer(t, r1, 3, id, epoch); z.ErrorCode != kerr.InvalidProducerEpoch.Code {
			t.Fatalf("reinitialising with the old epoch at v3: code %d, want INVALID_PRODUCER_EPOCH", z.ErrorCode)
		}
		if h := hw(0); h != 5 {
			t.Fatalf("high watermark %d, want 5", h)
		}
		// A transactional producer is still refused.
		txn := kmsg.NewPtrInitProducerIDRequest()
		txn.SetVersion(4)
		txn.TransactionalID = kmsg.StringPtr("tx")
		if resp := r1.roundTrip(txn).(*kmsg.InitProducerIDResponse); resp.ErrorCode != kerr.InvalidRequest.Code {
			t.Fatalf("a transactional id: code %d, want INVALID_REQUEST", resp.ErrorCode)
		}
	})
}
