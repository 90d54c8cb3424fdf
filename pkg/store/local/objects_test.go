package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stratalog/strata/pkg/store"
)

func newObjects(t *testing.T) (*ObjectStore, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "objects")
	s, err := NewObjectStore(dir)
	if err != nil {
		t.Fatalf("NewObjectStore: %v", err)
	}
	return s, dir
}

// treeNames lists every path under dir, relative to it.
func treeNames(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if rel, _ := filepath.Rel(dir, path); rel != "." {
			names = append(names, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", dir, err)
	}
	return names
}

var invalidKeys = []string{
	"", "/", "/abs", "/etc/passwd", "..", "../x", "a/../../x", "a/..", "./a", "a/./b", ".",
	"a//b", "a/", "//", "a\x00b", strings.Repeat("k", maxSegmentLen+1), strings.Repeat("a/", 600) + "b",
	strings.Repeat("K", maxSegmentLen/2+1), // fits as a key, not on disk once encoded
}

func TestInvalidKeysNeverTouchTheDisk(t *testing.T) {
	ctx := context.Background()
	s, dir := newObjects(t)
	parent := filepath.Dir(dir)
	for _, key := range invalidKeys {
		err := s.Put(ctx, key, []byte("x"), store.Kept)
		if !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Put(%q) = %v, want ErrInvalidKey", key, err)
		}
		_, err = s.GetRange(ctx, key, 0, 1)
		if !errors.Is(err, ErrInvalidKey) || !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetRange(%q) = %v, want ErrInvalidKey and ErrNotFound", key, err)
		}
		if err := s.Delete(ctx, key); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Delete(%q) = %v, want ErrInvalidKey", key, err)
		}
	}
	if got := treeNames(t, parent); !slices.Equal(got, []string{"objects", filepath.Join("objects", layoutMarker)}) {
		t.Fatalf("after invalid puts the tree above the store holds %v, want only the store directory and its layout marker", got)
	}
	if got := treeNames(t, dir); !slices.Equal(got, []string{layoutMarker}) {
		t.Fatalf("after invalid puts the store holds %v, want only the layout marker", got)
	}
}

func TestListPrefixWithInvalidSegmentIsEmpty(t *testing.T) {
	ctx := context.Background()
	s, _ := newObjects(t)
	if err := s.Put(ctx, "a/b", []byte("x"), store.Kept); err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{"../", "a/../", "a//", "/a/", "./a"} {
		var got []string
		err := s.List(ctx, prefix, func(oi store.ObjectInfo) error {
			got = append(got, oi.Key)
			return nil
		})
		if err != nil || len(got) != 0 {
			t.Errorf("List(%q) = %v, %v; want nothing", prefix, got, err)
		}
	}
}

