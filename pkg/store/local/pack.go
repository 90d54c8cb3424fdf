package local

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/btree"

	"github.com/stratalog/strata/pkg/store"
)

// ErrCorruptPack is returned by OpenPackStore when a pack other than the newest holds a
// record that does not check: every pack but the newest was synced whole before the next
// was made, so only the newest may end in a torn record (which open cuts off).
var ErrCorruptPack = errors.New("local: corrupt pack file")

// ErrPackStoreFailed is returned by every call after a sync or a write the store could
// not undo failed: the file's state on disk is then unknown, so the store stops rather
// than acknowledge what may not be durable. Reopening it rescans the packs.
var ErrPackStoreFailed = errors.New("local: pack store failed")

// DefaultPackSize is the size past which the store starts a new pack.
const DefaultPackSize = 64 << 20

// A record in a pack is a header, the key and the data:
//
//	[0:4]   magic
//	[4]     state: recordLive, or recordDead once deleted
//	[5:8]   zero
//	[8:12]  key length
//	[12:20] data length
//	[20:24] CRC-32C of the data
//	[24:28] CRC-32C of the header's other bytes than the state, and of the key
//
// The state is outside the header's checksum so that Delete can flip it in place.
const (
	packMagic     = 0x314b5053 // "SPK1"
	packHeaderLen = 28
	recordLive    = 1
	recordDead    = 0
	packPrefix    = "pack-"
	packLockName  = "packs.lock"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// PackStore is store.ObjectStore over append-only pack files in one directory. A Put
// appends one record to the open pack and syncs that file once, so it creates no file
// and no directory entry; concurrent Puts share syncs. An index in memory, rebuilt by
// scanning the packs when the store is opened, maps keys to records. Delete marks its
// record dead in place (one byte, synced) and punches the data out of the file where the
// file system can; a pack whose records are all dead is removed. One process at a time
// may open a directory (a lock file says so).
type PackStore struct {
	dir      string
	packSize int64
	lock     *os.File

	mu      sync.Mutex
	objs    *btree.BTreeG[*packed]
	pending map[string]bool // keys being written, taken for put-if-absent
	packs   map[uint64]*pack
	active  *pack
	failed  error
	closed  bool
}

var (
	_ store.ObjectStore  = (*PackStore)(nil)
	_ store.BatchDeleter = (*PackStore)(nil)
)

// pack is one pack file.
type pack struct {
	id   uint64
	path string
	f    *os.File
	// size and live are guarded by the store's mu: the bytes appended, and the records
	// not deleted (counting those being written, so the pack is not removed under them).
	size int64
	live int
	// gen counts the writes made to the file; syncedGen, under syncMu, those a sync
	// made durable, so a caller whose write another's sync covered does not sync again.
	gen       atomic.Uint64
	syncMu    sync.Mutex
	syncedGen uint64
	// rw is held shared by reads and exclusively to punch data out or close the file.
	rw     sync.RWMutex
	closed bool
}

// packed is where an object's record is.
type packed struct {
	key  string
	p    *pack
	off  int64 // the record's first byte
	size int64 // the data's length
	dead atomic.Bool
}

func (o *packed) dataOff() int64 { return o.off + packHeaderLen + int64(len(o.key)) }

// PackOption configures OpenPackStore.
type PackOption func(*PackStore)

// WithPackSize sets the size past which a new pack is started (DefaultPackSize).
func WithPackSize(n int64) PackOption { return func(s *PackStore) { s.packSize = n } }

// OpenPackStore opens (creating if needed) a pack store in dir. It scans the packs,
// cutting a torn record off the newest, removes packs with no live record, and moves
// the objects of an object store of files in dir (ObjectStore, the earlier layout) into
// packs. Close releases it.
func OpenPackStore(ctx context.Context, dir string, opts ...PackOption) (*PackStore, error) {
	root, err := storeRoot("pack store", dir)
	if err != nil {
		return nil, err
	}
	s := &PackStore{
		dir:      root,
		packSize: DefaultPackSize,
		objs:     btree.NewG(32, func(a, b *packed) bool { return a.key < b.key }),
		pending:  map[string]bool{},
		packs:    map[uint64]*pack{},
	}
	for _, o := range opts {
		o(s)
	}
	if s.lock, err = lockDir(filepath.Join(root, packLockName)); err != nil {
		return nil, fmt.Errorf("local: pack store %s: %w", root, err)
	}
	if err := s.load(); err != nil {
		_ = s.Close()
		return nil, err
	}
	if err := s.adoptFiles(ctx); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("local: move objects into packs: %w", err)
	}
	return s, nil
}

