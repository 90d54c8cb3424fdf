package storetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

// memStore is a minimal in-memory reference implementation of both interfaces, used to
// check that the suite passes a correct store and, with bugs injected, fails broken ones.
type memStore struct {
	bug string // name of the injected bug, "" for none

	calls       atomic.Int64 // store calls made, for the suite's request budget
	mu          sync.Mutex
	objects     map[string][]byte
	expiring    map[string]bool // objects put Expiring and not kept since
	topics      map[string]store.Topic
	index       map[tpKey]map[int64]store.IndexEntry
	idem        map[idemKey]store.IdempotencyRecord
	claims      map[string]store.RequestClaim
	seq         map[tpKey]store.SeqState
	assignments map[gtp]store.Assignment
	commits     map[gtp]store.CommitRow
	groups      map[string]store.GroupConfig
	members     map[string]map[string]store.Member
	graveyard   map[string]store.DeletedTopic // deleted incarnations by ID (memstore_groupadmin_test.go)
	lag         map[string][]store.LagSeries
	parked      map[parkedMemKey]store.ParkedKey
	batches     map[string]int64                         // topic commit topic → batches committed
	fences      map[string]map[string]store.RequestFence // topic → fenceID(key, attempt) → fence
	barriers    map[string]store.Barrier                 // group → barrier (memstore_barrier_test.go)
	keyIndex    map[string]store.KeyEntry                // made on first use (memstore_keyindex_test.go)
	dirty       map[tpKey]store.DirtyCounter             // made on first use (memstore_dirty_test.go)
}

type tpKey struct {
	topic     string
	partition int32
}

type idemKey struct {
	key       string
	partition int32
}

func newMemStore(bug string) *memStore {
	return &memStore{
		bug:         bug,
		objects:     map[string][]byte{},
		topics:      map[string]store.Topic{},
		index:       map[tpKey]map[int64]store.IndexEntry{},
		idem:        map[idemKey]store.IdempotencyRecord{},
		claims:      map[string]store.RequestClaim{},
		seq:         map[tpKey]store.SeqState{},
		assignments: map[gtp]store.Assignment{},
		commits:     map[gtp]store.CommitRow{},
		groups:      map[string]store.GroupConfig{},
		members:     map[string]map[string]store.Member{},
		graveyard:   map[string]store.DeletedTopic{},
		lag:         map[string][]store.LagSeries{},
		batches:     map[string]int64{},
		fences:      map[string]map[string]store.RequestFence{},
	}
}

// lock counts a store call and takes the store's lock.
func (s *memStore) lock() {
	s.calls.Add(1)
	s.mu.Lock()
}

// racy widens the window between a check and its write, for the check-then-act bugs.
func (s *memStore) racy() {
	s.mu.Unlock()
	time.Sleep(10 * time.Millisecond)
	s.mu.Lock()
}

func (s *memStore) Put(_ context.Context, key string, data []byte, expiry store.Expiry) error {
	s.lock()
	defer s.mu.Unlock()
	_, taken := s.objects[key]
	if s.bug == "ObjectPutRace" {
		s.racy()
	}
	if taken && s.bug != "ObjectPutOverwrites" {
		return store.ErrExists
	}
	s.objects[key] = slices.Clone(data)
	if s.expiring == nil {
		s.expiring = map[string]bool{}
	}
	s.expiring[key] = expiry == store.Expiring && s.bug != "ObjectExpiryDropped"
	return nil
}

func (s *memStore) Keep(_ context.Context, key string) error {
	s.lock()
	defer s.mu.Unlock()
	if _, ok := s.objects[key]; !ok {
		return store.ErrNotFound
	}
	if s.bug != "KeepKeepsMark" {
		delete(s.expiring, key)
	}
	return nil
}

func (s *memStore) ObjectExpiry(_ context.Context, key string) (store.Expiry, error) {
	s.lock()
	defer s.mu.Unlock()
	if _, ok := s.objects[key]; !ok {
		return store.Kept, store.ErrNotFound
	}
	if s.expiring[key] {
		return store.Expiring, nil
	}
	return store.Kept, nil
}

func (s *memStore) ClearIndexExpiry(_ context.Context, e store.IndexEntry) error {
	s.lock()
	defer s.mu.Unlock()
	part := s.index[s.partitionKey(e.Topic, e.Partition)]
	got, ok := part[e.BaseOffset]
	if s.bug != "ClearExpiryBlind" && (!ok || !store.SameBlock(got, e)) {
		return fmt.Errorf("memstore: clear expiry: entry @%d changed: %w", e.BaseOffset, store.ErrConflict)
	}
	if !ok {
		got = e
	}
	got.ExpiresAt = time.Time{}
	if part == nil {
		part = map[int64]store.IndexEntry{}
		s.index[s.partitionKey(e.Topic, e.Partition)] = part
	}
	part[e.BaseOffset] = got
	return nil
}

