package kafka_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/kafka"
	"github.com/stratalog/strata/pkg/log"
)

// gateway is a gateway serving a log on 127.0.0.1.
type gateway struct {
	addr  string
	log   *log.Log
	coord *group.Coordinator
}

func startGateway(t testing.TB, s backendtest.Stores) *gateway {
	t.Helper()
	return startGatewayWith(t, s, log.TopicDefaults{})
}

// startGatewayWith is startGateway with the log's topic defaults and maximum retention.
func startGatewayWith(t testing.TB, s backendtest.Stores, topics log.TopicDefaults) *gateway {
	t.Helper()
	l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta, Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	coord := group.New(s.Meta, l, nil)
	srv, err := kafka.New(kafka.Config{Log: l, Groups: coord, Barriers: s.Meta.(kafka.GroupBarriers)})
	if err != nil {
		t.Fatal(err)
	}
	return &gateway{addr: serve(t, srv), log: l, coord: coord}
}

// serve runs srv on a loopback listener until the test ends and returns its address.
func serve(t testing.TB, srv *kafka.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return ln.Addr().String()
}

func localGateway(t testing.TB) *gateway {
	return startGateway(t, backendtest.Local(context.Background(), t))
}

func (g *gateway) client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(g.addr), kgo.FetchMaxWait(500 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func createTopic(t testing.TB, adm *kadm.Client, name string, partitions int32) {
	t.Helper()
	resp, err := adm.CreateTopic(ctxT(t), partitions, -1, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
}

// consume reads n records of topic from the start, without a group.
func consume(t testing.TB, g *gateway, topic string, n int) []*kgo.Record {
	t.Helper()
	cl := g.client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := ctxT(t)
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records: %v", len(out), n, ctx.Err())
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		out = append(out, fs.Records()...)
	}
	return out
}

// TestProduceConsumeKeyedHeaders: keyed records with headers (a repeated name
// included), produced with franz-go, are read back with franz-go: each on the
// partition Strata's partitioner gives its key, in produce order per partition, at
// dense offsets, keys, values, headers and producer timestamps as sent.
func TestProduceConsumeKeyedHeaders(t *testing.T) {
	g := localGateway(t)
	cl := g.client(t, kgo.DefaultProduceTopic("orders"))
	createTopic(t, kadm.NewClient(cl), "orders", 3)
	ts := time.UnixMilli(1750000000123)
	var sent []*kgo.Record
	for i := range 40 {
		key := fmt.Sprintf("key-%d", i%7)
		sent = append(sent, &kgo.Record{Key: []byte(key), Value: []byte(fmt.Sprintf("%s/%d", key, i)), Timestamp: ts.Add(time.Duration(i) * time.Millisecond),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("1")}, {Key: "n", Value: []byte(fmt.Sprint(i))}, {Key: "h", Value: []byte("2")}}})
	}
	if err := cl.ProduceSync(ctxT(t), sent...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	got := consume(t, g, "orders", len(sent))
	next := map[int32]int64{}
	lastOfKey := map[string]int{}
	for _, r := range got {
		if want := log.PartitionForKey(r.Key, 3); r.Partition != want {
			t.Errorf("%s on partition %d, Strata's partitioner says %d", r.Key, r.Partition, want)
		}
		if r.Offset != next[r.Partition] {
			t.Errorf("partition %d: offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
		}
		next[r.Partition] = r.Offset + 1
		var i int
		var key string
		if _, err := fmt.Sscanf(string(r.Value), "key-%d/%d", new(int), &i); err != nil {
			t.Fatalf("value %q: %v", r.Value, err)
		}
		key = string(r.Key)
		if prev, ok := lastOfKey[key]; ok && prev >= i {
			t.Errorf("%s: record %d read after %d", key, i, prev)
		}
		lastOfKey[key] = i
		want := sent[i]
		if !bytes.Equal(r.Value, want.Value) || !r.Timestamp.Equal(want.Timestamp) {
			t.Errorf("record %d: value %q at %v, want %q at %v", i, r.Value, r.Timestamp, want.Value, want.Timestamp)
		}
		if !slices.EqualFunc(r.Headers, want.Headers, func(a, b kgo.RecordHeader) bool { return a.Key == b.Key && bytes.Equal(a.Value, b.Value) }) {
			t.Errorf("record %d: headers %v, want %v", i, r.Headers, want.Headers)
		}
	}
}

// TestCompressedProduce: batches compressed with each codec franz-go has are read back.
func TestCompressedProduce(t *testing.T) {
	g := localGateway(t)
	createTopic(t, kadm.NewClient(g.client(t)), "zipped", 1)
	codecs := []kgo.CompressionCodec{kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()}
	for i, c := range codecs {
		cl := g.client(t, kgo.DefaultProduceTopic("zipped"), kgo.ProducerBatchCompression(c))
		var recs []*kgo.Record
		for j := range 20 {
			recs = append(recs, &kgo.Record{Value: bytes.Repeat([]byte{byte('a' + j)}, 100*(i+1))})
		}
		if err := cl.ProduceSync(ctxT(t), recs...).FirstErr(); err != nil {
			t.Fatalf("codec %d: %v", i, err)
		}
	}
	got := consume(t, g, "zipped", 80)
	for n, r := range got {
		i, j := n/20, n%20
		if want := bytes.Repeat([]byte{byte('a' + j)}, 100*(i+1)); !bytes.Equal(r.Value, want) {
			t.Fatalf("record %d: %d bytes of %q, want %d of %q", n, len(r.Value), r.Value[:1], len(want), want[:1])
		}
	}
}

// TestListOffsets: earliest, latest and by time, answered by the log (its index), as
// kadm lists them.
func TestListOffsets(t *testing.T) {
	g := localGateway(t)
	cl := g.client(t, kgo.DefaultProduceTopic("timed"))
	adm := kadm.NewClient(cl)
	createTopic(t, adm, "timed", 1)
	produce := func(n int) {
		var recs []*kgo.Record
		for range n {
			recs = append(recs, &kgo.Record{Value: []byte("v")})
		}
		if err := cl.ProduceSync(ctxT(t), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce(3)
	// The next millisecond on: every record so far was appended before it, every
	// later one at or after it.
	mark := time.Now().UnixMilli() + 1
	for time.Now().UnixMilli() < mark {
		time.Sleep(time.Millisecond)
	}
	produce(2)
	ctx := ctxT(t)
	check := func(what string, l kadm.ListedOffsets, err error, want int64) {
		t.Helper()
		if err == nil {
			err = l.Error()
		}
		o, ok := l.Lookup("timed", 0)
		if err != nil || !ok || o.Offset != want {
			t.Errorf("%s: %+v (%v), want offset %d", what, o, err, want)
		}
	}
	l, err := adm.ListStartOffsets(ctx, "timed")
	check("earliest", l, err, 0)
	l, err = adm.ListEndOffsets(ctx, "timed")
	check("latest", l, err, 5)
	l, err = adm.ListOffsetsAfterMilli(ctx, mark, "timed")
	check("after the mark", l, err, 3)
	if o, _ := l.Lookup("timed", 0); o.Timestamp < mark {
		t.Errorf("after the mark: timestamp %d before the mark %d", o.Timestamp, mark)
	}
	l, err = adm.ListOffsetsAfterMilli(ctx, 0, "timed")
	check("after 0", l, err, 0)
	l, err = adm.ListOffsetsAfterMilli(ctx, time.Now().Add(time.Hour).UnixMilli(), "timed")
	check("in an hour (kadm falls back to the end)", l, err, 5)
}

// TestTopicAdmin: topics are created, listed, grown and deleted through kadm, with
// Kafka's error codes for what Strata refuses; the topic id is the incarnation's, new
// when the name is created again.
func TestTopicAdmin(t *testing.T) {
	g := localGateway(t)
	adm := kadm.NewClient(g.client(t))
	ctx := ctxT(t)
	retention := "3600000"
	resp, err := adm.CreateTopic(ctx, 2, 3, map[string]*string{"retention.ms": &retention, "cleanup.policy": kmsg.StringPtr("delete")}, "admin")
	if err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	if resp.NumPartitions != 2 || resp.ID == (kadm.TopicID{}) {
		t.Fatalf("create answered %+v", resp)
	}
	if rt, err := g.log.Retention(ctx, "admin"); err != nil || rt != time.Hour {
		t.Fatalf("retention %v, %v", rt, err)
	}
	refusals := []struct {
		name    string
		parts   int32
		configs map[string]*string
		want    error
	}{
		{"admin", 1, nil, kerr.TopicAlreadyExists},
		{"..", 1, nil, kerr.InvalidTopicException},
		{"compacted", 1, map[string]*string{"cleanup.policy": kmsg.StringPtr("kompact")}, kerr.InvalidConfig},
		{"forever", 1, map[string]*string{"retention.ms": kmsg.StringPtr("-2")}, kerr.InvalidConfig},
		{"huge", 5000, nil, kerr.InvalidPartitions},
	}
	for _, r := range refusals {
		resp, err := adm.CreateTopic(ctx, r.parts, -1, r.configs, r.name)
		if err == nil {
			err = resp.Err
		}
		if !errors.Is(err, r.want) {
			t.Errorf("create %s: %v, want %v", r.name, err, r.want)
		}
	}
	td, err := adm.ListTopics(ctx)
	if err != nil || !td.Has("admin") || len(td) != 1 || len(td["admin"].Partitions) != 2 {
		t.Fatalf("list: %v %v", td, err)
	}
	id := td["admin"].ID
	if id != resp.ID {
		t.Errorf("metadata id %v, create answered %v", id, resp.ID)
	}
	if pr, err := adm.UpdatePartitions(ctx, 5, "admin"); err != nil || pr.Error() != nil {
		t.Fatalf("grow: %v %v", err, pr.Error())
	}
	if pr, _ := adm.UpdatePartitions(ctx, 2, "admin"); !errors.Is(pr.Error(), kerr.InvalidPartitions) {
		t.Errorf("shrink: %v, want INVALID_PARTITIONS", pr.Error())
	}
	if n, err := g.log.Partitions(ctx, "admin"); err != nil || n != 5 {
		t.Fatalf("partitions %d, %v", n, err)
	}
	if dr, err := adm.DeleteTopic(ctx, "admin"); err != nil || dr.Err != nil {
		t.Fatalf("delete: %v %v", err, dr.Err)
	}
	if dr, _ := adm.DeleteTopic(ctx, "admin"); !errors.Is(dr.Err, kerr.UnknownTopicOrPartition) {
		t.Errorf("delete again: %v", dr.Err)
	}
	createTopic(t, adm, "admin", 1)
	td, err = adm.ListTopics(ctx, "admin")
	if err != nil || td["admin"].ID == id {
		t.Errorf("the new incarnation has id %v (the old one's %v): %v", td["admin"].ID, id, err)
	}
}

// raw is a connection speaking requests without a client library's checks.
type raw struct {
	t    testing.TB
	c    net.Conn
	corr int32
}

func dial(t testing.TB, addr string) *raw {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	return &raw{t: t, c: c}
}

// roundTrip sends req at its version and decodes the answer.
func (r *raw) roundTrip(req kmsg.Request) kmsg.Response {
	r.t.Helper()
	r.corr++
	if _, err := r.c.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw")).AppendRequest(nil, req, r.corr)); err != nil {
		r.t.Fatal(err)
	}
	body, err := r.read()
	if err != nil {
		r.t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return r.decode(req, body)
}

// decode decodes body, an answer after its correlation id, as req's response.
func (r *raw) decode(req kmsg.Request, body []byte) kmsg.Response {
	r.t.Helper()
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && resp.Key() != 18 {
		rd := kbin.Reader{Src: body}
		kmsg.SkipTags(&rd)
		body = rd.Src
	}
	if err := resp.ReadFrom(body); err != nil {
		r.t.Fatalf("decode %s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp
}

// read returns the next answer's body after the correlation id (checked).
func (r *raw) read() ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r.c, size[:]); err != nil {
		return nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(r.c, body); err != nil {
		return nil, err
	}
	if corr := int32(binary.BigEndian.Uint32(body)); corr != r.corr {
		return nil, fmt.Errorf("correlation id %d, want %d", corr, r.corr)
	}
	return body[4:], nil
}

// closed reports whether the gateway closed the connection (read hits EOF).
func (r *raw) closed() bool {
	_ = r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := r.c.Read(make([]byte, 1))
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed)
}

func batchOf(values ...string) []byte {
	var body []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte(v)}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		body = r.AppendTo(body)
	}
	b := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: int32(len(values) - 1), FirstTimestamp: time.Now().UnixMilli(),
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(len(values)), Records: body, Length: int32(49 + len(body))}
	b.MaxTimestamp = b.FirstTimestamp
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

func produceReq(version int16, topic string, partition int32, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(version)
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func produceCode(resp kmsg.Response) int16 {
	return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
}

// TestProduceRefusals: a batch whose CRC does not match gets CORRUPT_MESSAGE, an
// unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION; nothing is appended and the connection keeps serving.
func TestProduceRefusals(t *testing.T) {
	g := localGateway(t)
	createTopic(t, kadm.NewClient(g.client(t)), "known", 1)
	r := dial(t, g.addr)
	corrupt := batchOf("a", "b")
	corrupt[len(corrupt)-1] ^= 1
	for _, c := range []struct {
		name      string
		topic     string
		partition int32
		records   []byte
		want      *kerr.Error
	}{
		{"corrupt crc", "known", 0, corrupt, kerr.CorruptMessage},
		{"unknown topic", "unknown", 0, batchOf("a"), kerr.UnknownTopicOrPartition},
		{"unknown partition", "known", 1, batchOf("a"), kerr.UnknownTopicOrPartition},
		{"negative partition", "known", -1, batchOf("a"), kerr.UnknownTopicOrPartition},
	} {
		for _, v := range []int16{3, 9, 11} {
			if code := produceCode(r.roundTrip(produceReq(v, c.topic, c.partition, c.records))); code != c.want.Code {
				t.Errorf("%s (v%d): %v, want %v", c.name, v, kerr.ErrorForCode(code), c.want)
			}
		}
	}
	if _, hw, err := g.log.Bounds(ctxT(t), "known", 0); err != nil || hw != 0 {
		t.Fatalf("high watermark %d (%v) after refusals, want 0", hw, err)
	}
	resp := r.roundTrip(produceReq(9, "known", 0, batchOf("a", "b"))).(*kmsg.ProduceResponse)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("valid produce after the refusals: %+v", p)
	}
	resp = r.roundTrip(produceReq(9, "known", 0, batchOf("c"))).(*kmsg.ProduceResponse)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.BaseOffset != 2 {
		t.Fatalf("second produce: %+v", p)
	}
	dup := produceReq(9, "known", 0, batchOf("d"))
	dup.Topics[0].Partitions = append(dup.Topics[0].Partitions, dup.Topics[0].Partitions[0])
	if ps := r.roundTrip(dup).(*kmsg.ProduceResponse).Topics[0].Partitions; ps[0].ErrorCode != 0 || ps[1].ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("a partition twice in one produce: %+v", ps)
	}
	// A fetch of an unknown topic is refused the same way; a negative offset is out of
	// range.
	neg := kmsg.NewPtrFetchRequest()
	neg.SetVersion(11)
	neg.MaxBytes = 1 << 20
	neg.Topics = []kmsg.FetchRequestTopic{{Topic: "known", Partitions: []kmsg.FetchRequestTopicPartition{{FetchOffset: -1, PartitionMaxBytes: 1 << 20}}}}
	if p := r.roundTrip(neg).(*kmsg.FetchResponse).Topics[0].Partitions[0]; p.ErrorCode != kerr.OffsetOutOfRange.Code || p.HighWatermark != 4 {
		t.Errorf("fetch at -1: %v, high watermark %d", kerr.ErrorForCode(p.ErrorCode), p.HighWatermark)
	}
	fr := kmsg.NewPtrFetchRequest()
	fr.SetVersion(11)
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "unknown"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fr.Topics = append(fr.Topics, ft)
	fr.MaxBytes, fr.MaxWaitMillis = 1<<20, 100
	if code := r.roundTrip(fr).(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("fetch of an unknown topic: %v", kerr.ErrorForCode(code))
	}
}

