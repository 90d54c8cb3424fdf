package store

import "sort"

// ReadSpan is one ranged GET that reads the blocks of several index entries: the
// entries Entries (indexes into the list planned) of object Key, read as
// [Offset, Offset+Length).
type ReadSpan struct {
	Key            string
	Offset, Length int64
	Entries        []int
}

// PlanReads groups the byte ranges of entries (duplicates, which hold no bytes readers
// read, left out) into the GETs that read them: per object, in byte order, ranges at
// most gap bytes apart merged while the read stays within maxLength. Reading a small gap
// costs less than another request. It is a pure function of the entries.
func PlanReads(entries []IndexEntry, gap, maxLength int64) []ReadSpan {
	order := make([]int, 0, len(entries))
	for i, e := range entries {
		if !e.Duplicate {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool {
		ea, eb := entries[order[a]], entries[order[b]]
		if ea.ObjectKey != eb.ObjectKey {
			return ea.ObjectKey < eb.ObjectKey
		}
		return ea.ByteOffset < eb.ByteOffset
	})
	var out []ReadSpan
	for _, i := range order {
		e := entries[i]
		if n := len(out); n > 0 {
			last := &out[n-1]
			end := max(last.Offset+last.Length, e.ByteOffset+e.ByteLength)
			if last.Key == e.ObjectKey && e.ByteOffset-(last.Offset+last.Length) <= gap && end-last.Offset <= maxLength {
				last.Length, last.Entries = end-last.Offset, append(last.Entries, i)
				continue
			}
		}
		out = append(out, ReadSpan{Key: e.ObjectKey, Offset: e.ByteOffset, Length: e.ByteLength, Entries: []int{i}})
	}
	return out
}
