// Package segment encodes and decodes blocks: the records of one partition inside a
// segment object. It does no I/O.
//
// A block is written before its offsets are assigned (the index entry assigns the base
// offset afterwards), so it stores only offsets relative to its start, 0..n-1; the
// decoder takes the base offset from the index entry.
//
// Byte layout (versions 1 and 2). Fixed-width integers are big-endian; "uvarint" is
// encoding/binary's unsigned varint and "varint" its zigzag signed varint.
//
//	offset size  field
//	0      4     magic "STRB"
//	4      1     version: 1, or 2 when a value or a header value is null
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
//	value    the value (see below)
//	uvarint  header count
//	per header: uvarint key length, key bytes, value
//
// A value (the record's and each header's) is, in version 1, a uvarint length and the
// bytes: never null. In version 2 it is a varint length, -1 for a null value (Kafka's
// tombstone; no bytes follow), and the bytes. The encoder writes version 2 only for a
// block holding a null, so blocks without one stay readable by version-1 readers, and
// every reader keeps reading version-1 blocks. The CRC does not cover the version byte;
// versions 1 and 2 are two bit flips apart.
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
