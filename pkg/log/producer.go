package log

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// Fenced idempotency: a producer session's request (AppendOptions.Producer, the SDK's
// producer id and sequence number as its key) keeps no claim. Its first attempt is a
// member of a batch like any other, its block owned. A retry — which any host may serve
// while the first attempt is still in flight on another — first fences the earlier
// attempts on the topic item (store.SequencerStore.FenceRequest): every batch committed
// after the fence skips their blocks, so from then on no earlier attempt can become the
// owner. It then searches the batches committed before the fence and numbered above the
// request's floor (AppendOptions.BatchFloor) for an owned attempt: the log is the state,
// read back through the index entries (which keep their batch's number and locate its
// members table) and those tables. Found, the retry answers its offsets and appends
// nothing; not found, it appends itself, owned unless a later attempt fences it in turn.
// The steady state writes nothing per request: the cost of idempotency moves to the
// retries.
//
// Why the floor bounds the search: the client read the floor from an answer the server
// sent after the topic had committed the batch so numbered, and sent the request's first
// attempt after that answer. Every attempt reaches the log after the first send, so
// every batch that can hold one committed after the batch numbered floor, and batches
// are numbered in commit order: each is numbered above the floor. On a partition, entries
// hold ascending batch numbers, so the search reads down from the fence's high watermark
// to the first entry numbered at or below the floor. No clock takes part.

// retryIndexWait bounds how long a retry waits for the index to cover the batches
// committed before its fence (an appender between its commit and its entries, or the
// materialiser indexing one whose appender stopped) before answering ErrUnavailable.
const retryIndexWait = 30 * time.Second

// windowPage is the index page a retry's search reads.
const windowPage = 500

// retryScanLimit bounds the index entries a retry's search reads on one partition: past
// it the retry is ErrRetryUndecided, nothing appended, rather than a guess.
const retryScanLimit = 20_000

// maxCachedTables bounds the members tables a Log keeps for retries' searches.
const maxCachedTables = 4096

// checkProducer validates a producer request's options.
func checkProducer(opt AppendOptions) error {
	switch {
	case !opt.Producer:
		return nil
	case opt.IdempotencyKey == "":
		return invalidf("a producer request needs an Idempotency-Key")
	case opt.Attempt < 0 || opt.Attempt > wire.MaxAttempt:
		return invalidf("attempt %d outside [0, %d]", opt.Attempt, wire.MaxAttempt)
	case opt.RetryElapsed < 0 || opt.RetryElapsed > wire.MaxRetryElapsed:
		return invalidf("retry elapsed %s outside [0, %s]", opt.RetryElapsed, wire.MaxRetryElapsed)
	case opt.Attempt > 0 && opt.BatchFloor == nil:
		return invalidf("a producer request's retry needs its batch floor (%s: the topic's %s mark the client had "+
			"when it first sent the request, \"0\" if none); nothing was appended", wire.HeaderBatchFloor, wire.HeaderTopicBatch)
	case opt.BatchFloor != nil && (opt.BatchFloor.Batch < 0 || opt.BatchFloor.Batch > wire.MaxBatchNumber):
		return invalidf("batch floor %d outside [0, %d]", opt.BatchFloor.Batch, int64(wire.MaxBatchNumber))
	}
	return nil
}

// admitRetry readies a producer request's retry: it fences the request's earlier
// attempts (unless a re-placed call already did, opt.fence) and searches the log for an
// owned one. Found, m's groups are answered from it and nothing is left pending; else m
// is appended as this attempt.
func (l *Log) admitRetry(ctx context.Context, m *member, opt AppendOptions) error {
	pt := opt.fence
	if pt == nil {
		p, err := l.meta.FenceRequest(ctx, m.topic, store.RequestFence{Key: m.idemKey, Owner: m.owner, Attempt: opt.Attempt, At: l.now()})
		switch {
		case errors.Is(err, store.ErrSuperseded):
			return fmt.Errorf("%w: key %q, attempt %d: %w", ErrSuperseded, m.idemKey, opt.Attempt, err)
		case errors.Is(err, store.ErrFenceLimit):
			return fmt.Errorf("%w: attempt %d of %q could not fence its earlier attempts, so it appended nothing (whether an earlier one was is unknown): %w",
				ErrRetryLimit, opt.Attempt, opt.IdempotencyKey, err)
		case err != nil:
			return storeErr(fmt.Errorf("fence the earlier attempts of %q: %w", m.idemKey, err))
		}
		pt = &p
		l.noteBatch(m.topic, p.Batch)
	}
	floor, err := retryFloor(m, *opt.BatchFloor, *pt)
	if err != nil {
		return err
	}
	found, err := l.findAttempt(ctx, m, *pt, floor)
	if err != nil || found == nil {
		return err
	}
	// The attempt found answers the retry as a claim would.
	for _, g := range m.pending {
		base, err := m.decide(*found, g)
		var re *replaceError
		if errors.As(err, &re) {
			re.fence = pt
		}
		if err != nil {
			return err
		}
		g.base = base
	}
	m.pending = nil
	return nil
}

