package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stratalog/strata/pkg/store"
)

func objectStoreSections() []section[store.ObjectStore] {
	return []section[store.ObjectStore]{{
		name: "Objects",
		cases: []testCase[store.ObjectStore]{
			{"PutThenGetRanges", testPutGetRanges},
			{"RangePastEndOrInvalid", testInvalidRanges},
			{"PutIfAbsentKeepsFirst", testPutIfAbsent},
			{"GetMissing", testGetMissing},
			{"DeleteIdempotent", testDelete},
			{"DeleteBatchExactlyTheKeys", testDeleteBatch},
			{"ListPrefixInKeyOrder", testListPrefixOrder},
			{"SegmentKeysOfLongestNames", testLongestNameKeys},
			{"ListStopsAtCallbackError", testListStops},
			{"ConcurrentPutOneWins", testConcurrentPut},
			{"ExpiryMarks", testObjectExpiry},
		},
	}}
}

// keyPrefix is a prefix of object keys unique to the test.
func keyPrefix(t *testing.T) string { return UniqueName(t, "st") + "/" }

// pattern returns n bytes that differ at nearby offsets, seeded by seed.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31) ^ byte(i>>8) ^ seed
	}
	return b
}

func putObject(ctx context.Context, t *testing.T, b store.ObjectStore, key string, data []byte) {
	t.Helper()
	must(t, "Put "+key, b.Put(ctx, key, data, store.Kept))
}