// load scans every pack in id order, then opens the newest for appends (or a new one).
func (s *PackStore) load() error {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("local: pack store: %w", err)
	}
	var ids []uint64
	for _, e := range entries {
		if id, ok := packID(e.Name()); ok && e.Type().IsRegular() {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for i, id := range ids {
		p, err := s.openPack(id, os.O_RDWR)
		if err != nil {
			return err
		}
		if err := s.scan(p, i == len(ids)-1); err != nil {
			return err
		}
	}
	if n := len(ids); n > 0 {
		// A process killed before its sync leaves written pages the file system still
		// holds, and the scan may have cut a torn record off: sync the newest pack before
		// anything in it is served as durable, or a pack is started after it.
		newest := s.packs[ids[n-1]]
		if err := newest.f.Sync(); err != nil {
			return fmt.Errorf("local: sync pack %s: %w", newest.path, err)
		}
		if newest.size < s.packSize {
			s.active = newest
		}
	}
	if s.active == nil {
		if err := s.startPack(); err != nil {
			return err
		}
	}
	for _, p := range s.packs {
		if p.live == 0 && p != s.active {
			s.removePack(p)
		}
	}
	return nil
}

func packName(id uint64) string { return fmt.Sprintf("%s%016x", packPrefix, id) }

func packID(name string) (uint64, bool) {
	hex, ok := strings.CutPrefix(name, packPrefix)
	if !ok || len(hex) != 16 {
		return 0, false
	}
	id, err := strconv.ParseUint(hex, 16, 64)
	return id, err == nil && packName(id) == name
}

func (s *PackStore) openPack(id uint64, flag int) (*pack, error) {
	path := filepath.Join(s.dir, packName(id))
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		return nil, fmt.Errorf("local: open pack: %w", err)
	}
	p := &pack{id: id, path: path, f: f}
	s.packs[id] = p
	return p, nil
}

// startPack makes a new, empty pack the one Puts append to. The caller holds mu, or is
// opening the store.
func (s *PackStore) startPack() error {
	var id uint64 = 1
	for have := range s.packs {
		id = max(id, have+1)
	}
	p, err := s.openPack(id, os.O_RDWR|os.O_CREATE|os.O_EXCL)
	if err != nil {
		return err
	}
	if err := syncDir(s.dir); err != nil {
		return err
	}
	s.active = p
	return nil
}

// scan reads p's records into the index. Only the newest pack may end in a torn record
// (written but never synced whole when its process stopped); it is cut off there, and
// only the newest pack's data is read back to check it.
func (s *PackStore) scan(p *pack, newest bool) error {
	fi, err := p.f.Stat()
	if err != nil {
		return fmt.Errorf("local: pack %s: %w", p.path, err)
	}
	end := fi.Size()
	var hdr [packHeaderLen]byte
	off := int64(0)
	for off < end {
		o, ok, err := readRecord(p.f, off, end, hdr[:], newest)
		if err != nil {
			return fmt.Errorf("local: pack %s at %d: %w", p.path, off, err)
		}
		if !ok {
			if !newest {
				return fmt.Errorf("%w: %s: no whole record at offset %d of %d", ErrCorruptPack, p.path, off, end)
			}
			if err := p.f.Truncate(off); err != nil {
				return fmt.Errorf("local: cut torn record off pack %s: %w", p.path, err)
			}
			break
		}
		next := o.dataOff() + o.size
		if hdr[4] == recordLive {
			o.p = p
			if old, had := s.objs.ReplaceOrInsert(o); had {
				// Put-if-absent never leaves two live records of a key; if one is found
				// anyway the later is the object, and the earlier is marked dead.
				old.p.live--
				if _, err := old.p.f.WriteAt([]byte{recordDead}, old.off+4); err != nil {
					return fmt.Errorf("local: pack %s: %w", old.p.path, err)
				}
			}
			p.live++
		}
		off = next
	}
	p.size = off
	return nil
}

