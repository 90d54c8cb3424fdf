package kafka

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
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

// newProducerID is srv's producer store and a producer id from it.
func newProducerID(t *testing.T, srv *Server) (store.ProducerStore, int64) {
	t.Helper()
	ps, err := srv.log.ProducerStore()
	if err != nil {
		t.Fatal(err)
	}
	id, err := ps.NextProducerID(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ps, id
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
	// The batch's "appended" record is written after the answer: the tests read rows.
	srv.rowWriters.Wait()
	return p.BaseOffset
}

// TestIdempotentRetryOfUnrecordedAttempt: a gateway that recorded a batch in flight
// and stopped — after appending it, or before — leaves the row without its outcome; the
// client's retry through another gateway fences that attempt and searches the log
// down to the recorded floor: it answers the first append's offset and appends nothing
// when the attempt was appended, and appends the batch once when it was not. On every
// backend, on a CreateTime and a LogAppendTime topic.
func TestIdempotentRetryOfUnrecordedAttempt(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		a, b := testServer(t, s), testServer(t, s)
		for _, lat := range []bool{false, true} {
			t.Run(fmt.Sprintf("LogAppendTime=%v", lat), func(t *testing.T) { testUnrecordedAttempt(t, a, b, lat) })
		}
	})
}

func testUnrecordedAttempt(t *testing.T, a, b *Server, lat bool) {
	ctx := context.Background()
	name := fmt.Sprintf("crash-%v", lat)
	{
		topic, err := a.log.CreateTopicWith(ctx, name, log.TopicSpec{Partitions: 1, Retention: time.Hour, LogAppendTime: lat})
		if err != nil {
			t.Fatal(err)
		}
		ps, id := newProducerID(t, a)
		first := producerBatch{ID: id, Seq: 0, Count: 2}
		if off := producedAt(t, a, idemReq(t, name, first, "a", "b")); off != 0 {
			t.Fatalf("first batch at %d", off)
		}
		key := seqRowKey(appendPrincipal(ctx), topic.ID(), 0, id)
		// crash records batch bt in flight as gateway a does and, if appended, appends it
		// as a's first attempt would, then stops before recording the outcome.
		crash := func(bt producerBatch, appended bool, values ...string) int64 {
			var row seqRow
			ver, err := loadRow(ctx, ps, key, &row)
			if err != nil {
				t.Fatal(err)
			}
			p := planBatch(row, true, bt, a.batchFloor(ctx, name), time.Now())
			if p.action != seqAppend || p.attempt != 0 {
				t.Fatalf("plan %+v", p)
			}
			if ok, err := putRow(ctx, ps, key, p.next, ver, time.Now()); !ok || err != nil {
				t.Fatalf("put row: %v %v", ok, err)
			}
			if !appended {
				return -1
			}
			recs, berr := decodeBatches(idemReq(t, name, bt, values...).Topics[0].Partitions[0].Records, a.cfg.MaxMessageBytes)
			if berr != nil {
				t.Fatal(berr)
			}
			for i := range recs {
				recs[i].Partition = new(int32)
			}
			res, err := a.log.Append(ctx, name, recs, log.AppendOptions{IdempotencyKey: producerKey(bt, 0), Producer: true,
				FirstAttempt: true, BatchFloor: &p.floor, Principal: appendPrincipal(ctx)})
			if err != nil {
				t.Fatal(err)
			}
			return res[0].Offset
		}
		// Other producers' appends between the attempt and its retry.
		other := func() {
			if _, err := b.log.Append(ctx, name, []log.Record{{Value: []byte("other"), Partition: new(int32)}}, log.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
		}

		second := producerBatch{ID: id, Seq: 2, Count: 2}
		at := crash(second, true, "c", "d")
		other()
		if off := producedAt(t, b, idemReq(t, name, second, "c", "d")); off != at {
			t.Fatalf("the retry of an appended attempt answered %d, the attempt was appended at %d", off, at)
		}
		if _, hw, _ := b.log.Bounds(ctx, name, 0); hw != 5 {
			t.Fatalf("high watermark %d, want 5: the retry appended again", hw)
		}

		third := producerBatch{ID: id, Seq: 4, Count: 1}
		crash(third, false)
		other()
		if off := producedAt(t, b, idemReq(t, name, third, "e")); off != 6 {
			t.Fatalf("the retry of an attempt never appended answered %d, want 6", off)
		}
		if off := producedAt(t, a, idemReq(t, name, third, "e")); off != 6 {
			t.Fatalf("a further retry answered %d, want 6", off)
		}
		if _, hw, _ := b.log.Bounds(ctx, name, 0); hw != 7 {
			t.Fatalf("high watermark %d, want 7", hw)
		}
	}
}

// TestIdempotentAnsweredBeforeRecorded: a gateway answers a batch before its
// "appended" record is written; one that stops in between leaves the batch recorded in
// flight. The client, answered, goes on through another gateway: its next batches are
// appended once each, the stale batch leaves the row once staleAfter batches follow it,
// and a late resend of it is out of order, never appended again. On every backend.
func TestIdempotentAnsweredBeforeRecorded(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		a, b := testServer(t, s), testServer(t, s)
		topic, err := a.log.CreateTopic(ctx, "answered", 1, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		ps, id := newProducerID(t, a)
		batch := func(seq int32) producerBatch { return producerBatch{ID: id, Seq: seq, Count: 1} }
		if off := producedAt(t, a, idemReq(t, "answered", batch(0), "v0")); off != 0 {
			t.Fatalf("first batch at %d", off)
		}
		// Gateway a records batch 1 in flight, appends it and answers; its "appended"
		// record is lost with it.
		key := seqRowKey(appendPrincipal(ctx), topic.ID(), 0, id)
		var row seqRow
		ver, err := loadRow(ctx, ps, key, &row)
		if err != nil {
			t.Fatal(err)
		}
		plan := planBatch(row, true, batch(1), a.batchFloor(ctx, "answered"), time.Now())
		if ok, err := putRow(ctx, ps, key, plan.next, ver, time.Now()); !ok || err != nil {
			t.Fatalf("put row: %v %v", ok, err)
		}
		recs, berr := decodeBatches(idemReq(t, "answered", batch(1), "v1").Topics[0].Partitions[0].Records, a.cfg.MaxMessageBytes)
		if berr != nil {
			t.Fatal(berr)
		}
		recs[0].Partition = new(int32)
		if _, err := a.log.Append(ctx, "answered", recs, log.AppendOptions{IdempotencyKey: producerKey(batch(1), 0), Producer: true,
			FirstAttempt: true, BatchFloor: &plan.floor, Principal: appendPrincipal(ctx)}); err != nil {
			t.Fatal(err)
		}
		for seq := int32(2); seq < 2+staleAfter; seq++ {
			if off := producedAt(t, b, idemReq(t, "answered", batch(seq), fmt.Sprintf("v%d", seq))); off != int64(seq) {
				t.Fatalf("batch %d at %d, want %d", seq, off, seq)
			}
			row = seqRow{} // a row is decoded into a zero value: absent fields stay unset
			if _, err := loadRow(ctx, ps, key, &row); err != nil {
				t.Fatal(err)
			}
			stale := slices.ContainsFunc(row.inFlight(), func(p pendingBatch) bool { return p.Seq == 1 })
			if want := seq < 1+staleAfter; stale != want {
				t.Fatalf("after batch %d: batch 1 recorded in flight %v, want %v (row %+v)", seq, stale, want, row)
			}
		}
		if n := len(row.inFlight()); n != 0 {
			t.Fatalf("%d batches left in flight: %+v", n, row.inFlight())
		}
		resp, err := b.produce(ctx, idemReq(t, "answered", batch(1), "v1"))
		if err != nil {
			t.Fatal(err)
		}
		if p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]; p.ErrorCode != outOfOrderSequence {
			t.Fatalf("a late resend of the stale batch: code %d, want OUT_OF_ORDER_SEQUENCE_NUMBER", p.ErrorCode)
		}
		if _, hw, _ := b.log.Bounds(ctx, "answered", 0); hw != 2+staleAfter {
			t.Fatalf("high watermark %d, want %d: a batch was appended twice or not at all", hw, 2+staleAfter)
		}
	})
}

