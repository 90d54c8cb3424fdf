package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stratalog/strata/pkg/store"
)

// mustPacks opens a pack store in dir, closed when t ends.
func mustPacks(t testing.TB, dir string, opts ...PackOption) *PackStore {
	t.Helper()
	s, err := openPacks(context.Background(), t, dir, opts...)
	if err != nil {
		t.Fatalf("OpenPackStore: %v", err)
	}
	return s
}

// packFiles lists the pack files in dir.
func packFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, packPrefix+"*"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range m {
		m[i] = filepath.Base(m[i])
	}
	return m
}

// keysOf lists every key in s with its size, in List's order.
func keysOf(t *testing.T, s store.ObjectStore) []store.ObjectInfo {
	t.Helper()
	var got []store.ObjectInfo
	if err := s.List(context.Background(), "", func(oi store.ObjectInfo) error {
		got = append(got, oi)
		return nil
	}); err != nil {
		t.Fatalf("List: %v", err)
	}
	return got
}

func mustGet(t *testing.T, s store.ObjectStore, key string, want []byte) {
	t.Helper()
	got, err := s.GetRange(context.Background(), key, 0, int64(len(want)))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("GetRange(%q) = %d bytes, %v; want the %d bytes put", key, len(got), err, len(want))
	}
}

func packData(i int) []byte { return bytes.Repeat([]byte(fmt.Sprintf("obj-%04d|", i)), 10+i%13) }

// filledPacks opens a pack store in dir (closed when t ends, if the test has not closed
// it) and puts n objects, the i-th keyed fmt.Sprintf(format, i) holding packData(i).
func filledPacks(t *testing.T, dir, format string, n int, opts ...PackOption) *PackStore {
	t.Helper()
	s := mustPacks(t, dir, opts...)
	for i := range n {
		if err := s.Put(context.Background(), fmt.Sprintf(format, i), packData(i), store.Kept); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// TestPackReopenKeepsObjectsAndDeletes: what was put is read back after a reopen, what
// was deleted stays deleted, and the key of a deleted object can be put again.
func TestPackReopenKeepsObjectsAndDeletes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := filledPacks(t, dir, "v1/t/%02d", 20, WithPackSize(700))
	for i := 0; i < 20; i += 3 {
		if err := s.Delete(ctx, fmt.Sprintf("v1/t/%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Put(ctx, "v1/t/03", []byte("again"), store.Kept); err != nil {
		t.Fatalf("Put of a deleted key: %v", err)
	}
	before := keysOf(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetRange(ctx, "v1/t/01", 0, 1); err == nil {
		t.Fatal("GetRange on a closed store succeeded")
	}
	s2 := mustPacks(t, dir, WithPackSize(700))
	if got := keysOf(t, s2); !slices.Equal(got, before) {
		t.Fatalf("List after reopen:\n got  %v\n want %v", got, before)
	}
	for i := range 20 {
		k := fmt.Sprintf("v1/t/%02d", i)
		switch {
		case i == 3:
			mustGet(t, s2, k, []byte("again"))
		case i%3 == 0:
			if _, err := s2.GetRange(ctx, k, 0, 1); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("deleted %s after reopen: %v, want ErrNotFound", k, err)
			}
		default:
			mustGet(t, s2, k, packData(i))
		}
	}
	if err := s2.Put(ctx, "v1/t/01", []byte("x"), store.Kept); !errors.Is(err, store.ErrExists) {
		t.Fatalf("Put over an object from before the reopen = %v, want ErrExists", err)
	}
}

// TestPackTornTailIsCutOff: a record the process wrote only in part before it stopped is
// cut off the newest pack on open; what came before it is served, and new Puts append
// after the cut.
func TestPackTornTailIsCutOff(t *testing.T) {
	for _, cut := range []int{1, packHeaderLen - 1, packHeaderLen + 3, -1} {
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			s := filledPacks(t, dir, "k/%d", 3)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, packFiles(t, dir)[0])
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			// The last record, k/2, loses its end: cut bytes into it, or (cut -1) its
			// last data byte is flipped, which only the data's checksum sees.
			lastLen := int64(packHeaderLen + len("k/2") + len(packData(2)))
			if cut < 0 {
				f, err := os.OpenFile(path, os.O_RDWR, 0)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.WriteAt([]byte{'!'}, fi.Size()-1); err != nil {
					t.Fatal(err)
				}
				f.Close()
			} else if err := os.Truncate(path, fi.Size()-lastLen+int64(cut)); err != nil {
				t.Fatal(err)
			}
			s2 := mustPacks(t, dir)
			want := []store.ObjectInfo{{Key: "k/0", Size: int64(len(packData(0)))}, {Key: "k/1", Size: int64(len(packData(1)))}}
			if got := keysOf(t, s2); !slices.Equal(got, want) {
				t.Fatalf("List after the torn tail = %v, want %v", got, want)
			}
			if fi2, _ := os.Stat(path); fi2.Size() != fi.Size()-lastLen {
				t.Fatalf("pack is %d bytes after open, want the torn record cut off at %d", fi2.Size(), fi.Size()-lastLen)
			}
			if err := s2.Put(ctx, "k/2", []byte("rewritten"), store.Kept); err != nil {
				t.Fatal(err)
			}
			mustGet(t, s2, "k/1", packData(1))
			mustGet(t, s2, "k/2", []byte("rewritten"))
		})
	}
}

