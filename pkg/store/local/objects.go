// Package local is Strata's embedded backend: store.ObjectStore over append-only pack
// files in a directory (PackStore; ObjectStore, one file per object, is the earlier
// layout, which PackStore moves into packs) and store.MetaStore over a bbolt file. Every
// write is fsync'd before it returns, so an acknowledged write survives kill -9 and power
// loss.
package local

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/stratalog/strata/pkg/store"
)

// ErrInvalidKey is returned for an object key that could name a path outside the store
// directory or is otherwise unusable: empty, absolute, with an empty, "." or ".."
// segment, a NUL byte, or too long.
var ErrInvalidKey = errors.New("local: invalid object key")

// ErrInvalidRange is returned by GetRange for a negative offset, a length below one
// (S3 cannot express an empty range), or a range past the end of the object.
var ErrInvalidRange = errors.New("local: invalid range")

// On-disk names carry a prefix so that a key "a" (file o_a) and a key "a/b" (directory
// p_a) never collide, and so temporary files (t_...) can never be mistaken for objects.
// After the prefix comes the segment encoded by encodeSegment, whose output has no
// upper-case letter: two keys differing only in case ("Orders", "orders") get names that
// differ even on a case-insensitive filesystem (macOS, Windows), which would otherwise
// put them in one folder. The f_/d_ names of the earlier, unencoded layout are renamed
// when the store is opened (migrateLayout).
const (
	filePrefix = "o_"
	dirPrefix  = "p_"
	tmpPrefix  = "t_"
	// legacyFilePrefix and legacyDirPrefix name the unencoded layout's files and
	// directories.
	legacyFilePrefix = "f_"
	legacyDirPrefix  = "d_"
	// layoutMarker is written in the root once no legacy name is left.
	layoutMarker = "strata-objects-layout-2"
	// maxKeyLen matches S3's limit; maxSegmentLen keeps prefixed names within NAME_MAX.
	maxKeyLen     = 1024
	maxSegmentLen = 255 - len(filePrefix)
	// longPrefix names a directory whose encoded segment is too long for one on-disk
	// name (a 249-character topic name of capitals encodes to 498 bytes): the prefix,
	// the encoding's first longHead bytes, '~' and 64 hex digits of SHA-256 of the
	// segment, which is kept in the directory's nameFile for List to read back.
	longPrefix = "h_"
	longHead   = 150
	nameFile   = "n_segment"
)

// dirName is the on-disk name of the directory of key segment seg: dirPrefix and its
// encoding, or the long form (longPrefix) when that passes NAME_MAX.
func dirName(seg string) string {
	enc := encodeSegment(seg)
	if len(dirPrefix)+len(enc) <= 255 {
		return dirPrefix + enc
	}
	sum := sha256.Sum256([]byte(seg))
	return longPrefix + enc[:longHead] + "~" + hex.EncodeToString(sum[:])
}

// longSegment reads the segment a long-form directory holds; ok is false when its name
// file is missing or is not the segment the name's hash says.
func longSegment(dir, name string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(dir, name, nameFile))
	if err != nil || dirName(string(b)) != name {
		return "", false
	}
	return string(b), true
}

// encodeSegment maps a key segment to an on-disk name injectively and without upper-case
// letters: lower-case letters, digits, '.', '-' and '_' stay; an upper-case letter
// becomes '^' and its lower case; any other byte '~' and two lower-case hex digits.
func encodeSegment(seg string) string {
	var b strings.Builder
	b.Grow(len(seg))
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '.', c == '-', c == '_':
			b.WriteByte(c)
		case c >= 'A' && c <= 'Z':
			b.WriteByte('^')
			b.WriteByte(c + ('a' - 'A'))
		default:
			const hex = "0123456789abcdef"
			b.WriteByte('~')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}

// decodeSegment inverts encodeSegment; ok is false for a name it cannot have made.
func decodeSegment(name string) (string, bool) {
	out := make([]byte, 0, len(name))
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '.', c == '-', c == '_':
			out = append(out, c)
		case c == '^' && i+1 < len(name) && name[i+1] >= 'a' && name[i+1] <= 'z':
			out = append(out, name[i+1]-('a'-'A'))
			i++
		case c == '~' && i+2 < len(name):
			hi, ok1 := unhex(name[i+1])
			lo, ok2 := unhex(name[i+2])
			v := hi<<4 | lo
			if !ok1 || !ok2 || encodeSegment(string([]byte{v})) != name[i:i+3] {
				return "", false
			}
			out = append(out, v)
			i += 2
		default:
			return "", false
		}
	}
	return string(out), true
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// ObjectStore stores each object as one file under a root directory; key segments
// separated by '/' become sub-directories. strata dev opens a PackStore instead, which
// reads this layout once to move it into packs.
type ObjectStore struct {
	root string
	// durableDirs holds the directories whose entry in their parent this process has
	// fsync'd, so the parent is synced once per directory rather than on every Put.
	durableDirs sync.Map
}

