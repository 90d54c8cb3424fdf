package segment

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// sample is a small block exercising nil and empty keys, headers and a timestamp that
// goes backwards.
func sample() []Record {
	return []Record{
		{Timestamp: 1_700_000_000_000, Key: []byte("order-1"), Value: []byte(`{"total":42}`),
			Headers: []Header{{Key: "trace", Value: []byte("abc")}, {Key: "empty", Value: []byte{}}}},
		{Timestamp: 1_700_000_000_500, Key: nil, Value: []byte("no key")},
		{Timestamp: 1_699_999_999_000, Key: []byte{}, Value: nil, Headers: []Header{{Key: "trace", Value: []byte("def")}}},
	}
}

func mustEncode(t testing.TB, recs []Record) []byte {
	t.Helper()
	b, err := EncodeBlock(recs)
	if err != nil {
		t.Fatalf("EncodeBlock: %v", err)
	}
	return b
}

func TestRoundTrip(t *testing.T) {
	recs := sample()
	b := mustEncode(t, recs)
	got, err := DecodeBlock(b, 41)
	if err != nil {
		t.Fatalf("DecodeBlock: %v", err)
	}
	if d := equalRecords(recs, got, 41); d != "" {
		t.Fatal(d)
	}
	if got[1].Key != nil {
		t.Errorf("nil key decoded as %#v", got[1].Key)
	}
	if got[2].Key == nil {
		t.Errorf("empty key decoded as nil")
	}
	info, err := Info(b)
	if err != nil {
		t.Fatalf("Info: %v", err)
	}
	want := BlockInfo{Count: 3, FirstTimestamp: 1_700_000_000_000, MaxTimestamp: 1_700_000_000_500, Size: len(b)}
	if info != want {
		t.Errorf("Info = %+v, want %+v", info, want)
	}
	if n, err := EncodedSize(recs); err != nil || n != len(b) {
		t.Errorf("EncodedSize = %d, %v; want %d", n, err, len(b))
	}
}

func TestOffsetsIgnoredByEncoder(t *testing.T) {
	recs := sample()
	a := mustEncode(t, recs)
	for i := range recs {
		recs[i].Offset = int64(1000 - i)
	}
	if b := mustEncode(t, recs); !bytes.Equal(a, b) {
		t.Fatal("Record.Offset changed the encoding")
	}
}

func TestDecodedSlicesDoNotOverlap(t *testing.T) {
	b := mustEncode(t, sample())
	recs, err := DecodeBlock(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	_ = append(recs[0].Key, 'X', 'X', 'X', 'X')
	_ = append(recs[0].Headers[0].Value, 'Y', 'Y')
	_ = append(recs[0].Headers, Header{Key: "clobber"})
	if string(recs[0].Value) != `{"total":42}` || recs[1].Headers != nil ||
		recs[0].Headers[1].Key != "empty" || recs[2].Headers[0].Key != "trace" {
		t.Fatal("appending to a decoded slice overwrote a neighbour")
	}
	if _, err := DecodeBlock(b, 0); err != nil {
		t.Fatalf("block damaged by appends to decoded slices: %v", err)
	}
}

func TestAppendBlockConcatenates(t *testing.T) {
	a := mustEncode(t, sample())
	second := []Record{{Timestamp: -5, Value: []byte("x")}}
	prefix := []byte("object-prefix")
	obj, err := AppendBlock(bytes.Clone(prefix), sample())
	if err != nil {
		t.Fatal(err)
	}
	obj, err = AppendBlock(obj, second)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(obj, prefix) || !bytes.Equal(obj[len(prefix):len(prefix)+len(a)], a) {
		t.Fatal("AppendBlock did not append the same bytes EncodeBlock produces")
	}
	// Walk the blocks with PeekInfo as a reader of a whole object would.
	rest := obj[len(prefix):]
	var counts []int
	for len(rest) > 0 {
		info, err := PeekInfo(rest)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := DecodeBlock(rest[:info.Size], 0)
		if err != nil {
			t.Fatal(err)
		}
		counts = append(counts, len(recs))
		rest = rest[info.Size:]
	}
	if len(counts) != 2 || counts[0] != 3 || counts[1] != 1 {
		t.Fatalf("walked blocks with counts %v, want [3 1]", counts)
	}
}

func TestEncodeErrors(t *testing.T) {
	dst := []byte("keep")
	for _, recs := range [][]Record{nil, {}} {
		out, err := AppendBlock(dst, recs)
		if !errors.Is(err, ErrEmpty) {
			t.Errorf("AppendBlock(%v) err = %v, want ErrEmpty", recs, err)
		}
		if string(out) != "keep" {
			t.Errorf("AppendBlock changed dst on error: %q", out)
		}
	}
	if _, err := EncodedSize(nil); !errors.Is(err, ErrEmpty) {
		t.Errorf("EncodedSize(nil) err = %v", err)
	}
	// 17 records sharing one 256 MiB value: 4 GiB + framing exceeds the uint32 payload
	// length, yet allocates only the shared value since the size check comes first.
	big := make([]byte, 256<<20)
	recs := make([]Record, 17)
	for i := range recs {
		recs[i].Value = big
	}
	out, err := AppendBlock(dst, recs)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversize block err = %v, want ErrTooLarge", err)
	}
	if string(out) != "keep" {
		t.Errorf("AppendBlock changed dst on error")
	}
}