// retryFloor is the batch number a retry of m searches down to, from the client's floor
// and the fence point pt: a floor of another incarnation of the topic (or the zero mark)
// says nothing of this one, whose batches are all numbered above 0; a floor above the
// batches the topic had at the fence was never a mark of it, and is refused.
func retryFloor(m *member, floor wire.BatchMark, pt store.FencePoint) (int64, error) {
	if floor.Incarnation != m.t.Incarnation {
		return 0, nil
	}
	if floor.Batch > pt.Batch {
		return 0, invalidf("%s %s is above the %d batches the topic has committed: not a mark of this topic; nothing was appended",
			wire.HeaderBatchFloor, floor, pt.Batch)
	}
	return floor.Batch, nil
}

// objectKey identifies one batch's entry on one partition.
type objectKey struct {
	partition int32
	object    string
}

// searchedPartitions are the partitions a retry of m searches: a request of blocks, or
// of records each placed on an explicit partition, on its own partitions (an earlier
// attempt of the same body lay there); a request of records placed by key, whose
// placement a partition increase may have changed, on every partition the fence point
// names (every partition written before the fence) and every one of m's topic.
func searchedPartitions(m *member, pt store.FencePoint) []int32 {
	set := map[int32]bool{}
	for _, g := range m.groups {
		set[g.partition] = true
	}
	if m.placedBy != 0 && !m.explicit {
		for p := range pt.Next {
			set[p] = true
		}
		for p := range m.t.Partitions {
			set[p] = true
		}
	}
	parts := slices.Collect(maps.Keys(set))
	slices.Sort(parts)
	return parts
}

