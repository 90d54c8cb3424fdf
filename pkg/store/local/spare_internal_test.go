//go:build linux

package local

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stratalog/strata/pkg/store"
)

// entries lists the names under dir, recursively, relative to it.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		names = append(names, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestPutFillsASpare: a Put takes a spare made ahead and names it; the object reads
// back, and no other name is left behind.
func TestPutFillsASpare(t *testing.T) {
	s, err := NewObjectStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.spares.filling.Store(true) // no refill: the test puts the one spare there is
	f, err := openUnnamed(s.root)
	if err != nil {
		t.Fatalf("unnamed files on %s: %v", s.root, err)
	}
	s.spares.files <- f
	before := entries(t, s.root)
	ctx := context.Background()
	if err := s.Put(ctx, "v1/a/b", []byte("hello"), store.Kept); err != nil {
		t.Fatal(err)
	}
	if len(s.spares.files) != 0 || s.spares.off.Load() {
		t.Fatalf("%d spares left, off %v: want the one spare taken, spares on", len(s.spares.files), s.spares.off.Load())
	}
	got, err := s.GetRange(ctx, "v1/a/b", 0, 5)
	if err != nil || string(got) != "hello" {
		t.Fatalf("read %q, %v", got, err)
	}
	if _, err := f.Write([]byte("x")); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("the spare is still open after its Put: write %v", err)
	}
	if n := len(entries(t, s.root)) - len(before); n != 3 { // p_v1, p_v1/p_a, p_v1/p_a/o_b
		t.Fatalf("entries %v after %v: want the object's directories and file only", entries(t, s.root), before)
	}
}

// TestPutOverExistingSpareLeavesNothing: a Put of a key that exists, with a spare in
// hand, is store.ErrExists, keeps the object as it was and leaves no name.
func TestPutOverExistingSpareLeavesNothing(t *testing.T) {
	s, err := NewObjectStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Put(ctx, "k", []byte("first"), store.Kept); err != nil {
		t.Fatal(err)
	}
	s.spares.filling.Store(true)
	f, err := openUnnamed(s.root)
	if err != nil {
		t.Fatal(err)
	}
	final := filepath.Join(s.root, filePrefix+encodeSegment("k"))
	before := entries(t, s.root)
	// The name checked before the spare is taken; the link itself must refuse too.
	if err := writeSpare(f, final, []byte("second")); !os.IsExist(err) {
		t.Fatalf("writeSpare over an existing name: %v, want EEXIST", err)
	}
	if err := s.Put(ctx, "k", []byte("second"), store.Kept); !errors.Is(err, store.ErrExists) {
		t.Fatalf("Put over an existing key: %v, want store.ErrExists", err)
	}
	got, err := s.GetRange(ctx, "k", 0, 5)
	if err != nil || string(got) != "first" {
		t.Fatalf("read %q, %v: want the first object", got, err)
	}
	if after := entries(t, s.root); len(after) != len(before) {
		t.Fatalf("entries %v, were %v", after, before)
	}
}

// TestPutFallsBackWhenASpareCannotBeLinked: spares made on another file system (tmpfs)
// cannot be linked into the store's (EXDEV); the Put writes a named temporary file
// instead, stores the object, and the store stops making spares.
func TestPutFallsBackWhenASpareCannotBeLinked(t *testing.T) {
	root := t.TempDir()
	shm, err := os.MkdirTemp("/dev/shm", "spares")
	if err != nil {
		t.Skipf("no /dev/shm to make spares on another file system: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(shm) })
	var a, b syscall.Stat_t
	if syscall.Stat(root, &a) != nil || syscall.Stat(shm, &b) != nil || a.Dev == b.Dev {
		t.Skip("/dev/shm is on the test directory's file system: no link across file systems to refuse")
	}
	s, err := NewObjectStore(root)
	if err != nil {
		t.Fatal(err)
	}
	s.spares = newSpares(shm)
	ctx := context.Background()
	if err := s.Put(ctx, "a/b", []byte("hello"), store.Kept); err != nil {
		t.Fatalf("Put with a spare that cannot be linked: %v", err)
	}
	if !s.spares.off.Load() {
		t.Fatal("spares still on after a refused link")
	}
	got, err := s.GetRange(ctx, "a/b", 0, 5)
	if err != nil || string(got) != "hello" {
		t.Fatalf("read %q, %v", got, err)
	}
	for _, name := range entries(t, s.root) {
		if strings.HasPrefix(filepath.Base(name), tmpPrefix) {
			t.Fatalf("temporary file %s left", name)
		}
	}
	if err := s.Put(ctx, "a/c", []byte("again"), store.Kept); err != nil {
		t.Fatalf("a later Put: %v", err)
	}
}
