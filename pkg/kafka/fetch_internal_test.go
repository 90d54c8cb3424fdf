package kafka

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"pgregory.net/rapid"

	"github.com/stratalog/strata/pkg/segment"
)

// TestEncodeBatchesMatchesKmsg: the one-pass batch encoder gives, byte for byte, the
// batches of kmsg's own encodings (each record encoded, then prefixed by its length;
// the batch built over the records' bytes), for any records: null and empty keys,
// values and header values, repeated headers, offset gaps past an int32, timestamps
// going backwards, on topics of CreateTime and LogAppendTime.
func TestEncodeBatchesMatchesKmsg(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 30).Draw(t, "n")
		off := rapid.Int64Range(0, math.MaxInt64/4).Draw(t, "base")
		ts := rapid.Int64Range(-1, 1<<42).Draw(t, "ts")
		nullable := func(label string) []byte {
			if rapid.IntRange(0, 4).Draw(t, label+"null") == 0 {
				return nil
			}
			return rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(t, label)
		}
		recs := make([]segment.Record, n)
		for i := range recs {
			if i > 0 {
				off += rapid.SampledFrom([]int64{1, 1, 2, 1 << 31}).Draw(t, "gap")
				ts += rapid.Int64Range(-1000, 1000).Draw(t, "dts") * rapid.Int64Range(0, 1).Draw(t, "tsmoves")
			}
			recs[i] = segment.Record{Offset: off, Timestamp: ts, Key: nullable("key"), Value: nullable("value")}
			for range rapid.IntRange(0, 3).Draw(t, "headers") {
				recs[i].Headers = append(recs[i].Headers, segment.Header{Key: rapid.StringN(0, 20, -1).Draw(t, "hkey"), Value: nullable("hvalue")})
			}
		}
		lat := rapid.Bool().Draw(t, "logAppendTime")
		got, want := encodeBatches(recs, lat), referenceBatches(recs, lat)
		if !bytes.Equal(got, want) {
			t.Fatalf("encodings differ:\n got %x\nwant %x", got, want)
		}
	})
}

// referenceBatches is the straightforward two-pass encoding through kmsg.
func referenceBatches(recs []segment.Record, logAppendTime bool) []byte {
	var out []byte
	for len(recs) > 0 {
		n := 1
		for n < len(recs) && recs[n].Offset-recs[0].Offset <= math.MaxInt32 &&
			(!logAppendTime || recs[n].Timestamp == recs[0].Timestamp) {
			n++
		}
		batch := recs[:n]
		recs = recs[n:]
		base, firstTs := batch[0].Offset, batch[0].Timestamp
		maxTs := firstTs
		var body, rec []byte
		for _, r := range batch {
			maxTs = max(maxTs, r.Timestamp)
			kr := kmsg.Record{TimestampDelta64: r.Timestamp - firstTs, OffsetDelta: int32(r.Offset - base), Key: r.Key, Value: r.Value}
			for _, h := range r.Headers {
				kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
			}
			rec = kr.AppendTo(rec[:0])
			kr.Length = int32(len(rec) - 1)
			body = kr.AppendTo(body)
		}
		b := kmsg.RecordBatch{
			FirstOffset: base, Length: int32(batchMinLength + len(body)), PartitionLeaderEpoch: -1,
			Magic: batchMagic, LastOffsetDelta: int32(batch[len(batch)-1].Offset - base),
			FirstTimestamp: firstTs, MaxTimestamp: maxTs, ProducerID: -1, ProducerEpoch: -1,
			FirstSequence: -1, NumRecords: int32(len(batch)), Records: body,
		}
		if logAppendTime {
			b.Attributes |= attrLogAppendTime
		}
		start := len(out)
		out = b.AppendTo(out)
		binary.BigEndian.PutUint32(out[start+17:], crc32.Checksum(out[start+batchCRCStart:], castagnoli))
	}
	return out
}