var _ store.ObjectStore = (*ObjectStore)(nil)

// NewObjectStore opens (creating if needed) an object store rooted at dir.
func NewObjectStore(dir string) (*ObjectStore, error) {
	root, err := storeRoot("object store", dir)
	if err != nil {
		return nil, err
	}
	if err := migrateLayout(root); err != nil {
		return nil, fmt.Errorf("local: upgrade object store layout: %w", err)
	}
	return &ObjectStore{root: root}, nil
}

// storeRoot is dir made absolute and created durably, for the store what names.
func storeRoot(what, dir string) (string, error) {
	if dir == "" {
		return "", fmt.Errorf("local: %s directory is empty", what)
	}
	root, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("local: %s directory %q: %w", what, dir, err)
	}
	if err := mkdirAllDurable(root); err != nil {
		return "", fmt.Errorf("local: create %s directory: %w", what, err)
	}
	return root, nil
}

// migrateLayout renames the unencoded layout's names (f_<segment>, d_<segment>) to the
// encoded ones, then writes the layout marker, so later opens skip the walk. It is
// idempotent: a crash leaves legacy names that the next open renames.
func migrateLayout(root string) error {
	marker := filepath.Join(root, layoutMarker)
	if _, err := os.Stat(marker); err == nil {
		return nil
	}
	if err := migrateDir(root); err != nil {
		return err
	}
	if err := os.WriteFile(marker, []byte("2\n"), 0o644); err != nil {
		return err
	}
	return syncDir(root)
}

func migrateDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	changed := false
	for _, e := range entries {
		name := e.Name()
		var target string
		switch {
		case strings.HasPrefix(name, legacyDirPrefix) && e.IsDir():
			target = dirPrefix + encodeSegment(name[len(legacyDirPrefix):])
		case strings.HasPrefix(name, legacyFilePrefix) && e.Type().IsRegular():
			target = filePrefix + encodeSegment(name[len(legacyFilePrefix):])
		case strings.HasPrefix(name, dirPrefix) && e.IsDir():
			if err := migrateDir(filepath.Join(dir, name)); err != nil {
				return err
			}
			continue
		default:
			continue
		}
		from, to := filepath.Join(dir, name), filepath.Join(dir, target)
		if e.IsDir() {
			if err := migrateDir(from); err != nil {
				return err
			}
			if _, err := os.Stat(to); err == nil {
				// A directory of the new layout exists already (an earlier open crashed
				// mid-way): move the children over.
				if err := mergeDir(from, to); err != nil {
					return err
				}
				changed = true
				continue
			}
		}
		if err := os.Rename(from, to); err != nil {
			return err
		}
		changed = true
	}
	if changed {
		return syncDir(dir)
	}
	return nil
}

// mergeDir moves every entry of from (already migrated) into to, then removes from.
func mergeDir(from, to string) error {
	entries, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	for _, e := range entries {
		src, dst := filepath.Join(from, e.Name()), filepath.Join(to, e.Name())
		if e.IsDir() {
			if _, err := os.Stat(dst); err == nil {
				if err := mergeDir(src, dst); err != nil {
					return err
				}
				continue
			}
		}
		if err := os.Rename(src, dst); err != nil {
			return err
		}
	}
	if err := syncDir(to); err != nil {
		return err
	}
	return os.Remove(from)
}

// Put stores data under key if no object has that key: it writes and fsyncs a temporary
// file, hard-links it to the final name (link fails with EEXIST if the name is taken,
// which makes put-if-absent atomic), removes the temporary name and fsyncs the directory.
// A directory has no lifecycle backstop, so expiry is not kept: every object is deleted
// by retention or compaction alone.
func (s *ObjectStore) Put(ctx context.Context, key string, data []byte, expiry store.Expiry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	segs, err := splitKey(key)
	if err != nil {
		return err
	}
	dir, err := s.ensureDir(segs[:len(segs)-1])
	if err != nil {
		return mapErr("put", key, err)
	}
	final := filepath.Join(dir, filePrefix+encodeSegment(segs[len(segs)-1]))
	if _, err := os.Lstat(final); err == nil {
		return mapErr("put", key, fs.ErrExist)
	}
	tmp, err := writeTemp(dir, data)
	if err != nil {
		return mapErr("put", key, err)
	}
	linkErr := os.Link(tmp, final)
	rmErr := os.Remove(tmp)
	if linkErr != nil {
		return mapErr("put", key, linkErr)
	}
	if rmErr != nil {
		return mapErr("put", key, fmt.Errorf("remove temporary file: %w", rmErr))
	}
	if err := syncDir(dir); err != nil {
		return mapErr("put", key, err)
	}
	return nil
}