// readRecord reads the record at off of f, which is end bytes long; ok is false when no
// whole record with a valid header (and, if checkData, valid live data) starts there.
func readRecord(f *os.File, off, end int64, hdr []byte, checkData bool) (*packed, bool, error) {
	if end-off < packHeaderLen {
		return nil, false, nil
	}
	if _, err := f.ReadAt(hdr, off); err != nil {
		return nil, false, err
	}
	keyLen := int64(binary.LittleEndian.Uint32(hdr[8:12]))
	dataLen := binary.LittleEndian.Uint64(hdr[12:20])
	if binary.LittleEndian.Uint32(hdr[0:4]) != packMagic || (hdr[4] != recordLive && hdr[4] != recordDead) ||
		keyLen == 0 || keyLen > maxKeyLen || dataLen > uint64(end-off-packHeaderLen-keyLen) {
		return nil, false, nil
	}
	key := make([]byte, keyLen)
	if _, err := f.ReadAt(key, off+packHeaderLen); err != nil {
		return nil, false, err
	}
	if headerCRC(hdr, key) != binary.LittleEndian.Uint32(hdr[24:28]) {
		return nil, false, nil
	}
	o := &packed{key: string(key), off: off, size: int64(dataLen)}
	if checkData && hdr[4] == recordLive {
		crc, err := dataCRC(f, o.dataOff(), o.size)
		if err != nil {
			return nil, false, err
		}
		if crc != binary.LittleEndian.Uint32(hdr[20:24]) {
			return nil, false, nil
		}
	}
	return o, true, nil
}

func headerCRC(hdr, key []byte) uint32 {
	c := crc32.Update(0, castagnoli, hdr[0:4])
	c = crc32.Update(c, castagnoli, hdr[8:24])
	return crc32.Update(c, castagnoli, key)
}

func dataCRC(f *os.File, off, n int64) (uint32, error) {
	h := crc32.New(castagnoli)
	if _, err := io.Copy(h, io.NewSectionReader(f, off, n)); err != nil {
		return 0, err
	}
	return h.Sum32(), nil
}

// usable is nil unless the store is closed or failed. The caller holds mu.
func (s *PackStore) usable() error {
	switch {
	case s.closed:
		return errors.New("local: pack store is closed")
	case s.failed != nil:
		return s.failed
	}
	return nil
}

// fail records err as the store's failure; every later call returns it. The caller
// holds mu.
func (s *PackStore) fail(err error) error {
	if s.failed == nil {
		s.failed = fmt.Errorf("%w: %w", ErrPackStoreFailed, err)
	}
	return s.failed
}

// Put appends the object's record to the open pack and syncs it; the key is taken for
// the write's length, so a second Put of it meanwhile is ErrExists. A pack store has no
// lifecycle backstop, so expiry is not kept (see ObjectStore.Put).
func (s *PackStore) Put(ctx context.Context, key string, data []byte, _ store.Expiry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := splitKey(key); err != nil {
		return err
	}
	hdr := make([]byte, packHeaderLen, packHeaderLen+len(key))
	binary.LittleEndian.PutUint32(hdr[0:4], packMagic)
	hdr[4] = recordLive
	binary.LittleEndian.PutUint32(hdr[8:12], uint32(len(key)))
	binary.LittleEndian.PutUint64(hdr[12:20], uint64(len(data)))
	binary.LittleEndian.PutUint32(hdr[20:24], crc32.Checksum(data, castagnoli))
	binary.LittleEndian.PutUint32(hdr[24:28], headerCRC(hdr, []byte(key)))
	hdr = append(hdr, key...)

	s.mu.Lock()
	if err := s.usable(); err != nil {
		s.mu.Unlock()
		return err
	}
	if s.pending[key] || s.objs.Has(&packed{key: key}) {
		s.mu.Unlock()
		return fmt.Errorf("local: put %q: %w", key, store.ErrExists)
	}
	if err := s.roomFor(int64(len(hdr) + len(data))); err != nil {
		s.mu.Unlock()
		return fmt.Errorf("local: put %q: %w", key, err)
	}
	p := s.active
	o := &packed{key: key, p: p, off: p.size, size: int64(len(data))}
	if err := writeRecord(p.f, o.off, hdr, data); err != nil {
		if terr := p.f.Truncate(o.off); terr != nil {
			err = s.fail(fmt.Errorf("write pack %s: %w; cut it back: %w", p.path, err, terr))
		}
		s.mu.Unlock()
		return fmt.Errorf("local: put %q: %w", key, err)
	}
	p.size = o.dataOff() + o.size
	p.live++
	s.pending[key] = true
	gen := p.gen.Add(1)
	s.mu.Unlock()

	err := p.syncThrough(gen)

	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pending, key)
	if err != nil {
		p.live--
		return fmt.Errorf("local: put %q: %w", key, s.fail(err))
	}
	s.objs.ReplaceOrInsert(o)
	return nil
}