// wantObject fails t unless key holds exactly data: every byte, and nothing after it.
func wantObject(ctx context.Context, t *testing.T, b store.ObjectStore, key string, data []byte) {
	t.Helper()
	got, err := b.GetRange(ctx, key, 0, int64(len(data)))
	if err != nil {
		t.Fatalf("GetRange(%q, 0, %d): %v", key, len(data), err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("GetRange(%q, 0, %d) returned other bytes than were put", key, len(data))
	}
	if _, err := b.GetRange(ctx, key, 0, int64(len(data))+1); err == nil {
		t.Fatalf("GetRange(%q, 0, %d) past the end of a %d-byte object: no error", key, len(data)+1, len(data))
	}
}

// listKeys returns every ObjectInfo List passes for prefix, in the order it passed them.
func listKeys(ctx context.Context, t *testing.T, b store.ObjectStore, prefix string) []store.ObjectInfo {
	t.Helper()
	var got []store.ObjectInfo
	err := b.List(ctx, prefix, func(oi store.ObjectInfo) error {
		got = append(got, oi)
		return nil
	})
	must(t, fmt.Sprintf("List(%q)", prefix), err)
	return got
}

func testPutGetRanges(ctx context.Context, t *testing.T, b store.ObjectStore) {
	p := keyPrefix(t)
	key := p + "v1/orders/01JDQ4ZK8M6V0J9Q2XW3Y4Z5A6"
	data := pattern(1000, 1)
	other := pattern(1000, 2)
	putObject(ctx, t, b, key, data)
	putObject(ctx, t, b, p+"v1/orders/01JDQ4ZK8M6V0J9Q2XW3Y4Z5A7", other)
	putObject(ctx, t, b, p+"one", []byte{0xff})

	for _, r := range []struct{ off, n int64 }{
		{0, 1000}, {0, 1}, {0, 10}, {1, 998}, {500, 17}, {990, 10}, {999, 1}, {255, 2}, {256, 256},
	} {
		got, err := b.GetRange(ctx, key, r.off, r.n)
		if err != nil {
			t.Fatalf("GetRange(%d, %d): %v", r.off, r.n, err)
		}
		if !bytes.Equal(got, data[r.off:r.off+r.n]) {
			t.Fatalf("GetRange(%d, %d) = %d bytes, not the bytes put at [%d, %d)", r.off, r.n, len(got), r.off, r.off+r.n)
		}
	}
	wantObject(ctx, t, b, p+"one", []byte{0xff})
	wantObject(ctx, t, b, p+"v1/orders/01JDQ4ZK8M6V0J9Q2XW3Y4Z5A7", other)
}

// testInvalidRanges: a range past the end, a negative offset and a length below one are
// errors, and never ErrNotFound, since the object exists (store.go: ObjectStore.GetRange).
func testInvalidRanges(ctx context.Context, t *testing.T, b store.ObjectStore) {
	key := keyPrefix(t) + "obj"
	putObject(ctx, t, b, key, pattern(1000, 3))
	for _, r := range []struct{ off, n int64 }{
		{0, 1001}, {990, 11}, {999, 2}, {1000, 1}, {1001, 1}, {5000, 10}, {1 << 40, 1}, {1, math.MaxInt64},
		{0, 0}, {500, 0}, {1000, 0}, {-1, 1}, {-1, 0}, {0, -1}, {10, -5},
	} {
		got, err := b.GetRange(ctx, key, r.off, r.n)
		if err == nil {
			t.Fatalf("GetRange(%d, %d) of a 1000-byte object returned %d bytes and no error", r.off, r.n, len(got))
		}
		if errors.Is(err, store.ErrNotFound) {
			t.Fatalf("GetRange(%d, %d) of an existing object: %v, want an error other than ErrNotFound", r.off, r.n, err)
		}
	}
}

func testPutIfAbsent(ctx context.Context, t *testing.T, b store.ObjectStore) {
	key := keyPrefix(t) + "seg"
	first := pattern(1000, 4)
	putObject(ctx, t, b, key, first)
	for _, second := range [][]byte{pattern(600, 5), pattern(1500, 6), first} {
		wantErrIs(t, fmt.Sprintf("second Put of %d bytes", len(second)), b.Put(ctx, key, second, store.Kept), store.ErrExists)
	}
	wantObject(ctx, t, b, key, first)
	if got := listKeys(ctx, t, b, key); len(got) != 1 || got[0] != (store.ObjectInfo{Key: key, Size: 1000}) {
		t.Fatalf("List after refused puts = %+v, want one %d-byte object", got, 1000)
	}
}

func testGetMissing(ctx context.Context, t *testing.T, b store.ObjectStore) {
	p := keyPrefix(t)
	putObject(ctx, t, b, p+"dir/obj", pattern(10, 7))
	for _, key := range []string{p + "never", p + "dir", p + "dir/", p + "dir/ob", p + "dir/obj/below", p + "other/obj"} {
		_, err := b.GetRange(ctx, key, 0, 1)
		wantErrIs(t, fmt.Sprintf("GetRange(%q) of a missing object", key), err, store.ErrNotFound)
	}
}

func testDelete(ctx context.Context, t *testing.T, b store.ObjectStore) {
	p := keyPrefix(t)
	key, sibling, below := p+"dir/a", p+"dir/b", p+"dir/c/d"
	putObject(ctx, t, b, key, pattern(100, 8))
	putObject(ctx, t, b, sibling, pattern(50, 9))
	putObject(ctx, t, b, below, pattern(20, 10))

	must(t, "Delete", b.Delete(ctx, key))
	_, err := b.GetRange(ctx, key, 0, 1)
	wantErrIs(t, "GetRange after Delete", err, store.ErrNotFound)
	must(t, "Delete again", b.Delete(ctx, key))
	must(t, "Delete of a key never put", b.Delete(ctx, p+"never"))
	// "dir/c" and "dir" are prefixes of objects, not objects: deleting them is a no-op.
	must(t, "Delete of a key that only prefixes others", b.Delete(ctx, p+"dir/c"))
	must(t, "Delete of a key that only prefixes others", b.Delete(ctx, p+"dir"))

	wantObject(ctx, t, b, sibling, pattern(50, 9))
	wantObject(ctx, t, b, below, pattern(20, 10))
	got := listKeys(ctx, t, b, p)
	want := []store.ObjectInfo{{Key: sibling, Size: 50}, {Key: below, Size: 20}}
	if !slices.Equal(got, want) {
		t.Fatalf("List after Delete = %+v, want %+v", got, want)
	}

	// A deleted key is free again.
	putObject(ctx, t, b, key, pattern(30, 11))
	wantObject(ctx, t, b, key, pattern(30, 11))
}

func testListPrefixOrder(ctx context.Context, t *testing.T, b store.ObjectStore) {
	p := keyPrefix(t)
	// Byte order is '-' < '.' < '/' < '0', so a per-directory walk ("a/..." before "a-c")
	// lists these in the wrong order; a path-prefix match misses "a-c", "a.b", "a0".
	// "a" and "a/c" are objects and prefixes of other keys at once, as S3 allows.
	keys := []string{"a0", "b", "a/c/d", "a-c", "ab/x", "a/b", "a", "a.b", "a/c0", "a/c/e/f", "a/c"}
	for i, k := range keys {
		putObject(ctx, t, b, p+k, pattern(10+i, byte(i)))
	}
	size := func(k string) int64 { return int64(10 + slices.Index(keys, k)) }
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"", []string{"a", "a-c", "a.b", "a/b", "a/c", "a/c/d", "a/c/e/f", "a/c0", "a0", "ab/x", "b"}},
		{"a", []string{"a", "a-c", "a.b", "a/b", "a/c", "a/c/d", "a/c/e/f", "a/c0", "a0", "ab/x"}},
		{"a/", []string{"a/b", "a/c", "a/c/d", "a/c/e/f", "a/c0"}},
		{"a/c", []string{"a/c", "a/c/d", "a/c/e/f", "a/c0"}},
		{"a/c/", []string{"a/c/d", "a/c/e/f"}},
		{"a/c/d", []string{"a/c/d"}},
		{"a/c/d/", nil},
		{"a/x", nil},
		{"ab", []string{"ab/x"}},
		{"c", nil},
	} {
		var want []store.ObjectInfo
		for _, k := range tc.want {
			want = append(want, store.ObjectInfo{Key: p + k, Size: size(k)})
		}
		if got := listKeys(ctx, t, b, p+tc.prefix); !slices.Equal(got, want) {
			t.Fatalf("List(%q):\n got  %+v\n want %+v", p+tc.prefix, got, want)
		}
	}

	for _, k := range []string{"a", "a/c", "a/c/d"} {
		wantObject(ctx, t, b, p+k, pattern(int(size(k)), byte(slices.Index(keys, k))))
	}

	// The whole store (maybe shared with other tests) lists in key order too, and holds ours.
	all := listKeys(ctx, t, b, "")
	if !slices.IsSortedFunc(all, func(a, b store.ObjectInfo) int { return strings.Compare(a.Key, b.Key) }) {
		t.Fatalf("List(\"\") is not in key order")
	}
	n := 0
	for _, oi := range all {
		if strings.HasPrefix(oi.Key, p) {
			n++
		}
	}
	if n != len(keys) {
		t.Fatalf("List(\"\") passed %d of the test's %d objects", n, len(keys))
	}
}

