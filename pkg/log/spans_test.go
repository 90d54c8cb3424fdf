package log

import (
	"fmt"
	"testing"

	"github.com/stratalog/strata/pkg/store"
)

// TestPlanSpans: which entries' ranges one GET reads (issue 20 item 4), by data.
func TestPlanSpans(t *testing.T) {
	e := func(key string, off, n int64) store.IndexEntry {
		return store.IndexEntry{ObjectKey: key, ByteOffset: off, ByteLength: n, Count: 1}
	}
	dup := e("a", 100, 100)
	dup.Duplicate = true
	for _, c := range []struct {
		name    string
		entries []store.IndexEntry
		want    string
	}{
		{"adjacent in one object", []store.IndexEntry{e("a", 0, 100), e("a", 100, 50), e("a", 150, 10)}, "[{a 0 160 [0 1 2]}]"},
		{"small gap merges", []store.IndexEntry{e("a", 0, 100), e("a", 100+mergeGap, 10)}, fmt.Sprintf("[{a 0 %d [0 1]}]", 110+mergeGap)},
		{"larger gap does not", []store.IndexEntry{e("a", 0, 100), e("a", 101+mergeGap, 10)}, fmt.Sprintf("[{a 0 100 [0]} {a %d 10 [1]}]", 101+mergeGap)},
		{"other objects apart", []store.IndexEntry{e("a", 0, 10), e("b", 10, 10), e("a", 10, 10)}, "[{a 0 20 [0 2]} {b 10 10 [1]}]"},
		{"duplicates not read", []store.IndexEntry{e("a", 0, 100), dup, e("a", 200, 10)}, "[{a 0 210 [0 2]}]"},
		{"capped at mergeMax", []store.IndexEntry{e("a", 0, mergeMax), e("a", mergeMax, 1)}, fmt.Sprintf("[{a 0 %d [0]} {a %d 1 [1]}]", mergeMax, mergeMax)},
	} {
		if got := fmt.Sprint(planSpans(c.entries)); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}
