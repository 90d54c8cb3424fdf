package segment

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

// FuzzDecodeBlock feeds arbitrary bytes to DecodeBlock, as given and with the CRC fixed
// up (so mutations reach the record parser), and checks that it never panics, fails only
// with ErrCorrupt or ErrVersion, and that whatever decodes re-encodes to equal records.
func FuzzDecodeBlock(f *testing.F) {
	for _, recs := range [][]Record{
		sample(),
		{{Timestamp: 0, Value: []byte("x")}},
		{{Timestamp: math.MaxInt64, Key: []byte{}}, {Timestamp: math.MinInt64, Key: []byte("k"),
			Headers: []Header{{Key: "", Value: nil}, {Key: "h", Value: []byte("v")}}}},
	} {
		f.Add(mustEncode(f, recs), int64(0))
	}
	f.Add(mustEncode(f, sample()), int64(math.MaxInt64-3))
	f.Add(seal(2, 0, 0, payloadOf(ok(0), ok(1))), int64(7))
	f.Add([]byte{}, int64(0))
	f.Add([]byte("STRB\x01"), int64(0))
	f.Add([]byte("STRB\x02junkjunkjunkjunkjunkjunkjunkjunkjunk"), int64(0))
	f.Add(bytes.Repeat([]byte{0xff}, 64), int64(-1))

	f.Fuzz(func(t *testing.T, b []byte, base int64) {
		check(t, b, base)
		if len(b) >= HeaderSize {
			check(t, reseal(b), base)
		}
	})
}

func check(t *testing.T, b []byte, base int64) {
	t.Helper()
	recs, err := DecodeBlock(b, base)
	if err != nil {
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) {
			t.Fatalf("DecodeBlock error wraps neither sentinel: %v", err)
		}
		if recs != nil {
			t.Fatalf("DecodeBlock returned records with error %v", err)
		}
		return
	}
	info, err := Info(b)
	if err != nil || info.Count != len(recs) || info.Size != len(b) {
		t.Fatalf("block decodes to %d records but Info = %+v, %v", len(recs), info, err)
	}
	enc, err := EncodeBlock(recs)
	if err != nil {
		t.Fatalf("re-encoding decoded records: %v", err)
	}
	if len(enc) > len(b) {
		t.Fatalf("re-encoding grew the block from %d to %d bytes", len(b), len(enc))
	}
	again, err := DecodeBlock(enc, base)
	if err != nil {
		t.Fatalf("decoding re-encoded block: %v", err)
	}
	if d := equalRecords(recs, again, base); d != "" {
		t.Fatalf("re-encoded records differ: %s", d)
	}
	if again2, _ := Info(enc); again2 != (BlockInfo{Count: info.Count, FirstTimestamp: info.FirstTimestamp,
		MaxTimestamp: info.MaxTimestamp, Size: len(enc)}) {
		t.Fatalf("re-encoded Info %+v, original %+v", again2, info)
	}
}
