package kafka

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Compression codecs of a record batch's attributes (its low three bits).
const (
	codecNone   = 0
	codecGzip   = 1
	codecSnappy = 2
	codecLz4    = 3
	codecZstd   = 4
)

// errDecompressedTooLarge: a batch decompresses to more than the bound.
var errDecompressedTooLarge = errors.New("kafka: batch decompresses beyond the limit")

// xerialMagic starts snappy data in the xerial framing the Java producer writes.
var xerialMagic = []byte{130, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// decompress returns src decompressed by codec, refusing output beyond limit bytes
// before allocating it where the format says its length, and as it streams otherwise.
// franz-go's decompressor bounds at 2 GiB only, so the gateway has its own over the
// same libraries.
func decompress(codec int, src []byte, limit int) ([]byte, error) {
	switch codec {
	case codecNone:
		return src, nil
	case codecGzip:
		zr, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		return readLimited(zr, limit)
	case codecLz4:
		return readLimited(lz4.NewReader(bytes.NewReader(src)), limit)
	case codecSnappy:
		if len(src) > 16 && bytes.HasPrefix(src, xerialMagic) {
			return unxerial(src[16:], limit)
		}
		return snappyBlock(nil, src, limit)
	case codecZstd:
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxMemory(uint64(limit)))
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		defer d.Close()
		out, err := d.DecodeAll(src, nil)
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) || len(out) > limit {
			return nil, errDecompressedTooLarge
		}
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown compression codec %d", codec)
}

func readLimited(r io.Reader, limit int) ([]byte, error) {
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if n > int64(limit) {
		return nil, errDecompressedTooLarge
	}
	return buf.Bytes(), nil
}

func snappyBlock(dst, src []byte, limit int) ([]byte, error) {
	n, err := s2.DecodedLen(src)
	if err != nil {
		return nil, fmt.Errorf("snappy: %w", err)
	}
	if n > limit-len(dst) {
		return nil, errDecompressedTooLarge
	}
	out, err := s2.Decode(nil, src)
	if err != nil {
		return nil, fmt.Errorf("snappy: %w", err)
	}
	return append(dst, out...), nil
}

// unxerial decodes xerial-framed snappy after its 16-byte header: chunks of a
// big-endian length and a snappy block.
func unxerial(src []byte, limit int) ([]byte, error) {
	var out []byte
	for len(src) > 0 {
		if len(src) < 4 {
			return nil, errors.New("snappy: truncated xerial chunk")
		}
		n := binary.BigEndian.Uint32(src)
		src = src[4:]
		if uint64(n) > uint64(len(src)) {
			return nil, errors.New("snappy: truncated xerial chunk")
		}
		var err error
		if out, err = snappyBlock(out, src[:n], limit); err != nil {
			return nil, err
		}
		src = src[n:]
	}
	return out, nil
}