// TestUnsupportedVersions: an ApiVersions newer than the gateway's gets the v0 answer
// with UNSUPPORTED_VERSION and the ApiVersions versions to retry with (KIP-511); a known API at a version not advertised gets
// its own answer with UNSUPPORTED_VERSION; the connection serves on.
func TestUnsupportedVersions(t *testing.T) {
	g := localGateway(t)
	r := dial(t, g.addr)
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(kmsg.NewPtrApiVersionsRequest().MaxVersion())
	av.ClientSoftwareName, av.ClientSoftwareVersion = "raw", "1"
	r.corr++
	if _, err := r.c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, av, r.corr)); err != nil {
		t.Fatal(err)
	}
	body, err := r.read()
	if err != nil {
		t.Fatal(err)
	}
	v0 := kmsg.NewPtrApiVersionsResponse()
	v0.SetVersion(0)
	if err := v0.ReadFrom(body); err != nil || v0.ErrorCode != kerr.UnsupportedVersion.Code || len(v0.ApiKeys) != 1 || v0.ApiKeys[0].ApiKey != 18 || v0.ApiKeys[0].MaxVersion != 4 {
		t.Fatalf("ApiVersions v%d answered %+v (%v)", av.Version, v0, err)
	}
	if code := produceCode(r.roundTrip(produceReq(2, "t", 0, batchOf("a")))); code != kerr.UnsupportedVersion.Code {
		t.Errorf("produce v2: %v", kerr.ErrorForCode(code))
	}
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(13)
	if resp := r.roundTrip(md).(*kmsg.MetadataResponse); resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Errorf("metadata v13: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	av.SetVersion(3)
	if resp := r.roundTrip(av).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 || len(resp.ApiKeys) != len(kafka.APIs) {
		t.Errorf("ApiVersions v3: %+v", resp)
	}
}

