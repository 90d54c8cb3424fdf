package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/bits"
	"slices"
)

// Sentinel errors callers branch on with errors.Is.
var (
	// ErrCorrupt: the block is malformed (bad magic, truncated, length out of bounds,
	// CRC mismatch, trailing bytes, relative offsets not 0..n-1, header inconsistent with
	// the records) or the base offset given with it is out of range.
	ErrCorrupt = errors.New("segment: corrupt block")
	// ErrVersion: the block has the right magic but a format version this code does not know.
	ErrVersion = errors.New("segment: unknown block version")
	// ErrEmpty: a block must hold at least one record.
	ErrEmpty = errors.New("segment: no records")
	// ErrTooLarge: the records do not fit the format (payload above MaxPayload bytes).
	ErrTooLarge = errors.New("segment: block too large")
)

const (
	// Version is the newest block format version this package writes and reads.
	// Version 2 adds null values and null header values (Kafka's tombstones); a block
	// whose records hold none is still written as version 1 (VersionNoNulls), so readers
	// that know only version 1 keep reading what they always could.
	Version = 2
	// VersionNoNulls is version 1: a value and a header value are never null.
	VersionNoNulls = 1
	// HeaderSize is the size of the fixed block header in bytes.
	HeaderSize = 33
	// MaxPayload is the largest payload a block can hold (its length field is a uint32).
	MaxPayload = math.MaxUint32

	magic = "STRB"

	offVersion    = 4
	offCRC        = 5
	offCount      = 9
	offFirstTS    = 13
	offMaxTS      = 21
	offPayloadLen = 29

	// minRecordSize is the smallest encoded record: five one-byte varints.
	minRecordSize = 5
	// minHeaderSize is the smallest encoded record header: two one-byte varints.
	minHeaderSize = 2
)

// castagnoli is the CRC32C table; read-only after initialisation.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header is a record header: a key and an opaque value, nil for a null value.
type Header struct {
	Key   string
	Value []byte
}

// Record is one record of a partition.
type Record struct {
	// Offset is absolute; DecodeBlock sets it to base offset + relative offset and
	// EncodeBlock ignores it.
	Offset int64
	// Timestamp is in milliseconds since the Unix epoch.
	Timestamp int64
	// Key is nil for a record without a key (distinct from an empty key).
	Key []byte
	// Value is nil for a null value (Kafka's tombstone), distinct from an empty value,
	// which decodes as an empty slice.
	Value []byte
	// Headers are in order; a key may repeat. A header Value is nil for a null value,
	// distinct from an empty one.
	Headers []Header
}

// BlockInfo is what a block's header says about it.
type BlockInfo struct {
	Count          int
	MaxTimestamp   int64
	FirstTimestamp int64
	// Size is the whole block's length in bytes (header and payload).
	Size int
}

// RecordSize returns the bytes of r's key, value and headers (keys and values), the
// figure the API's per-record size limit applies to. Framing (varints, ~10 bytes plus
// ~2 per header) is not included; EncodedSize gives exact block sizes.
func RecordSize(r Record) int {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}

// EncodedSize returns the exact length of the block EncodeBlock would produce for recs,
// or the error it would return.
func EncodedSize(recs []Record) (int, error) {
	p, err := payloadSize(recs)
	if err != nil {
		return 0, err
	}
	return HeaderSize + p, nil
}

// EncodeBlock encodes recs as one block. Offsets of recs are ignored: the i-th record gets
// relative offset i.
func EncodeBlock(recs []Record) ([]byte, error) {
	return AppendBlock(nil, recs)
}

// AppendBlock appends the block of recs to dst and returns the extended slice, so a
// segment object of many blocks is built without copies. On error dst is returned
// unchanged.
func AppendBlock(dst []byte, recs []Record) ([]byte, error) {
	payload, err := payloadSize(recs)
	if err != nil {
		return dst, err
	}
	version := blockVersion(recs)
	first := recs[0].Timestamp
	maxTS := first
	for i := range recs {
		maxTS = max(maxTS, recs[i].Timestamp)
	}

	start := len(dst)
	dst = slices.Grow(dst, HeaderSize+payload)
	dst = dst[:start+HeaderSize]
	h := dst[start:]
	copy(h, magic)
	h[offVersion] = version
	binary.BigEndian.PutUint32(h[offCount:], uint32(len(recs)))
	binary.BigEndian.PutUint64(h[offFirstTS:], uint64(first))
	binary.BigEndian.PutUint64(h[offMaxTS:], uint64(maxTS))
	binary.BigEndian.PutUint32(h[offPayloadLen:], uint32(payload))

	for i := range recs {
		r := &recs[i]
		dst = binary.AppendUvarint(dst, uint64(i))
		dst = binary.AppendVarint(dst, r.Timestamp-first)
		if r.Key == nil {
			dst = binary.AppendVarint(dst, -1)
		} else {
			dst = binary.AppendVarint(dst, int64(len(r.Key)))
			dst = append(dst, r.Key...)
		}
		dst = appendValue(dst, version, r.Value)
		dst = binary.AppendUvarint(dst, uint64(len(r.Headers)))
		for _, hd := range r.Headers {
			dst = binary.AppendUvarint(dst, uint64(len(hd.Key)))
			dst = append(dst, hd.Key...)
			dst = appendValue(dst, version, hd.Value)
		}
	}
	binary.BigEndian.PutUint32(dst[start+offCRC:], crc32.Checksum(dst[start+offCount:], castagnoli))
	return dst, nil
}