func testListStops(ctx context.Context, t *testing.T, b store.ObjectStore) {
	p := keyPrefix(t)
	for _, k := range []string{"1", "2", "3", "4"} {
		putObject(ctx, t, b, p+k, []byte(k))
	}
	stop := errors.New("stop here")
	var seen []string
	err := b.List(ctx, p, func(oi store.ObjectInfo) error {
		seen = append(seen, strings.TrimPrefix(oi.Key, p))
		if len(seen) == 2 {
			return stop
		}
		return nil
	})
	wantErrIs(t, "List whose callback failed", err, stop)
	if !slices.Equal(seen, []string{"1", "2"}) {
		t.Fatalf("List called back with %v, want [1 2] then stop", seen)
	}
}

func testConcurrentPut(ctx context.Context, t *testing.T, b store.ObjectStore) {
	key := keyPrefix(t) + "contended"
	const n = 8
	datas := make([][]byte, n)
	errs := make([]error, n)
	for i := range datas {
		datas[i] = pattern(200+37*i, byte(i*17))
	}
	race(n, func(i int) {
		errs[i] = retryUnavailable(func() error { return b.Put(ctx, key, datas[i], store.Kept) })
	})
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("Put by goroutines %d and %d both succeeded", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, store.ErrExists):
			t.Fatalf("losing Put %d: %v, want ErrExists", i, err)
		}
	}
	if winner < 0 {
		t.Fatalf("no Put succeeded: %v", errs)
	}
	wantObject(ctx, t, b, key, datas[winner])
	got := listKeys(ctx, t, b, key)
	if want := (store.ObjectInfo{Key: key, Size: int64(len(datas[winner]))}); len(got) != 1 || got[0] != want {
		t.Fatalf("List after the race = %+v, want only %+v", got, want)
	}
}

