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
}

func TestInvalidKeysNeverTouchTheDisk(t *testing.T) {
	ctx := context.Background()
	s, dir := newObjects(t)
	parent := filepath.Dir(dir)
	for _, key := range invalidKeys {
		err := s.Put(ctx, key, []byte("x"))
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
	if got := treeNames(t, parent); !slices.Equal(got, []string{"objects"}) {
		t.Fatalf("after invalid puts the tree above the store holds %v, want only the store directory", got)
	}
	if got := treeNames(t, dir); len(got) != 0 {
		t.Fatalf("after invalid puts the store holds %v, want nothing", got)
	}
}

func TestListPrefixWithInvalidSegmentIsEmpty(t *testing.T) {
	ctx := context.Background()
	s, _ := newObjects(t)
	if err := s.Put(ctx, "a/b", []byte("x")); err != nil {
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
		if err := s.Put(ctx, kv[0], []byte(kv[1])); err != nil {
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
				errs[i] = s.Put(ctx, key, bytes.Repeat([]byte{byte(i)}, 4096+i))
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
	if err := s.Put(ctx, "v1/t/obj", []byte("data")); err != nil {
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
	if err := s.Put(ctx, "v1/t/a", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	s2, err := NewObjectStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Put(ctx, "v1/t/a", []byte("other")); !errors.Is(err, store.ErrExists) {
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
	for _, k := range append([]string{"v1/orders/01JDQ4ZK8M6V0J9Q2XW3Y4Z5A6", "a", "a/b", "a-c", "..a/b..", "a/.../b", "f_x/d_y", `a\..\b`}, invalidKeys...) {
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
		segs := make([]string, len(parts))
		for i, p := range parts {
			prefix := dirPrefix
			if i == len(parts)-1 {
				prefix = filePrefix
			}
			if !strings.HasPrefix(p, prefix) {
				t.Fatalf("key %q: path element %q lacks prefix %q", key, p, prefix)
			}
			segs[i] = p[len(prefix):]
		}
		if back := strings.Join(segs, "/"); back != key {
			t.Fatalf("key %q maps to %q, which reads back as %q", key, path, back)
		}
	})
}

func BenchmarkObjectPut4KiB(b *testing.B) {
	ctx := context.Background()
	s, err := NewObjectStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	data := bytes.Repeat([]byte{7}, 4096)
	b.SetBytes(int64(len(data)))
	i := 0
	for b.Loop() {
		if err := s.Put(ctx, fmt.Sprintf("v1/bench/%08d", i), data); err != nil {
			b.Fatal(err)
		}
		i++
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
