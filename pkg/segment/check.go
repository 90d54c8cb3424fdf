package segment

import (
	"fmt"
	"hash/crc32"
	"unicode/utf8"
)

// Summary is what Check learns about a valid block while walking it.
type Summary struct {
	BlockInfo
	// MinTimestamp is the smallest record timestamp (the header keeps only the first
	// and the largest).
	MinTimestamp int64
	// RecordBytes is the sum of RecordSize over the records; MaxRecordBytes the largest.
	RecordBytes    int
	MaxRecordBytes int
	// BadHeaderName is the index of the first record with an empty or non-UTF-8 header
	// name, or -1: valid in the format, refused by the API.
	BadHeaderName int
}

// Check verifies the block b exactly as DecodeBlock does (header, length, CRC, the
// framing of every record) without decoding it: it allocates nothing and copies
// nothing, so a server can accept a block from a client and store it as it is.
func Check(b []byte) (Summary, error) {
	h, err := parseHeader(b, true)
	if err != nil {
		return Summary{}, err
	}
	if crc := crc32.Checksum(b[offCount:], castagnoli); crc != h.crc {
		return Summary{}, fmt.Errorf("%w: CRC32C %08x, header says %08x", ErrCorrupt, crc, h.crc)
	}
	sum := Summary{BlockInfo: h.info(), MinTimestamp: h.first, BadHeaderName: -1}
	if err := decodeRecords(nil, b, h, 0, &sum); err != nil {
		return Summary{}, err
	}
	return sum, nil
}

// observe adds record r (of hb header bytes) to the summary.
func (s *Summary) observe(r *Record, hb int) {
	n := len(r.Key) + len(r.Value) + hb
	s.RecordBytes += n
	s.MaxRecordBytes = max(s.MaxRecordBytes, n)
	s.MinTimestamp = min(s.MinTimestamp, r.Timestamp)
}

// walkHeaders checks the framing of record n's hc headers starting at b[i:] and returns
// the index after them and their key and value bytes.
func walkHeaders(b []byte, i, hc, n int, version byte, sum *Summary) (int, int, error) {
	var u uint64
	hb := 0
	for range hc {
		if u, i = uvarint(b, i); i < 0 || u > uint64(len(b)-i) {
			return 0, 0, recordErr(n, "header key length", i < 0)
		}
		if name := b[i : i+int(u)]; sum.BadHeaderName < 0 && (len(name) == 0 || !utf8.Valid(name)) {
			sum.BadHeaderName = n
		}
		hb += int(u)
		i += int(u)
		var v []byte
		if v, i = value(b, i, version); i < 0 {
			return 0, 0, recordErr(n, "header value length", i == -1)
		}
		hb += len(v)
	}
	return i, hb, nil
}

// CountBlocks walks the headers of the blocks stored back to back in b (an index
// entry's byte range) and returns their total record count. Like Info it checks neither
// CRCs nor records: it is the cheap consistency check of a range served undecoded.
func CountBlocks(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		info, err := PeekInfo(b)
		if err != nil {
			return 0, err
		}
		n += info.Count
		b = b[info.Size:]
	}
	if n == 0 {
		return 0, fmt.Errorf("%w: no block in an empty range", ErrCorrupt)
	}
	return n, nil
}

// AppendBlocksRecords decodes the blocks stored back to back in b, the first record at
// baseOffset and each block's right after the previous one's, appending the records to
// dst as AppendRecords does.
func AppendBlocksRecords(dst []Record, b []byte, baseOffset int64) ([]Record, error) {
	n := len(dst)
	if len(b) == 0 {
		return dst, fmt.Errorf("%w: no block in an empty range", ErrCorrupt)
	}
	for len(b) > 0 {
		info, err := PeekInfo(b)
		if err != nil {
			return dst[:n], err
		}
		before := len(dst)
		if dst, err = AppendRecords(dst, b[:info.Size], baseOffset); err != nil {
			return dst[:n], err
		}
		baseOffset += int64(len(dst) - before)
		b = b[info.Size:]
	}
	return dst, nil
}
