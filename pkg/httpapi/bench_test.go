package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/wire"
)

// appendBodyForBench is an append body of n records with a 16-byte key, a 1,000-byte
// value and one header each, as a producer's batch sends it.
func appendBodyForBench(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"records": [`)
	val := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("v"), 1000))
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		key := base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "key-%012d", i))
		fmt.Fprintf(&b, `{"key": %q, "value": %q, "headers": {"trace": "dHJhY2UtaWQ="}, "timestamp_ms": 1732870000000}`, key, val)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// BenchmarkDecodeAppend compares decoding a 1,000-record append body with encoding/json
// alone (what the server did before names, nulls and repeats were checked) and with the
// strict walk in front of it (decodeStrict, what it does now).
func BenchmarkDecodeAppend(b *testing.B) {
	body := appendBodyForBench(1000)
	b.Run("EncodingJSON", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			var req appendRequest
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Strict", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			var req appendRequest
			if err := decodeStrict(body, &req); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkAppendBody compares what the append handler does with a 1,000-record body
// before the log sees it: the JSON form (strict decode, then base64 of every key, value
// and header) against the binary form (split the frames, check the block's CRC and
// framing). Both bodies carry the same records.
func BenchmarkAppendBody(b *testing.B) {
	body := appendBodyForBench(1000)
	var req appendRequest
	if err := decodeStrict(body, &req); err != nil {
		b.Fatal(err)
	}
	recs, _, ae := toRecords(req.Records)
	if ae != nil {
		b.Fatal(ae.message)
	}
	srecs := make([]segment.Record, len(recs))
	for i, r := range recs {
		srecs[i] = segment.Record{Timestamp: *r.Timestamp, Key: r.Key, Value: r.Value, Headers: r.Headers}
	}
	block, err := segment.EncodeBlock(srecs)
	if err != nil {
		b.Fatal(err)
	}
	bin := wire.AppendRequest(nil, []wire.Frame{{Partition: 0, Block: block}})
	b.Run("JSON", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			var req appendRequest
			if err := decodeStrict(body, &req); err != nil {
				b.Fatal(err)
			}
			if _, _, ae := toRecords(req.Records); ae != nil {
				b.Fatal(ae.message)
			}
		}
	})
	b.Run("Binary", func(b *testing.B) {
		b.SetBytes(int64(len(bin)))
		b.ReportAllocs()
		for b.Loop() {
			frames, err := wire.DecodeRequest(bin)
			if err != nil {
				b.Fatal(err)
			}
			for _, f := range frames {
				if _, err := segment.Check(f.Block); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