func TestRecordSize(t *testing.T) {
	r := Record{Key: []byte("abc"), Value: make([]byte, 10),
		Headers: []Header{{Key: "h1", Value: []byte("xyz")}, {Key: "h", Value: nil}}}
	if got := RecordSize(r); got != 3+10+2+3+1 {
		t.Fatalf("RecordSize = %d, want 19", got)
	}
	if got := RecordSize(Record{}); got != 0 {
		t.Fatalf("RecordSize(empty) = %d", got)
	}
}

func TestTimestampExtremes(t *testing.T) {
	recs := []Record{
		{Timestamp: math.MaxInt64, Value: []byte("a")},
		{Timestamp: math.MinInt64, Value: []byte("b")},
		{Timestamp: 0, Value: []byte("c")},
		{Timestamp: -1, Value: []byte("d")},
	}
	b := mustEncode(t, recs)
	got, err := DecodeBlock(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	if d := equalRecords(recs, got, 0); d != "" {
		t.Fatal(d)
	}
	info, _ := Info(b)
	if info.FirstTimestamp != math.MaxInt64 || info.MaxTimestamp != math.MaxInt64 {
		t.Fatalf("Info = %+v", info)
	}
}

func TestBaseOffset(t *testing.T) {
	b := mustEncode(t, sample()) // 3 records
	if recs, err := DecodeBlock(b, math.MaxInt64-3); err != nil || recs[2].Offset != math.MaxInt64-1 {
		t.Fatalf("base MaxInt64-3: %v", err)
	}
	for _, base := range []int64{-1, math.MinInt64, math.MaxInt64 - 2, math.MaxInt64} {
		if _, err := DecodeBlock(b, base); !errors.Is(err, ErrCorrupt) {
			t.Errorf("base %d: err = %v, want ErrCorrupt", base, err)
		}
	}
}

// TestMalformed checks that each kind of damage yields the right sentinel from DecodeBlock,
// and that Info catches exactly the header-level ones.
func TestMalformed(t *testing.T) {
	valid := mustEncode(t, sample())
	set := func(off int, put func([]byte)) []byte {
		c := bytes.Clone(valid)
		put(c[off:])
		return c
	}
	u32 := func(off int, v uint32) []byte {
		return set(off, func(b []byte) { binary.BigEndian.PutUint32(b, v) })
	}
	u64 := func(off int, v uint64) []byte {
		return set(off, func(b []byte) { binary.BigEndian.PutUint64(b, v) })
	}
	hdr := func(key string, value string) []byte {
		b := binary.AppendUvarint(nil, uint64(len(key)))
		b = append(b, key...)
		b = binary.AppendUvarint(b, uint64(len(value)))
		return append(b, value...)
	}
	info, _ := Info(valid)
	first, maxTS := info.FirstTimestamp, info.MaxTimestamp
	count := uint32(info.Count)
	payloadLen := uint32(len(valid) - HeaderSize)
	overlong := bytes.Repeat([]byte{0xff}, 11)

	tests := []struct {
		name   string
		b      []byte
		want   error
		infoOK bool // Info (header only) accepts it
	}{
		{"empty", nil, ErrCorrupt, false},
		{"magic", set(0, func(b []byte) { b[0] = 'X' }), ErrCorrupt, false},
		{"magic last byte", set(3, func(b []byte) { b[0] ^= 1 }), ErrCorrupt, false},
		{"version 0", set(offVersion, func(b []byte) { b[0] = 0 }), ErrVersion, false},
		{"version 3", set(offVersion, func(b []byte) { b[0] = 3 }), ErrVersion, false},
		{"version 255", set(offVersion, func(b []byte) { b[0] = 255 }), ErrVersion, false},
		{"version 3 truncated header", set(offVersion, func(b []byte) { b[0] = 3 })[:offVersion+1], ErrVersion, false},
		{"crc flipped", set(offCRC, func(b []byte) { b[3] ^= 0x80 }), ErrCorrupt, true},
		{"crc zero", u32(offCRC, 0), ErrCorrupt, true},
		{"count+1", u32(offCount, count+1), ErrCorrupt, true},
		{"count-1", u32(offCount, count-1), ErrCorrupt, true},
		{"count+1 resealed", reseal(u32(offCount, count+1)), ErrCorrupt, true},
		{"count-1 resealed", reseal(u32(offCount, count-1)), ErrCorrupt, true},
		{"count 0", reseal(u32(offCount, 0)), ErrCorrupt, false},
		{"count max", reseal(u32(offCount, math.MaxUint32)), ErrCorrupt, false},
		{"count above payload/5", reseal(u32(offCount, payloadLen/minRecordSize+1)), ErrCorrupt, false},
		{"first ts", u64(offFirstTS, uint64(first+1)), ErrCorrupt, true},
		{"first ts resealed", reseal(u64(offFirstTS, uint64(first-1))), ErrCorrupt, true},
		{"first ts above max resealed", reseal(u64(offFirstTS, uint64(maxTS+1))), ErrCorrupt, false},
		{"max ts", u64(offMaxTS, uint64(maxTS+1)), ErrCorrupt, true},
		{"max ts resealed", reseal(u64(offMaxTS, uint64(maxTS+1))), ErrCorrupt, true},
		{"max ts below first resealed", reseal(u64(offMaxTS, uint64(first-1))), ErrCorrupt, false},
		{"payload length+1", u32(offPayloadLen, payloadLen+1), ErrCorrupt, false},
		{"payload length-1", u32(offPayloadLen, payloadLen-1), ErrCorrupt, false},
		{"payload length-1 resealed", reseal(u32(offPayloadLen, payloadLen-1)), ErrCorrupt, false},
		{"payload length max", u32(offPayloadLen, math.MaxUint32), ErrCorrupt, false},
		{"payload length 0", reseal(u32(offPayloadLen, 0)), ErrCorrupt, false},
		{"trailing byte", append(bytes.Clone(valid), 0), ErrCorrupt, false},
		{"trailing block", append(bytes.Clone(valid), valid...), ErrCorrupt, false},
		{"payload byte flipped", set(HeaderSize+5, func(b []byte) { b[0] ^= 1 }), ErrCorrupt, true},
		{"last byte flipped", set(len(valid)-1, func(b []byte) { b[0] ^= 1 }), ErrCorrupt, true},

		// Record-level damage behind a valid CRC.
		{"well-formed control", seal(2, 0, 0, payloadOf(ok(0), ok(1))), nil, true},
		{"first relative offset 1", seal(1, 0, 0, payloadOf(ok(1))), ErrCorrupt, true},
		{"relative offsets repeat", seal(2, 0, 0, payloadOf(ok(0), ok(0))), ErrCorrupt, true},
		{"relative offsets skip", seal(2, 0, 0, payloadOf(ok(0), ok(2))), ErrCorrupt, true},
		{"relative offsets reversed", seal(2, 0, 0, payloadOf(ok(1), ok(0))), ErrCorrupt, true},
		{"relative offset overlong varint", seal(1, 0, 0, append(overlong, payloadOf(ok(0))...)), ErrCorrupt, true},
		{"record 0 timestamp delta", seal(1, 0, 7, payloadOf(rawRecord{tsDelta: 7, keyLen: -1})), ErrCorrupt, true},
		{"max ts not reached", seal(2, 0, 9, payloadOf(ok(0), rawRecord{rel: 1, tsDelta: 8, keyLen: -1})), ErrCorrupt, true},
		{"max ts exceeded", seal(2, 0, 7, payloadOf(ok(0), rawRecord{rel: 1, tsDelta: 8, keyLen: -1})), ErrCorrupt, true},
		{"max ts matched", seal(2, 0, 8, payloadOf(ok(0), rawRecord{rel: 1, tsDelta: 8, keyLen: -1})), nil, true},
		{"key length -2", seal(1, 0, 0, payloadOf(rawRecord{keyLen: -2})), ErrCorrupt, true},
		{"key length past end", seal(1, 0, 0, payloadOf(rawRecord{keyLen: 100, key: []byte("k")})), ErrCorrupt, true},
		{"key length huge", seal(1, 0, 0, payloadOf(rawRecord{keyLen: math.MaxInt64}, ok(9))), ErrCorrupt, true},
		{"key length min", seal(1, 0, 0, payloadOf(rawRecord{keyLen: math.MinInt64}, ok(9))), ErrCorrupt, true},
		{"value length past end", seal(1, 0, 0, payloadOf(rawRecord{keyLen: -1, valueLen: 6, value: []byte("vvvvv")})), ErrCorrupt, true},
		{"value length huge", seal(1, 0, 0, payloadOf(rawRecord{keyLen: -1, valueLen: math.MaxUint64}, ok(9))), ErrCorrupt, true},
		{"header count past end", seal(1, 0, 0, payloadOf(rawRecord{keyLen: -1, hdrCount: 2, hdrs: hdr("a", "b")})), ErrCorrupt, true},
		{"header count huge", seal(1, 0, 0, payloadOf(rawRecord{keyLen: -1, hdrCount: math.MaxUint64}, ok(9), ok(9))), ErrCorrupt, true},
		{"header key length past end", seal(1, 0, 0, payloadOf(rawRecord{keyLen: -1, hdrCount: 1, hdrs: []byte{9, 'a', 0}})), ErrCorrupt, true},
		{"header value length past end", seal(1, 0, 0, payloadOf(rawRecord{keyLen: -1, hdrCount: 1, hdrs: []byte{1, 'a', 9, 'b'}})), ErrCorrupt, true},
		{"header key length overlong", seal(1, 0, 0, payloadOf(rawRecord{keyLen: -1, hdrCount: 1, hdrs: overlong})), ErrCorrupt, true},
		{"headers well-formed", seal(1, 0, 0, payloadOf(rawRecord{keyLen: -1, hdrCount: 2, hdrs: append(hdr("a", "b"), hdr("", "")...)})), nil, true},
		{"truncated varint at end", seal(1, 0, 0, append(payloadOf(ok(0))[:4], 0x80, 0x80, 0x80, 0x80, 0x80)), ErrCorrupt, true},
		{"bytes after last record", seal(1, 0, 0, append(payloadOf(ok(0)), 0, 0, 0, 0, 0, 0)), ErrCorrupt, true},
		{"second record all zeros", seal(2, 0, 0, append(payloadOf(ok(0)), 0, 0, 0, 0, 0)), ErrCorrupt, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := DecodeBlock(tc.b, 0)
			checkErr(t, "DecodeBlock", err, tc.want)
			if err != nil && recs != nil {
				t.Errorf("DecodeBlock returned records with an error")
			}
			_, err = Info(tc.b)
			switch {
			case tc.infoOK && err != nil:
				t.Errorf("Info: %v, want success", err)
			case !tc.infoOK:
				checkErr(t, "Info", err, tc.want)
			}
		})
	}
}