func (s *memStore) GetRange(_ context.Context, key string, offset, length int64) ([]byte, error) {
	s.lock()
	defer s.mu.Unlock()
	data, ok := s.objects[key]
	if !ok {
		return nil, store.ErrNotFound
	}
	size := int64(len(data))
	if s.bug == "ObjectShortRead" && offset >= 0 && length > 0 && offset < size {
		return slices.Clone(data[offset:min(size, offset+length)]), nil
	}
	if offset < 0 || length < 1 || offset > size || length > size-offset {
		return nil, fmt.Errorf("range [%d, +%d) of a %d-byte object", offset, length, size)
	}
	return slices.Clone(data[offset : offset+length]), nil
}

func (s *memStore) Delete(_ context.Context, key string) error {
	s.lock()
	defer s.mu.Unlock()
	if _, ok := s.objects[key]; !ok && s.bug == "ObjectDeleteMissingFails" {
		return store.ErrNotFound
	}
	delete(s.objects, key)
	return nil
}

func (s *memStore) DeleteBatch(_ context.Context, keys []string) error {
	s.lock()
	defer s.mu.Unlock()
	for _, key := range keys {
		if s.bug == "ObjectDeleteBatchPrefix" {
			for k := range s.objects {
				if strings.HasPrefix(k, key) {
					delete(s.objects, k)
				}
			}
		}
		delete(s.objects, key)
	}
	return nil
}

func (s *memStore) List(_ context.Context, prefix string, fn func(store.ObjectInfo) error) error {
	s.lock()
	var infos []store.ObjectInfo
	for k, v := range s.objects {
		match := strings.HasPrefix(k, prefix)
		if s.bug == "ObjectListPathPrefix" && prefix != "" && !strings.HasSuffix(prefix, "/") {
			// Treats the prefix as a path: "a" matches "a" and "a/...", not "a-c".
			match = k == prefix || strings.HasPrefix(k, prefix+"/")
		}
		if match {
			infos = append(infos, store.ObjectInfo{Key: k, Size: int64(len(v))})
		}
	}
	s.mu.Unlock()
	sortKey := func(k string) string { return k }
	if s.bug == "ObjectListDirOrder" {
		// A directory walk: "a/..." sorts as "a" before "a-c".
		sortKey = func(k string) string { return strings.ReplaceAll(k, "/", "\x00") }
	}
	slices.SortFunc(infos, func(a, b store.ObjectInfo) int { return strings.Compare(sortKey(a.Key), sortKey(b.Key)) })
	for _, oi := range infos {
		if err := fn(oi); err != nil && s.bug != "ObjectListIgnoresError" {
			return err
		}
	}
	return nil
}

func (s *memStore) CreateTopic(_ context.Context, t store.Topic) error {
	s.lock()
	defer s.mu.Unlock()
	_, taken := s.topics[t.Name]
	if s.bug == "CreateTopicRace" {
		s.racy()
	}
	if taken {
		return store.ErrExists
	}
	s.topics[t.Name] = t
	return nil
}

func (s *memStore) GetTopic(_ context.Context, name string) (store.Topic, error) {
	s.lock()
	defer s.mu.Unlock()
	t, ok := s.topics[name]
	if !ok {
		return store.Topic{}, store.ErrNotFound
	}
	return t, nil
}

