package log

import (
	"slices"
	"strings"
	"testing"

	"github.com/stratalog/strata/pkg/store"
)

// TestSearchWindow: a retry's search of one partition keeps the entries of batches above
// the floor, and is decided only when the range reaches an entry at or below the floor
// or the log's beginning; a range cut by retention, holding an entry without a batch
// number above the floor, or longer than the bound is refused.
func TestSearchWindow(t *testing.T) {
	// at is an entry of batch b at base, one record long.
	at := func(base, b int64) store.IndexEntry { return store.IndexEntry{BaseOffset: base, Count: 1, Batch: b} }
	long := make([]store.IndexEntry, retryScanLimit+1)
	for i := range long {
		long[i] = at(int64(i), int64(100+i))
	}
	for _, tc := range []struct {
		name  string
		es    []store.IndexEntry
		lo    int64
		floor int64
		want  []int64 // the bases kept
		bad   string  // what a refusal says
	}{
		{name: "empty log", lo: 0, floor: 0},
		{name: "whole log above the floor", es: []store.IndexEntry{at(0, 1), at(1, 2)}, lo: 0, floor: 0, want: []int64{0, 1}},
		{name: "bottom reached", es: []store.IndexEntry{at(5, 3), at(6, 4), at(7, 5)}, lo: 5, floor: 3, want: []int64{6, 7}},
		{name: "bottom above retention's cut", es: []store.IndexEntry{at(9, 2), at(10, 7)}, lo: 9, floor: 6, want: []int64{10}},
		{name: "nothing above the floor", es: []store.IndexEntry{at(3, 2)}, lo: 3, floor: 9},
		{name: "retention cut the range", es: []store.IndexEntry{at(4, 8), at(5, 9)}, lo: 4, floor: 6, bad: "retention"},
		{name: "every record expired", lo: 12, floor: 0, bad: "retention"},
		{name: "unnumbered above the floor", es: []store.IndexEntry{at(0, 1), at(1, 0), at(2, 4)}, lo: 0, floor: 1, bad: "no batch number"},
		{name: "unnumbered below the bottom", es: []store.IndexEntry{at(0, 0), at(1, 2), at(2, 4)}, lo: 0, floor: 2, want: []int64{2}},
		{name: "too long", es: long, lo: 0, floor: 0, bad: "more than"},
	} {
		got, err := searchWindow(tc.es, tc.lo, tc.floor)
		if tc.bad != "" {
			if err == nil || !strings.Contains(err.Error(), tc.bad) {
				t.Errorf("%s: %v, want a refusal saying %q", tc.name, err, tc.bad)
			}
			continue
		}
		var bases []int64
		for _, e := range got {
			bases = append(bases, e.BaseOffset)
		}
		if err != nil || !slices.Equal(bases, tc.want) {
			t.Errorf("%s: %v, %v; want %v", tc.name, bases, err, tc.want)
		}
	}
}
