package kafka_test

import (
	"encoding/binary"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/kafka"
	"github.com/stratalog/strata/pkg/log"
)

// groupGateway is startGateway with group commit on, as `strata dev` and `strata kafka`
// run it: concurrent appends share batches, so pipelined requests really overlap.
func groupGateway(t testing.TB, s backendtest.Stores) *gateway {
	t.Helper()
	l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta, GroupCommitWindow: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := kafka.New(kafka.Config{Log: l})
	if err != nil {
		t.Fatal(err)
	}
	return &gateway{addr: serve(t, srv), log: l}
}

// send writes reqs on r back to back without reading, numbering them on from r.corr.
func (r *raw) send(reqs ...kmsg.Request) {
	r.t.Helper()
	var out []byte
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw"))
	for _, req := range reqs {
		r.corr++
		out = append(out, f.AppendRequest(nil, req, r.corr)...)
	}
	if _, err := r.c.Write(out); err != nil {
		r.t.Fatal(err)
	}
}

// receive reads the answers to reqs, sent by send, checking they come in request
// order (each answer's correlation id is the next).
func (r *raw) receive(reqs ...kmsg.Request) []kmsg.Response {
	r.t.Helper()
	first := r.corr - int32(len(reqs)) + 1
	out := make([]kmsg.Response, len(reqs))
	for i, req := range reqs {
		var size [4]byte
		if _, err := io.ReadFull(r.c, size[:]); err != nil {
			r.t.Fatalf("answer %d: %v", i, err)
		}
		body := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(r.c, body); err != nil {
			r.t.Fatalf("answer %d: %v", i, err)
		}
		if corr := int32(binary.BigEndian.Uint32(body)); corr != first+int32(i) {
			r.t.Fatalf("answer %d has correlation id %d, want %d: answers out of request order", i, corr, first+int32(i))
		}
		out[i] = r.decode(req, body[4:])
	}
	return out
}

// idemReq is a produce request of one idempotent batch per partition: parts maps a
// partition to its base sequence and values.
func idemProduce(topic string, id int64, parts ...idemPart) *kmsg.ProduceRequest {
	req := produceReq(9, topic, parts[0].partition, idemBatch(id, 0, parts[0].seq, parts[0].values...))
	for _, p := range parts[1:] {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p.partition, idemBatch(id, 0, p.seq, p.values...)
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
	}
	return req
}

type idemPart struct {
	partition int32
	seq       int32
	values    []string
}

func part(p int32, seq int32, values ...string) idemPart { return idemPart{p, seq, values} }

// answerOf is the answer of partition p in a produce response.
func answerOf(t testing.TB, resp kmsg.Response, p int32) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	for _, rp := range resp.(*kmsg.ProduceResponse).Topics[0].Partitions {
		if rp.Partition == p {
			return rp
		}
	}
	t.Fatalf("no answer for partition %d", p)
	return kmsg.ProduceResponseTopicPartition{}
}