func (s *memStore) ListTopics(context.Context) ([]string, error) {
	s.lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.topics))
	for n := range s.topics {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

// storeTime is what a backend keeping milliseconds returns.
func (s *memStore) storeTime(t time.Time) time.Time {
	if t.IsZero() {
		if s.bug == "ZeroTimeNotKept" {
			return time.UnixMilli(0) // "0 means none" stored, read back as 1970
		}
		return time.Time{}
	}
	return time.UnixMilli(t.UnixMilli())
}

func (s *memStore) storeEntry(e store.IndexEntry) store.IndexEntry {
	e.MaxTimestamp, e.AppendedAt, e.ExpiresAt = s.storeTime(e.MaxTimestamp), s.storeTime(e.AppendedAt), s.storeTime(e.ExpiresAt)
	return e
}

func (s *memStore) partitionKey(topic string, partition int32) tpKey {
	if s.bug == "IndexKeyCollides" {
		// A "topic#partition" key built without the separator: "t1"/0 meets "t"/10.
		return tpKey{topic: fmt.Sprintf("%s%d", topic, partition)}
	}
	return tpKey{topic, partition}
}

func (s *memStore) putEntryLocked(e store.IndexEntry) error {
	k := s.partitionKey(e.Topic, e.Partition)
	old, taken := s.index[k][e.BaseOffset]
	if s.bug == "PutEntryRace" {
		s.racy()
	}
	if taken && s.bug != "PutEntryOverwrites" {
		if s.bug == "ConflictWithoutEntry" {
			return &store.ConflictError{}
		}
		return &store.ConflictError{Existing: old}
	}
	if s.index[k] == nil {
		s.index[k] = map[int64]store.IndexEntry{}
	}
	if s.bug == "EntryDropsMembers" {
		e.MembersOffset, e.MembersLength = 0, 0
	}
	s.index[k][e.BaseOffset] = s.storeEntry(e)
	return nil
}

func (s *memStore) PutIndexEntry(_ context.Context, e store.IndexEntry) error {
	s.lock()
	defer s.mu.Unlock()
	return s.putEntryLocked(e)
}

func (s *memStore) ClaimIdempotency(_ context.Context, rec store.IdempotencyRecord) error {
	s.lock()
	defer s.mu.Unlock()
	k := idemKey{rec.Key, rec.Partition}
	if s.bug == "IdemKeyIgnoresPartition" {
		k.partition = 0
	}
	if old, ok := s.idem[k]; ok && s.bug != "IdemClaimOverwrites" {
		return &store.IdempotencyError{Existing: old}
	}
	rec.ExpiresAt = s.storeTime(rec.ExpiresAt)
	s.idem[k] = rec
	return nil
}

func (s *memStore) ClaimRequest(_ context.Context, rec store.RequestClaim) (store.RequestClaim, error) {
	s.lock()
	defer s.mu.Unlock()
	if legacy, ok := s.idem[idemKey{rec.Key, -1}]; ok {
		out := store.RequestClaim{Key: legacy.Key, BodyHash: legacy.BodyHash, Count: legacy.Count, Partitions: legacy.Partitions, ExpiresAt: legacy.ExpiresAt}
		for _, pc := range rec.Parts {
			k := idemKey{rec.Key, pc.Partition}
			old, found := s.idem[k]
			if !found {
				if !out.Matches(rec) {
					continue
				}
				old = store.IdempotencyRecord{Key: rec.Key, Partition: pc.Partition, BodyHash: rec.BodyHash, BaseOffset: pc.BaseOffset,
					Count: pc.Count, ExpiresAt: s.storeTime(rec.ExpiresAt)}
				s.idem[k] = old
			}
			out.Parts = append(out.Parts, store.PartClaim{Partition: pc.Partition, BaseOffset: old.BaseOffset, Count: old.Count})
		}
		return out, nil
	}
	var stored *store.RequestClaim
	if old, ok := s.claims[rec.Key]; ok && s.bug != "RequestClaimOverwrites" {
		stored = &old
	}
	next, write := store.MergeClaim(stored, rec)
	if write {
		next.ExpiresAt = s.storeTime(next.ExpiresAt)
		s.claims[rec.Key] = next
	}
	return next, nil
}

func (s *memStore) GetRequestClaim(_ context.Context, key string, partitions []int32) (store.RequestClaim, error) {
	s.lock()
	defer s.mu.Unlock()
	if legacy, ok := s.idem[idemKey{key, -1}]; ok {
		out := store.RequestClaim{Key: legacy.Key, BodyHash: legacy.BodyHash, Count: legacy.Count, Partitions: legacy.Partitions, ExpiresAt: legacy.ExpiresAt}
		for _, p := range partitions {
			if r, ok := s.idem[idemKey{key, p}]; ok {
				out.Parts = append(out.Parts, store.PartClaim{Partition: p, BaseOffset: r.BaseOffset, Count: r.Count})
			}
		}
		return out, nil
	}
	c, ok := s.claims[key]
	if !ok {
		return store.RequestClaim{}, fmt.Errorf("mem: request claim %q: %w", key, store.ErrNotFound)
	}
	return c, nil
}

// seqLocked returns the partition's counter, seeding it from the index when absent.
func (s *memStore) seqLocked(topic string, partition int32) store.SeqState {
	k := tpKey{topic, partition}
	st, ok := s.seq[k]
	if !ok {
		st = store.SeqState{Topic: topic, Partition: partition}
		if es := s.sortedEntries(topic, partition); len(es) > 0 && s.bug != "SeedIgnoresIndex" {
			st.NextOffset = es[len(es)-1].End()
		}
		s.seq[k] = st
	}
	if s.bug == "HWFromIndex" {
		st.NextOffset = 0
		if es := s.sortedEntries(topic, partition); len(es) > 0 {
			st.NextOffset = es[len(es)-1].End()
		}
	}
	return st
}

// Sequence adds to the counter and leaves the index entry to the caller, as DynamoDB does;
// on a topic commit topic it is a batch of one.
func (s *memStore) Sequence(ctx context.Context, c store.SeqCommit) (store.SeqCommit, error) {
	if store.TopicCommits(c.Entry.Topic) {
		out, errs := s.SequenceBatch(ctx, []store.SeqCommit{c})
		return out[0], errs[0]
	}
	s.lock()
	defer s.mu.Unlock()
	st := s.seqLocked(c.Entry.Topic, c.Entry.Partition)
	if s.bug == "SequenceRace" {
		s.racy()
	}
	c.Entry.BaseOffset = st.NextOffset
	st.NextOffset += c.Entry.Count
	st.NextSeq++
	c.Seq = st.NextSeq
	last := c
	last.Entry = s.storeEntry(c.Entry)
	st.Last = &last
	s.seq[tpKey{c.Entry.Topic, c.Entry.Partition}] = st
	return c, nil
}

// SequenceBatch applies the batch under one lock (atomically); with the bug
// "BatchNotAtomic" it releases the lock between the commits.
func (s *memStore) SequenceBatch(ctx context.Context, cs []store.SeqCommit) ([]store.SeqCommit, []error) {
	out, errs := make([]store.SeqCommit, len(cs)), make([]error, len(cs))
	for _, c := range cs {
		if c.Entry.Count < 1 {
			for i := range errs {
				errs[i] = fmt.Errorf("memstore: commit of %d records", c.Entry.Count)
			}
			return out, errs
		}
	}
	s.lock()
	defer s.mu.Unlock()
	var batch int64
	var fences []store.RequestFence
	if len(cs) > 0 && store.TopicCommits(cs[0].Entry.Topic) {
		batch, fences = s.beginBatchLocked(cs[0].Entry.Topic, cs[0].Entry.AppendedAt)
	}
	for i, c := range cs {
		if i > 0 && s.bug == "BatchNotAtomic" {
			s.racy()
		}
		st := s.seqLocked(c.Entry.Topic, c.Entry.Partition)
		c.Batch, c.Fences = batch, slices.Clone(fences)
		if s.bug == "FencesOmitted" {
			c.Fences = nil
		}
		if s.bug == "ResultDropsMembers" {
			c.MembersOffset, c.MembersLength = 0, 0
		}
		c.Entry.MembersOffset, c.Entry.MembersLength = c.MembersOffset, c.MembersLength
		if c.Entry.Batch = batch; s.bug == "EntryWithoutBatch" {
			c.Entry.Batch = 0
		}
		c.Entry.BaseOffset = st.NextOffset
		st.NextOffset += c.Entry.Count
		st.NextSeq++
		c.Seq = st.NextSeq
		last := c
		last.Entry = s.storeEntry(c.Entry)
		st.Last = &last
		s.seq[tpKey{c.Entry.Topic, c.Entry.Partition}] = st
		out[i] = c
	}
	return out, errs
}

func (s *memStore) SequencerEventual(ctx context.Context, topic string, partition int32) (store.SeqState, error) {
	return s.Sequencer(ctx, topic, partition)
}

func (s *memStore) Sequencer(_ context.Context, topic string, partition int32) (store.SeqState, error) {
	s.lock()
	defer s.mu.Unlock()
	st := s.seqLocked(topic, partition)
	if st.Last != nil && store.TopicCommits(topic) {
		last := *st.Last
		last.Fences = s.fencesLocked(topic)
		if s.bug == "StateWithoutFences" {
			last.Fences = nil
		}
		st.Last = &last
	}
	return st, nil
}

// fencesLocked returns topic's fences in key then attempt order.
func (s *memStore) fencesLocked(topic string) []store.RequestFence {
	var out []store.RequestFence
	for _, f := range s.fences[topic] {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b store.RequestFence) int {
		return cmp.Or(strings.Compare(a.Key, b.Key), cmp.Compare(a.Attempt, b.Attempt))
	})
	return out
}