// writeTemp writes data to a new fsync'd temporary file in dir and returns its path.
func writeTemp(dir string, data []byte) (string, error) {
	f, err := os.CreateTemp(dir, tmpPrefix+"*")
	if err != nil {
		return "", err
	}
	name := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(name)
		return "", err
	}
	return name, nil
}

// GetRange reads exactly length bytes at offset of the object. An invalid key is
// store.ErrNotFound (and ErrInvalidKey), since no object can have it.
func (s *ObjectStore) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if offset < 0 || length < 1 {
		return nil, fmt.Errorf("local: get %q: invalid range (offset %d, length %d): %w", key, offset, length, ErrInvalidRange)
	}
	path, err := s.filePath(key)
	if err != nil {
		// No object can have an invalid key, so it is also not found.
		return nil, fmt.Errorf("%w: %w", store.ErrNotFound, err)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, mapErr("get", key, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, mapErr("get", key, err)
	}
	if offset > fi.Size() || length > fi.Size()-offset {
		return nil, fmt.Errorf("local: get %q: range [%d, %d+%d) past end of object of %d bytes: %w",
			key, offset, offset, length, fi.Size(), ErrInvalidRange)
	}
	buf := make([]byte, length)
	n, err := f.ReadAt(buf, offset)
	if n != len(buf) {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("local: get %q: read %d of %d bytes: %w", key, n, length, err)
	}
	return buf, nil
}

// Keep checks that the object exists: no mark is kept to remove (see Put).
func (s *ObjectStore) Keep(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	path, err := s.filePath(key)
	if err != nil {
		return fmt.Errorf("%w: %w", store.ErrNotFound, err)
	}
	if _, err := os.Lstat(path); err != nil {
		return mapErr("keep", key, err)
	}
	return nil
}

// Delete removes the object; a missing object is not an error.
func (s *ObjectStore) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	path, err := s.filePath(key)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil {
		if err = mapErr("delete", key, err); errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return err
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return mapErr("delete", key, err)
	}
	return nil
}

var _ store.BatchDeleter = (*ObjectStore)(nil)

// DeleteBatch removes keys one by one (a file removal is what a batch would cost too),
// reporting the keys it could not remove in a *store.DeleteBatchError.
func (s *ObjectStore) DeleteBatch(ctx context.Context, keys []string) error {
	var failed []string
	var errs []error
	for _, k := range keys {
		if err := s.Delete(ctx, k); err != nil {
			failed, errs = append(failed, k), append(errs, err)
		}
	}
	if len(failed) > 0 {
		return &store.DeleteBatchError{Failed: failed, Errs: errs}
	}
	return nil
}

// List calls fn for every object whose key starts with prefix, in key order. It walks
// only the directory named by prefix's part up to its last '/'.
func (s *ObjectStore) List(ctx context.Context, prefix string, fn func(store.ObjectInfo) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	dirPart, rest := "", prefix
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		dirPart, rest = prefix[:i+1], prefix[i+1:]
	}
	dir := s.root
	if dirPart != "" {
		for _, seg := range strings.Split(dirPart[:len(dirPart)-1], "/") {
			if validSegment(seg) != nil {
				return nil // no valid key has this prefix
			}
			dir = filepath.Join(dir, dirName(seg))
		}
	}
	return s.walk(ctx, dir, dirPart, rest, fn)
}

// walk lists the objects under dir whose first segment starts with filter. Children are
// visited by seg for files and seg+"/" for directories, which is exactly key order.
func (s *ObjectStore) walk(ctx context.Context, dir, keyPrefix, filter string, fn func(store.ObjectInfo) error) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("local: list %q: %w", keyPrefix, err)
	}
	type child struct {
		seg, sortKey string
		entry        fs.DirEntry
	}
	children := make([]child, 0, len(entries))
	for _, e := range entries {
		name := e.Name()
		var c child
		var ok bool
		switch {
		case strings.HasPrefix(name, filePrefix) && e.Type().IsRegular():
			c = child{entry: e}
			c.seg, ok = decodeSegment(name[len(filePrefix):])
			c.sortKey = c.seg
		case strings.HasPrefix(name, dirPrefix) && e.IsDir():
			c = child{entry: e}
			c.seg, ok = decodeSegment(name[len(dirPrefix):])
			c.sortKey = c.seg + "/"
		case strings.HasPrefix(name, longPrefix) && e.IsDir():
			c = child{entry: e}
			c.seg, ok = longSegment(dir, name)
			c.sortKey = c.seg + "/"
		}
		if !ok {
			continue // temporary files and anything not ours
		}
		if strings.HasPrefix(c.seg, filter) {
			children = append(children, c)
		}
	}
	sort.Slice(children, func(i, j int) bool { return children[i].sortKey < children[j].sortKey })
	for _, c := range children {
		if err := ctx.Err(); err != nil {
			return err
		}
		if c.entry.IsDir() {
			if err := s.walk(ctx, filepath.Join(dir, c.entry.Name()), keyPrefix+c.seg+"/", "", fn); err != nil {
				return err
			}
			continue
		}
		info, err := c.entry.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted since ReadDir
		}
		if err != nil {
			return fmt.Errorf("local: list %q: %w", keyPrefix+c.seg, err)
		}
		if err := fn(store.ObjectInfo{Key: keyPrefix + c.seg, Size: info.Size()}); err != nil {
			return err
		}
	}
	return nil
}