// blockVersion is the version recs are written in: VersionNoNulls unless a value or a
// header value is null.
func blockVersion(recs []Record) byte {
	for i := range recs {
		if recs[i].Value == nil {
			return Version
		}
		for _, h := range recs[i].Headers {
			if h.Value == nil {
				return Version
			}
		}
	}
	return VersionNoNulls
}

// appendValue appends a value's length and bytes: in version 1 an unsigned varint, in
// version 2 a signed varint, -1 for nil.
func appendValue(dst []byte, version byte, v []byte) []byte {
	switch {
	case version == VersionNoNulls:
		dst = binary.AppendUvarint(dst, uint64(len(v)))
	case v == nil:
		return binary.AppendVarint(dst, -1)
	default:
		dst = binary.AppendVarint(dst, int64(len(v)))
	}
	return append(dst, v...)
}

// valueLen is the encoded length of a value in version.
func valueLen(version byte, v []byte) int {
	switch {
	case version == VersionNoNulls:
		return uvarintLen(uint64(len(v))) + len(v)
	case v == nil:
		return 1
	default:
		return varintLen(int64(len(v))) + len(v)
	}
}

// payloadSize computes the exact payload length of recs and checks it is representable.
func payloadSize(recs []Record) (int, error) {
	if len(recs) == 0 {
		return 0, ErrEmpty
	}
	version := blockVersion(recs)
	first := recs[0].Timestamp
	var total uint64
	for i := range recs {
		r := &recs[i]
		n := uvarintLen(uint64(i)) + varintLen(r.Timestamp-first)
		if r.Key == nil {
			n++
		} else {
			n += varintLen(int64(len(r.Key))) + len(r.Key)
		}
		n += valueLen(version, r.Value)
		n += uvarintLen(uint64(len(r.Headers)))
		for _, h := range r.Headers {
			n += uvarintLen(uint64(len(h.Key))) + len(h.Key)
			n += valueLen(version, h.Value)
		}
		total += uint64(n)
		if total > MaxPayload || total > math.MaxInt-HeaderSize {
			return 0, fmt.Errorf("%w: payload exceeds %d bytes at record %d", ErrTooLarge, uint64(MaxPayload), i)
		}
	}
	return int(total), nil
}

func uvarintLen(x uint64) int { return (bits.Len64(x|1) + 6) / 7 }

func varintLen(x int64) int { return uvarintLen(uint64(x<<1) ^ uint64(x>>63)) }

// header is the parsed fixed header of a block.
type header struct {
	version    byte
	crc        uint32
	count      int
	first, max int64
	size       int
}

// parseHeader validates the fixed header at the start of b. With exact, b must be
// the whole block; without, b may extend past it.
func parseHeader(b []byte, exact bool) (header, error) {
	if len(b) < offVersion+1 {
		return header{}, fmt.Errorf("%w: %d bytes, shorter than the header", ErrCorrupt, len(b))
	}
	if string(b[:offVersion]) != magic {
		return header{}, fmt.Errorf("%w: bad magic %q", ErrCorrupt, b[:offVersion])
	}
	v := b[offVersion]
	if v != VersionNoNulls && v != Version {
		return header{}, fmt.Errorf("%w: version %d", ErrVersion, v)
	}
	if len(b) < HeaderSize {
		return header{}, fmt.Errorf("%w: %d bytes, shorter than the header", ErrCorrupt, len(b))
	}
	h := header{
		version: v,
		crc:     binary.BigEndian.Uint32(b[offCRC:]),
		first:   int64(binary.BigEndian.Uint64(b[offFirstTS:])),
		max:     int64(binary.BigEndian.Uint64(b[offMaxTS:])),
	}
	count := uint64(binary.BigEndian.Uint32(b[offCount:]))
	payload := uint64(binary.BigEndian.Uint32(b[offPayloadLen:]))
	rest := uint64(len(b) - HeaderSize)
	switch {
	case payload > rest:
		return header{}, fmt.Errorf("%w: payload length %d exceeds the %d bytes present", ErrCorrupt, payload, rest)
	case exact && payload != rest:
		return header{}, fmt.Errorf("%w: %d trailing bytes after the payload", ErrCorrupt, rest-payload)
	case count == 0:
		return header{}, fmt.Errorf("%w: record count 0", ErrCorrupt)
	case count > payload/minRecordSize:
		return header{}, fmt.Errorf("%w: record count %d cannot fit in %d payload bytes", ErrCorrupt, count, payload)
	case h.first > h.max:
		return header{}, fmt.Errorf("%w: first timestamp %d after max timestamp %d", ErrCorrupt, h.first, h.max)
	}
	h.count = int(count)
	h.size = HeaderSize + int(payload)
	return h, nil
}

