package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"
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