// TestMalformedFrames: a frame the gateway cannot read closes that connection only
// (an unknown API key, a truncated body, a size beyond the bound or below a header);
// a client on another connection is served throughout.
func TestMalformedFrames(t *testing.T) {
	g := localGateway(t)
	cl := g.client(t, kgo.DefaultProduceTopic("steady"))
	createTopic(t, kadm.NewClient(cl), "steady", 1)
	frame := func(b ...byte) []byte { return binary.BigEndian.AppendUint32(nil, uint32(len(b))) }
	truncated := kmsg.NewRequestFormatter().AppendRequest(nil, produceReq(9, "steady", 0, batchOf("x")), 1)
	truncated = truncated[:len(truncated)-5]
	binary.BigEndian.PutUint32(truncated, uint32(len(truncated)-4))
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"unknown api key", append(frame(make([]byte, 10)...), 0x7f, 0x00, 0, 0, 0, 0, 0, 1, 0xff, 0xff)},
		{"truncated body", truncated},
		{"oversize", binary.BigEndian.AppendUint32(nil, 1<<30)},
		{"below a header", append(binary.BigEndian.AppendUint32(nil, 3), 1, 2, 3)},
		{"negative size", binary.BigEndian.AppendUint32(nil, 0xffffffff)},
		{"bad client id", append(frame(make([]byte, 10)...), 0, 18, 0, 0, 0, 0, 0, 1, 0x00, 0x09)},
	} {
		r := dial(t, g.addr)
		if _, err := r.c.Write(c.data); err != nil {
			t.Fatal(err)
		}
		if !r.closed() {
			t.Errorf("%s: the connection stayed open", c.name)
		}
		if err := cl.ProduceSync(ctxT(t), &kgo.Record{Value: []byte(c.name)}).FirstErr(); err != nil {
			t.Fatalf("after %s: produce on another connection: %v", c.name, err)
		}
	}
	if got := consume(t, g, "steady", 6); string(got[5].Value) != "bad client id" {
		t.Fatalf("read back %q", got[5].Value)
	}
}

