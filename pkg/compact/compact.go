package compact

import (
	"context"
	crand "crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/store"
)

// Meta is what compaction needs of the metadata tables.
type Meta interface {
	store.TopicStore
	store.IndexSwapper
	Sequencer(ctx context.Context, topic string, partition int32) (store.SeqState, error)
	IndexEntries(ctx context.Context, topic string, partition int32, from int64, limit int) ([]store.IndexEntry, error)
}

// Objects is what compaction needs of the object store.
type Objects interface {
	Put(ctx context.Context, key string, data []byte, expiry store.Expiry) error
	Keep(ctx context.Context, key string) error
	GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error)
	Delete(ctx context.Context, key string) error
	List(ctx context.Context, prefix string, fn func(store.ObjectInfo) error) error
}

// Steps of a pass, named for Job.Hook: a hook returning an error stops the pass there,
// as a crash would.
const (
	StepMarker  = "marker"  // after the garbage marker of a rewrite is written
	StepObject  = "object"  // after the rewrite's segment object is written
	StepSwap    = "swap"    // after the index entries are swapped
	StepCollect = "collect" // after a marker's unreferenced objects are deleted
	StepDone    = "done"    // after a marker is deleted
	StepKeep    = "keep"    // after an expiring entry's object is kept (store.ObjectStore.Keep)
	StepClear   = "clear"   // after an entry's expiry is cleared
)

// Job is one compaction pass's configuration.
type Job struct {
	Meta    Meta
	Objects Objects
	// Clock returns the current time; time.Now when nil.
	Clock func() time.Time
	// ReaderMargin is how long after a rewrite began its replaced objects are kept
	// (default 5m): a reader that read the old entries just before the swap still gets
	// their bytes. A rewrite not swapped within half of it is abandoned.
	ReaderMargin time.Duration
	// MinDirtyRatio is the share of superseded records that makes a partition due
	// (DefaultMinDirtyRatio when 0; a negative value compacts whatever is removable).
	MinDirtyRatio float64
	// MaxRewrites bounds the swaps of one partition in one pass (default 16), so a pass
	// is bounded; the next pass goes on where it stopped.
	MaxRewrites int
	// ChunkEntries bounds the old entries one rewrite replaces (default 32; a swap holds
	// at most store.MaxSwapEntries entries, old and new).
	ChunkEntries int
	// MaxKeeps bounds the index entries of one partition whose expiry one pass clears
	// (default 1000; see keep), so a topic altered from delete to compact is taken away
	// from retention's expiries over as many passes as it needs.
	MaxKeeps int
	// Hook, when set, is called after each step (Step*); an error it returns stops the
	// pass. Crash-point tests use it.
	Hook func(step string) error
}

// Stats counts what one pass did.
type Stats struct {
	PartitionsCompacted int
	Rewrites            int
	RecordsRemoved      int64
	ObjectsDeleted      int
	// EntriesKept counts the index entries whose expiry the pass cleared, ObjectsKept
	// the objects it took away from the lifecycle backstop (keep).
	EntriesKept, ObjectsKept int
	// Requests counts the pass's store requests by kind: Keeps are object tag writes
	// (S3 PutObjectTagging), ExpiryClears index entry updates.
	Gets, Puts, Lists, Deletes, IndexReads, Swaps, Keeps, ExpiryClears int
}

// ErrStopped is what a pass returns when its Hook stopped it.
var ErrStopped = errors.New("compact: stopped by hook")

// chunkEntries is ChunkEntries' default.
const chunkEntries = 32

func (j *Job) now() time.Time {
	if j.Clock != nil {
		return j.Clock()
	}
	return time.Now()
}

func (j *Job) margin() time.Duration {
	if j.ReaderMargin <= 0 {
		return 5 * time.Minute
	}
	return j.ReaderMargin
}

func (j *Job) minDirty() float64 {
	switch {
	case j.MinDirtyRatio < 0:
		return 0
	case j.MinDirtyRatio == 0:
		return DefaultMinDirtyRatio
	}
	return j.MinDirtyRatio
}

func (j *Job) hook(step string) error {
	if j.Hook == nil {
		return nil
	}
	if err := j.Hook(step); err != nil {
		return fmt.Errorf("%w at %s: %w", ErrStopped, step, err)
	}
	return nil
}