// beginBatchLocked numbers a new batch of topic committed at now and returns its
// number and the fences it carries, dropping those older than the horizon first.
func (s *memStore) beginBatchLocked(topic string, now time.Time) (int64, []store.RequestFence) {
	s.batches[topic]++
	n := s.batches[topic]
	if s.bug == "BatchNumberStale" {
		n--
	}
	for k, f := range s.fences[topic] {
		if now.Sub(f.At) > store.FenceHorizon && s.bug != "FencesNeverPruned" {
			delete(s.fences[topic], k)
		}
	}
	return n, s.fencesLocked(topic)
}

func (s *memStore) FenceRequest(_ context.Context, topic string, f store.RequestFence) (store.FencePoint, error) {
	if err := store.CheckFence(topic, f); err != nil && !(s.bug == "FenceAnyLayout" && !store.TopicCommits(topic)) &&
		!(s.bug == "FenceAttemptsUnbounded" && errors.Is(err, store.ErrFenceLimit)) {
		return store.FencePoint{}, fmt.Errorf("memstore: %w", err)
	}
	s.lock()
	defer s.mu.Unlock()
	held := slices.Collect(maps.Values(s.fences[topic]))
	latest, ok := store.LatestFence(held, f.Key)
	if ok && latest.Attempt >= f.Attempt && s.bug != "FenceOverwrites" {
		return store.FencePoint{}, fmt.Errorf("memstore: fence %q: attempt %d fenced already: %w", f.Key, latest.Attempt, store.ErrSuperseded)
	}
	if n := store.OwnerFenceKeys(held, f.Owner); !ok && n >= store.MaxOwnerFences && store.FenceKeys(held) >= store.MaxFences-store.MaxOwnerFences &&
		s.bug != "OwnerFencesUnbounded" {
		return store.FencePoint{}, fmt.Errorf("memstore: fence %q: its owner holds %d keys on %s: %w", f.Key, n, topic, store.ErrFenceLimit)
	}
	if !ok && store.FenceKeys(held) >= store.MaxFences && s.bug != "FencesUnbounded" {
		return store.FencePoint{}, fmt.Errorf("memstore: fence %q: fences of %d keys on %s: %w", f.Key, store.FenceKeys(held), topic, store.ErrUnavailable)
	}
	if s.bug == "FenceReplaces" {
		for id, old := range s.fences[topic] {
			if old.Key == f.Key {
				delete(s.fences[topic], id)
			}
		}
	}
	if s.bug == "FenceRequestPrunes" {
		for k, old := range s.fences[topic] {
			if f.At.Sub(old.At) > store.FenceHorizon {
				delete(s.fences[topic], k)
			}
		}
	}
	fp := store.FencePoint{Batch: s.batches[topic], Next: map[int32]int64{}}
	if s.bug == "FencePointLate" {
		fp.Batch++
	}
	for k, st := range s.seq {
		if k.topic == topic {
			fp.Next[k.partition] = st.NextOffset
		}
	}
	if s.fences[topic] == nil {
		s.fences[topic] = map[string]store.RequestFence{}
	}
	f.Batch, f.At = s.batches[topic], s.storeTime(f.At)
	s.fences[topic][fmt.Sprintf("%s\x00%d", f.Key, f.Attempt)] = f
	return fp, nil
}