// testLongestNameKeys: segment object keys of the longest topic names (249 characters,
// all capitals, or differing from another only in case) are stored, read, listed in
// key order and deleted like any other; on a disk that folds case they stay apart.
func testLongestNameKeys(ctx context.Context, t *testing.T, b store.ObjectStore) {
	p := keyPrefix(t) + "v1/"
	upper := strings.Repeat("A", 249)
	names := []string{upper, strings.Repeat("A", 248) + "B", strings.Repeat("a", 249), "_" + strings.Repeat("Ab", 124), "short"}
	var keys []string
	for i, n := range names {
		k := p + n + "/tc" + strings.Repeat("z", 62) + "/01JDX0000000000000000000" + fmt.Sprintf("%02d", i)
		keys = append(keys, k)
		putObject(ctx, t, b, k, pattern(10+i, byte(i)))
	}
	for i, k := range keys {
		wantObject(ctx, t, b, k, pattern(10+i, byte(i)))
	}
	sorted := slices.Sorted(slices.Values(keys))
	var want []store.ObjectInfo
	for _, k := range sorted {
		want = append(want, store.ObjectInfo{Key: k, Size: int64(10 + slices.Index(keys, k))})
	}
	if got := listKeys(ctx, t, b, p); !slices.Equal(got, want) {
		t.Fatalf("List(%q):\n got  %+v\n want %+v", p, got, want)
	}
	if got := listKeys(ctx, t, b, p+upper+"/"); len(got) != 1 || got[0].Key != keys[0] {
		t.Fatalf("List of one long name's prefix = %+v, want only %q", got, keys[0])
	}
	must(t, "Delete", b.Delete(ctx, keys[0]))
	if got := listKeys(ctx, t, b, p); len(got) != len(keys)-1 {
		t.Fatalf("List after Delete = %+v, want %d keys", got, len(keys)-1)
	}
}

// testDeleteBatch: DeleteBatch removes exactly the keys given — a neighbour sharing a
// prefix with one, an object below one and a key that only prefixes others survive —
// counts missing keys as deleted, does nothing for an empty list, and takes more keys
// than one S3 request may name (1,000).
func testDeleteBatch(ctx context.Context, t *testing.T, b store.ObjectStore) {
	bd, ok := b.(store.BatchDeleter)
	if !ok {
		t.Fatalf("%T has no DeleteBatch", b)
	}
	p := keyPrefix(t)
	gone := []string{p + "seg/01A", p + "seg/01B", p + "dir"}
	kept := []string{p + "seg/01A0", p + "seg/01", p + "seg/01B/x", p + "dir/below", p + "dirx"}
	for i, k := range append(slices.Clone(gone), kept...) {
		putObject(ctx, t, b, k, pattern(10+i, byte(i)))
	}
	must(t, "DeleteBatch of no keys", bd.DeleteBatch(ctx, nil))
	if got := listKeys(ctx, t, b, p); len(got) != len(gone)+len(kept) {
		t.Fatalf("List after an empty DeleteBatch = %d objects, want %d", len(got), len(gone)+len(kept))
	}
	// A missing key and a key given twice are no error.
	must(t, "DeleteBatch", bd.DeleteBatch(ctx, append(slices.Clone(gone), p+"never", p+"seg/01A")))
	for _, k := range gone {
		_, err := b.GetRange(ctx, k, 0, 1)
		wantErrIs(t, "GetRange after DeleteBatch", err, store.ErrNotFound)
	}
	for i, k := range kept {
		wantObject(ctx, t, b, k, pattern(10+len(gone)+i, byte(len(gone)+i)))
	}
	must(t, "DeleteBatch again", bd.DeleteBatch(ctx, gone))

	// More keys than one request names: every one goes, the neighbours stay.
	var many []string
	for i := range 1003 {
		k := fmt.Sprintf("%smany/%04d", p, i)
		many = append(many, k)
		putObject(ctx, t, b, k, []byte{byte(i)})
	}
	putObject(ctx, t, b, p+"many/1003", []byte{1})
	must(t, "DeleteBatch of 1003 keys", bd.DeleteBatch(ctx, many))
	if got := listKeys(ctx, t, b, p+"many/"); len(got) != 1 || got[0].Key != p+"many/1003" {
		t.Fatalf("List after deleting 1003 keys = %d objects, want only %q", len(got), p+"many/1003")
	}
}