// Run makes one pass over every compacted topic. It continues past a failing topic and
// returns the errors joined.
func (j *Job) Run(ctx context.Context) (Stats, error) {
	var st Stats
	names, err := j.Meta.ListTopics(ctx)
	if err != nil {
		return st, fmt.Errorf("compact: list topics: %w", err)
	}
	var errs []error
	for _, name := range names {
		t, err := j.Meta.GetTopic(ctx, name)
		if err != nil {
			errs = append(errs, fmt.Errorf("compact: topic %s: %w", name, err))
			continue
		}
		if !t.Compacted() {
			continue
		}
		if err := j.Topic(ctx, t, &st); err != nil {
			errs = append(errs, err)
		}
	}
	return st, errors.Join(errs...)
}

// Topic compacts every partition of t, then deletes the objects earlier rewrites
// replaced once no reader can hold them.
func (j *Job) Topic(ctx context.Context, t store.Topic, st *Stats) error {
	var errs []error
	for p := int32(0); p < t.Partitions; p++ {
		if err := j.Partition(ctx, t, p, st); err != nil {
			if errors.Is(err, ErrStopped) {
				return err
			}
			errs = append(errs, fmt.Errorf("compact: %s/%d: %w", t.Name, p, err))
		}
	}
	if err := j.collect(ctx, t, st); err != nil {
		if errors.Is(err, ErrStopped) {
			return err
		}
		errs = append(errs, fmt.Errorf("compact: collect %s: %w", t.Name, err))
	}
	return errors.Join(errs...)
}

// partitionView is a partition's entries from its log start and their visible records.
type partitionView struct {
	entries []store.IndexEntry
	recs    [][]segment.Record
}

// entries reads the partition's entries from its log start to its high watermark, or
// to the first offset not indexed yet.
func (j *Job) entries(ctx context.Context, id string, p int32, st *Stats) (partitionView, error) {
	var v partitionView
	seq, err := j.Meta.Sequencer(ctx, id, p)
	if err != nil {
		return v, err
	}
	next := seq.LogStart
	for next < seq.NextOffset {
		page, err := j.Meta.IndexEntries(ctx, id, p, next, 100)
		st.IndexReads++
		if err != nil {
			return v, err
		}
		from := next
		for _, e := range page {
			if e.End() <= next || e.BaseOffset >= seq.NextOffset {
				continue
			}
			if e.BaseOffset > next {
				next = seq.NextOffset // a gap: stop at the unindexed commit
				break
			}
			v.entries = append(v.entries, e)
			next = e.End()
		}
		if next == from || len(page) < 100 {
			break
		}
	}
	return v, nil
}

// records reads the visible records of v's entries.
func (j *Job) records(ctx context.Context, v *partitionView, st *Stats) error {
	v.recs = make([][]segment.Record, len(v.entries))
	return j.readRecords(ctx, v.entries, v.recs, st)
}

// readRecords fills recs with the visible records of entries, one ranged GET per run of
// an object's blocks lying back to back or close (64 KiB).
func (j *Job) readRecords(ctx context.Context, entries []store.IndexEntry, recs [][]segment.Record, st *Stats) error {
	for _, sp := range store.PlanReads(entries, 64<<10, 8<<20) {
		b, err := j.Objects.GetRange(ctx, sp.Key, sp.Offset, sp.Length)
		st.Gets++
		if err != nil {
			return fmt.Errorf("read %s: %w", sp.Key, err)
		}
		for _, i := range sp.Entries {
			e := entries[i]
			from := e.ByteOffset - sp.Offset
			rs, err := segment.AppendBlocksRecords(nil, b[from:from+e.ByteLength:from+e.ByteLength], e.BaseOffset)
			if err == nil && int64(len(rs)) != e.Count {
				err = fmt.Errorf("blocks hold %d records, index says %d", len(rs), e.Count)
			}
			if err == nil {
				rs, err = Visible(e, rs)
			}
			if err != nil {
				return fmt.Errorf("entry %s/%d@%d in %s: %w", e.Topic, e.Partition, e.BaseOffset, e.ObjectKey, err)
			}
			recs[i] = rs
		}
	}
	return nil
}