// sortedEntries returns the partition's entries by base offset (or by the bug's order).
func (s *memStore) sortedEntries(topic string, partition int32) []store.IndexEntry {
	var es []store.IndexEntry
	for _, e := range s.index[s.partitionKey(topic, partition)] {
		es = append(es, e)
	}
	if s.bug == "IndexDecimalKeys" {
		slices.SortFunc(es, func(a, b store.IndexEntry) int {
			return strings.Compare(fmt.Sprint(a.BaseOffset), fmt.Sprint(b.BaseOffset))
		})
		return es
	}
	slices.SortFunc(es, func(a, b store.IndexEntry) int { return cmp.Compare(a.BaseOffset, b.BaseOffset) })
	return es
}

func (s *memStore) LastIndexEntry(_ context.Context, topic string, partition int32) (store.IndexEntry, bool, error) {
	s.lock()
	defer s.mu.Unlock()
	es := s.sortedEntries(topic, partition)
	if len(es) == 0 {
		return store.IndexEntry{}, false, nil
	}
	return es[len(es)-1], true, nil
}

func (s *memStore) IndexEntriesEventual(ctx context.Context, topic string, partition int32, from int64, limit int) ([]store.IndexEntry, error) {
	return s.IndexEntries(ctx, topic, partition, from, limit)
}

