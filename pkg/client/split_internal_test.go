package client

import (
	"testing"

	"pgregory.net/rapid"
)

// TestSplitRequestProperty: splitRequest keeps every record once, each partition's in
// order; a request it makes names each partition at most once and stays within the
// limit unless it is one record larger than the limit alone.
func TestSplitRequestProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		limit := rapid.IntRange(frameOverhead+1, 4096).Draw(rt, "limit")
		parts := rapid.SliceOfNDistinct(rapid.Int32Range(0, 15), 1, 8, rapid.ID[int32]).Draw(rt, "partitions")
		r := &request{}
		var want []*Future
		for _, p := range parts {
			n := rapid.IntRange(1, 30).Draw(rt, "records")
			fr := frame{part: p}
			for range n {
				f := &Future{size: rapid.IntRange(1, 2*limit).Draw(rt, "size")}
				fr.batch = append(fr.batch, f)
				want = append(want, f)
				r.size += f.size
			}
			r.frames = append(r.frames, fr)
		}
		subs := splitRequest(r, limit)
		var got []*Future
		for i, sub := range subs {
			seen := map[int32]bool{}
			bytes, records, size := 0, 0, 0
			for _, fr := range sub.frames {
				if seen[fr.part] {
					rt.Fatalf("request %d names partition %d twice", i, fr.part)
				}
				seen[fr.part] = true
				bytes += frameOverhead
				for _, f := range fr.batch {
					bytes += f.size
					size += f.size
					records++
				}
			}
			if bytes > limit && records > 1 {
				rt.Fatalf("request %d: %d bytes of %d records over the limit %d", i, bytes, records, limit)
			}
			if size != sub.size {
				rt.Fatalf("request %d: size %d, its records hold %d", i, sub.size, size)
			}
		}
		// Concatenated in request order, each partition's records are r's, in order.
		byPart := map[int32][]*Future{}
		for _, sub := range subs {
			for _, fr := range sub.frames {
				byPart[fr.part] = append(byPart[fr.part], fr.batch...)
			}
		}
		for _, fr := range r.frames {
			for _, f := range byPart[fr.part] {
				got = append(got, f)
			}
		}
		if len(got) != len(want) {
			rt.Fatalf("%d records after the split, %d before", len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				rt.Fatalf("record %d out of place after the split", i)
			}
		}
	})
}