// TestFetchLongPoll: a fetch at the high watermark waits for a record appended while it
// waits and answers with it; one that finds nothing answers empty after max_wait.
func TestFetchLongPoll(t *testing.T) {
	g := localGateway(t)
	createTopic(t, kadm.NewClient(g.client(t)), "poll", 2)
	r := dial(t, g.addr)
	fetch := func(wait int32) *kmsg.FetchResponse {
		fr := kmsg.NewPtrFetchRequest()
		fr.SetVersion(12)
		fr.MaxWaitMillis, fr.MinBytes, fr.MaxBytes, fr.SessionEpoch = wait, 1, 1<<20, -1
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = "poll"
		for p := range int32(2) {
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.PartitionMaxBytes = p, 1<<20
			ft.Partitions = append(ft.Partitions, fp)
		}
		fr.Topics = append(fr.Topics, ft)
		return r.roundTrip(fr).(*kmsg.FetchResponse)
	}
	if resp := fetch(50); len(resp.Topics[0].Partitions[0].RecordBatches)+len(resp.Topics[0].Partitions[1].RecordBatches) != 0 {
		t.Fatalf("empty topic answered records: %+v", resp)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		p := int32(1)
		_, _ = g.log.Append(context.Background(), "poll", []log.Record{{Value: []byte("late"), Partition: &p}}, log.AppendOptions{})
	}()
	resp := fetch(20000)
	p1 := resp.Topics[0].Partitions[1]
	if p1.ErrorCode != 0 || p1.HighWatermark != 1 || len(p1.RecordBatches) == 0 {
		t.Fatalf("long poll answered %+v", p1)
	}
	var b kmsg.RecordBatch
	if err := b.ReadFrom(p1.RecordBatches); err != nil || b.NumRecords != 1 {
		t.Fatalf("batch %+v: %v", b, err)
	}
}

