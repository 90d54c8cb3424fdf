package segment

import (
	"bytes"
	"math"
	"testing"

	"pgregory.net/rapid"
)

// genRecords draws 1..40 records whose timestamps are either near a random start (small
// deltas of either sign) or anywhere in int64 (deltas that wrap), with nil, empty and
// non-empty keys and values and 0..4 headers.
func genRecords(t *rapid.T) []Record {
	n := rapid.IntRange(1, 40).Draw(t, "n")
	start := rapid.Int64().Draw(t, "start")
	recs := make([]Record, n)
	for i := range recs {
		r := &recs[i]
		if rapid.Bool().Draw(t, "wild") {
			r.Timestamp = rapid.Int64Range(math.MinInt64, math.MaxInt64).Draw(t, "ts")
		} else {
			r.Timestamp = start + rapid.Int64Range(-1<<40, 1<<40).Draw(t, "delta")
		}
		switch rapid.IntRange(0, 2).Draw(t, "keyKind") {
		case 0:
			r.Key = nil
		case 1:
			r.Key = []byte{}
		default:
			r.Key = rapid.SliceOfN(rapid.Byte(), 1, 64).Draw(t, "key")
		}
		switch rapid.IntRange(0, 2).Draw(t, "valueKind") {
		case 0:
			r.Value = nil
		case 1:
			r.Value = []byte{}
		default:
			r.Value = rapid.SliceOfN(rapid.Byte(), 1, 600).Draw(t, "value")
		}
		nh := rapid.IntRange(0, 4).Draw(t, "headers")
		for range nh {
			r.Headers = append(r.Headers, Header{
				Key:   rapid.StringN(0, 20, -1).Draw(t, "hkey"),
				Value: rapid.SliceOfN(rapid.Byte(), 0, 40).Draw(t, "hvalue"),
			})
		}
		r.Offset = rapid.Int64().Draw(t, "ignoredOffset")
	}
	return recs
}

func TestPropertyRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		recs := genRecords(t)
		base := rapid.Int64Range(0, math.MaxInt64-int64(len(recs))).Draw(t, "base")
		prefix := rapid.SliceOfN(rapid.Byte(), 0, 16).Draw(t, "prefix")

		b, err := EncodeBlock(recs)
		if err != nil {
			t.Fatalf("EncodeBlock: %v", err)
		}
		got, err := DecodeBlock(b, base)
		if err != nil {
			t.Fatalf("DecodeBlock: %v", err)
		}
		if d := equalRecords(recs, got, base); d != "" {
			t.Fatal(d)
		}

		first, maxTS := recs[0].Timestamp, recs[0].Timestamp
		for _, r := range recs {
			maxTS = max(maxTS, r.Timestamp)
		}
		info, err := Info(b)
		want := BlockInfo{Count: len(recs), FirstTimestamp: first, MaxTimestamp: maxTS, Size: len(b)}
		if err != nil || info != want {
			t.Fatalf("Info = %+v, %v; want %+v", info, err, want)
		}
		if n, err := EncodedSize(recs); err != nil || n != len(b) {
			t.Fatalf("EncodedSize = %d, %v; want %d", n, err, len(b))
		}
		appended, err := AppendBlock(bytes.Clone(prefix), recs)
		if err != nil || !bytes.Equal(appended, append(bytes.Clone(prefix), b...)) {
			t.Fatalf("AppendBlock differs from prefix+EncodeBlock (err %v)", err)
		}
		// Re-encoding the decoded records gives the same bytes: the encoding is canonical.
		again, err := EncodeBlock(got)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("re-encoding decoded records changed the bytes (err %v)", err)
		}
	})
}