func checkErr(t *testing.T, what string, err, want error) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Errorf("%s: %v, want success", what, err)
	case want == nil:
	case !errors.Is(err, want):
		t.Errorf("%s: err = %v, want %v", what, err, want)
	case want == ErrCorrupt && errors.Is(err, ErrVersion), want == ErrVersion && errors.Is(err, ErrCorrupt):
		t.Errorf("%s: err = %v matches both sentinels", what, err)
	}
}

func TestTruncatedAtEveryByte(t *testing.T) {
	valid := mustEncode(t, sample())
	for n := range len(valid) {
		b := valid[:n:n]
		if _, err := DecodeBlock(b, 0); !errors.Is(err, ErrCorrupt) {
			t.Errorf("truncated to %d bytes: DecodeBlock err = %v, want ErrCorrupt", n, err)
		}
		if _, err := Info(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("truncated to %d bytes: Info err = %v, want ErrCorrupt", n, err)
		}
		if n >= HeaderSize {
			// Even with a matching payload length and CRC, the records are cut short.
			c := bytes.Clone(b)
			binary.BigEndian.PutUint32(c[offPayloadLen:], uint32(n-HeaderSize))
			if _, err := DecodeBlock(reseal(c), 0); !errors.Is(err, ErrCorrupt) {
				t.Errorf("truncated to %d bytes and resealed: err = %v, want ErrCorrupt", n, err)
			}
		}
	}
}