func writeRecord(f *os.File, off int64, hdr, data []byte) error {
	if _, err := f.WriteAt(hdr, off); err != nil {
		return err
	}
	_, err := f.WriteAt(data, off+int64(len(hdr)))
	return err
}

// roomFor starts a new pack when a record of n bytes would take the open one past the
// pack size (unless it is empty). The open pack is synced whole first, so that every
// pack but the newest is whole on disk. The caller holds mu.
func (s *PackStore) roomFor(n int64) error {
	old := s.active
	if old.size == 0 || old.size+n <= s.packSize {
		return nil
	}
	if err := old.syncThrough(old.gen.Load()); err != nil {
		return s.fail(err)
	}
	if err := s.startPack(); err != nil {
		return err
	}
	if old.live == 0 {
		s.removePack(old)
	}
	return nil
}

// syncThrough makes p's writes up to the gen-th durable, syncing the file unless a sync
// that began after that write already did.
func (p *pack) syncThrough(gen uint64) error {
	p.syncMu.Lock()
	defer p.syncMu.Unlock()
	if p.syncedGen >= gen {
		return nil
	}
	target := p.gen.Load()
	if err := p.f.Sync(); err != nil {
		return fmt.Errorf("sync pack %s: %w", p.path, err)
	}
	p.syncedGen = target
	return nil
}

// GetRange reads the range from the object's record; the pack stays open while it does.
func (s *PackStore) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if offset < 0 || length < 1 {
		return nil, fmt.Errorf("local: get %q: invalid range (offset %d, length %d): %w", key, offset, length, ErrInvalidRange)
	}
	o, err := s.lookup(key)
	if err != nil {
		return nil, fmt.Errorf("local: get %q: %w", key, err)
	}
	if offset > o.size || length > o.size-offset {
		return nil, fmt.Errorf("local: get %q: range [%d, %d+%d) past end of object of %d bytes: %w",
			key, offset, offset, length, o.size, ErrInvalidRange)
	}
	o.p.rw.RLock()
	defer o.p.rw.RUnlock()
	if o.p.closed || o.dead.Load() {
		return nil, fmt.Errorf("local: get %q: %w", key, store.ErrNotFound)
	}
	buf := make([]byte, length)
	if n, err := o.p.f.ReadAt(buf, o.dataOff()+offset); n != len(buf) {
		return nil, fmt.Errorf("local: get %q: read %d of %d bytes: %w", key, n, length, err)
	}
	return buf, nil
}

// lookup is the live object key, or store.ErrNotFound.
func (s *PackStore) lookup(key string) (*packed, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return nil, err
	}
	o, ok := s.objs.Get(&packed{key: key})
	if !ok {
		return nil, store.ErrNotFound
	}
	return o, nil
}

// Keep checks that the object exists: no mark is kept to remove (see Put).
func (s *PackStore) Keep(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := s.lookup(key); err != nil {
		return fmt.Errorf("local: keep %q: %w", key, err)
	}
	return nil
}

// Delete marks the object's record dead and syncs its pack; a missing object is not an
// error.
func (s *PackStore) Delete(ctx context.Context, key string) error {
	err := s.DeleteBatch(ctx, []string{key})
	if be := (*store.DeleteBatchError)(nil); errors.As(err, &be) && len(be.Errs) == 1 {
		return be.Errs[0]
	}
	return err
}

