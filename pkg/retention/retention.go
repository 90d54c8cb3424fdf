// Package retention expires a topic's old records (DESIGN.md §4 Retention): it advances
// each partition's log start offset past index entries older than the topic's
// retention — on a topic with a pin, no further than a lagging group's position while
// its records are within retention + cap (PlanPin) — deletes those entries, or leaves
// them below the log start to the store's own TTL where it has one (store.IndexTTLStore),
// and deletes the expired segment objects. The high
// watermark lives in the partition's sequencer counter, which retention never touches,
// so any entry may go. The local runtime runs it on a timer; the serverless runtime wraps
// the same Job in a scheduled function.
package retention

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/store"
)

// Meta is what retention needs of the metadata tables.
type Meta interface {
	store.TopicStore
	AdvanceLogStart(ctx context.Context, topic string, partition int32, offset int64) error
	Sequencer(ctx context.Context, topic string, partition int32) (store.SeqState, error)
	IndexEntries(ctx context.Context, topic string, partition int32, from int64, limit int) ([]store.IndexEntry, error)
	DeleteIndexEntry(ctx context.Context, topic string, partition int32, baseOffset int64) error
	DeleteIndexRange(ctx context.Context, topic string, partition int32, below int64) (int, error)
}

// Objects is what retention needs of the object store. One that is also a
// store.BatchDeleter has a pass's expired objects deleted in batches.
type Objects interface {
	List(ctx context.Context, prefix string, fn func(store.ObjectInfo) error) error
	Delete(ctx context.Context, key string) error
}

// Job is one retention pass's configuration.
type Job struct {
	Meta    Meta
	Objects Objects
	// Clock returns the current time; time.Now when nil.
	Clock func() time.Time
	// ObjectMargin delays deleting a segment object past its name's time plus retention
	// (default 5m). The log commits an object only within its commit window (1m) of that
	// time, so by then every entry referring to it is below the log start; the rest of
	// the margin covers clock skew between hosts. For the same reason a gap in the index
	// (a commit not materialised) is passed only once the entry after it is older than
	// the cutoff by this margin.
	ObjectMargin time.Duration
	// KeyPurgeBudget bounds how long the purge of a deleted compacted topic looks for its
	// key index rows (default 2m; on DynamoDB a scan of the whole index table). Past it
	// the purge goes on without the rows it did not reach, which nothing reads (every
	// row's key holds the incarnation), rather than scanning again at every pass.
	KeyPurgeBudget time.Duration
}

// keyPurgeBudget is KeyPurgeBudget or its default.
func (j *Job) keyPurgeBudget() time.Duration {
	if j.KeyPurgeBudget <= 0 {
		return 2 * time.Minute
	}
	return j.KeyPurgeBudget
}

// Stats counts what one pass did.
type Stats struct {
	RecordsExpired  int64
	EntriesDeleted  int
	ObjectsDeleted  int
	PartitionsMoved int
	// RecordsPinned counts the records retention would have expired that a group's pin
	// kept (PlanPin).
	RecordsPinned int64
	// TopicsPurged counts deleted topics whose last trace this pass removed.
	TopicsPurged int
	// KeysDeleted and ParkedDeleted count the key index entries and the groups' parked
	// keys of deleted topics this pass removed.
	KeysDeleted, ParkedDeleted int
	// KeyPurgesCut counts the purges whose search for key rows ran out of
	// KeyPurgeBudget: those topics' remaining rows are left, read by nothing.
	KeyPurgesCut int
	// EntriesLeftToTTL counts the expired index entries this pass left below the log
	// start for the store's own TTL to delete (store.IndexTTLStore), free of writes.
	EntriesLeftToTTL int
}

const pageSize = 100

// errListedExpired stops a listing of a topic's objects at the first one not expired.
var errListedExpired = errors.New("retention: listed every expired object")

// margin is ObjectMargin or its default.
func (j *Job) margin() time.Duration {
	if j.ObjectMargin <= 0 {
		return 5 * time.Minute
	}
	return j.ObjectMargin
}

// Run makes one pass over every topic, then purges deleted topics (RunDeleted). It
// continues past a failing topic and returns the errors joined; a topic whose log starts
// could not all be advanced keeps its objects.
func (j *Job) Run(ctx context.Context) (Stats, error) {
	var st Stats
	names, err := j.Meta.ListTopics(ctx)
	if err != nil {
		return st, fmt.Errorf("retention: list topics: %w", err)
	}
	var errs []error
	var positions map[string]map[int32][]int64 // every group's, read at the first pinned topic
	for _, name := range names {
		if err := j.topic(ctx, name, &positions, &st); err != nil {
			errs = append(errs, err)
		}
	}
	if err := j.purgeDeleted(ctx, j.now(), j.margin(), &st); err != nil {
		errs = append(errs, err)
	}
	return st, errors.Join(errs...)
}

// RunTopic makes Run's pass over the one live topic name: what a pass fanned out per
// topic runs in each invocation (functions/retention). Together with RunDeleted, a
// RunTopic of every live topic does what Run does.
func (j *Job) RunTopic(ctx context.Context, name string) (Stats, error) {
	var st Stats
	var positions map[string]map[int32][]int64
	err := j.topic(ctx, name, &positions, &st)
	return st, err
}