func (s *memStore) IndexEntries(_ context.Context, topic string, partition int32, from int64, limit int) ([]store.IndexEntry, error) {
	s.lock()
	defer s.mu.Unlock()
	es := s.sortedEntries(topic, partition)
	start := len(es)
	for i, e := range es {
		if e.BaseOffset > from {
			start = i
			break
		}
	}
	switch s.bug {
	case "EntriesNoContaining":
	case "EntriesContainingByEnd":
		if start > 0 && es[start-1].End() > from {
			start--
		}
	default:
		if start > 0 {
			start--
		}
	}
	out := es[start:]
	if len(out) > limit && s.bug != "EntriesIgnoreLimit" {
		out = out[:limit]
	}
	return slices.Clone(out), nil
}

func (s *memStore) GetIdempotency(_ context.Context, key string, partition int32) (store.IdempotencyRecord, error) {
	s.lock()
	defer s.mu.Unlock()
	k := idemKey{key, partition}
	if s.bug == "IdemKeyIgnoresPartition" {
		k.partition = 0
	}
	rec, ok := s.idem[k]
	if !ok {
		return store.IdempotencyRecord{}, store.ErrNotFound
	}
	return rec, nil
}

func (s *memStore) DeleteIndexEntry(_ context.Context, topic string, partition int32, baseOffset int64) error {
	s.lock()
	defer s.mu.Unlock()
	delete(s.index[s.partitionKey(topic, partition)], baseOffset)
	return nil
}

func (s *memStore) DeleteIndexRange(_ context.Context, topic string, partition int32, below int64) (int, error) {
	s.lock()
	defer s.mu.Unlock()
	n := 0
	for base, e := range s.index[s.partitionKey(topic, partition)] {
		doomed := e.End() <= below
		switch s.bug {
		case "RangeDeleteTakesHolder":
			doomed = base < below
		case "RangeDeleteStopsAtGap":
			doomed = doomed && base < 10
		}
		if doomed {
			delete(s.index[s.partitionKey(topic, partition)], base)
			n++
		}
	}
	return n, nil
}

func (s *memStore) LogStart(_ context.Context, topic string, partition int32) (int64, error) {
	s.lock()
	defer s.mu.Unlock()
	return s.seqLocked(topic, partition).LogStart, nil
}

func (s *memStore) AdvanceLogStart(_ context.Context, topic string, partition int32, offset int64) error {
	s.lock()
	defer s.mu.Unlock()
	st := s.seqLocked(topic, partition)
	if offset > st.NextOffset && s.bug != "LogStartPastEnd" {
		return store.ErrBeyondEnd
	}
	if offset > st.LogStart || s.bug == "LogStartLowers" {
		st.LogStart = offset
	}
	s.seq[tpKey{topic, partition}] = st
	return nil
}

func (s *memStore) live(a store.Assignment, now time.Time) bool {
	if s.bug == "LeaseLiveAtExpiry" {
		return a.Owner != "" && !now.After(a.ExpiresAt)
	}
	return a.Live(now)
}

// gtp is the key of a lease and commit row; the LeaseKeyIgnoresIncarnation bug keys
// the rows of every incarnation of a name alike.
func (s *memStore) gtp(group, topic string, partition int32) gtp {
	if s.bug == "LeaseKeyIgnoresIncarnation" {
		topic, _ = store.SplitTopicID(topic)
	}
	if s.bug == "GroupKeyJoinedByHash" {
		// A naive "group#topic" key: (g#a, t) and (g, a#t) are one row.
		joined := group + "#" + topic
		i := strings.IndexByte(joined, '#')
		group, topic = joined[:i], joined[i+1:]
	}
	return gtp{group, topic, partition}
}

func (s *memStore) AcquireLease(_ context.Context, group, topic string, partition int32, member string, now, expiresAt time.Time) (store.Assignment, error) {
	s.lock()
	defer s.mu.Unlock()
	k := s.gtp(group, topic, partition)
	a, ok := s.assignments[k]
	if s.bug == "AcquireRace" {
		s.racy()
	}
	if ok && s.live(a, now) && a.Owner != member {
		return store.Assignment{}, &store.LeaseHeldError{Owner: a.Owner, ExpiresAt: a.ExpiresAt}
	}
	if !ok || a.Owner != member || s.bug != "ReacquireKeepsGeneration" {
		a.Generation++
	}
	deleted := a.GroupDeleted && s.bug != "AcquireForgetsGroupDeleted"
	a = store.Assignment{Group: group, Topic: topic, Partition: partition, Owner: member, Generation: a.Generation, ExpiresAt: s.storeTime(expiresAt)}
	s.assignments[k] = a
	a.GroupDeleted = deleted
	return a, nil
}

