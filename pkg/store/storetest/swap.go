package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/stratalog/strata/pkg/store"
)

// makeSwapper makes the harness's MetaStore and requires it to be an IndexSwapper:
// every backend implements it.
func makeSwapper(h Harness, ctx context.Context) (store.MetaStore, error) {
	m, err := h.MakeMetaStore(ctx)
	if err != nil {
		return nil, err
	}
	if _, ok := m.(store.IndexSwapper); !ok {
		return nil, fmt.Errorf("%T does not implement store.IndexSwapper", m)
	}
	return m, nil
}

func swapSections() []section[store.MetaStore] {
	return []section[store.MetaStore]{
		{"Swap", []testCase[store.MetaStore]{
			{"ReplacesTheRange", testSwapReplaces},
			{"ChangedEntryRefused", testSwapChangedRefused},
			{"BadInputChangesNothing", testSwapBadInput},
		}},
	}
}

// swapFixture writes entries [0,3) [3,5) [5,9) [9,10) of one partition and one entry of
// another partition at 0.
func swapFixture(ctx context.Context, t *testing.T, m store.MetaStore) (string, []store.IndexEntry) {
	t.Helper()
	topic := UniqueName(t, "swap")
	var es []store.IndexEntry
	base := int64(0)
	for i, n := range []int64{3, 2, 4, 1} {
		e := store.IndexEntry{Topic: topic, Partition: 0, BaseOffset: base, Count: n, ObjectKey: fmt.Sprintf("obj%d", i),
			ByteOffset: int64(10 * i), ByteLength: 10, MaxTimestamp: at(int64(i)), AppendedAt: at(int64(i)), Batch: int64(i + 1)}
		must(t, "PutIndexEntry", m.PutIndexEntry(ctx, e))
		es = append(es, e)
		base += n
	}
	must(t, "PutIndexEntry", m.PutIndexEntry(ctx, store.IndexEntry{Topic: topic, Partition: 1, BaseOffset: 0, Count: 5, ObjectKey: "obj0", ByteLength: 10, AppendedAt: at(0)}))
	return topic, es
}

func readAll(ctx context.Context, t *testing.T, m store.MetaStore, topic string, p int32) []store.IndexEntry {
	t.Helper()
	es, err := m.IndexEntries(ctx, topic, p, 0, 100)
	must(t, "IndexEntries", err)
	return es
}

// testSwapReplaces: entries [0,9) become a data entry at 0, a hole at 2 and a data entry
// at 6 (one base reused, two new, two old bases gone); [9,10) and the other partition
// stay; the new entries read back as written.
func testSwapReplaces(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic, old := swapFixture(ctx, t, m)
	nw := []store.IndexEntry{
		{Topic: topic, BaseOffset: 0, Count: 2, ObjectKey: "c1", ByteLength: 7, AppendedAt: at(1), MaxTimestamp: at(1), Batch: 2},
		{Topic: topic, BaseOffset: 2, Count: 4, ObjectKey: "c1", Duplicate: true, AppendedAt: at(2), MaxTimestamp: at(2), Batch: 3},
		{Topic: topic, BaseOffset: 6, Count: 3, ObjectKey: "c1", ByteOffset: 7, ByteLength: 9, AppendedAt: at(2), MaxTimestamp: at(2), Batch: 3},
	}
	must(t, "SwapIndexEntries", m.(store.IndexSwapper).SwapIndexEntries(ctx, topic, 0, old[:3], nw))
	got := readAll(ctx, t, m, topic, 0)
	want := append(append([]store.IndexEntry{}, nw...), old[3])
	if len(got) != len(want) {
		t.Fatalf("after the swap: %d entries %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if normEntry(got[i]) != normEntry(want[i]) {
			t.Fatalf("entry %d after the swap = %+v, want %+v", i, got[i], want[i])
		}
	}
	if other := readAll(ctx, t, m, topic, 1); len(other) != 1 || other[0].Count != 5 {
		t.Fatalf("the other partition after the swap: %+v", other)
	}
}

// testSwapChangedRefused: a swap whose old entries are no longer stored as read — one
// swapped away by a concurrent compaction, or deleted — is ErrConflict and changes
// nothing.
func testSwapChangedRefused(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic, old := swapFixture(ctx, t, m)
	sw := m.(store.IndexSwapper)
	first := []store.IndexEntry{{Topic: topic, BaseOffset: 0, Count: 5, ObjectKey: "winner", ByteLength: 3, AppendedAt: at(1)}}
	must(t, "first SwapIndexEntries", sw.SwapIndexEntries(ctx, topic, 0, old[:2], first))
	loser := []store.IndexEntry{{Topic: topic, BaseOffset: 0, Count: 9, ObjectKey: "loser", ByteLength: 3, AppendedAt: at(1)}}
	wantErrIs(t, "a swap of entries already swapped", sw.SwapIndexEntries(ctx, topic, 0, old[:3], loser), store.ErrConflict)
	must(t, "DeleteIndexEntry", m.DeleteIndexEntry(ctx, topic, 0, 9))
	late := []store.IndexEntry{{Topic: topic, BaseOffset: 5, Count: 5, ObjectKey: "late", ByteLength: 3, AppendedAt: at(1)}}
	wantErrIs(t, "a swap of a deleted entry", sw.SwapIndexEntries(ctx, topic, 0, old[2:], late), store.ErrConflict)
	got := readAll(ctx, t, m, topic, 0)
	if len(got) != 2 || got[0].ObjectKey != "winner" || got[1].ObjectKey != old[2].ObjectKey {
		t.Fatalf("after refused swaps: %+v, want the winner and the untouched entry at 5", got)
	}
}

// testSwapBadInput: new entries that leave a gap, cover another range, or belong to
// another partition are refused, and nothing changes.
func testSwapBadInput(ctx context.Context, t *testing.T, m store.MetaStore) {
	topic, old := swapFixture(ctx, t, m)
	sw := m.(store.IndexSwapper)
	e := func(base, n int64) store.IndexEntry {
		return store.IndexEntry{Topic: topic, BaseOffset: base, Count: n, ObjectKey: "bad", ByteLength: 1, AppendedAt: at(1)}
	}
	other := e(0, 5)
	other.Partition = 1
	for name, nw := range map[string][]store.IndexEntry{
		"gap":             {e(0, 2), e(3, 2)},
		"short":           {e(0, 4)},
		"long":            {e(0, 6)},
		"other partition": {other},
		"none":            nil,
	} {
		if err := sw.SwapIndexEntries(ctx, topic, 0, old[:2], nw); err == nil {
			t.Fatalf("swap with %s new entries: no error", name)
		}
	}
	got := readAll(ctx, t, m, topic, 0)
	for i := range old {
		if len(got) != len(old) || normEntry(got[i]) != normEntry(old[i]) {
			t.Fatalf("after refused swaps: %+v, want %+v", got, old)
		}
	}
}