// filePath validates key and returns the path of its file.
func (s *ObjectStore) filePath(key string) (string, error) {
	segs, err := splitKey(key)
	if err != nil {
		return "", err
	}
	parts := make([]string, 0, len(segs)+1)
	parts = append(parts, s.root)
	for _, seg := range segs[:len(segs)-1] {
		parts = append(parts, dirName(seg))
	}
	parts = append(parts, filePrefix+encodeSegment(segs[len(segs)-1]))
	return filepath.Join(parts...), nil
}

// ensureDir creates the directories of segs under the root, making each new directory's
// entry durable by fsyncing its parent.
func (s *ObjectStore) ensureDir(segs []string) (string, error) {
	cur := s.root
	for _, seg := range segs {
		name := dirName(seg)
		next := filepath.Join(cur, name)
		if _, ok := s.durableDirs.Load(next); !ok {
			if err := os.Mkdir(next, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return "", err
			}
			if strings.HasPrefix(name, longPrefix) {
				if err := nameLongDir(cur, name, seg); err != nil {
					return "", err
				}
			}
			// Synced even when it already existed: its creator may not have synced yet.
			if err := syncDir(cur); err != nil {
				return "", err
			}
			s.durableDirs.Store(next, struct{}{})
		}
		cur = next
	}
	return cur, nil
}

// splitKey validates key and returns its segments; a valid key never names a path
// outside the root.
func splitKey(key string) ([]string, error) {
	switch {
	case key == "":
		return nil, fmt.Errorf("%w: empty", ErrInvalidKey)
	case len(key) > maxKeyLen:
		return nil, fmt.Errorf("%w: %d bytes, longer than %d", ErrInvalidKey, len(key), maxKeyLen)
	case strings.HasPrefix(key, "/"):
		return nil, fmt.Errorf("%w: %q is absolute", ErrInvalidKey, key)
	}
	segs := strings.Split(key, "/")
	for _, seg := range segs {
		if err := validSegment(seg); err != nil {
			return nil, fmt.Errorf("%w: %q: %w", ErrInvalidKey, key, err)
		}
	}
	// A directory's segment of any length has a name (dirName); a file's must fit one.
	if last := segs[len(segs)-1]; len(encodeSegment(last)) > maxSegmentLen {
		return nil, fmt.Errorf("%w: %q: last segment of %d bytes on disk, longer than %d", ErrInvalidKey, key, len(encodeSegment(last)), maxSegmentLen)
	}
	return segs, nil
}

// nameLongDir makes the long-form directory name under parent hold seg in its name
// file (written to a temporary file, fsync'd, renamed, the directory fsync'd), unless
// it already holds it: a crash between the directory and its name leaves a directory
// List skips, and the next put into it names it.
func nameLongDir(parent, name, seg string) error {
	dir := filepath.Join(parent, name)
	if got, ok := longSegment(parent, name); ok && got == seg {
		return nil
	}
	tmp, err := writeTemp(dir, []byte(seg))
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, nameFile)); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

func validSegment(seg string) error {
	switch {
	case seg == "":
		return errors.New("empty segment")
	case seg == "." || seg == "..":
		return fmt.Errorf("segment %q", seg)
	case len(seg) > maxSegmentLen:
		return fmt.Errorf("segment of %d bytes, longer than %d", len(seg), maxSegmentLen)
	case strings.IndexByte(seg, 0) >= 0:
		return errors.New("NUL byte")
	}
	return nil
}

// mapErr is the one place os errors become store sentinels.
func mapErr(op, key string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("local: %s %q: %w (%w)", op, key, store.ErrNotFound, err)
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("local: %s %q: %w (%w)", op, key, store.ErrExists, err)
	default:
		return fmt.Errorf("local: %s %q: %w", op, key, err)
	}
}

// mkdirAllDurable is os.MkdirAll that also fsyncs the parent of every directory it
// creates (and of dir itself), so the whole path survives a power loss.
func mkdirAllDurable(dir string) error {
	dir = filepath.Clean(dir)
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
		return syncDir(filepath.Dir(dir))
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := mkdirAllDurable(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return syncDir(filepath.Dir(dir))
}

// syncDir fsyncs a directory so the names created or removed in it are durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