func TestEveryBitFlipDetected(t *testing.T) {
	valid := mustEncode(t, sample())
	for i := range len(valid) * 8 {
		b := bytes.Clone(valid)
		b[i/8] ^= 1 << (i % 8)
		_, err := DecodeBlock(b, 0)
		if err == nil {
			t.Fatalf("flip of bit %d accepted", i)
		}
		want := ErrCorrupt
		if i/8 == offVersion {
			want = ErrVersion
		}
		if !errors.Is(err, want) {
			t.Fatalf("flip of bit %d: err = %v, want %v", i, err, want)
		}
	}
}

func TestErrorMessagesNameTheProblem(t *testing.T) {
	valid := mustEncode(t, sample())
	_, err := DecodeBlock(append(bytes.Clone(valid), 1, 2), 0)
	if err == nil || !strings.Contains(err.Error(), "trailing") {
		t.Errorf("trailing bytes: %v", err)
	}
	b := bytes.Clone(valid)
	b[len(b)-1] ^= 1
	if _, err := DecodeBlock(b, 0); err == nil || !strings.Contains(err.Error(), "CRC32C") {
		t.Errorf("bad CRC: %v", err)
	}
}

func TestAppendRecords(t *testing.T) {
	a := mustEncode(t, sample())
	second := []Record{{Timestamp: 9, Key: nil, Value: []byte("z")}}
	b := mustEncode(t, second)

	// Reuse a slice whose stale contents have keys and headers where the new records
	// have none: every field must be overwritten.
	stale := make([]Record, 10)
	for i := range stale {
		stale[i] = Record{Offset: -1, Key: []byte("stale"), Headers: []Header{{Key: "stale"}}}
	}
	dst := stale[:1]
	dst, err := AppendRecords(dst, a, 100)
	if err != nil {
		t.Fatal(err)
	}
	dst, err = AppendRecords(dst, b, 103)
	if err != nil {
		t.Fatal(err)
	}
	if &dst[0] != &stale[0] {
		t.Error("AppendRecords reallocated although dst had room")
	}
	if d := equalRecords(sample(), dst[1:4], 100); d != "" {
		t.Fatal(d)
	}
	if d := equalRecords(second, dst[4:], 103); d != "" {
		t.Fatal(d)
	}
	if string(dst[0].Key) != "stale" {
		t.Error("AppendRecords modified dst's existing elements")
	}

	corrupt := bytes.Clone(b)
	corrupt[len(corrupt)-1] ^= 1
	got, err := AppendRecords(dst, corrupt, 104)
	if !errors.Is(err, ErrCorrupt) || len(got) != len(dst) {
		t.Fatalf("AppendRecords(corrupt) = len %d, %v; want len %d and ErrCorrupt", len(got), err, len(dst))
	}
}