// Partition compacts one partition of t: it reads the partition, decides, and rewrites
// up to MaxRewrites chunks of the entries below the clean point that hold removed
// records, each its own object, marker and swap.
func (j *Job) Partition(ctx context.Context, t store.Topic, p int32, st *Stats) error {
	id := t.ID()
	v, err := j.entries(ctx, id, p, st)
	if err != nil {
		return err
	}
	if !t.DeletesByTime() {
		if err := j.keep(ctx, v.entries, st); err != nil {
			return err
		}
	}
	if err := j.records(ctx, &v, st); err != nil {
		return err
	}
	d := Decide(v.entries, v.recs, PolicyOf(t, j.now(), j.minDirty()))
	if !d.Due {
		return nil
	}
	maxRewrites := j.MaxRewrites
	if maxRewrites <= 0 {
		maxRewrites = 16
	}
	rewrites := 0
	for i := 0; i < len(v.entries) && v.entries[i].End() <= d.Clean && rewrites < maxRewrites; {
		if !holdsRemoved(v.recs[i], d.Removed) {
			i++
			continue
		}
		chunk := j.ChunkEntries
		if chunk <= 0 || chunk > chunkEntries {
			chunk = chunkEntries
		}
		n := 0
		for n < chunk && i+n < len(v.entries) && v.entries[i+n].End() <= d.Clean {
			n++
		}
		var pieces []Piece
		for ; n > 0; n /= 2 {
			var ok bool
			if pieces, ok = Layout(v.entries[i:i+n], v.recs[i:i+n], d.Removed, store.MaxSwapEntries-n); ok {
				break
			}
		}
		if n == 0 {
			i++ // even alone the entry does not fit one swap: leave it
			continue
		}
		nw, err := j.rewrite(ctx, t, p, v.entries[i:i+n], pieces, st)
		if err != nil {
			if errors.Is(err, store.ErrConflict) {
				return nil // a concurrent pass rewrote the range: the next pass reads its layout
			}
			return err
		}
		if err := j.forgetKeys(ctx, id, p, d.Tombstones, pieces); err != nil {
			return err
		}
		st.RecordsRemoved += removedIn(v.entries[i:i+n], v.recs[i:i+n], pieces)
		rewrites++
		// The swapped entries replace the old ones in the view: a rewrite that stopped
		// removing to fit one swap left the rest of its records in its last pieces, which
		// the next rewrite of this pass takes up.
		recs := make([][]segment.Record, len(pieces))
		for k, pc := range pieces {
			recs[k] = pc.Records
		}
		v.entries = slices.Concat(v.entries[:i], nw, v.entries[i+n:])
		v.recs = slices.Concat(v.recs[:i], recs, v.recs[i+n:])
	}
	if rewrites > 0 {
		st.PartitionsCompacted++
	}
	return nil
}

// keep takes a compact-only topic's entries away from retention's expiries: entries
// written while the topic deleted by time carry an expiry (DynamoDB's TTL deletes them
// after it) and refer to objects marked Expiring (the bucket's lifecycle backstop
// expires them), and the alter to compact changed neither. For each entry with an
// expiry, up to MaxKeeps per partition per pass, it keeps the entry's object
// (store.ObjectStore.Keep, once per object per pass; a hole's or duplicate's bytes are
// never read, so its object is left) and then clears the entry's expiry
// (store.IndexExpiryClearer), conditional on the entry being as read. The expiries are
// the state: an entry still carrying one is work left, so a pass stopped at any point
// is finished by the next, which keeps the object again (idempotent) before clearing.
// An entry a concurrent compaction swapped away (ErrConflict) is left: its replacement
// carries no expiry. A store without IndexExpiryClearer keeps nothing.
func (j *Job) keep(ctx context.Context, entries []store.IndexEntry, st *Stats) error {
	c, ok := j.Meta.(store.IndexExpiryClearer)
	if !ok {
		return nil
	}
	limit := j.MaxKeeps
	if limit <= 0 {
		limit = defaultMaxKeeps
	}
	kept := map[string]bool{}
	for i := range entries {
		e := &entries[i]
		if e.ExpiresAt.IsZero() {
			continue
		}
		if limit == 0 {
			return nil
		}
		limit--
		if !e.Duplicate && !kept[e.ObjectKey] {
			err := j.Objects.Keep(ctx, e.ObjectKey)
			st.Keeps++
			switch {
			case err == nil:
				st.ObjectsKept++
			case !errors.Is(err, store.ErrNotFound):
				return fmt.Errorf("keep %s: %w", e.ObjectKey, err)
			}
			kept[e.ObjectKey] = true
			if err := j.hook(StepKeep); err != nil {
				return err
			}
		}
		err := c.ClearIndexExpiry(ctx, *e)
		st.ExpiryClears++
		switch {
		case err == nil:
			e.ExpiresAt = time.Time{}
			st.EntriesKept++
		case !errors.Is(err, store.ErrConflict):
			return fmt.Errorf("clear the expiry of %s/%d@%d: %w", e.Topic, e.Partition, e.BaseOffset, err)
		}
		if err := j.hook(StepClear); err != nil {
			return err
		}
	}
	return nil
}