// DeleteBatch marks every key's record dead, syncs each pack once, punches the records'
// data out and removes the packs left with no live record. A key it could not delete is
// reported in a *store.DeleteBatchError.
func (s *PackStore) DeleteBatch(ctx context.Context, keys []string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var (
		failed []string
		errs   []error
		marked []*packed
		gens   = map[*pack]uint64{}
	)
	s.mu.Lock()
	if err := s.usable(); err != nil {
		s.mu.Unlock()
		return err
	}
	for _, k := range keys {
		o, ok := s.objs.Get(&packed{key: k})
		if !ok {
			continue
		}
		if _, err := o.p.f.WriteAt([]byte{recordDead}, o.off+4); err != nil {
			failed, errs = append(failed, k), append(errs, fmt.Errorf("local: delete %q: %w", k, err))
			continue
		}
		s.objs.Delete(o)
		o.dead.Store(true)
		gens[o.p] = o.p.gen.Add(1)
		marked = append(marked, o)
	}
	s.mu.Unlock()

	synced := map[*pack]error{}
	for p, g := range gens {
		synced[p] = p.syncThrough(g)
	}
	for _, o := range marked {
		if synced[o.p] == nil {
			o.p.punch(o.dataOff(), o.size)
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range marked {
		if err := synced[o.p]; err != nil {
			// The mark may or may not be on disk: stop, as for a failed Put's sync.
			failed, errs = append(failed, o.key), append(errs, fmt.Errorf("local: delete %q: %w", o.key, s.fail(err)))
			continue
		}
		o.p.live--
		if o.p.live == 0 && o.p != s.active && s.packs[o.p.id] == o.p {
			s.removePack(o.p)
		}
	}
	if len(failed) > 0 {
		return &store.DeleteBatchError{Failed: failed, Errs: errs}
	}
	return nil
}

// punch gives the file system back the blocks of a dead record's data, where it can.
func (p *pack) punch(off, n int64) {
	if n == 0 {
		return
	}
	p.rw.Lock()
	defer p.rw.Unlock()
	if !p.closed {
		punchHole(p.f, off, n)
	}
}

// removePack closes and deletes a pack with no live record. Its removal need not be
// durable: a pack that comes back after a crash holds dead records only and is removed
// again on open. The caller holds mu, or is opening the store.
func (s *PackStore) removePack(p *pack) {
	delete(s.packs, p.id)
	p.rw.Lock()
	p.closed = true
	_ = p.f.Close()
	p.rw.Unlock()
	_ = os.Remove(p.path)
}

// List calls fn for every object whose key starts with prefix, in key order, from the
// index as it was when List was called.
func (s *PackStore) List(ctx context.Context, prefix string, fn func(store.ObjectInfo) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var infos []store.ObjectInfo
	s.mu.Lock()
	if err := s.usable(); err != nil {
		s.mu.Unlock()
		return err
	}
	s.objs.AscendGreaterOrEqual(&packed{key: prefix}, func(o *packed) bool {
		if !strings.HasPrefix(o.key, prefix) {
			return false
		}
		infos = append(infos, store.ObjectInfo{Key: o.key, Size: o.size})
		return true
	})
	s.mu.Unlock()
	for _, oi := range infos {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(oi); err != nil {
			return err
		}
	}
	return nil
}

// Close closes the packs and releases the directory; later calls fail.
func (s *PackStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for _, p := range s.packs {
		p.rw.Lock()
		p.closed = true
		errs = append(errs, p.f.Close())
		p.rw.Unlock()
	}
	if s.lock != nil {
		errs = append(errs, s.lock.Close())
	}
	return errors.Join(errs...)
}

// legacyPrefixes are the names an object store of files (ObjectStore) makes in its root.
var legacyPrefixes = []string{filePrefix, dirPrefix, longPrefix, tmpPrefix, legacyFilePrefix, legacyDirPrefix, layoutMarker}

// adoptFiles moves the objects of an ObjectStore rooted in the same directory into packs,
// each put (and synced) before its file is deleted, then removes that layout's
// directories. A crash part-way leaves objects in both, and the next open finishes.
func (s *PackStore) adoptFiles(ctx context.Context) error {
	legacy, err := legacyNames(s.dir)
	if err != nil || len(legacy) == 0 {
		return err
	}
	files, err := NewObjectStore(s.dir)
	if err != nil {
		return err
	}
	var infos []store.ObjectInfo
	if err := files.List(ctx, "", func(oi store.ObjectInfo) error {
		infos = append(infos, oi)
		return nil
	}); err != nil {
		return err
	}
	for _, oi := range infos {
		var data []byte
		if oi.Size > 0 {
			if data, err = files.GetRange(ctx, oi.Key, 0, oi.Size); err != nil {
				return err
			}
		}
		if err := s.Put(ctx, oi.Key, data, store.Kept); err != nil && !errors.Is(err, store.ErrExists) {
			return err
		}
		if err := files.Delete(ctx, oi.Key); err != nil {
			return err
		}
	}
	// Read again: opening the store of files renamed its oldest layout's names.
	if legacy, err = legacyNames(s.dir); err != nil {
		return err
	}
	for _, name := range legacy {
		if err := os.RemoveAll(filepath.Join(s.dir, name)); err != nil {
			return err
		}
	}
	return syncDir(s.dir)
}

// legacyNames lists the entries of dir that an object store of files made.
func legacyNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if slices.ContainsFunc(legacyPrefixes, func(pre string) bool { return strings.HasPrefix(e.Name(), pre) }) {
			names = append(names, e.Name())
		}
	}
	return names, nil
}