func TestUvarintEdges(t *testing.T) {
	ff := func(n int, last ...byte) []byte { return append(bytes.Repeat([]byte{0xff}, n), last...) }
	for _, b := range [][]byte{
		{}, {0}, {0x7f}, {0x80}, {0x80, 0}, {0x80, 0x80, 0x80},
		ff(9, 1), ff(9, 2), ff(9, 0x7f), ff(9, 0x80, 1), ff(10, 0), ff(10), ff(11),
		binary.AppendUvarint(nil, math.MaxUint64), binary.AppendUvarint(nil, 1<<63),
	} {
		got, next := uvarint(b, 0)
		want, n := binary.Uvarint(b)
		if n <= 0 && next >= 0 || n > 0 && (got != want || next != n) {
			t.Errorf("uvarint(%x) = %d, %d; binary.Uvarint = %d, %d", b, got, next, want, n)
		}
	}
}

func TestUvarintMatchesBinary(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var b []byte
		if rapid.Bool().Draw(t, "valid") {
			b = binary.AppendUvarint(nil, rapid.Uint64().Draw(t, "v"))
			b = b[:rapid.IntRange(0, len(b)).Draw(t, "cut")]
		} else {
			b = rapid.SliceOfN(rapid.Byte(), 0, 12).Draw(t, "b")
		}
		lead := rapid.IntRange(0, 3).Draw(t, "lead")
		buf := append(make([]byte, lead), b...)
		got, next := uvarint(buf, lead)
		want, n := binary.Uvarint(b)
		switch {
		case n <= 0 && next >= 0:
			t.Fatalf("uvarint(%x) = %d, %d; binary.Uvarint rejects it (%d)", b, got, next, n)
		case n > 0 && (got != want || next != lead+n):
			t.Fatalf("uvarint(%x) = %d, %d; want %d, %d", b, got, next, want, lead+n)
		}
	})
}