// A key and a key it prefixes as a directory ("a" and "a/b") are both objects, in any
// order of creation, as on S3.
func TestKeyAndDirectoryOfSameNameCoexist(t *testing.T) {
	ctx := context.Background()
	s, _ := newObjects(t)
	for _, kv := range [][2]string{{"a", "1"}, {"a/b", "22"}, {"c/d", "333"}, {"c", "4444"}} {
		if err := s.Put(ctx, kv[0], []byte(kv[1]), store.Kept); err != nil {
			t.Fatalf("Put(%q): %v", kv[0], err)
		}
	}
	for key, want := range map[string]string{"a": "1", "a/b": "22", "c/d": "333", "c": "4444"} {
		got, err := s.GetRange(ctx, key, 0, int64(len(want)))
		if err != nil || string(got) != want {
			t.Errorf("GetRange(%q) = %q, %v; want %q", key, got, err, want)
		}
	}
	var keys []string
	if err := s.List(ctx, "", func(oi store.ObjectInfo) error {
		keys = append(keys, oi.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "a/b", "c", "c/d"}; !slices.Equal(keys, want) {
		t.Fatalf("List = %v, want %v", keys, want)
	}
}

func TestConcurrentPutExactlyOneWins(t *testing.T) {
	ctx := context.Background()
	s, dir := newObjects(t)
	const n = 16
	for round := range 5 {
		key := fmt.Sprintf("v1/orders/race-%d", round)
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				errs[i] = s.Put(ctx, key, bytes.Repeat([]byte{byte(i)}, 4096+i), store.Kept)
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: Put %d and %d both won", round, winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, store.ErrExists):
				t.Fatalf("round %d: losing Put %d: %v, want ErrExists", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no Put won: %v", round, errs)
		}
		got, err := s.GetRange(ctx, key, 0, int64(4096+winner))
		if err != nil || !bytes.Equal(got, bytes.Repeat([]byte{byte(winner)}, 4096+winner)) {
			t.Fatalf("round %d: object is not the winner's bytes (err %v)", round, err)
		}
	}
	for _, name := range treeNames(t, dir) {
		if strings.HasPrefix(filepath.Base(name), tmpPrefix) {
			t.Errorf("temporary file %s left behind", name)
		}
	}
}

// Leftover temporary files (from a crash between write and link) and foreign files are
// never listed or read as objects.
func TestStrayFilesAreNotObjects(t *testing.T) {
	ctx := context.Background()
	s, dir := newObjects(t)
	if err := s.Put(ctx, "v1/t/obj", []byte("data"), store.Kept); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, dirPrefix+"v1", dirPrefix+"t")
	for _, name := range []string{tmpPrefix + "123", "stray", "obj"} {
		if err := os.WriteFile(filepath.Join(sub, name), []byte("junk"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var keys []string
	if err := s.List(ctx, "v1/", func(oi store.ObjectInfo) error {
		keys = append(keys, oi.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(keys, []string{"v1/t/obj"}) {
		t.Fatalf("List = %v, want only v1/t/obj", keys)
	}
}

func TestObjectsSurviveReopen(t *testing.T) {
	ctx := context.Background()
	s, dir := newObjects(t)
	if err := s.Put(ctx, "v1/t/a", []byte("hello"), store.Kept); err != nil {
		t.Fatal(err)
	}
	s2, err := NewObjectStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Put(ctx, "v1/t/a", []byte("other"), store.Kept); !errors.Is(err, store.ErrExists) {
		t.Fatalf("Put over an object written before reopen = %v, want ErrExists", err)
	}
	got, err := s2.GetRange(ctx, "v1/t/a", 1, 3)
	if err != nil || string(got) != "ell" {
		t.Fatalf("GetRange after reopen = %q, %v", got, err)
	}
}

// FuzzObjectKey checks that a key is either rejected or maps to a path strictly inside
// the root from which the key can be read back unchanged.
func FuzzObjectKey(f *testing.F) {
	for _, k := range append([]string{"v1/orders/01JDQ4ZK8M6V0J9Q2XW3Y4Z5A6", "a", "a/b", "a-c", "..a/b..", "a/.../b", "f_x/d_y", `a\..\b`, strings.Repeat(" ", 100) + "/0"}, invalidKeys...) {
		f.Add(k)
	}
	root := filepath.Join(string(filepath.Separator), "srv", "strata")
	s := &ObjectStore{root: root}
	f.Fuzz(func(t *testing.T, key string) {
		path, err := s.filePath(key)
		if err != nil {
			if !errors.Is(err, ErrInvalidKey) {
				t.Fatalf("filePath(%q) = %v, want ErrInvalidKey", key, err)
			}
			return
		}
		rel, err := filepath.Rel(root, path)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") || filepath.IsAbs(rel) {
			t.Fatalf("key %q maps to %q, outside root %q", key, path, root)
		}
		parts := strings.Split(rel, string(filepath.Separator))
		keySegs := strings.Split(key, "/")
		if len(parts) != len(keySegs) {
			t.Fatalf("key %q of %d segments maps to %q of %d elements", key, len(keySegs), path, len(parts))
		}
		segs := make([]string, len(parts))
		for i, p := range parts {
			if len(p) > 255 {
				t.Fatalf("key %q: path element %q is longer than NAME_MAX", key, p)
			}
			if strings.ToLower(p) != p {
				t.Fatalf("key %q: path element %q has upper case: a case-insensitive disk would fold it", key, p)
			}
			prefix := dirPrefix
			if i == len(parts)-1 {
				prefix = filePrefix
			} else if strings.HasPrefix(p, longPrefix) {
				// The long form is a hash; its segment lives in the directory's name
				// file, so the test can only check the name is the one the segment gets.
				if p != dirName(keySegs[i]) || len(dirPrefix)+len(encodeSegment(keySegs[i])) <= 255 {
					t.Fatalf("key %q: segment %q has long-form name %q", key, keySegs[i], p)
				}
				segs[i] = keySegs[i]
				continue
			}
			if !strings.HasPrefix(p, prefix) {
				t.Fatalf("key %q: path element %q lacks prefix %q", key, p, prefix)
			}
			seg, ok := decodeSegment(p[len(prefix):])
			if !ok {
				t.Fatalf("key %q: path element %q does not decode", key, p)
			}
			segs[i] = seg
		}
		if back := strings.Join(segs, "/"); back != key {
			t.Fatalf("key %q maps to %q, which reads back as %q", key, path, back)
		}
	})
}

// BenchmarkPut4KiB is one goroutine's Put of 4 KiB objects on each object store: the
// store of files and the pack store strata dev opens.
func BenchmarkPut4KiB(b *testing.B) {
	for _, kind := range []string{"files", "packs"} {
		b.Run(kind, func(b *testing.B) {
			ctx := context.Background()
			s := openObjects(b, kind, b.TempDir())
			data := bytes.Repeat([]byte{7}, 4096)
			b.SetBytes(int64(len(data)))
			i := 0
			for b.Loop() {
				if err := s.Put(ctx, fmt.Sprintf("v1/bench/%08d", i), data, store.Kept); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

func TestStoresCreateNestedDirectories(t *testing.T) {
	base := t.TempDir()
	if _, err := NewObjectStore(filepath.Join(base, "x", "y", "objects")); err != nil {
		t.Fatalf("NewObjectStore of a nested new path: %v", err)
	}
	m, err := OpenMetaStore(filepath.Join(base, "p", "q", "meta.db"))
	if err != nil {
		t.Fatalf("OpenMetaStore of a nested new path: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewObjectStore(file); err == nil {
		t.Fatal("NewObjectStore over a regular file succeeded")
	}
}

// TestCaseFoldedNamesNeverShareAFolder (issue 18, item 13): keys differing only in case
// ("Orders" and "orders") mapped to one folder on a case-insensitive filesystem (macOS,
// Windows), and retention or the purge of one deleted the other's objects. Every on-disk
// path is now distinct even after folding case (simulated with strings.ToLower), and
// each key reads back its own object.
func TestCaseFoldedNamesNeverShareAFolder(t *testing.T) {
	ctx := context.Background()
	s, dir := newObjects(t)
	keys := []string{"v1/Orders/01J0000000000000000000000A", "v1/orders/01J0000000000000000000000A",
		"v1/ORDERS/x", "v1/orders/x", "v1/o^rders/x", "v1/o~5ers/x", "v1/O/a", "v1/o/a"}
	for _, k := range keys {
		if err := s.Put(ctx, k, []byte(k), store.Kept); err != nil {
			t.Fatal(err)
		}
	}
	folded := map[string]string{}
	for _, k := range keys {
		path, err := s.filePath(k)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, path)
		f := strings.ToLower(rel)
		if other, ok := folded[f]; ok {
			t.Fatalf("keys %q and %q fold to one path %q", other, k, f)
		}
		folded[f] = k
		if dirPart := filepath.Dir(f); folded["dir:"+dirPart] != "" && filepath.Dir(rel) != folded["dir:"+dirPart] {
			t.Fatalf("folders %q and %q fold to one", filepath.Dir(rel), folded["dir:"+dirPart])
		}
		folded["dir:"+filepath.Dir(f)] = filepath.Dir(rel)
		got, err := s.GetRange(ctx, k, 0, int64(len(k)))
		if err != nil || string(got) != k {
			t.Fatalf("GetRange(%q) = %q, %v", k, got, err)
		}
	}
	var listed []string
	if err := s.List(ctx, "v1/", func(oi store.ObjectInfo) error {
		listed = append(listed, oi.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(keys)
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Fatalf("List = %v, want %v (key order)", listed, want)
	}
	// Deleting one never touches its case-folded twin.
	if err := s.Delete(ctx, "v1/Orders/01J0000000000000000000000A"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetRange(ctx, "v1/orders/01J0000000000000000000000A", 0, 1); err != nil {
		t.Fatalf("deleting v1/Orders/... removed v1/orders/...: %v", err)
	}
}

// TestLegacyLayoutMigrates: a directory written by the unencoded layout (d_/f_ names)
// opens with every object readable and listed under its key, and opens again cleanly.
func TestLegacyLayoutMigrates(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	legacy := map[string]string{
		"v1/Orders/01J0000000000000000000000A": filepath.Join("d_v1", "d_Orders", "f_01J0000000000000000000000A"),
		"v1/orders/01J0000000000000000000000B": filepath.Join("d_v1", "d_orders", "f_01J0000000000000000000000B"),
		"top":                                  "f_top",
	}
	for key, rel := range legacy {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(key), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		s, err := NewObjectStore(dir)
		if err != nil {
			t.Fatal(err)
		}
		var listed []string
		if err := s.List(ctx, "", func(oi store.ObjectInfo) error {
			listed = append(listed, oi.Key)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(listed) != len(legacy) {
			t.Fatalf("List after the upgrade = %v, want the %d legacy objects", listed, len(legacy))
		}
		for key := range legacy {
			got, err := s.GetRange(ctx, key, 0, int64(len(key)))
			if err != nil || string(got) != key {
				t.Fatalf("GetRange(%q) after the upgrade = %q, %v", key, got, err)
			}
		}
	}
}

// FuzzSegmentEncoding: on-disk names decode without panicking; encoding round-trips,
// never yields upper case, and a name decodes only if it is the encoding of what it
// decodes to (so the map from keys to names is injective).
func FuzzSegmentEncoding(f *testing.F) {
	for _, seed := range []string{"Orders", "orders", "^o", "~4f", "~4F", "a~", "^", "01J0000000000000000000000A", "\x00\xff"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		enc := encodeSegment(s)
		if strings.ToLower(enc) != enc {
			t.Fatalf("encodeSegment(%q) = %q has upper case", s, enc)
		}
		if back, ok := decodeSegment(enc); !ok || back != s {
			t.Fatalf("decodeSegment(encodeSegment(%q)) = %q, %v", s, back, ok)
		}
		if dec, ok := decodeSegment(s); ok && encodeSegment(dec) != s {
			t.Fatalf("decodeSegment(%q) = %q, which encodes to %q", s, dec, encodeSegment(dec))
		}
	})
}
