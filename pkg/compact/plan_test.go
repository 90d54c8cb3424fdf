package compact

import (
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/store"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// entriesOf builds consecutive entries of the given counts, each appended a minute after
// the one before, with records keyed by keys (a "" value a tombstone, "-" a skipped or
// duplicate offset).
func entriesOf(kvs [][]string) ([]store.IndexEntry, [][]segment.Record) {
	var es []store.IndexEntry
	var recs [][]segment.Record
	base := int64(0)
	for i, kv := range kvs {
		e := store.IndexEntry{Topic: "t", BaseOffset: base, Count: int64(len(kv)), ObjectKey: "o", AppendedAt: t0.Add(time.Duration(i) * time.Minute), Batch: int64(i + 1)}
		var rs []segment.Record
		for j, s := range kv {
			if s == "-" {
				continue
			}
			r := segment.Record{Offset: base + int64(j), Key: []byte(s[:1])}
			if len(s) > 1 {
				r.Value = []byte(s[1:])
			}
			rs = append(rs, r)
		}
		es = append(es, e)
		recs = append(recs, rs)
		base += e.Count
	}
	return es, recs
}

// TestDecide: the removal rules, table-driven: overwrites go below the clean point, the
// head within the lag stays, a tombstone goes only past its retention and once it is
// its key's last record, records without a key stay, and a gap ends what is known.
func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name    string
		kvs     [][]string
		now     time.Duration
		policy  Policy
		removed []int64
		clean   int64
		due     bool
	}{
		{"overwrite", [][]string{{"a1", "b1"}, {"a2"}}, time.Hour, Policy{}, []int64{0}, 3, true},
		{"head inside the guard stays", [][]string{{"a1"}, {"a2"}}, HeadGuard + 30*time.Second, Policy{}, []int64{0}, 1, true},
		{"all inside the guard", [][]string{{"a1"}, {"a2"}}, 5 * time.Minute, Policy{}, nil, 0, false},
		{"min lag", [][]string{{"a1"}, {"a2"}}, time.Hour, Policy{MinLag: 2 * time.Hour}, nil, 0, false},
		{"tombstone kept", [][]string{{"a1"}, {"a"}}, time.Hour, Policy{TombstoneRetention: 2 * time.Hour}, []int64{0}, 2, true},
		{"tombstone with an older record left", [][]string{{"a1"}, {"a"}}, 3 * time.Hour, Policy{TombstoneRetention: time.Hour}, []int64{0}, 2, true},
		{"lone tombstone past its retention", [][]string{{"b1"}, {"a"}}, 3 * time.Hour, Policy{TombstoneRetention: time.Hour}, []int64{1}, 2, true},
		{"skipped offsets", [][]string{{"a1", "-"}, {"a2"}}, time.Hour, Policy{}, []int64{0}, 3, true},
		{"below the ratio", [][]string{{"a1", "b1", "c1", "d1"}, {"a2"}}, time.Hour, Policy{MinDirtyRatio: 0.5}, []int64{0}, 5, false},
		{"past max lag", [][]string{{"a1", "b1", "c1", "d1"}, {"a2"}}, 2 * time.Hour, Policy{MinDirtyRatio: 0.5, MaxLag: time.Hour}, []int64{0}, 5, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es, recs := entriesOf(tc.kvs)
			p := tc.policy
			p.Now = t0.Add(tc.now)
			if p.TombstoneRetention == 0 {
				p.TombstoneRetention = store.DefaultDeleteRetention
			}
			d := Decide(es, recs, p)
			if d.Clean != tc.clean || d.Due != tc.due || len(d.Removed) != len(tc.removed) {
				t.Fatalf("Decide = clean %d due %v removed %v; want %d %v %v", d.Clean, d.Due, d.Removed, tc.clean, tc.due, tc.removed)
			}
			for _, o := range tc.removed {
				if !d.Removed[o] {
					t.Fatalf("offset %d kept; removed %v", o, d.Removed)
				}
			}
		})
	}
	es, recs := entriesOf([][]string{{"a1"}, {"a2"}, {"a3"}})
	es[2].BaseOffset = 5 // a gap before it: nothing from there on is known
	if d := Decide(es, recs, Policy{Now: t0.Add(time.Hour), TombstoneRetention: time.Hour}); d.Clean != 2 || !d.Removed[0] || d.Removed[1] {
		t.Fatalf("with a gap: %+v", d)
	}
}

// TestPropertyLayout: whatever the entries, records and removals, a layout tiles exactly
// the entries' offsets with pieces no more than asked, alternating runs and holes; every
// run holds, at its own offsets, the visible records not removed — every one of them
// unless the layout stopped removing — and never a removed record it did not have to
// keep.
func TestPropertyLayout(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(rt, "entries")
		var es []store.IndexEntry
		var recs [][]segment.Record
		removed := map[int64]bool{}
		base := int64(0)
		for i := range n {
			c := rapid.IntRange(1, 8).Draw(rt, "count")
			e := store.IndexEntry{BaseOffset: base, Count: int64(c), AppendedAt: t0.Add(time.Duration(i) * time.Second), Batch: int64(i)}
			e.Duplicate = rapid.IntRange(0, 5).Draw(rt, "dup") == 0
			var rs []segment.Record
			for j := range c {
				o := base + int64(j)
				if !e.Duplicate && rapid.IntRange(0, 5).Draw(rt, "skip") > 0 {
					rs = append(rs, segment.Record{Offset: o, Key: []byte{byte('a' + j%3)}, Value: []byte{byte(j)}})
					removed[o] = rapid.Bool().Draw(rt, "removed")
				}
			}
			es, recs = append(es, e), append(recs, rs)
			base += int64(c)
		}
		maxPieces := rapid.IntRange(2, 40).Draw(rt, "maxPieces")
		pieces, ok := Layout(es, recs, removed, maxPieces)
		if !ok {
			return
		}
		if len(pieces) > maxPieces {
			rt.Fatalf("%d pieces, at most %d", len(pieces), maxPieces)
		}
		present := map[int64]bool{}
		next := int64(0)
		for i, pc := range pieces {
			if pc.Base != next || pc.Count < 1 {
				rt.Fatalf("piece %d at %d (count %d), want %d", i, pc.Base, pc.Count, next)
			}
			if i > 0 && (pieces[i-1].Records == nil) == (pc.Records == nil) {
				rt.Fatalf("pieces %d and %d both runs or both holes", i-1, i)
			}
			if pc.Records != nil && int64(len(pc.Records)) != pc.Count {
				rt.Fatalf("run at %d: %d records for %d offsets", pc.Base, len(pc.Records), pc.Count)
			}
			for k, r := range pc.Records {
				if r.Offset != pc.Base+int64(k) {
					rt.Fatalf("run at %d: record %d at offset %d", pc.Base, k, r.Offset)
				}
				present[r.Offset] = true
			}
			next = pc.Base + pc.Count
		}
		if next != base {
			rt.Fatalf("pieces end at %d, entries at %d", next, base)
		}
		stoppedAt := int64(-1) // the first removed record kept, where removal stopped
		for _, rs := range recs {
			for _, r := range rs {
				switch {
				case !removed[r.Offset] && !present[r.Offset]:
					rt.Fatalf("surviving record at %d lost", r.Offset)
				case removed[r.Offset] && present[r.Offset] && stoppedAt < 0:
					stoppedAt = r.Offset
				case removed[r.Offset] && !present[r.Offset] && stoppedAt >= 0:
					rt.Fatalf("record %d removed after removal stopped at %d", r.Offset, stoppedAt)
				}
			}
		}
	})
}
