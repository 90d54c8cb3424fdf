package kafka

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/stratalog/strata/pkg/segment"
)

// testBatch encodes recs as a record batch v2 the way a producer does (offset deltas
// from 0, CRC-32C set), compressed by codec, with edit applied to the batch before it
// is encoded; crc false leaves the CRC as edit left it.
func testBatch(t testing.TB, codec int, recs []kmsg.Record, edit func(*kmsg.RecordBatch), crc bool) []byte {
	t.Helper()
	var body []byte
	for i := range recs {
		r := recs[i]
		if r.OffsetDelta == 0 {
			r.OffsetDelta = int32(i)
		}
		tmp := r.AppendTo(nil)
		r.Length = int32(len(tmp) - 1)
		body = r.AppendTo(body)
	}
	if codec != codecNone {
		c, err := kgo.DefaultCompressor(map[int]kgo.CompressionCodec{
			codecGzip: kgo.GzipCompression(), codecSnappy: kgo.SnappyCompression(),
			codecLz4: kgo.Lz4Compression(), codecZstd: kgo.ZstdCompression(),
		}[codec])
		if err != nil {
			t.Fatal(err)
		}
		body, _ = c.Compress(new(bytes.Buffer), body)
		body = slices.Clone(body)
	}
	b := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, Attributes: int16(codec), LastOffsetDelta: int32(len(recs) - 1),
		FirstTimestamp: 1700000000000, MaxTimestamp: 1700000000000, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: int32(len(recs)), Records: body}
	if edit != nil {
		edit(&b)
	}
	b.Length = int32(batchMinLength + len(b.Records))
	out := b.AppendTo(nil)
	if crc {
		binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[batchCRCStart:], castagnoli))
	}
	return out
}

func rec(key, value string, headers ...string) kmsg.Record {
	r := kmsg.Record{Value: []byte(value)}
	if key != "" {
		r.Key = []byte(key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		r.Headers = append(r.Headers, kmsg.Header{Key: headers[i], Value: []byte(headers[i+1])})
	}
	return r
}

// TestDecodeBatchesRefusals: every way a partition's records can be wrong gets the
// error code Kafka gives for it, and nothing decoded.
func TestDecodeBatchesRefusals(t *testing.T) {
	ok := []kmsg.Record{rec("k", "v")}
	valid := testBatch(t, codecNone, ok, nil, true)
	flipped := slices.Clone(valid)
	flipped[len(flipped)-1] ^= 0xff
	cases := []struct {
		name string
		data []byte
		code int16
		msg  string
	}{
		{"empty", nil, invalidRecord, "empty"},
		{"truncated header", valid[:10], corruptMessage, "truncated"},
		{"length beyond the data", valid[:len(valid)-1], corruptMessage, "does not fit"},
		{"crc mismatch", flipped, corruptMessage, "CRC"},
		{"magic 1", testBatch(t, codecNone, ok, func(b *kmsg.RecordBatch) { b.Magic = 1 }, true), invalidRecord, "magic"},
		{"count above the records", testBatch(t, codecNone, ok, func(b *kmsg.RecordBatch) { b.NumRecords = 2 }, true), corruptMessage, "records in"},
		{"count below the records", testBatch(t, codecNone, []kmsg.Record{rec("a", "1"), rec("b", "2")}, func(b *kmsg.RecordBatch) { b.NumRecords = 1 }, true), corruptMessage, "after its"},
		{"no records", testBatch(t, codecNone, nil, nil, true), invalidRecord, "at least one"},
		{"transactional", testBatch(t, codecNone, ok, func(b *kmsg.RecordBatch) { b.Attributes |= attrTransactional }, true), invalidRecord, "transaction"},
		{"offset deltas not from 0", testBatch(t, codecNone, []kmsg.Record{{OffsetDelta: 3, Value: []byte("v")}}, nil, true), invalidRecord, "offset delta"},
		{"negative timestamp", testBatch(t, codecNone, ok, func(b *kmsg.RecordBatch) { b.FirstTimestamp = -5 }, true), invalidTimestamp, "timestamp"},
		{"unknown codec", testBatch(t, codecNone, ok, func(b *kmsg.RecordBatch) { b.Attributes |= 5 }, true), corruptMessage, "codec"},
		{"bad gzip", testBatch(t, codecNone, ok, func(b *kmsg.RecordBatch) { b.Attributes |= codecGzip }, true), corruptMessage, "gzip"},
		{"batch over the limit", testBatch(t, codecNone, []kmsg.Record{rec("k", strings.Repeat("x", 200))}, nil, true), messageTooLarge, "at most"},
		{"decompresses over the limit", testBatch(t, codecZstd, []kmsg.Record{rec("k", strings.Repeat("x", 5000))}, nil, true), messageTooLarge, "decompresses"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			limit := 4096
			if c.name == "batch over the limit" {
				limit = 100
			}
			recs, err := decodeBatches(c.data, limit)
			if err == nil {
				t.Fatalf("decoded %d records, want error %d", len(recs), c.code)
			}
			if err.code != c.code || !strings.Contains(err.msg, c.msg) {
				t.Fatalf("got %d %q, want %d containing %q", err.code, err.msg, c.code, c.msg)
			}
			if recs != nil {
				t.Fatalf("records decoded beside the error: %v", recs)
			}
		})
	}
}