func (s *memStore) RenewLease(_ context.Context, group, topic string, partition int32, member string, generation int64, expiresAt time.Time) (store.Assignment, error) {
	s.lock()
	defer s.mu.Unlock()
	k := s.gtp(group, topic, partition)
	a, ok := s.assignments[k]
	if !ok || a.Owner != member || (a.Generation != generation && s.bug != "RenewIgnoresGeneration") {
		return store.Assignment{}, store.ErrFenced
	}
	a.ExpiresAt = s.storeTime(expiresAt)
	s.assignments[k] = a
	return a, nil
}

func (s *memStore) ReleaseLease(_ context.Context, group, topic string, partition int32, member string, generation int64) error {
	s.lock()
	defer s.mu.Unlock()
	k := s.gtp(group, topic, partition)
	a, ok := s.assignments[k]
	if !ok || a.Owner != member || a.Generation != generation {
		return store.ErrFenced
	}
	a.Owner = ""
	if s.bug == "ReleaseResetsGeneration" {
		a.Generation = 0
	}
	s.assignments[k] = a
	return nil
}

func (s *memStore) GetAssignment(_ context.Context, group, topic string, partition int32) (store.Assignment, error) {
	s.lock()
	defer s.mu.Unlock()
	a, ok := s.assignments[s.gtp(group, topic, partition)]
	if !ok {
		return store.Assignment{}, store.ErrNotFound
	}
	return a, nil
}

func (s *memStore) Commit(_ context.Context, c store.CommitRow, member string) error {
	s.lock()
	defer s.mu.Unlock()
	k := s.gtp(c.Group, c.Topic, c.Partition)
	a := s.assignments[k]
	fenced := a.Owner != member || a.Generation != c.Generation
	if s.bug == "CommitChecksMemberOnly" {
		fenced = a.Owner != member
	}
	if s.bug == "CommitRace" {
		s.racy()
	}
	old, ok := s.commits[k]
	if s.bug == "CommitStaleBeforeFence" && ok && c.NextOffset < old.NextOffset {
		return store.ErrStaleCommit
	}
	if fenced {
		return store.ErrFenced
	}
	backward := c.Backward && s.bug != "CommitBackwardRefused"
	if ok && !backward && (c.NextOffset < old.NextOffset || (c.NextOffset == old.NextOffset && s.bug == "CommitEqualIsStale")) {
		return store.ErrStaleCommit
	}
	if s.bug != "CommitStoresBackward" {
		c.Backward = false
	}
	switch {
	case c.ReleaseLease:
		a.Owner = ""
	case !c.LeaseExpiresAt.IsZero() && s.bug != "CommitIgnoresLease":
		a.ExpiresAt = s.storeTime(c.LeaseExpiresAt)
	}
	s.assignments[k] = a
	c.LeaseExpiresAt, c.ReleaseLease = time.Time{}, false
	c.CommittedAt = s.storeTime(c.CommittedAt)
	if s.bug == "CommitKeepsCompleted" && len(c.Completed) == 0 {
		c.Completed = old.Completed
	}
	c.Completed = slices.Clone(c.Completed)
	s.commits[k] = c
	return nil
}

func (s *memStore) GetCommit(_ context.Context, group, topic string, partition int32) (store.CommitRow, error) {
	s.lock()
	defer s.mu.Unlock()
	c, ok := s.commits[s.gtp(group, topic, partition)]
	if !ok {
		return store.CommitRow{}, store.ErrNotFound
	}
	return c, nil
}

func (s *memStore) ResetCommits(_ context.Context, group, topic string, offsets map[int32]int64, now time.Time) error {
	s.lock()
	defer s.mu.Unlock()
	if s.bug == "ResetWritesBeforeCheck" {
		for p, o := range offsets {
			s.commits[gtp{group, topic, p}] = store.CommitRow{Group: group, Topic: topic, Partition: p, NextOffset: o}
		}
	}
	for k, a := range s.assignments {
		if k.group == group && (k.topic == topic || s.bug == "ResetChecksAllTopics") && s.live(a, now) {
			return store.ErrGroupActive
		}
	}
	if s.bug != "ResetKeepsGenerations" {
		fence := map[gtp]bool{}
		for k := range s.assignments {
			if k.group == group && k.topic == topic {
				fence[k] = true
			}
		}
		for p := range offsets {
			fence[gtp{group, topic, p}] = true
		}
		for k := range fence {
			a := s.assignments[k]
			a.Group, a.Topic, a.Partition, a.Owner = group, topic, k.partition, ""
			a.Generation++
			s.assignments[k] = a
		}
	}
	for p, o := range offsets {
		k := gtp{group, topic, p}
		c := s.commits[k]
		if s.bug == "ResetNeverLowers" && o < c.NextOffset {
			continue
		}
		c.Group, c.Topic, c.Partition, c.NextOffset = group, topic, p, o
		if s.bug != "ResetKeepsCompleted" {
			c.Completed = nil
		}
		s.commits[k] = c
	}
	return nil
}

