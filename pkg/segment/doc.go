// Package segment encodes and decodes blocks: the records of one partition inside a
// segment object. It does no I/O.
//
// A block is written before its offsets are assigned (the index entry assigns the base
// offset afterwards), so it stores only offsets relative to its start, 0..n-1; the
// decoder takes the base offset from the index entry.
//
// Byte layout (version 1). Fixed-width integers are big-endian; "uvarint" is
// encoding/binary's unsigned varint and "varint" its zigzag signed varint.
//
//	offset size  field
//	0      4     magic "STRB"
//	4      1     version = 1
//	5      4     CRC32C (Castagnoli) of bytes [9, end): the header fields below and the payload
//	9      4     record count n (uint32, >= 1)
//	13     8     first timestamp (int64, ms since the Unix epoch: record 0's timestamp)
//	21     8     max timestamp (int64, the largest record timestamp)
//	29     4     payload length (uint32; the block is exactly 33 + payload length bytes)
//	33     ...   payload: n records
//
// Each record:
//
//	uvarint  relative offset (must be i for the i-th record, 0-based)
//	varint   timestamp - first timestamp (two's-complement wrapping, so any int64 fits)
//	varint   key length, -1 for a nil key
//	bytes    key
//	uvarint  value length
//	bytes    value
//	uvarint  header count
//	per header: uvarint key length, key bytes, uvarint value length, value bytes
//
// The smallest record is 5 bytes, so a count above payload length / 5 is rejected before
// anything is allocated. DecodeBlock rejects every malformed block with an error wrapping
// ErrCorrupt (or ErrVersion for an unknown version) and never panics.
//
// Decoded records alias the input: Key, Value and header Value slices point into the
// buffer given to DecodeBlock (with their capacity clipped, so appending to one never
// overwrites its neighbour). The caller must not modify that buffer while the records are
// in use. Header keys are strings and do not alias.
package segment