// TestDecodeBatchesCodecs: each codec's batches (snappy raw and in xerial framing)
// decode to the records sent, two batches back to back included, keys, null keys,
// repeated header names in order and timestamps kept.
func TestDecodeBatchesCodecs(t *testing.T) {
	recs := []kmsg.Record{rec("k1", "v1", "h", "1", "g", "2", "h", "3"), rec("", "v2"), {Key: []byte{}, Value: []byte{}, TimestampDelta64: 5}}
	for _, codec := range []int{codecNone, codecGzip, codecSnappy, codecLz4, codecZstd} {
		data := append(testBatch(t, codec, recs, nil, true), testBatch(t, codec, recs[:1], nil, true)...)
		got, err := decodeBatches(data, 1<<20)
		if err != nil {
			t.Fatalf("codec %d: %v", codec, err)
		}
		if len(got) != 4 {
			t.Fatalf("codec %d: %d records, want 4", codec, len(got))
		}
		if string(got[0].Key) != "k1" || string(got[0].Value) != "v1" || got[1].Key != nil || got[2].Key == nil || len(got[2].Key) != 0 {
			t.Fatalf("codec %d: keys and values %+v", codec, got)
		}
		want := []segment.Header{{Key: "h", Value: []byte("1")}, {Key: "g", Value: []byte("2")}, {Key: "h", Value: []byte("3")}}
		if !slices.EqualFunc(got[0].Headers, want, func(a, b segment.Header) bool { return a.Key == b.Key && bytes.Equal(a.Value, b.Value) }) {
			t.Fatalf("codec %d: headers %+v, want %+v", codec, got[0].Headers, want)
		}
		if *got[0].Timestamp != 1700000000000 || *got[2].Timestamp != 1700000000005 {
			t.Fatalf("codec %d: timestamps %d %d", codec, *got[0].Timestamp, *got[2].Timestamp)
		}
	}
	raw := testBatch(t, codecNone, recs, nil, true)
	body := raw[batchHeadBytes+batchMinLength:]
	var x []byte
	x = append(x, xerialMagic...)
	x = append(x, 0, 0, 0, 1, 0, 0, 0, 1)
	for _, chunk := range [][]byte{body[:len(body)/2], body[len(body)/2:]} {
		enc := s2.EncodeSnappy(nil, chunk)
		x = binary.BigEndian.AppendUint32(x, uint32(len(enc)))
		x = append(x, enc...)
	}
	got, err := decompress(codecSnappy, x, 1<<20)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("xerial: %v, %d bytes, want %d", err, len(got), len(body))
	}
	if _, err := decompress(codecSnappy, x, len(body)-1); err != errDecompressedTooLarge {
		t.Fatalf("xerial over the limit: %v", err)
	}
	if _, err := decompress(codecSnappy, x[:len(x)-2], 1<<20); err == nil {
		t.Fatal("truncated xerial decoded")
	}
}