// values reads partition p of topic from the start: its records' values in offset order.
func values(t testing.TB, l *log.Log, topic string, p int32) []string {
	t.Helper()
	var out []string
	for off := int64(0); ; {
		res, err := l.Poll(ctxT(t), topic, p, off, log.PollOptions{MaxRecords: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Records {
			out = append(out, string(r.Value))
		}
		if res.NextOffset >= res.HighWatermark {
			return out
		}
		off = res.NextOffset
	}
}

// TestPipelinedRequests: requests sent on one connection without waiting — idempotent
// produce requests of two partitions (served concurrently), a metadata request and an
// ApiVersions (each served alone) among them — are answered in request order; each partition's batches are
// appended in the order sent, consecutive ones sharing commits; a batch past a gap is
// OUT_OF_ORDER_SEQUENCE_NUMBER and the batch that is in sequence after it is appended;
// a resent batch is answered its first offset. On every backend.
func TestPipelinedRequests(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		g := groupGateway(t, s)
		createTopic(t, kadm.NewClient(g.client(t)), "pipe", 2)
		r := dial(t, g.addr)
		ip := initProducer(t, r, 4, -1, -1)
		if ip.ErrorCode != 0 {
			t.Fatalf("InitProducerId: code %d", ip.ErrorCode)
		}
		id := ip.ProducerID
		md := kmsg.NewPtrMetadataRequest()
		md.SetVersion(9)
		av := kmsg.NewPtrApiVersionsRequest()
		av.SetVersion(3)
		av.ClientSoftwareName, av.ClientSoftwareVersion = "raw", "1"
		reqs := []kmsg.Request{
			idemProduce("pipe", id, part(0, 0, "a0", "a1"), part(1, 0, "b0")), // 0
			idemProduce("pipe", id, part(0, 2, "a2")),                         // 1
			md, // 2
			idemProduce("pipe", id, part(1, 1, "b1"), part(0, 3, "a3", "a4")), // 3
			idemProduce("pipe", id, part(0, 9, "gap")),                        // 4
			av, // 5
			idemProduce("pipe", id, part(0, 5, "a5")), // 6
			idemProduce("pipe", id, part(0, 2, "a2")), // 7: resent
			idemProduce("pipe", id, part(1, 2, "b2")), // 8
		}
		r.send(reqs...)
		got := r.receive(reqs...)
		type want struct {
			req       int
			partition int32
			code      int16
			offset    int64
		}
		for _, w := range []want{
			{0, 0, 0, 0}, {0, 1, 0, 0}, {1, 0, 0, 2}, {3, 1, 0, 1}, {3, 0, 0, 3},
			{4, 0, kerr.OutOfOrderSequenceNumber.Code, -1}, {6, 0, 0, 5}, {7, 0, 0, 2}, {8, 1, 0, 2},
		} {
			a := answerOf(t, got[w.req], w.partition)
			if a.ErrorCode != w.code || (w.code == 0 && a.BaseOffset != w.offset) {
				t.Errorf("request %d partition %d: code %d base %d, want code %d base %d", w.req, w.partition, a.ErrorCode, a.BaseOffset, w.code, w.offset)
			}
		}
		if m := got[2].(*kmsg.MetadataResponse); len(m.Brokers) != 1 {
			t.Errorf("metadata answer: %d brokers", len(m.Brokers))
		}
		if a := got[5].(*kmsg.ApiVersionsResponse); a.ErrorCode != 0 || len(a.ApiKeys) == 0 {
			t.Errorf("ApiVersions answer: code %d, %d keys", a.ErrorCode, len(a.ApiKeys))
		}
		for p, want := range map[int32]string{0: "[a0 a1 a2 a3 a4 a5]", 1: "[b0 b1 b2]"} {
			if got := fmt.Sprint(values(t, g.log, "pipe", p)); got != want {
				t.Errorf("partition %d holds %s, want %s", p, got, want)
			}
		}
	})
}

// TestPipelinedRetryOnAnotherGateway: a producer's batches pipelined through one
// gateway while a retry of the second goes through another copy (a second gateway
// on the same store, as a client that reconnected elsewhere sends it), then the client's
// retries of all of them there: every batch is appended once, and every answer that
// succeeds for a batch gives that one copy's offset. On every backend.
func TestPipelinedRetryOnAnotherGateway(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		a, b := groupGateway(t, s), groupGateway(t, s)
		createTopic(t, kadm.NewClient(a.client(t)), "pipe-retry", 1)
		ra, rb := dial(t, a.addr), dial(t, b.addr)
		ip := initProducer(t, ra, 4, -1, -1)
		if ip.ErrorCode != 0 {
			t.Fatalf("InitProducerId: code %d", ip.ErrorCode)
		}
		id := ip.ProducerID
		const n = 4
		batch := func(i int) *kmsg.ProduceRequest {
			return idemProduce("pipe-retry", id, part(0, int32(i), fmt.Sprintf("v%d", i)))
		}
		reqs := make([]kmsg.Request, n)
		for i := range n {
			reqs[i] = batch(i)
		}
		ra.send(reqs...)
		rb.send(batch(1)) // the retry, racing the pipeline
		answers := map[int][]kmsg.ProduceResponseTopicPartition{}
		for i, resp := range ra.receive(reqs...) {
			answers[i] = append(answers[i], answerOf(t, resp, 0))
		}
		answers[1] = append(answers[1], answerOf(t, rb.receive(batch(1))[0], 0))
		// The client's retries, in order, through the other gateway: each now succeeds.
		for i := range n {
			p := answerOf(t, rb.roundTrip(batch(i)), 0)
			if p.ErrorCode != 0 {
				t.Fatalf("final retry of batch %d: code %d (%s)", i, p.ErrorCode, deref(p.ErrorMessage))
			}
			for _, earlier := range answers[i] {
				if earlier.ErrorCode == 0 && earlier.BaseOffset != p.BaseOffset {
					t.Fatalf("batch %d answered at %d and at %d", i, earlier.BaseOffset, p.BaseOffset)
				}
			}
			answers[i] = append(answers[i], p)
		}
		seen := map[string]int{}
		for _, v := range values(t, a.log, "pipe-retry", 0) {
			seen[v]++
		}
		for i := range n {
			if v := fmt.Sprintf("v%d", i); seen[v] != 1 {
				t.Errorf("%s is readable %d times, want once (log: %v)", v, seen[v], seen)
			}
		}
	})
}

// deref is an optional error message's text ("" when absent).
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