// TestCloseWritesQueuedRows: batches answered just before Close have their "appended"
// records written by it: every producer's row records its batch appended, none in
// flight. On every backend.
func TestCloseWritesQueuedRows(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		srv := testServer(t, s)
		topic, err := srv.log.CreateTopic(ctx, "closing", 1, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		ps, err := srv.log.ProducerStore()
		if err != nil {
			t.Fatal(err)
		}
		const producers = 8
		ids := make([]int64, producers)
		for i := range ids {
			if ids[i], err = ps.NextProducerID(ctx); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		for _, id := range ids {
			wg.Go(func() {
				resp, err := srv.produce(ctx, idemReq(t, "closing", producerBatch{ID: id, Count: 1}, "v"))
				if err != nil {
					t.Error(err)
					return
				}
				if p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 {
					t.Errorf("producer %d: code %d", id, p.ErrorCode)
				}
			})
		}
		wg.Wait()
		if err := srv.Close(); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			var row seqRow
			if _, err := loadRow(ctx, ps, seqRowKey(appendPrincipal(ctx), topic.ID(), 0, id), &row); err != nil {
				t.Fatal(err)
			}
			if len(row.inFlight()) != 0 || len(row.Recent) != 1 {
				t.Errorf("producer %d after Close: row %+v, want its batch recorded appended", id, row)
			}
		}
	})
}