// Info validates b's header against b's length and returns what it says. It does not
// check the CRC or the records: it is cheap, and DecodeBlock remains the authority.
func Info(b []byte) (BlockInfo, error) {
	h, err := parseHeader(b, true)
	if err != nil {
		return BlockInfo{}, err
	}
	return h.info(), nil
}

// PeekInfo parses the header of the block that starts b, which may be followed by other
// bytes (the next block of a segment object), and returns it; Size says where the block
// ends. Like Info it checks neither the CRC nor the records.
func PeekInfo(b []byte) (BlockInfo, error) {
	h, err := parseHeader(b, false)
	if err != nil {
		return BlockInfo{}, err
	}
	return h.info(), nil
}

func (h header) info() BlockInfo {
	return BlockInfo{Count: h.count, MaxTimestamp: h.max, FirstTimestamp: h.first, Size: h.size}
}

// DecodeBlock verifies and decodes the block b, whose first record is at baseOffset. The
// records alias b (see the package doc); b must not be modified while they are in use.
// Any malformed block, and a baseOffset that is negative or would overflow with the
// block's count, gives an error wrapping ErrCorrupt (or ErrVersion).
func DecodeBlock(b []byte, baseOffset int64) ([]Record, error) {
	return AppendRecords(nil, b, baseOffset)
}

// AppendRecords is DecodeBlock appending the records to dst, so a reader can gather
// several blocks into one slice, or reuse one across calls, without further copies or
// allocations. On error dst is returned with its original length.
func AppendRecords(dst []Record, b []byte, baseOffset int64) ([]Record, error) {
	h, err := parseHeader(b, true)
	if err != nil {
		return dst, err
	}
	if baseOffset < 0 || baseOffset > math.MaxInt64-int64(h.count) {
		return dst, fmt.Errorf("%w: base offset %d out of range for %d records", ErrCorrupt, baseOffset, h.count)
	}
	if crc := crc32.Checksum(b[offCount:], castagnoli); crc != h.crc {
		return dst, fmt.Errorf("%w: CRC32C %08x, header says %08x", ErrCorrupt, crc, h.crc)
	}
	out := slices.Grow(dst, h.count)[:len(dst)+h.count]
	if err := decodeRecords(out[len(dst):], b, h, baseOffset, nil); err != nil {
		return dst, err
	}
	return out, nil
}