// TestSmokeBothBackends: produce, metadata, list offsets and fetch through franz-go on
// every backend.
func TestSmokeBothBackends(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		g := startGateway(t, s)
		cl := g.client(t, kgo.DefaultProduceTopic("smoke"))
		adm := kadm.NewClient(cl)
		createTopic(t, adm, "smoke", 2)
		var recs []*kgo.Record
		for i := range 10 {
			recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprint(i)), Headers: []kgo.RecordHeader{{Key: "i", Value: []byte(fmt.Sprint(i))}}})
		}
		if err := cl.ProduceSync(ctxT(t), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		ends, err := adm.ListEndOffsets(ctxT(t), "smoke")
		if err != nil {
			t.Fatal(err)
		}
		var total int64
		ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
		if total != 10 {
			t.Fatalf("end offsets sum to %d, want 10", total)
		}
		got := consume(t, g, "smoke", 10)
		for _, r := range got {
			if string(r.Key) != string(r.Value) || len(r.Headers) != 1 || string(r.Headers[0].Value) != string(r.Value) {
				t.Fatalf("record %+v", r)
			}
		}
	})
}

// TestOffsetCommitFetch: offsets committed with kadm outside a group membership are the
// group's Strata commits (and a Strata member's commit is what OffsetFetch answers);
// such a commit may move backwards, keeps its metadata (OffsetFetch and Describe
// return it), and is refused beyond the high watermark, with metadata over 4096
// bytes, and while the group has a live member.
func TestOffsetCommitFetch(t *testing.T) {
	g := localGateway(t)
	adm := kadm.NewClient(g.client(t))
	createTopic(t, adm, "orders", 2)
	ctx := ctxT(t)
	p0 := int32(0)
	var recs []log.Record
	for range 5 {
		recs = append(recs, log.Record{Value: []byte("v"), Partition: &p0})
	}
	if _, err := g.log.Append(ctx, "orders", recs, log.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	commit := func(at int64, metadata string) error {
		os := kadm.Offsets{"orders": {0: {Topic: "orders", Partition: 0, At: at, LeaderEpoch: -1, Metadata: metadata}}}
		resp, err := adm.CommitOffsets(ctx, "billing", os)
		if err != nil {
			return err
		}
		return resp.Error()
	}
	fetched := func() int64 {
		t.Helper()
		resp, err := adm.FetchOffsets(ctx, "billing")
		if err == nil {
			err = resp.Error()
		}
		o, ok := resp.Lookup("orders", 0)
		if err != nil || !ok {
			t.Fatalf("fetch offsets: %v %v (%v)", resp, ok, err)
		}
		return o.At
	}
	for _, at := range []int64{4, 1} {
		if err := commit(at, ""); err != nil {
			t.Fatalf("commit %d: %v", at, err)
		}
		if got := fetched(); got != at {
			t.Fatalf("fetched %d after committing %d", got, at)
		}
		if o, err := g.coord.Committed(ctx, "billing", "orders", 0); err != nil || o == nil || *o != at {
			t.Fatalf("Strata's commit %v (%v), want %d", o, err, at)
		}
	}
	if err := commit(9, ""); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Errorf("commit beyond the high watermark: %v", err)
	}
	if err := commit(2, "note ä"); err != nil {
		t.Fatalf("commit with metadata: %v", err)
	}
	if resp, err := adm.FetchOffsets(ctx, "billing"); err != nil {
		t.Fatal(err)
	} else if o, ok := resp.Lookup("orders", 0); !ok || o.At != 2 || o.Metadata != "note ä" {
		t.Fatalf("fetched %+v after a commit with metadata", o)
	}
	if info, err := g.coord.Describe(ctx, "billing"); err != nil || len(info.Partitions) == 0 || info.Partitions[0].Metadata != "note ä" {
		t.Fatalf("Strata's describe %+v (%v), want the metadata", info, err)
	}
	if err := commit(2, string(bytes.Repeat([]byte("m"), 4097))); !errors.Is(err, kerr.OffsetMetadataTooLarge) {
		t.Errorf("commit with 4097 bytes of metadata: %v", err)
	}
	if err := commit(1, string(bytes.Repeat([]byte("m"), 4096))); err != nil {
		t.Errorf("commit with 4096 bytes of metadata: %v", err)
	}
	lease, err := g.coord.Acquire(ctx, "billing", "orders", 1, "member-1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, md := range []string{"", "note"} {
		if err := commit(3, md); !errors.Is(err, kerr.UnknownMemberID) {
			t.Errorf("commit (metadata %q) while a member holds a lease: %v", md, err)
		}
	}
	if err := g.coord.Commit(ctx, "billing", "orders", 1, "member-1", lease.Generation, 0); err != nil {
		t.Fatal(err)
	}
	resp, err := adm.FetchOffsets(ctx, "billing")
	if o, ok := resp.Lookup("orders", 1); err != nil || !ok || o.At != 0 {
		t.Errorf("the member's commit fetched as %+v %v (%v)", o, ok, err)
	}
	if got := fetched(); got != 1 {
		t.Errorf("partition 0 fetched %d after the refusals, want 1", got)
	}
}