// TestIdempotentPrincipalsApart: the same producer id and sequence sent by two
// principals are two producers' batches (each appended once), and a principal cannot
// reinitialise, and so bump the epoch of, another's producer id: it gets a new one.
func TestIdempotentPrincipalsApart(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		srv := testServer(t, s)
		if _, err := srv.log.CreateTopic(context.Background(), "scoped", 1, time.Hour); err != nil {
			t.Fatal(err)
		}
		alice := withIdentity(context.Background(), &identity{name: "alice", grants: AllowAll{}, appendAs: "token:alice"})
		bob := withIdentity(context.Background(), &identity{name: "bob", grants: AllowAll{}, appendAs: "token:bob"})
		init := func(ctx context.Context, id int64, epoch int16) *kmsg.InitProducerIDResponse {
			req := kmsg.NewPtrInitProducerIDRequest()
			req.SetVersion(4)
			req.ProducerID, req.ProducerEpoch = id, epoch
			return srv.initProducerID(ctx, req)
		}
		a := init(alice, -1, -1)
		if b := init(bob, a.ProducerID, a.ProducerEpoch); b.ErrorCode != 0 || b.ProducerID == a.ProducerID {
			t.Fatalf("bob reinitialising alice's id %d: id %d code %d, want a new id", a.ProducerID, b.ProducerID, b.ErrorCode)
		}
		if again := init(alice, a.ProducerID, a.ProducerEpoch); again.ProducerID != a.ProducerID || again.ProducerEpoch != 1 {
			t.Fatalf("alice reinitialising: id %d epoch %d, want %d at 1", again.ProducerID, again.ProducerEpoch, a.ProducerID)
		}
		b := producerBatch{ID: a.ProducerID, Epoch: 1, Seq: 0, Count: 1}
		for i, ctx := range []context.Context{alice, bob, alice, bob} {
			resp, err := srv.produce(ctx, idemReq(t, "scoped", b, "v"))
			if err != nil {
				t.Fatal(err)
			}
			p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
			if want := int64(i % 2); p.ErrorCode != 0 || p.BaseOffset != want {
				t.Fatalf("send %d: code %d base %d, want %d", i, p.ErrorCode, p.BaseOffset, want)
			}
		}
	})
}