// TestPackCorruptOlderPackRefused: a pack before the newest was synced whole before the
// next was made, so a bad record in it is corruption, which open reports and changes
// nothing for.
func TestPackCorruptOlderPackRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := filledPacks(t, dir, "k/%d", 6, WithPackSize(300))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	packs := packFiles(t, dir)
	if len(packs) < 3 {
		t.Fatalf("%d packs, want several", len(packs))
	}
	first := filepath.Join(dir, packs[0])
	f, err := os.OpenFile(first, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0xff}, 9); err != nil { // the key length
		t.Fatal(err)
	}
	f.Close()
	before, _ := os.ReadFile(first)
	if _, err := OpenPackStore(ctx, dir, WithPackSize(300)); !errors.Is(err, ErrCorruptPack) {
		t.Fatalf("OpenPackStore over a corrupt older pack = %v, want ErrCorruptPack", err)
	}
	if after, _ := os.ReadFile(first); !bytes.Equal(after, before) || !slices.Equal(packFiles(t, dir), packs) {
		t.Fatal("a refused open changed the packs")
	}
}

// TestPackDeletesGiveSpaceBack is the pack store's deletion test: a pack is removed once
// every record in it is deleted (and not before), on delete or on the next open, and a
// deleted object's data is punched out of a pack that stays.
func TestPackDeletesGiveSpaceBack(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := OpenPackStore(ctx, dir, WithPackSize(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte{0xab}, 600<<10)
	for i, k := range []string{"a/1", "a/2", "b/1", "b/2"} {
		if err := s.Put(ctx, k, append(big, byte(i)), store.Kept); err != nil {
			t.Fatal(err)
		}
	}
	// 600 KiB each in 1 MiB packs: one object a pack.
	packs := packFiles(t, dir)
	if len(packs) != 4 {
		t.Fatalf("packs %v, want one per object", packs)
	}
	if err := s.DeleteBatch(ctx, []string{"a/1", "a/2", "missing"}); err != nil {
		t.Fatal(err)
	}
	if got := packFiles(t, dir); !slices.Equal(got, packs[2:]) {
		t.Fatalf("packs after deleting the first two's objects = %v, want %v", got, packs[2:])
	}
	// The open pack stays while it is open, empty or not; its data is punched out (on
	// Linux: elsewhere punchHole does nothing).
	blocks := func(name string) int64 {
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(dir, name), &st); err != nil {
			t.Fatal(err)
		}
		return st.Blocks
	}
	had := blocks(packs[3])
	if err := s.Delete(ctx, "b/2"); err != nil {
		t.Fatal(err)
	}
	if got := packFiles(t, dir); !slices.Equal(got, packs[2:]) {
		t.Fatalf("packs after deleting the open pack's object = %v, want %v", got, packs[2:])
	}
	if now := blocks(packs[3]); runtime.GOOS == "linux" && now >= had/2 {
		t.Fatalf("the open pack holds %d blocks after its object was deleted, %d before: not punched", now, had)
	}
	mustGet(t, s, "b/1", append(big, 2))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := mustPacks(t, dir, WithPackSize(1<<20))
	if got := packFiles(t, dir); !slices.Equal(got, packs[2:]) {
		t.Fatalf("packs after reopen = %v, want %v (the open pack is reused)", got, packs[2:])
	}
	if err := s2.Delete(ctx, "b/1"); err != nil {
		t.Fatal(err)
	}
	if got := packFiles(t, dir); !slices.Equal(got, packs[3:]) {
		t.Fatalf("packs after deleting the last object of a closed pack = %v, want %v", got, packs[3:])
	}
	if got := keysOf(t, s2); len(got) != 0 {
		t.Fatalf("objects left: %v", got)
	}
}