// defaultMaxKeeps is MaxKeeps' default.
const defaultMaxKeeps = 1000

// forgetKeys deletes the key index entries of the tombstones the pieces of a swapped
// rewrite no longer hold, when the store keeps a key index. A crash before it leaves an
// entry naming an expired tombstone, which reads as a key never written (store.KeyEntry
// TombstoneExpired) and is deleted by no later pass: harmless.
func (j *Job) forgetKeys(ctx context.Context, id string, p int32, tombstones map[int64][]byte, pieces []Piece) error {
	ks, ok := j.Meta.(store.KeyIndexStore)
	if !ok || len(tombstones) == 0 {
		return nil
	}
	for _, pc := range pieces {
		if pc.Records != nil {
			continue
		}
		for o := pc.Base; o < pc.Base+pc.Count; o++ {
			key, ok := tombstones[o]
			if !ok {
				continue
			}
			if _, err := ks.DeleteKey(ctx, id, p, key, o); err != nil {
				return fmt.Errorf("forget key %q: %w", key, err)
			}
		}
	}
	return nil
}

func holdsRemoved(recs []segment.Record, removed map[int64]bool) bool {
	for _, r := range recs {
		if removed[r.Offset] {
			return true
		}
	}
	return false
}

// removedIn counts the visible records of the old entries the pieces no longer hold.
func removedIn(entries []store.IndexEntry, recs [][]segment.Record, pieces []Piece) int64 {
	var before, after int64
	for _, rs := range recs {
		before += int64(len(rs))
	}
	for _, pc := range pieces {
		after += int64(len(pc.Records))
	}
	return before - after
}

// marker is the body of a garbage marker: the objects a rewrite may leave unreferenced
// (those of the entries it replaces, and its own object should it never be swapped in).
type marker struct {
	Keys []string `json:"keys"`
}

// markerPrefix is where the garbage markers of a topic incarnation live: beside its
// segment objects, under a name retention does not take for one (segment.ObjectID).
func markerPrefix(t store.Topic) string {
	return segment.ObjectPrefix(t.Name, t.Incarnation) + "compact/"
}

// rewrite applies one chunk: marker, object, swap. The marker comes first, so whatever
// step a crash stops at, every object the rewrite may orphan is named for collect.
func (j *Job) rewrite(ctx context.Context, t store.Topic, p int32, old []store.IndexEntry, pieces []Piece, st *Stats) ([]store.IndexEntry, error) {
	began := j.now()
	key := segment.ObjectKey(t.Name, t.Incarnation, ulid.MustNew(ulid.Timestamp(began), crand.Reader))
	keys := []string{key}
	for _, e := range old {
		if !e.Duplicate && !slices.Contains(keys, e.ObjectKey) {
			keys = append(keys, e.ObjectKey)
		}
	}
	body, err := json.Marshal(marker{Keys: keys})
	if err != nil {
		return nil, err
	}
	mkey := markerPrefix(t) + ulid.MustNew(ulid.Timestamp(began), crand.Reader).String()
	if err := j.Objects.Put(ctx, mkey, body, store.Kept); err != nil {
		return nil, fmt.Errorf("write marker: %w", err)
	}
	st.Puts++
	if err := j.hook(StepMarker); err != nil {
		return nil, err
	}
	var obj []byte
	// The rewrite is Expiring as the log's objects are: only when its topic deletes by
	// time and every entry referring to it carries an expiry.
	expiry := store.ExpiryOf(t)
	nw := make([]store.IndexEntry, len(pieces))
	for i, pc := range pieces {
		e := store.IndexEntry{Topic: t.ID(), Partition: p, BaseOffset: pc.Base, Count: pc.Count, ObjectKey: key,
			MaxTimestamp: pc.MaxTimestamp, AppendedAt: pc.AppendedAt, Batch: pc.Batch}
		if t.DeletesByTime() {
			e.ExpiresAt = pc.ExpiresAt
		}
		if pc.Records == nil {
			e.Duplicate = true
		} else {
			start := len(obj)
			if obj, err = segment.AppendBlock(obj, pc.Records); err != nil {
				return nil, fmt.Errorf("encode the block at %d: %w", pc.Base, err)
			}
			e.ByteOffset, e.ByteLength = int64(start), int64(len(obj)-start)
			if e.ExpiresAt.IsZero() {
				expiry = store.Kept
			}
		}
		nw[i] = e
	}
	if len(obj) > 0 {
		if err := j.Objects.Put(ctx, key, obj, expiry); err != nil {
			return nil, fmt.Errorf("write %s: %w", key, err)
		}
		st.Puts++
	}
	if err := j.hook(StepObject); err != nil {
		return nil, err
	}
	if j.now().Sub(began) > j.margin()/2 {
		return nil, fmt.Errorf("compact: rewrite of %s/%d@%d took longer than half the reader margin; abandoned", t.Name, p, old[0].BaseOffset)
	}
	if err := j.Meta.SwapIndexEntries(ctx, t.ID(), p, old, nw); err != nil {
		return nil, err
	}
	st.Swaps++
	st.Rewrites++
	return nw, j.hook(StepSwap)
}

