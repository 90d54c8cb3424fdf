package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/stratalog/strata/pkg/segment"
)

// The binary form of the append body and the poll answer (docs/API.md, "Binary
// records"): segment blocks (pkg/segment) as they are stored, framed. The SDK builds
// blocks, the server checks their CRCs and framing and stores them without decoding or
// re-encoding, and a poll answers the stored bytes; JSON remains for people and curl.
// Integers are big-endian.
//
// Append request body:
//
//	0  4  magic "STRA"
//	4  1  version = 1
//	5  …  frames, at least one: partition (int32), then one block (its length is in its
//	      own header: segment.HeaderSize + payload length)
//
// Poll answer body:
//
//	0   4  magic "STRP"
//	4   1  version = 1
//	5   8  next_offset (int64)
//	13  8  high_watermark (int64)
//	21  8  log_start_offset (int64)
//	29  …  ranges: base offset (int64), length (uint32), then that many bytes: one or
//	       more blocks back to back, the first record at the base offset and each
//	       block's first right after the previous block's last
//
// A range is a whole stored commit, so its first records may lie below the offset
// asked for: the reader skips them.

// ContentTypeBlocks is the media type of the binary append body and poll answer.
const ContentTypeBlocks = "application/vnd.strata.blocks"

// BinaryVersion is the version byte of the binary bodies this package reads and writes.
const BinaryVersion = 1

const (
	appendMagic    = "STRA"
	pollMagic      = "STRP"
	binaryPrologue = 5
	pollHeaderSize = binaryPrologue + 3*8
	frameHeader    = 4
	rangeHeader    = 8 + 4
)

// ErrMalformed is wrapped by every error decoding a binary body whose framing is wrong.
var ErrMalformed = errors.New("malformed binary body")

// Frame is one partition's block of a binary append.
type Frame struct {
	Partition int32
	Block     []byte
}

// AppendRequest appends the binary append body of frames to dst.
func AppendRequest(dst []byte, frames []Frame) []byte {
	dst = append(dst, appendMagic...)
	dst = append(dst, BinaryVersion)
	for _, f := range frames {
		dst = binary.BigEndian.AppendUint32(dst, uint32(f.Partition))
		dst = append(dst, f.Block...)
	}
	return dst
}

// DecodeRequest splits a binary append body into its frames, whose blocks alias body.
// It checks the framing only: each block's header must be whole and its length must
// fit the body; CRCs and records are the server's to check (segment.Check). There are
// at most MaxPartitions frames.
func DecodeRequest(body []byte) ([]Frame, error) {
	if err := prologue(body, appendMagic); err != nil {
		return nil, err
	}
	rest := body[binaryPrologue:]
	if len(rest) == 0 {
		return nil, fmt.Errorf("%w: no frame", ErrMalformed)
	}
	var frames []Frame
	for len(rest) > 0 {
		if len(frames) == MaxPartitions {
			return nil, fmt.Errorf("%w: more than %d frames", ErrMalformed, MaxPartitions)
		}
		if len(rest) < frameHeader {
			return nil, fmt.Errorf("%w: frame %d: %d bytes, shorter than its partition number", ErrMalformed, len(frames), len(rest))
		}
		p := int32(binary.BigEndian.Uint32(rest))
		info, err := segment.PeekInfo(rest[frameHeader:])
		if err != nil {
			return nil, fmt.Errorf("%w: frame %d (partition %d): %w", ErrMalformed, len(frames), p, err)
		}
		frames = append(frames, Frame{Partition: p, Block: rest[frameHeader : frameHeader+info.Size : frameHeader+info.Size]})
		rest = rest[frameHeader+info.Size:]
	}
	return frames, nil
}

// Range is a run of stored blocks in a binary poll answer.
type Range struct {
	BaseOffset int64
	Data       []byte
}

// PollBlocks is a binary poll answer.
type PollBlocks struct {
	NextOffset, HighWatermark, LogStartOffset int64
	Ranges                                    []Range
}