// findAttempt searches the batches committed before fence point pt and numbered above
// floor for an owned attempt of m's request, and returns it as the claim it would have
// made (its body, placement and each block's offsets).
func (l *Log) findAttempt(ctx context.Context, m *member, pt store.FencePoint, floor int64) (*store.RequestClaim, error) {
	entries := map[objectKey]store.IndexEntry{}
	tables := map[string][2]int64{} // candidate objects → their members table
	scanned := map[int32]bool{}
	scan := func(parts []int32) error {
		var mu sync.Mutex
		var errs []error
		var wg sync.WaitGroup
		for _, p := range parts {
			scanned[p] = true
			if pt.Next[p] == 0 {
				continue
			}
			wg.Go(func() {
				es, err := l.fenceWindow(ctx, m.topic, p, pt.Next[p], floor)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					return
				}
				for _, e := range es {
					entries[objectKey{p, e.ObjectKey}] = e
					if e.MembersLength > 0 && !e.Duplicate {
						tables[e.ObjectKey] = [2]int64{e.MembersOffset, e.MembersLength}
					}
				}
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	if err := scan(searchedPartitions(m, pt)); err != nil {
		return nil, err
	}
	var found *store.RequestClaim
	for obj, loc := range tables {
		ms, err := l.membersOf(ctx, obj, loc[0], loc[1])
		if err != nil {
			return nil, err
		}
		for _, tm := range ms {
			if tm.Key != m.idemKey {
				continue
			}
			fa := &store.RequestClaim{Key: tm.Key, BodyHash: tm.BodyHash, Count: tm.Total, Partitions: tm.Partitions}
			owned := true
			for _, b := range tm.Blocks {
				if !scanned[b.Partition] {
					// A partition not searched (an attempt of another body under the key).
					if err := scan([]int32{b.Partition}); err != nil {
						return nil, err
					}
				}
				e, ok := entries[objectKey{b.Partition, obj}]
				if !ok {
					return nil, fmt.Errorf("%w: %s: the batch %s of an attempt of %q has no entry on partition %d below the fence",
						ErrCorrupt, m.topic, obj, m.idemKey, b.Partition)
				}
				owned = owned && !blockSkipped(e, b.Offset)
				fa.Parts = append(fa.Parts, store.PartClaim{Partition: b.Partition, BaseOffset: e.BaseOffset + b.Offset, Count: b.Count})
			}
			if owned && (found == nil || firstOffset(*fa) < firstOffset(*found)) {
				found = fa
			}
		}
	}
	return found, nil
}

// firstOffset orders owned attempts (there is at most one; the order only makes the
// answer deterministic if a bug made two).
func firstOffset(c store.RequestClaim) int64 {
	first := int64(-1)
	for _, pc := range c.Parts {
		if first < 0 || pc.BaseOffset < first {
			first = pc.BaseOffset
		}
	}
	return first
}

// fenceWindow returns the index entries of partition p below hw (the partition's high
// watermark at a fence) of batches numbered above floor: read down from hw to the first
// entry numbered at or below floor, below which every batch is older. It waits until the
// index covers that range without a gap, at most retryIndexWait. A range that reaches
// the partition's log start (above 0) without such an entry, holds an entry that keeps
// no batch number, or is longer than retryScanLimit entries cannot be decided:
// ErrRetryUndecided.
func (l *Log) fenceWindow(ctx context.Context, topic string, p int32, hw, floor int64) ([]store.IndexEntry, error) {
	deadline := time.Now().Add(retryIndexWait)
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		es, done, err := l.windowOnce(ctx, topic, p, hw, floor)
		if err != nil || done {
			return es, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w: %s/%d: the index does not cover [.., %d) after %s; the retry cannot tell whether an earlier attempt was appended; nothing was appended",
				ErrUnavailable, topic, p, hw, retryIndexWait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// windowOnce reads fenceWindow's range once; done is false when the index has a gap in
// it (commits not yet indexed).
func (l *Log) windowOnce(ctx context.Context, topic string, p int32, hw, floor int64) ([]store.IndexEntry, bool, error) {
	logStart, _, err := l.bounds(ctx, topic, p)
	if err != nil {
		return nil, false, err
	}
	// Probe down from hw for an entry at or below the floor (or one keeping no number,
	// below which the read cannot decide anyway); without one, read from the log start.
	lo := logStart
	for step := int64(windowPage); hw-step > logStart; step *= 4 {
		es, err := l.meta.IndexEntries(ctx, topic, p, hw-step, 1)
		if err != nil {
			return nil, false, storeErr(err)
		}
		if len(es) == 1 && es[0].BaseOffset <= hw-step && es[0].End() > hw-step && es[0].Batch <= floor {
			lo = es[0].BaseOffset
			break
		}
	}
	var es []store.IndexEntry
	for next := lo; next < hw && len(es) <= retryScanLimit; {
		page, err := l.meta.IndexEntries(ctx, topic, p, next, windowPage)
		if err != nil {
			return nil, false, storeErr(err)
		}
		from := next
		for _, e := range page {
			if e.End() <= next {
				continue // the entry before next
			}
			if e.BaseOffset > next {
				return nil, false, nil // a gap: a commit not yet indexed
			}
			if e.BaseOffset >= hw {
				break
			}
			es = append(es, e)
			if next = e.End(); next >= hw {
				break
			}
		}
		if next == from {
			return nil, false, nil // nothing past next: the rest is not yet indexed
		}
	}
	out, err := searchWindow(es, lo, floor)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %s/%d: %w", ErrRetryUndecided, topic, p, err)
	}
	return out, true, nil
}

// searchWindow decides a retry's search of one partition from es, the index entries
// tiling the partition from lo up to the fence's high watermark (at most one more than
// retryScanLimit): the entries of batches numbered above floor. The range is decided
// when it holds an entry numbered at or below floor (every entry below it is older), or
// starts at offset 0 (the whole log); an entry keeping no number above the last such
// entry, a range cut by a log start above 0, or one longer than retryScanLimit cannot
// be decided (an error, which the caller makes ErrRetryUndecided).
func searchWindow(es []store.IndexEntry, lo, floor int64) ([]store.IndexEntry, error) {
	if len(es) > retryScanLimit {
		return nil, fmt.Errorf("more than %d index entries above the request's batch floor %d", retryScanLimit, floor)
	}
	var out []store.IndexEntry
	bottom := false         // an entry numbered at or below the floor: nothing older counts
	unnumbered := int64(-1) // an entry keeping no number above the bottom, if any
	for _, e := range es {
		switch {
		case e.Batch == 0:
			unnumbered = e.BaseOffset
		case e.Batch <= floor:
			bottom, unnumbered = true, -1
		default:
			out = append(out, e)
		}
	}
	switch {
	case unnumbered >= 0:
		return nil, fmt.Errorf("the index entry at %d, above the request's batch floor %d, keeps no batch number (written by an earlier version)",
			unnumbered, floor)
	case !bottom && lo > 0:
		return nil, fmt.Errorf("retention removed the records below %d, which may hold an earlier attempt (of a batch above %d)", lo, floor)
	}
	return out, nil
}

// membersOf returns the members table at [off, off+n) of object, cached: a batch's table
// never changes, a burst of retries reads the same recent batches, and materialising a
// batch reads its table once for each of its partitions.
func (l *Log) membersOf(ctx context.Context, object string, off, n int64) ([]tableMember, error) {
	l.tablesMu.Lock()
	ms, ok := l.tables[object]
	l.tablesMu.Unlock()
	if ok {
		return ms, nil
	}
	b, err := l.objects.GetRange(ctx, object, off, n)
	if err != nil {
		return nil, storeErr(fmt.Errorf("members table of %s: %w", object, err))
	}
	if ms, err = decodeMembers(b); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, object, err)
	}
	l.tablesMu.Lock()
	defer l.tablesMu.Unlock()
	if len(l.tables) >= maxCachedTables {
		for k := range l.tables {
			delete(l.tables, k) // an arbitrary one: the cache only spares repeated reads
			break
		}
	}
	l.tables[object] = ms
	return ms, nil
}
