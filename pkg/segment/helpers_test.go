package segment

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// reseal returns a copy of b with its CRC recomputed, so a test can corrupt a field the
// CRC covers and still reach the check behind it. b must be at least HeaderSize long.
func reseal(b []byte) []byte {
	c := bytes.Clone(b)
	binary.BigEndian.PutUint32(c[offCRC:], crc32.Checksum(c[offCount:], castagnoli))
	return c
}

// seal builds a block around a hand-made payload with a correct CRC and payload length.
func seal(count uint32, first, maxTS int64, payload []byte) []byte {
	b := make([]byte, HeaderSize, HeaderSize+len(payload))
	copy(b, magic)
	b[offVersion] = VersionNoNulls
	binary.BigEndian.PutUint32(b[offCount:], count)
	binary.BigEndian.PutUint64(b[offFirstTS:], uint64(first))
	binary.BigEndian.PutUint64(b[offMaxTS:], uint64(maxTS))
	binary.BigEndian.PutUint32(b[offPayloadLen:], uint32(len(payload)))
	b = append(b, payload...)
	return reseal(b)
}

// rawRecord is a record field by field, so tests can write values the encoder never would.
type rawRecord struct {
	rel      uint64
	tsDelta  int64
	keyLen   int64 // -1 for nil
	key      []byte
	valueLen uint64
	value    []byte
	hdrCount uint64
	hdrs     []byte // already-encoded headers
}

func (r rawRecord) append(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, r.rel)
	dst = binary.AppendVarint(dst, r.tsDelta)
	dst = binary.AppendVarint(dst, r.keyLen)
	dst = append(dst, r.key...)
	dst = binary.AppendUvarint(dst, r.valueLen)
	dst = append(dst, r.value...)
	dst = binary.AppendUvarint(dst, r.hdrCount)
	return append(dst, r.hdrs...)
}

// ok returns a well-formed raw record with relative offset rel.
func ok(rel uint64) rawRecord {
	return rawRecord{rel: rel, keyLen: 1, key: []byte("k"), valueLen: 2, value: []byte("vv")}
}

func payloadOf(rs ...rawRecord) []byte {
	var p []byte
	for _, r := range rs {
		p = r.append(p)
	}
	return p
}

// equalRecords reports the first difference between want (as encoded, offsets implied)
// and got (as decoded at base), or "" when they match.
func equalRecords(want, got []Record, base int64) string {
	if len(want) != len(got) {
		return fmt.Sprintf("count %d, want %d", len(got), len(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		switch {
		case g.Offset != base+int64(i):
			return fmt.Sprintf("record %d: offset %d, want %d", i, g.Offset, base+int64(i))
		case g.Timestamp != w.Timestamp:
			return fmt.Sprintf("record %d: timestamp %d, want %d", i, g.Timestamp, w.Timestamp)
		case (g.Key == nil) != (w.Key == nil) || !bytes.Equal(g.Key, w.Key):
			return fmt.Sprintf("record %d: key %q (nil %v), want %q (nil %v)", i, g.Key, g.Key == nil, w.Key, w.Key == nil)
		case (g.Value == nil) != (w.Value == nil) || !bytes.Equal(g.Value, w.Value):
			return fmt.Sprintf("record %d: value %q (nil %v), want %q (nil %v)", i, g.Value, g.Value == nil, w.Value, w.Value == nil)
		case len(g.Headers) != len(w.Headers):
			return fmt.Sprintf("record %d: %d headers, want %d", i, len(g.Headers), len(w.Headers))
		}
		for j := range w.Headers {
			if g.Headers[j].Key != w.Headers[j].Key || !bytes.Equal(g.Headers[j].Value, w.Headers[j].Value) ||
				(g.Headers[j].Value == nil) != (w.Headers[j].Value == nil) {
				return fmt.Sprintf("record %d header %d: %q=%q, want %q=%q", i, j,
					g.Headers[j].Key, g.Headers[j].Value, w.Headers[j].Key, w.Headers[j].Value)
			}
		}
	}
	return ""
}