// AppendPoll appends the binary poll answer p to dst.
func AppendPoll(dst []byte, p PollBlocks) []byte {
	dst = append(dst, pollMagic...)
	dst = append(dst, BinaryVersion)
	dst = binary.BigEndian.AppendUint64(dst, uint64(p.NextOffset))
	dst = binary.BigEndian.AppendUint64(dst, uint64(p.HighWatermark))
	dst = binary.BigEndian.AppendUint64(dst, uint64(p.LogStartOffset))
	for _, r := range p.Ranges {
		dst = binary.BigEndian.AppendUint64(dst, uint64(r.BaseOffset))
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(r.Data)))
		dst = append(dst, r.Data...)
	}
	return dst
}

// PollSize is the length of the binary poll answer holding ranges of these data lengths.
func PollSize(dataLens ...int) int {
	n := pollHeaderSize
	for _, l := range dataLens {
		n += rangeHeader + l
	}
	return n
}

// DecodePoll splits a binary poll answer; its ranges alias body. It checks the framing
// and that offsets are not negative; the blocks are the reader's to decode (segment).
func DecodePoll(body []byte) (PollBlocks, error) {
	if err := prologue(body, pollMagic); err != nil {
		return PollBlocks{}, err
	}
	if len(body) < pollHeaderSize {
		return PollBlocks{}, fmt.Errorf("%w: %d bytes, shorter than the poll header", ErrMalformed, len(body))
	}
	p := PollBlocks{
		NextOffset:     int64(binary.BigEndian.Uint64(body[5:])),
		HighWatermark:  int64(binary.BigEndian.Uint64(body[13:])),
		LogStartOffset: int64(binary.BigEndian.Uint64(body[21:])),
	}
	if p.NextOffset < 0 || p.HighWatermark < 0 || p.LogStartOffset < 0 {
		return PollBlocks{}, fmt.Errorf("%w: negative offset in the poll header", ErrMalformed)
	}
	rest := body[pollHeaderSize:]
	for len(rest) > 0 {
		if len(rest) < rangeHeader {
			return PollBlocks{}, fmt.Errorf("%w: range %d: %d bytes, shorter than its header", ErrMalformed, len(p.Ranges), len(rest))
		}
		base := int64(binary.BigEndian.Uint64(rest))
		n := uint64(binary.BigEndian.Uint32(rest[8:]))
		if base < 0 || base == math.MaxInt64 {
			return PollBlocks{}, fmt.Errorf("%w: range %d: base offset %d", ErrMalformed, len(p.Ranges), base)
		}
		if n == 0 || n > uint64(len(rest)-rangeHeader) {
			return PollBlocks{}, fmt.Errorf("%w: range %d: length %d, %d bytes left", ErrMalformed, len(p.Ranges), n, len(rest)-rangeHeader)
		}
		end := rangeHeader + int(n)
		p.Ranges = append(p.Ranges, Range{BaseOffset: base, Data: rest[rangeHeader:end:end]})
		rest = rest[end:]
	}
	return p, nil
}

// prologue checks a binary body's magic and version.
func prologue(body []byte, magic string) error {
	if len(body) < binaryPrologue || string(body[:4]) != magic {
		return fmt.Errorf("%w: does not start with %q", ErrMalformed, magic)
	}
	if body[4] != BinaryVersion {
		return fmt.Errorf("%w: version %d, this side speaks %d", ErrMalformed, body[4], BinaryVersion)
	}
	return nil
}

// AppendBlocksResponse is the JSON answer to a binary append: one result per frame, in
// frame order.
type AppendBlocksResponse struct {
	Blocks []BlockResult `json:"blocks"`
}

// BlockResult is one frame's outcome: its block's first offset and record count, or (in
// a partial failure) an error.
type BlockResult struct {
	Partition  int32          `json:"partition"`
	BaseOffset *int64         `json:"base_offset,omitempty"`
	Count      int64          `json:"count"`
	Error      map[string]any `json:"error,omitempty"`
}