// TestOlderClients: a client capped at Kafka 2.1's versions (no flexible encodings:
// Produce v7, Fetch v10, Metadata v7, CreateTopics v3), or at 0.11's (the oldest
// versions the gateway answers: Produce v3, Fetch v5), creates a topic, produces keyed
// records with headers, lists offsets, commits and fetches an offset and reads back.
func TestOlderClients(t *testing.T) {
	for _, c := range []struct {
		name string
		vs   *kversion.Versions
	}{{"2.1", kversion.V2_1_0()}, {"0.11", kversion.V0_11_0()}} {
		t.Run(c.name, func(t *testing.T) { testOlderClient(t, c.vs) })
	}
}

func testOlderClient(t *testing.T, vs *kversion.Versions) {
	g := localGateway(t)
	cl := g.client(t, kgo.MaxVersions(vs), kgo.DefaultProduceTopic("old"))
	adm := kadm.NewClient(cl)
	createTopic(t, adm, "old", 2)
	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint(i % 3)), Value: []byte(fmt.Sprint(i)), Headers: []kgo.RecordHeader{{Key: "v", Value: []byte("old")}}})
	}
	if err := cl.ProduceSync(ctxT(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctxT(t), "old")
	if err != nil || ends.Error() != nil {
		t.Fatal(err, ends.Error())
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total != 10 {
		t.Fatalf("end offsets sum to %d", total)
	}
	os := kadm.Offsets{"old": {0: {Topic: "old", Partition: 0, At: 1, LeaderEpoch: -1}}}
	if resp, err := adm.CommitOffsets(ctxT(t), "old-readers", os); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	if resp, err := adm.FetchOffsets(ctxT(t), "old-readers"); err != nil || resp.Error() != nil {
		t.Fatalf("fetch offsets: %v %v", err, resp.Error())
	} else if o, _ := resp.Lookup("old", 0); o.At != 1 {
		t.Fatalf("fetched offset %d", o.At)
	}
	rd := g.client(t, kgo.MaxVersions(vs), kgo.ConsumeTopics("old"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got int
	ctx := ctxT(t)
	for got < 10 && ctx.Err() == nil {
		fs := rd.PollFetches(ctx)
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if len(r.Headers) != 1 || string(r.Headers[0].Value) != "old" {
				t.Errorf("record %+v", r)
			}
			got++
		})
	}
	if got != 10 {
		t.Fatalf("read %d records", got)
	}
}

// TestAcksZero: an acks=0 produce is appended (durably, as every produce) and answered
// with nothing, so the next answer on the connection is the next request's; a refused
// acks=0 produce closes the connection, as Kafka does to make the client refresh.
func TestAcksZero(t *testing.T) {
	g := localGateway(t)
	createTopic(t, kadm.NewClient(g.client(t)), "fire", 1)
	r := dial(t, g.addr)
	send := func(req *kmsg.ProduceRequest) {
		t.Helper()
		req.Acks = 0
		r.corr++
		if _, err := r.c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, r.corr)); err != nil {
			t.Fatal(err)
		}
	}
	send(produceReq(9, "fire", 0, batchOf("a", "b")))
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	if resp := r.roundTrip(av).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions after an acks=0 produce: %+v", resp)
	}
	if _, hw, err := g.log.Bounds(ctxT(t), "fire", 0); err != nil || hw != 2 {
		t.Fatalf("high watermark %d (%v), want 2", hw, err)
	}
	send(produceReq(9, "nope", 0, batchOf("c")))
	if !r.closed() {
		t.Fatal("a refused acks=0 produce left the connection open")
	}
}