// TestManyHeaders crosses the decoder's header chunks: many one-header records, a record
// with more headers than a chunk holds, and records without headers in between.
func TestManyHeaders(t *testing.T) {
	var recs []Record
	for i := range 1500 {
		r := Record{Timestamp: int64(i), Value: []byte{byte(i)}}
		switch {
		case i == 700:
			for j := range 2 * headerChunk {
				r.Headers = append(r.Headers, Header{Key: fmt.Sprint("k", j%20), Value: []byte(fmt.Sprint(j))})
			}
		case i%3 != 0:
			r.Headers = []Header{{Key: "trace", Value: []byte(fmt.Sprint(i))}}
		}
		recs = append(recs, r)
	}
	got, err := DecodeBlock(mustEncode(t, recs), 5)
	if err != nil {
		t.Fatal(err)
	}
	if d := equalRecords(recs, got, 5); d != "" {
		t.Fatal(d)
	}
	for i := range got[:len(got)-1] {
		_ = append(got[i].Headers, Header{Key: "clobber"})
	}
	if d := equalRecords(recs, got, 5); d != "" {
		t.Fatalf("after appending to decoded headers: %s", d)
	}
}

// TestNullValuesRoundTrip: a null value (a tombstone) and a null header value decode as
// nil, distinct from empty ones, with repeated header keys kept in order; such a block
// is version 2, one without nulls stays version 1.
func TestNullValuesRoundTrip(t *testing.T) {
	recs := []Record{
		{Timestamp: 10, Key: []byte("k"), Value: nil},
		{Timestamp: 11, Key: []byte("k"), Value: []byte{}},
		{Timestamp: 12, Value: []byte("v"), Headers: []Header{
			{Key: "h", Value: nil}, {Key: "h", Value: []byte{}}, {Key: "a", Value: []byte("1")}, {Key: "h", Value: []byte("2")}}},
	}
	b := mustEncode(t, recs)
	if b[offVersion] != Version {
		t.Fatalf("block with nulls written as version %d, want %d", b[offVersion], Version)
	}
	if n, err := EncodedSize(recs); err != nil || n != len(b) {
		t.Fatalf("EncodedSize = %d, %v; block is %d bytes", n, err, len(b))
	}
	got, err := DecodeBlock(b, 5)
	if err != nil {
		t.Fatal(err)
	}
	if d := equalRecords(recs, got, 5); d != "" {
		t.Fatal(d)
	}
	if _, err := Check(b); err != nil {
		t.Fatalf("Check: %v", err)
	}
	plain := mustEncode(t, []Record{{Timestamp: 1, Value: []byte{}, Headers: []Header{{Key: "h", Value: []byte{}}}}})
	if plain[offVersion] != VersionNoNulls {
		t.Fatalf("block without nulls written as version %d, want %d", plain[offVersion], VersionNoNulls)
	}
	got, err = DecodeBlock(plain, 0)
	if err != nil || got[0].Value == nil || got[0].Headers[0].Value == nil {
		t.Fatalf("version 1 block: %+v, %v; want empty, non-nil values", got, err)
	}
}

