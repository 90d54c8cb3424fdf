package segment

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"testing"
	"unicode/utf8"
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
		{{Timestamp: 5, Key: []byte("k"), Value: nil}, {Timestamp: 6, Value: []byte{},
			Headers: []Header{{Key: "h", Value: nil}, {Key: "h", Value: []byte{}}, {Key: "h", Value: []byte("x")}}}},
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
	sum, cerr := Check(b)
	if err != nil {
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) {
			t.Fatalf("DecodeBlock error wraps neither sentinel: %v", err)
		}
		if recs != nil {
			t.Fatalf("DecodeBlock returned records with error %v", err)
		}
		if _, err0 := DecodeBlock(b, 0); cerr == nil && err0 != nil {
			t.Fatalf("Check accepts a block DecodeBlock refuses (%v)", err0)
		}
		return
	}
	if cerr != nil {
		t.Fatalf("Check refuses a block DecodeBlock accepts: %v", cerr)
	}
	if want := summarize(recs, len(b)); sum != want {
		t.Fatalf("Check summary %+v, from the decoded records %+v", sum, want)
	}
	twice := append(slices.Clip(b), b...)
	if n, err := CountBlocks(twice); err != nil || n != 2*len(recs) {
		t.Fatalf("CountBlocks of the block twice = %d, %v; want %d", n, err, 2*len(recs))
	}
	if both, err := AppendBlocksRecords(nil, twice, 0); err != nil || len(both) != 2*len(recs) ||
		both[len(recs)].Offset != int64(len(recs)) {
		t.Fatalf("AppendBlocksRecords of the block twice: %d records, %v", len(both), err)
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

// summarize computes what Check must report from a block of size bytes decoded to recs.
func summarize(recs []Record, size int) Summary {
	s := Summary{BlockInfo: BlockInfo{Count: len(recs), FirstTimestamp: recs[0].Timestamp, MaxTimestamp: recs[0].Timestamp, Size: size},
		MinTimestamp: recs[0].Timestamp, BadHeaderName: -1}
	for i, r := range recs {
		n := RecordSize(r)
		s.RecordBytes += n
		s.MaxRecordBytes = max(s.MaxRecordBytes, n)
		s.MinTimestamp = min(s.MinTimestamp, r.Timestamp)
		s.MaxTimestamp = max(s.MaxTimestamp, r.Timestamp)
		for _, h := range r.Headers {
			if s.BadHeaderName < 0 && (h.Key == "" || !utf8.ValidString(h.Key)) {
				s.BadHeaderName = i
			}
		}
	}
	return s
}