// decodeRecords parses the payload of b, whose header h and CRC are valid, into recs
// (len(recs) == h.count; every field is overwritten). With recs nil it only walks the
// records (Check), filling sum; it allocates nothing then.
func decodeRecords(recs []Record, b []byte, h header, baseOffset int64, sum *Summary) error {
	var (
		hdrs     []Header
		interned []string
		maxTS    = h.first
		i        = HeaderSize
		u        uint64
		s        int64
		scratch  Record
		err      error
	)
	for n := range h.count {
		r := &scratch
		if recs != nil {
			r = &recs[n]
		}
		r.Offset = baseOffset + int64(n)

		if u, i = uvarint(b, i); i < 0 || u != uint64(n) {
			return recordErr(n, "relative offset", i < 0)
		}
		if s, i = varint(b, i); i < 0 {
			return recordErr(n, "timestamp delta", true)
		}
		r.Timestamp = h.first + s
		if n == 0 && s != 0 {
			return fmt.Errorf("%w: record 0 timestamp differs from the header's first timestamp", ErrCorrupt)
		}
		maxTS = max(maxTS, r.Timestamp)

		if s, i = varint(b, i); i < 0 || s < -1 || (s >= 0 && uint64(s) > uint64(len(b)-i)) {
			return recordErr(n, "key length", i < 0)
		}
		r.Key = nil
		if s >= 0 {
			r.Key = b[i : i+int(s) : i+int(s)]
			i += int(s)
		}

		if r.Value, i = value(b, i, h.version); i < 0 {
			return recordErr(n, "value length", i == -1)
		}

		if u, i = uvarint(b, i); i < 0 || u > uint64(len(b)-i)/minHeaderSize {
			return recordErr(n, "header count", i < 0)
		}
		if recs == nil {
			var hb int
			if i, hb, err = walkHeaders(b, i, int(u), n, h.version, sum); err != nil {
				return err
			}
			sum.observe(r, hb)
			continue
		}
		if u == 0 {
			r.Headers = nil
			continue
		}
		hc := int(u)
		if cap(hdrs)-len(hdrs) < hc {
			// A fresh backing array; records already decoded keep the old one.
			hdrs = make([]Header, 0, headersCap(hc, len(recs)-n))
		}
		start := len(hdrs)
		hdrs = hdrs[:start+hc]
		for j := start; j < len(hdrs); j++ {
			hd := &hdrs[j]
			if u, i = uvarint(b, i); i < 0 || u > uint64(len(b)-i) {
				return recordErr(n, "header key length", i < 0)
			}
			hd.Key, interned = intern(interned, b[i:i+int(u)])
			i += int(u)
			if hd.Value, i = value(b, i, h.version); i < 0 {
				return recordErr(n, "header value length", i == -1)
			}
		}
		r.Headers = hdrs[start:len(hdrs):len(hdrs)]
	}
	if i != len(b) {
		return fmt.Errorf("%w: %d bytes left after the last record", ErrCorrupt, len(b)-i)
	}
	if maxTS != h.max {
		return fmt.Errorf("%w: max timestamp of the records %d, header says %d", ErrCorrupt, maxTS, h.max)
	}
	return nil
}

// value decodes a value's length and bytes at b[i:] in version (appendValue), returning
// the value (aliasing b, capacity clipped; nil for a null value) and the index after it,
// or index -1 when the length is truncated or overlong and -2 when it is out of range.
func value(b []byte, i int, version byte) ([]byte, int) {
	var n uint64
	if version == VersionNoNulls {
		if n, i = uvarint(b, i); i < 0 {
			return nil, -1
		}
	} else {
		var s int64
		if s, i = varint(b, i); i < 0 {
			return nil, -1
		}
		if s == -1 {
			return nil, i
		}
		if s < -1 {
			return nil, -2
		}
		n = uint64(s)
	}
	if n > uint64(len(b)-i) {
		return nil, -2
	}
	return b[i : i+int(n) : i+int(n)], i + int(n)
}

// headerChunk bounds a backing array of decoded headers: 512 headers are 20 KiB, a small
// object for the allocator (large ones go to the page heap and are slower to recycle).
const headerChunk = 512

// headersCap sizes a new backing array for decoded headers when the current one lacks
// room for the hc headers of a record: room for hc headers on each of the left records
// still to decode, at most headerChunk (or hc), so a lone header in a large block does
// not reserve room for thousands.
func headersCap(hc, left int) int {
	if left > headerChunk/hc {
		return max(hc, headerChunk)
	}
	return hc * left
}

// recordErr describes a malformed field of record n: truncated or out of bounds.
func recordErr(n int, field string, truncated bool) error {
	if truncated {
		return fmt.Errorf("%w: record %d: %s truncated or overlong", ErrCorrupt, n, field)
	}
	return fmt.Errorf("%w: record %d: %s out of range", ErrCorrupt, n, field)
}

// maxInterned bounds the per-block cache of header keys: blocks repeat a few keys, and a
// string allocation per header would dominate decoding small records.
const maxInterned = 8

// intern returns b as a string, reusing an earlier equal key of the block when there is one.
func intern(seen []string, b []byte) (string, []string) {
	for _, s := range seen {
		if s == string(b) {
			return s, seen
		}
	}
	s := string(b)
	if len(seen) < maxInterned {
		seen = append(seen, s)
	}
	return s, seen
}

// uvarint decodes an unsigned varint at b[i:], returning it and the index after it, or
// a negative index when it is truncated or overflows 64 bits (as binary.Uvarint).
func uvarint(b []byte, i int) (uint64, int) {
	var x uint64
	for shift := uint(0); uint(i) < uint(len(b)); shift += 7 {
		c := b[i]
		i++
		if c < 0x80 {
			if shift == 63 && c > 1 {
				return 0, -1
			}
			return x | uint64(c)<<shift, i
		}
		if shift == 63 {
			return 0, -1
		}
		x |= uint64(c&0x7f) << shift
	}
	return 0, -1
}

// varint decodes a zigzag signed varint like uvarint.
func varint(b []byte, i int) (int64, int) {
	u, j := uvarint(b, i)
	return int64(u>>1) ^ -int64(u&1), j
}