// TestPackOneProcessAtATime: a second open of a directory in use fails and changes
// nothing; once the first is closed it succeeds.
func TestPackOneProcessAtATime(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := OpenPackStore(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "k", []byte("v"), store.Kept); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenPackStore(ctx, dir); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second OpenPackStore = %v, want an in-use error", err)
	}
	mustGet(t, s, "k", []byte("v"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	mustGet(t, mustPacks(t, dir), "k", []byte("v"))
}

// TestPackAdoptsObjectFiles: a data directory of the store of files (the earlier layout)
// is moved into packs on open, its objects readable and listed as before, and no file of
// that layout left.
func TestPackAdoptsObjectFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	files, err := NewObjectStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"v1/orders/01A", "v1/orders/01B", "v1/Orders/01A", "v1/" + strings.Repeat("T", 249) + "/x/01", "top", "v1/empty"}
	for i, k := range keys {
		data := packData(i)
		if k == "v1/empty" {
			data = nil
		}
		if err := files.Put(ctx, k, data, store.Kept); err != nil {
			t.Fatal(err)
		}
	}
	want := keysOf(t, files)
	s := mustPacks(t, dir)
	if got := keysOf(t, s); !slices.Equal(got, want) {
		t.Fatalf("List after adoption:\n got  %v\n want %v", got, want)
	}
	for i, k := range keys {
		if k != "v1/empty" {
			mustGet(t, s, k, packData(i))
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, ok := packID(e.Name()); !ok && e.Name() != packLockName {
			t.Fatalf("%s left in the directory after adoption", e.Name())
		}
	}
}

// TestPackConcurrentPutsDeletesAndReads: Puts, Deletes and reads from many goroutines,
// across pack rotations, leave exactly the objects not deleted, each whole, before and
// after a reopen.
func TestPackConcurrentPutsDeletesAndReads(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := OpenPackStore(ctx, dir, WithPackSize(4<<10))
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 40
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				k := fmt.Sprintf("w%d/%03d", w, i)
				if err := s.Put(ctx, k, packData(w*each+i), store.Kept); err != nil {
					errs <- err
					return
				}
				if i%2 == 1 {
					prev := fmt.Sprintf("w%d/%03d", w, i-1)
					if err := s.Delete(ctx, prev); err != nil {
						errs <- err
						return
					}
				}
				if got, err := s.GetRange(ctx, k, 0, int64(len(packData(w*each+i)))); err != nil || !bytes.Equal(got, packData(w*each+i)) {
					errs <- fmt.Errorf("read %s back: %v", k, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	check := func(s store.ObjectStore) {
		t.Helper()
		got := keysOf(t, s)
		if len(got) != workers*each/2 {
			t.Fatalf("%d objects, want %d", len(got), workers*each/2)
		}
		for w := range workers {
			for i := 1; i < each; i += 2 {
				mustGet(t, s, fmt.Sprintf("w%d/%03d", w, i), packData(w*each+i))
			}
		}
	}
	check(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	check(mustPacks(t, dir, WithPackSize(4<<10)))
}

// FuzzPackOpen: bytes found as the newest pack never make open panic; open either
// refuses them or serves objects that read back whole.
func FuzzPackOpen(f *testing.F) {
	seedDir := f.TempDir()
	s, err := OpenPackStore(context.Background(), seedDir)
	if err != nil {
		f.Fatal(err)
	}
	for i := range 3 {
		if err := s.Put(context.Background(), fmt.Sprintf("k/%d", i), packData(i), store.Kept); err != nil {
			f.Fatal(err)
		}
	}
	if err := s.Delete(context.Background(), "k/1"); err != nil {
		f.Fatal(err)
	}
	_ = s.Close()
	seed, err := os.ReadFile(filepath.Join(seedDir, packName(1)))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add(seed[:len(seed)/2])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, packName(1)), b, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := OpenPackStore(context.Background(), dir)
		if err != nil {
			return
		}
		defer s.Close()
		for _, oi := range keysOf(t, s) {
			if oi.Size == 0 {
				continue
			}
			if _, err := s.GetRange(context.Background(), oi.Key, 0, oi.Size); err != nil {
				t.Fatalf("listed %s does not read: %v", oi.Key, err)
			}
		}
		if err := s.Put(context.Background(), "fresh/key", []byte("v"), store.Kept); err != nil && !errors.Is(err, store.ErrExists) {
			t.Fatalf("Put after opening fuzzed bytes: %v", err)
		}
	})
}

// BenchmarkPackOpen is the open's scan of a store of 100,000 objects of 1 KiB in packs of
// DefaultPackSize: every record's header read, the newest pack's data checked.
func BenchmarkPackOpen(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	s, err := OpenPackStore(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	const n, workers = 100_000, 32
	data := bytes.Repeat([]byte{5}, 1024)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				if err := s.Put(ctx, fmt.Sprintf("v1/t/tc0/%08d", i), data, store.Kept); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		s, err := OpenPackStore(ctx, dir)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