// TestVersion1BlocksStillRead: a block written by the version-1 encoder (hand-made
// here, as stored before null values existed) decodes with empty, non-nil values.
func TestVersion1BlocksStillRead(t *testing.T) {
	hdr := []byte{1, 'h', 0} // key "h", empty value
	b := seal(1, 7, 7, payloadOf(rawRecord{rel: 0, keyLen: -1, valueLen: 0, hdrCount: 1, hdrs: hdr}))
	got, err := DecodeBlock(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Value == nil || len(got[0].Value) != 0 || got[0].Headers[0].Value == nil {
		t.Fatalf("version 1 empty values decoded as %+v", got[0])
	}
	// A negative value length is a null only in version 2: in version 1 the same bytes
	// are a length of 1 with nothing behind it.
	null := bytes.Clone(b)
	null[offVersion] = Version
	if got, err := DecodeBlock(null, 0); err != nil || got[0].Value == nil {
		t.Fatalf("relabelled as version 2: %+v, %v (value length 0 stays empty)", got, err)
	}
}

// TestVersion2BadValueLength: a value length below -1 is corrupt.
func TestVersion2BadValueLength(t *testing.T) {
	b := mustEncode(t, []Record{{Timestamp: 0, Value: nil}})
	i := HeaderSize + 3 // offset, delta, key length (-1)
	if b[i] != 1 {      // zigzag -1
		t.Fatalf("unexpected layout: % x", b)
	}
	b[i] = 3 // zigzag -2
	if _, err := DecodeBlock(reseal(b), 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("value length -2: err = %v, want ErrCorrupt", err)
	}
	if _, err := Check(reseal(b)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Check of value length -2: err = %v, want ErrCorrupt", err)
	}
}