// collect deletes, for every marker older than the reader margin, the objects it names
// that no index entry of the topic refers to, then the marker. An object still referred
// to (a shared group-commit object whose other partitions keep blocks in it, or the
// replaced objects of a rewrite that was never swapped) stays: the rewrite that drops
// its last reference writes a marker of its own.
func (j *Job) collect(ctx context.Context, t store.Topic, st *Stats) error {
	cutoff := j.now().Add(-j.margin())
	prefix := markerPrefix(t)
	var due []string
	err := j.Objects.List(ctx, prefix, func(o store.ObjectInfo) error {
		id, err := ulid.ParseStrict(o.Key[len(prefix):])
		if err == nil && ulid.Time(id.Time()).Before(cutoff) {
			due = append(due, o.Key)
		}
		return nil
	})
	st.Lists++
	if err != nil || len(due) == 0 {
		return err
	}
	refs, err := j.references(ctx, t, st)
	if err != nil {
		return err
	}
	for _, mk := range due {
		info, err := j.objectSize(ctx, mk)
		if err != nil {
			return err
		}
		var m marker
		if info > 0 {
			b, err := j.Objects.GetRange(ctx, mk, 0, info)
			st.Gets++
			if err != nil {
				return err
			}
			if err := json.Unmarshal(b, &m); err != nil {
				return fmt.Errorf("marker %s: %w", mk, err)
			}
		}
		for _, k := range m.Keys {
			if refs[k] {
				continue
			}
			if err := j.Objects.Delete(ctx, k); err != nil {
				return err
			}
			st.Deletes++
			st.ObjectsDeleted++
		}
		if err := j.hook(StepCollect); err != nil {
			return err
		}
		if err := j.Objects.Delete(ctx, mk); err != nil {
			return err
		}
		st.Deletes++
		if err := j.hook(StepDone); err != nil {
			return err
		}
	}
	return nil
}

// objectSize is the size of the object key (0 when it is gone), read by listing it.
func (j *Job) objectSize(ctx context.Context, key string) (int64, error) {
	var size int64
	err := j.Objects.List(ctx, key, func(o store.ObjectInfo) error {
		if o.Key == key {
			size = o.Size
		}
		return nil
	})
	return size, err
}

// references is the set of objects the topic's index entries refer to, all partitions,
// read once per pass that has markers due.
func (j *Job) references(ctx context.Context, t store.Topic, st *Stats) (map[string]bool, error) {
	refs := map[string]bool{}
	for p := int32(0); p < t.Partitions; p++ {
		next := int64(0)
		for {
			page, err := j.Meta.IndexEntries(ctx, t.ID(), p, next, 100)
			st.IndexReads++
			if err != nil {
				return nil, err
			}
			from := next
			for _, e := range page {
				if !e.Duplicate {
					refs[e.ObjectKey] = true
				}
				next = max(next, e.End())
			}
			if next == from || len(page) < 100 {
				break
			}
		}
	}
	return refs, nil
}
