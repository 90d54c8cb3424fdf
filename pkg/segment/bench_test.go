package segment

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchRecords is ~1000 records of ~1 KB: a 16-byte key, a 1000-byte value and one
// 16-byte trace header, timestamps a few ms apart (about 1.05 MB encoded).
func benchRecords() []Record {
	rng := rand.New(rand.NewPCG(1, 2))
	recs := make([]Record, 1000)
	ts := int64(1_732_870_000_000)
	for i := range recs {
		value := make([]byte, 1000)
		for j := range value {
			value[j] = byte(rng.Uint32())
		}
		ts += int64(rng.IntN(5))
		recs[i] = Record{
			Timestamp: ts,
			Key:       fmt.Appendf(nil, "order-%010d", i),
			Value:     value,
			Headers:   []Header{{Key: "trace-id", Value: fmt.Appendf(nil, "%016x", rng.Uint64())}},
		}
	}
	return recs
}

func BenchmarkEncode(b *testing.B) {
	recs := benchRecords()
	buf := mustEncode(b, recs)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = AppendBlock(buf[:0], recs); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	block := mustEncode(b, benchRecords())
	b.SetBytes(int64(len(block)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeBlock(block, 1000); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCopy is the yardstick for Decode: a plain copy of the same bytes.
func BenchmarkCopy(b *testing.B) {
	block := mustEncode(b, benchRecords())
	dst := make([]byte, len(block))
	b.SetBytes(int64(len(block)))
	b.ReportAllocs()
	for b.Loop() {
		copy(dst, block)
	}
}

// BenchmarkAppendRecords decodes into a reused slice, as a poll loop can: Decode minus
// the allocation of the []Record.
func BenchmarkAppendRecords(b *testing.B) {
	block := mustEncode(b, benchRecords())
	recs := make([]Record, 0, 1000)
	b.SetBytes(int64(len(block)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if recs, err = AppendRecords(recs[:0], block, 1000); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheck is what a server does to a block it receives in the binary form:
// verify the CRC and walk the framing, decoding nothing.
func BenchmarkCheck(b *testing.B) {
	block := mustEncode(b, benchRecords())
	b.SetBytes(int64(len(block)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Check(block); err != nil {
			b.Fatal(err)
		}
	}
}