// TestIdempotentConcurrentRetries: the same batches sent at once through two gateways,
// several times each, as a client retrying on timeouts might: every batch's records are
// readable once (attempts fenced by a later one leave skipped offsets, never a second
// copy), and every answer that succeeds gives the offset of that one copy. On every
// backend.
func TestIdempotentConcurrentRetries(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		gws := []*Server{testServer(t, s), testServer(t, s)}
		if _, err := gws[0].log.CreateTopic(ctx, "race", 1, time.Hour); err != nil {
			t.Fatal(err)
		}
		_, id := newProducerID(t, gws[0])
		const batches, sends = 4, 3
		answered := map[int64]string{} // base offset → the batch's first value
		for n := range batches {
			b := producerBatch{ID: id, Seq: int32(2 * n), Count: 2}
			first := fmt.Sprintf("b%d-x", n)
			req := idemReq(t, "race", b, first, fmt.Sprintf("b%d-y", n))
			offsets := make(chan int64, 2*sends)
			var wg sync.WaitGroup
			for _, g := range gws {
				for range sends {
					wg.Go(func() {
						resp, err := g.produce(ctx, req)
						if err != nil {
							t.Error(err)
							return
						}
						if p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]; p.ErrorCode == 0 {
							offsets <- p.BaseOffset
						}
					})
				}
			}
			wg.Wait()
			close(offsets)
			// The client's last retry, after the race, is answered too.
			final := producedAt(t, gws[n%2], req)
			for o := range offsets {
				if o != final {
					t.Fatalf("batch %d answered at %d and at %d", n, o, final)
				}
			}
			answered[final] = first
		}
		seen := map[string]int64{}
		for off := int64(0); ; {
			res, err := gws[1].log.Poll(ctx, "race", 0, off, log.PollOptions{MaxRecords: 100})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res.Records {
				if prev, dup := seen[string(r.Value)]; dup {
					t.Fatalf("%s read at %d and %d", r.Value, prev, r.Offset)
				}
				seen[string(r.Value)] = r.Offset
			}
			if res.NextOffset >= res.HighWatermark {
				break
			}
			off = res.NextOffset
		}
		if len(seen) != 2*batches {
			t.Fatalf("%d records readable, want %d: %v", len(seen), 2*batches, seen)
		}
		for off, v := range answered {
			if seen[v] != off {
				t.Errorf("%s answered at %d, read at %d", v, off, seen[v])
			}
		}
	})
}

// TestPutRowOnlyOwnWriteWins: a writer that loses a row's version to another writer of
// the same content is told it lost (it would otherwise append a second attempt 0 of the
// same batch beside the winner's); a lost answer of its own write still reads as won.
func TestPutRowOnlyOwnWriteWins(t *testing.T) {
	ctx := context.Background()
	srv := testServer(t, backendtest.Local(ctx, t))
	ps, err := srv.log.ProducerStore()
	if err != nil {
		t.Fatal(err)
	}
	row := seqRow{Epoch: 0, Pending: &pendingBatch{Seq: 0, Count: 1, FirstMs: 5}}
	now := time.UnixMilli(1_800_000_000_000)
	if ok, err := putRow(ctx, ps, "k", row, 0, now); !ok || err != nil {
		t.Fatalf("first writer: %v %v", ok, err)
	}
	if ok, err := putRow(ctx, ps, "k", row, 0, now); ok || err != nil {
		t.Fatalf("a second writer of the same row from the same version: won %v (%v), want lost", ok, err)
	}
	var got seqRow
	if ver, err := loadRow(ctx, ps, "k", &got); err != nil || ver != 1 || got.Pending == nil || got.Pending.FirstMs != 5 {
		t.Fatalf("row %+v v%d (%v)", got, ver, err)
	}
}