// TestLogAppendTimeBatch: a batch whose attributes say LogAppendTime, or without a
// first timestamp, takes the append time (no timestamp given to the log).
func TestLogAppendTimeBatch(t *testing.T) {
	for _, edit := range []func(*kmsg.RecordBatch){
		func(b *kmsg.RecordBatch) { b.Attributes |= attrLogAppendTime },
		func(b *kmsg.RecordBatch) { b.FirstTimestamp = -1 },
	} {
		got, err := decodeBatches(testBatch(t, codecNone, []kmsg.Record{rec("k", "v")}, edit, true), 1<<20)
		if err != nil || len(got) != 1 || got[0].Timestamp != nil {
			t.Fatalf("got %+v, %v; want one record without a timestamp", got, err)
		}
	}
}

// TestEncodeBatchesRoundTrip: what a fetch answers decodes with kmsg as Kafka clients
// do, its CRC right, offsets (a gap included) and timestamps kept, a null value and a
// null header value null.
func TestEncodeBatchesRoundTrip(t *testing.T) {
	in := []segment.Record{
		{Offset: 10, Timestamp: 2000, Key: []byte("a"), Value: []byte("1"), Headers: []segment.Header{{Key: "h", Value: []byte("x")}, {Key: "h"}}},
		{Offset: 11, Timestamp: 1500, Value: []byte("2")},
		{Offset: 14, Timestamp: 3000, Key: []byte{}, Value: nil},
	}
	data := encodeBatches(in, false)
	var b kmsg.RecordBatch
	if err := b.ReadFrom(data); err != nil {
		t.Fatal(err)
	}
	if crc32.Checksum(data[batchCRCStart:], castagnoli) != uint32(b.CRC) {
		t.Fatal("CRC mismatch")
	}
	if b.FirstOffset != 10 || b.LastOffsetDelta != 4 || b.NumRecords != 3 || b.FirstTimestamp != 2000 || b.MaxTimestamp != 3000 {
		t.Fatalf("batch header %+v", b)
	}
	if int(b.Length) != len(data)-batchHeadBytes {
		t.Fatalf("length %d, data %d", b.Length, len(data))
	}
	got, err := decodeRecords(&b, 1<<20)
	if err == nil {
		t.Fatalf("a batch with offset gaps decoded as a produce batch: %+v", got)
	}
	body := b.Records
	var out []kmsg.Record
	for len(body) > 0 {
		n, sz := binary.Varint(body)
		var r kmsg.Record
		if err := r.ReadFrom(body[:sz+int(n)]); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
		body = body[sz+int(n):]
	}
	if len(out) != 3 || out[2].OffsetDelta != 4 || out[1].TimestampDelta64 != -500 || string(out[0].Key) != "a" || out[1].Key != nil ||
		out[2].Key == nil || out[2].Value != nil || len(out[0].Headers) != 2 || out[0].Headers[1].Value != nil {
		t.Fatalf("records %+v", out)
	}
}

// TestAdvertisedVersions: every advertised API is one kmsg encodes at its maximum, has
// a handler and an error answer, and covers what a Kafka 2.1 client sends at most (so
// a 2.1 client and a 4.x Java client, whose minimums are 2.1's, find their versions).
func TestAdvertisedVersions(t *testing.T) {
	v21 := kversion.V2_1_0()
	for _, a := range APIs {
		req := kmsg.RequestForKey(a.Key)
		if req == nil || a.Max > req.MaxVersion() || a.Min > a.Max {
			t.Errorf("key %d: %d–%d not within kmsg's", a.Key, a.Min, a.Max)
			continue
		}
		if m, ok := v21.LookupMaxKeyVersion(a.Key); ok && (a.Max < m || a.Min > m) {
			t.Errorf("%s: %d–%d leaves out Kafka 2.1's v%d", kmsg.NameForKey(a.Key), a.Min, a.Max, m)
		}
		req.SetVersion(a.Max)
		if a.Key != apiVersionsKey && errorResponse(req, unsupportedVersion) == nil {
			t.Errorf("%s has no error answer", kmsg.NameForKey(a.Key))
		}
	}
}
