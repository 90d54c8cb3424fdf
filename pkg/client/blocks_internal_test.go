package client

import (
	"errors"
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/wire"
)

// TestBlockSizeBound: a batch's block is never larger than the block header plus the
// blockSize of its records, whatever their timestamps and shapes, so BatchBytes and
// MaxBatchBytes bound the bytes sent.
func TestBlockSizeBound(t *testing.T) {
	bytesGen := rapid.SliceOfN(rapid.Byte(), 0, 300)
	rapid.Check(t, func(rt *rapid.T) {
		recs := rapid.SliceOfN(rapid.Custom(func(rt *rapid.T) Record {
			r := Record{Value: bytesGen.Draw(rt, "value")}
			if rapid.Bool().Draw(rt, "keyed") {
				r.Key = append([]byte{}, bytesGen.Draw(rt, "key")...)
			}
			if rapid.Bool().Draw(rt, "tombstone") {
				r.Value = nil
			}
			r.Headers = rapid.MapOfN(rapid.StringN(1, 200, -1), bytesGen, 0, 3).Draw(rt, "headers")
			for range rapid.IntRange(0, 3).Draw(rt, "listed") {
				h := Header{Key: rapid.StringN(1, 200, -1).Draw(rt, "name")}
				if !rapid.Bool().Draw(rt, "null header") {
					h.Value = append([]byte{}, bytesGen.Draw(rt, "header value")...)
				}
				r.HeaderList = append(r.HeaderList, h)
			}
			return r
		}), 1, 50).Draw(rt, "records")
		bound := segment.HeaderSize
		srecs := make([]segment.Record, len(recs))
		for i, r := range recs {
			bound += blockSize(r)
			ts := rapid.SampledFrom([]int64{0, 1, MaxTimestampMs}).Draw(rt, "ts")
			srecs[i] = segment.Record{Timestamp: ts, Key: r.Key, Value: r.Value, Headers: r.headers()}
		}
		n, err := segment.EncodedSize(srecs)
		if err != nil {
			rt.Fatal(err)
		}
		if n > bound {
			rt.Fatalf("block of %d bytes, bound %d", n, bound)
		}
	})
	if uvarintLen(wire.MaxRecordsPerBatch-1) > 2 {
		t.Fatal("a relative offset of a full batch takes more than blockSize's 2 bytes")
	}
}

// TestBlockResults: the answer to a one-frame binary append maps to per-record results
// only when it is that frame's.
func TestBlockResults(t *testing.T) {
	off := func(v int64) *int64 { return &v }
	unavailable := map[string]any{"code": "unavailable", "message": "m"}
	for _, tc := range []struct {
		name   string
		blocks []wire.BlockResult
		ok     bool
	}{
		{"one frame", []wire.BlockResult{{Partition: 2, BaseOffset: off(40), Count: 3}}, true},
		{"none", nil, false},
		{"two", []wire.BlockResult{{Partition: 2, BaseOffset: off(40), Count: 3}, {Partition: 2, BaseOffset: off(43), Count: 3}}, false},
		{"other partition", []wire.BlockResult{{Partition: 1, BaseOffset: off(40), Count: 3}}, false},
		{"other count", []wire.BlockResult{{Partition: 2, BaseOffset: off(40), Count: 2}}, false},
		{"no base offset", []wire.BlockResult{{Partition: 2, Count: 3}}, false},
		{"negative base offset", []wire.BlockResult{{Partition: 2, BaseOffset: off(-1), Count: 3}}, false},
		{"overflowing base offset", []wire.BlockResult{{Partition: 2, BaseOffset: off(math.MaxInt64 - 2), Count: 3}}, false},
		{"failed", []wire.BlockResult{{Partition: 2, Count: 3, Error: unavailable}}, true},
	} {
		res, err := blockResults(tc.blocks, 2, 3)
		if !tc.ok {
			if !errors.Is(err, ErrBadResponse) || res != nil {
				t.Fatalf("%s: %v, %v; want ErrBadResponse", tc.name, res, err)
			}
			continue
		}
		if err != nil || len(res) != 3 {
			t.Fatalf("%s: %v, %v", tc.name, res, err)
		}
		for i, r := range res {
			b := tc.blocks[0]
			if b.Error != nil {
				if r.Partition != 2 || !errors.Is(r.Err, ErrUnavailable) {
					t.Fatalf("%s: result %d %+v", tc.name, i, r)
				}
			} else if r != (Result{Partition: 2, Offset: *b.BaseOffset + int64(i)}) {
				t.Fatalf("%s: result %d %+v", tc.name, i, r)
			}
		}
	}
}

// TestFrameResults: the answer to a binary append of several frames maps to per-frame
// results only when it holds each frame's, in frame order; a partial failure's failed
// frames get their error beside the appended ones' offsets.
func TestFrameResults(t *testing.T) {
	off := func(v int64) *int64 { return &v }
	unavailable := map[string]any{"code": "unavailable", "message": "m"}
	frames := []frame{{part: 2, batch: make([]*Future, 3)}, {part: 5, batch: make([]*Future, 1)}}
	for _, tc := range []struct {
		name   string
		blocks []wire.BlockResult
		ok     bool
	}{
		{"both", []wire.BlockResult{{Partition: 2, BaseOffset: off(40), Count: 3}, {Partition: 5, BaseOffset: off(7), Count: 1}}, true},
		{"one failed", []wire.BlockResult{{Partition: 2, BaseOffset: off(40), Count: 3}, {Partition: 5, Count: 1, Error: unavailable}}, true},
		{"one missing", []wire.BlockResult{{Partition: 2, BaseOffset: off(40), Count: 3}}, false},
		{"one extra", []wire.BlockResult{{Partition: 2, BaseOffset: off(40), Count: 3}, {Partition: 5, BaseOffset: off(7), Count: 1},
			{Partition: 6, BaseOffset: off(1), Count: 1}}, false},
		{"swapped", []wire.BlockResult{{Partition: 5, BaseOffset: off(7), Count: 1}, {Partition: 2, BaseOffset: off(40), Count: 3}}, false},
		{"other count", []wire.BlockResult{{Partition: 2, BaseOffset: off(40), Count: 3}, {Partition: 5, BaseOffset: off(7), Count: 2}}, false},
		{"no base offset", []wire.BlockResult{{Partition: 2, BaseOffset: off(40), Count: 3}, {Partition: 5, Count: 1}}, false},
	} {
		res, err := frameResults(tc.blocks, frames)
		if !tc.ok {
			if !errors.Is(err, ErrBadResponse) || res != nil {
				t.Fatalf("%s: %v, %v; want ErrBadResponse", tc.name, res, err)
			}
			continue
		}
		if err != nil || len(res) != 2 || len(res[0]) != 3 || len(res[1]) != 1 {
			t.Fatalf("%s: %v, %v", tc.name, res, err)
		}
		for i, fr := range frames {
			b := tc.blocks[i]
			for j, r := range res[i] {
				if b.Error != nil {
					if r.Partition != fr.part || !errors.Is(r.Err, ErrUnavailable) {
						t.Fatalf("%s: frame %d result %d %+v", tc.name, i, j, r)
					}
				} else if r != (Result{Partition: fr.part, Offset: *b.BaseOffset + int64(j)}) {
					t.Fatalf("%s: frame %d result %d %+v", tc.name, i, j, r)
				}
			}
		}
	}
}