// RunDeleted purges the deleted topics whose deletion is older than the margin: Run's
// last step.
func (j *Job) RunDeleted(ctx context.Context) (Stats, error) {
	var st Stats
	err := j.purgeDeleted(ctx, j.now(), j.margin(), &st)
	return st, err
}

func (j *Job) now() time.Time {
	if j.Clock != nil {
		return j.Clock()
	}
	return time.Now()
}

// topic passes one topic: its partitions' log starts, then (when all advanced) its
// expired objects. positions caches every group's committed offsets across the topics
// of a pass, read at the first pinned one.
func (j *Job) topic(ctx context.Context, name string, positions *map[string]map[int32][]int64, st *Stats) error {
	t, err := j.Meta.GetTopic(ctx, name)
	if err != nil {
		return fmt.Errorf("retention: topic %s: %w", name, err)
	}
	if !t.DeletesByTime() {
		return nil // compact only: records leave by key, in pkg/compact's pass, never by age
	}
	at := j.now()
	cutoff := at.Add(-t.Retention)
	var pins map[int32][]int64
	if t.RetentionPin > 0 {
		if *positions == nil {
			if *positions, err = j.positions(ctx); err != nil {
				// A pin unknown is a pin possibly missed: move nothing of the topic.
				return fmt.Errorf("retention: pins of %s: %w", name, err)
			}
		}
		pins = (*positions)[t.ID()]
	}
	var errs []error
	keep := cutoff // objects of the topic named before keep − margin go
	for p := int32(0); p < t.Partitions; p++ {
		keepFrom, err := j.partition(ctx, t, p, at, pins[p], st)
		if err != nil {
			errs = append(errs, fmt.Errorf("retention: %s/%d: %w", name, p, err))
		}
		if !keepFrom.IsZero() && keepFrom.Before(keep) {
			keep = keepFrom
		}
	}
	if len(errs) == 0 {
		if err := j.objects(ctx, t, keep.Add(-j.margin()), st); err != nil {
			errs = append(errs, fmt.Errorf("retention: objects of %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// positions reads every group's committed offsets, by topic incarnation and partition,
// for PlanPin: once per pass, whatever the number of pinned topics.
func (j *Job) positions(ctx context.Context) (map[string]map[int32][]int64, error) {
	pos, ok := j.Meta.(Positions)
	if !ok {
		return nil, fmt.Errorf("the metadata store (%T) cannot list group positions", j.Meta)
	}
	return committed(ctx, pos)
}

// partition advances one partition's log start past its expired entries and deletes
// those the store's TTL does not (toDelete), holding it where PlanPin says a group pins it (positions are the groups'
// committed offsets there, for a topic with a pin cap); it returns the pinned records'
// KeepFrom (zero when nothing is pinned), before which the topic's objects may go.
// Offsets without an entry (gone to DynamoDB's TTL after a long outage, or a commit not
// materialised yet) count as expired only when their age is proven: a commit
// in a gap was made before the commit of the entry after it (offsets follow commit
// order), which landed at most the commit window after its object's name time, so the
// gap is older than that entry's time plus the object margin (the commit window and
// clock skew between hosts). A gap is passed only when that bound is below the cutoff;
// with no entry left, the counter's newest commit is the later commit.
func (j *Job) partition(ctx context.Context, t store.Topic, p int32, now time.Time, positions []int64, st *Stats) (time.Time, error) {
	id := t.ID()
	cutoff := now.Add(-t.Retention)
	seq, err := j.Meta.Sequencer(ctx, id, p)
	if err != nil {
		return time.Time{}, err
	}
	start, end := seq.LogStart, seq.NextOffset
	newStart := start
	gapCutoff := cutoff.Add(-j.margin())
	var expired []store.IndexEntry
	ttl := j.indexTTL()
	stale := false // an entry below the log start the pass must delete (toDelete)
	for from := start; from < end; {
		page, err := j.Meta.IndexEntries(ctx, id, p, from, pageSize)
		if err != nil {
			return time.Time{}, err
		}
		done := true
		for _, e := range page {
			if e.End() <= from {
				// Below the log start: an entry left to the TTL, or one an earlier pass
				// failed to delete. Readers never reach it; this pass's range delete
				// removes the latter.
				stale = stale || toDelete(ttl, e)
				continue
			}
			if e.AppendedAt.After(cutoff) {
				break
			}
			if e.BaseOffset > from && e.AppendedAt.After(gapCutoff) {
				// A gap before an expired entry: the commit in it may have landed up to
				// the commit window after this entry's time, so it may still be live.
				break
			}
			expired = append(expired, e)
			newStart = max(newStart, e.End())
			from = e.End()
			done = false
		}
		if done || len(page) < pageSize {
			break
		}
	}
	// The newest commit's time, or on a topic commit topic whose newest batch did not
	// touch p, that batch's time: p's newest commit is then at most the commit window
	// later, so the bound is one margin earlier.
	newest, bound := time.Time{}, gapCutoff
	if seq.Last != nil {
		newest = seq.Last.Entry.AppendedAt
	} else if !seq.BatchAt.IsZero() {
		newest, bound = seq.BatchAt, gapCutoff.Add(-j.margin())
	}
	if len(expired) == 0 && newStart < end && !newest.IsZero() && !newest.After(bound) {
		// Nothing indexed at or after the log start, and the newest commit is expired
		// with the gap rule's margin: every offset below the high watermark is.
		if es, err := j.Meta.IndexEntries(ctx, id, p, start, 2); err == nil && !anyAtOrAfter(es, start) {
			newStart = end
		} else if err != nil {
			return time.Time{}, err
		}
	}
	pin := PlanPin(PinInput{
		Start: start, Expired: newStart, Entries: expired, Newest: newest,
		Committed: positions, Retention: t.Retention, Pin: t.RetentionPin, Now: now,
	})
	if pin.Pinned {
		st.RecordsPinned += newStart - pin.Start
		newStart = pin.Start
		kept := 0
		for kept < len(expired) && expired[kept].End() <= newStart {
			kept++
		}
		expired = expired[:kept]
	}
	if newStart > start {
		if err := j.Meta.AdvanceLogStart(ctx, id, p, newStart); err != nil {
			return pin.KeepFrom, err
		}
		st.RecordsExpired += newStart - start
		st.PartitionsMoved++
	}
	del := stale
	for _, e := range expired {
		if toDelete(ttl, e) {
			del = true
		} else {
			st.EntriesLeftToTTL++
		}
	}
	if !del {
		return pin.KeepFrom, nil
	}
	// One range delete below the new log start (one transaction locally, batched
	// parallel deletes on DynamoDB): its cost follows what expired, and entries below
	// the log start that an earlier pass left go with it.
	n, err := j.Meta.DeleteIndexRange(ctx, id, p, newStart)
	st.EntriesDeleted += n
	return pin.KeepFrom, err
}

// indexTTL reports whether the metadata store's own TTL deletes index entries
// (store.IndexTTLStore).
func (j *Job) indexTTL() bool {
	t, ok := j.Meta.(store.IndexTTLStore)
	return ok && t.IndexEntriesExpire()
}

// toDelete reports whether the pass must delete expired entry e itself: always unless
// the store's TTL deletes entries (ttl) and e carries an expiry. An entry's expiry is
// the deployment's maximum retention plus a day after its append (log.Config.Topics),
// and every retention and pin cap, at creation or altered later, must fit that maximum,
// so the TTL never takes an entry under a log start some retention or pin still holds.
func toDelete(ttl bool, e store.IndexEntry) bool { return !ttl || e.ExpiresAt.IsZero() }

func anyAtOrAfter(es []store.IndexEntry, offset int64) bool {
	for _, e := range es {
		if e.End() > offset {
			return true
		}
	}
	return false
}

// objects deletes the segment objects of the topic's incarnation written before cutoff:
// their entries were all appended at the object's ULID time, so they are below every
// log start by now. Only keys that are exactly the incarnation's prefix and a ULID are
// its objects (segment.ObjectID): another incarnation's, a longer name's or a stray
// file's are left alone. Keys list in key order, which for ULIDs of one prefix is time
// order, so the listing stops at the first object named at or after cutoff: a pass reads
// what expired and one page more, not every retained object.
func (j *Job) objects(ctx context.Context, t store.Topic, cutoff time.Time, st *Stats) error {
	prefix := segment.ObjectPrefix(t.Name, t.Incarnation)
	var doomed []string
	err := j.Objects.List(ctx, prefix, func(o store.ObjectInfo) error {
		id, ok := segment.ObjectID(prefix, o.Key)
		switch {
		case !ok:
			return nil
		case ulid.Time(id.Time()).Before(cutoff):
			doomed = append(doomed, o.Key)
			return nil
		}
		return errListedExpired
	})
	if err != nil && !errors.Is(err, errListedExpired) {
		return err
	}
	return j.deleteObjects(ctx, doomed, st)
}

// deleteObjects deletes keys, in as few requests as the store allows: with DeleteBatch
// when it has one (1,000 keys a request on S3), else one Delete a key. Keys it could not
// delete stay, and the next pass finds and retries them.
func (j *Job) deleteObjects(ctx context.Context, keys []string, st *Stats) error {
	if len(keys) == 0 {
		return nil
	}
	bd, ok := j.Objects.(store.BatchDeleter)
	if !ok {
		for _, k := range keys {
			if err := j.Objects.Delete(ctx, k); err != nil {
				return err
			}
			st.ObjectsDeleted++
		}
		return nil
	}
	err := bd.DeleteBatch(ctx, keys)
	var be *store.DeleteBatchError
	switch {
	case err == nil:
		st.ObjectsDeleted += len(keys)
	case errors.As(err, &be):
		st.ObjectsDeleted += len(keys) - len(be.Failed)
	}
	if err != nil {
		return fmt.Errorf("retention: delete expired objects: %w", err)
	}
	return nil
}