func byTopicPartition(x, y gtp) int {
	if c := strings.Compare(x.topic, y.topic); c != 0 {
		return c
	}
	return cmp.Compare(x.partition, y.partition)
}

func (s *memStore) inGroup(k gtp, group string) bool {
	if s.bug == "ListGroupByPrefix" {
		return strings.HasPrefix(k.group, group)
	}
	return k.group == group
}

func (s *memStore) ListAssignments(_ context.Context, group string) ([]store.Assignment, error) {
	s.lock()
	defer s.mu.Unlock()
	var out []store.Assignment
	for k, a := range s.assignments {
		if s.inGroup(k, group) {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(x, y store.Assignment) int {
		if s.bug == "ListPartitionsAsStrings" {
			return strings.Compare(fmt.Sprint(x.Topic, x.Partition), fmt.Sprint(y.Topic, y.Partition))
		}
		return byTopicPartition(gtp{x.Group, x.Topic, x.Partition}, gtp{y.Group, y.Topic, y.Partition})
	})
	return out, nil
}

func (s *memStore) ListCommits(_ context.Context, group string) ([]store.CommitRow, error) {
	s.lock()
	defer s.mu.Unlock()
	var out []store.CommitRow
	for k, c := range s.commits {
		if s.inGroup(k, group) {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(x, y store.CommitRow) int {
		return byTopicPartition(gtp{x.Group, x.Topic, x.Partition}, gtp{y.Group, y.Topic, y.Partition})
	})
	return out, nil
}

func (s *memStore) EnsureGroup(_ context.Context, cfg store.GroupConfig) (store.GroupConfig, error) {
	s.lock()
	defer s.mu.Unlock()
	old, ok := s.groups[cfg.Name]
	if s.bug == "EnsureGroupRace" {
		s.racy()
	}
	if ok && s.bug != "EnsureGroupOverwrites" {
		return old, nil
	}
	cfg.CreatedAt = s.storeTime(cfg.CreatedAt)
	s.groups[cfg.Name] = cfg
	return cfg, nil
}

func (s *memStore) GetGroup(_ context.Context, name string) (store.GroupConfig, error) {
	s.lock()
	defer s.mu.Unlock()
	g, ok := s.groups[name]
	if !ok {
		return store.GroupConfig{}, store.ErrNotFound
	}
	return g, nil
}

func (s *memStore) Heartbeat(_ context.Context, m store.Member) error {
	s.lock()
	defer s.mu.Unlock()
	if s.members[m.Group] == nil {
		s.members[m.Group] = map[string]store.Member{}
	}
	if _, ok := s.members[m.Group][m.ID]; ok && s.bug == "HeartbeatInsertOnly" {
		return nil
	}
	m.ExpiresAt = s.storeTime(m.ExpiresAt)
	s.members[m.Group][m.ID] = m
	return nil
}

func (s *memStore) RemoveMember(_ context.Context, group, id string) error {
	s.lock()
	defer s.mu.Unlock()
	if _, ok := s.members[group][id]; !ok && s.bug == "RemoveMissingFails" {
		return errors.New("no such member")
	}
	delete(s.members[group], id)
	return nil
}

func (s *memStore) LiveMembers(_ context.Context, group string, now time.Time) ([]store.Member, error) {
	s.lock()
	defer s.mu.Unlock()
	var out []store.Member
	for _, m := range s.members[group] {
		if m.ExpiresAt.After(now) || (s.bug == "LiveMembersInclusive" && m.ExpiresAt.Equal(now)) {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b store.Member) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

func (s *memStore) SwapIndexEntries(_ context.Context, topic string, partition int32, old, new []store.IndexEntry) error {
	if err := store.CheckSwap(topic, partition, old, new); err != nil {
		return err
	}
	s.lock()
	defer s.mu.Unlock()
	part := s.index[s.partitionKey(topic, partition)]
	for _, e := range old {
		if got, ok := part[e.BaseOffset]; !ok || !store.SameBlock(got, e) {
			return fmt.Errorf("memstore: swap: entry @%d changed: %w", e.BaseOffset, store.ErrConflict)
		}
	}
	for _, e := range old {
		delete(part, e.BaseOffset)
	}
	for _, e := range new {
		part[e.BaseOffset] = e
	}
	return nil
}
