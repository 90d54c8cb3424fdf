package log

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// Fenced idempotency (issue 20 item 1): a producer session's request (AppendOptions.Producer,
// the SDK's producer id and sequence number as its key) keeps no claim. Its first attempt
// is a member of a batch like any other, its block owned. A retry — which any host may
// serve while the first attempt is still in flight on another — first fences the earlier
// attempts on the topic item (store.SequencerStore.FenceRequest): every batch committed
// after the fence skips their blocks, so from then on no earlier attempt can become the
// owner. It then searches the batches committed before the fence, from the request's first
// send on, for an owned attempt: the log is the state, read back through the index entries
// (which locate their batch's members table) and those tables. Found, the retry answers its
// offsets and appends nothing; not found, it appends itself, owned unless a later attempt
// fences it in turn. The steady state writes nothing per request: the cost of idempotency
// moves to the retries.

// retrySkew is the clock difference allowed between the client that measured a retry's
// elapsed time, and the host that stamped an earlier attempt's batch, and this host.
const retrySkew = 2 * time.Second

// retryIndexWait bounds how long a retry waits for the index to cover the batches
// committed before its fence (an appender between its commit and its entries, or the
// materialiser indexing one whose appender stopped) before answering ErrUnavailable.
const retryIndexWait = 30 * time.Second

// windowPage is the index page a retry's search reads.
const windowPage = 500

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
	}
	found, err := l.findAttempt(ctx, m, *pt, l.now().Add(-opt.RetryElapsed-retrySkew))
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

// objectKey identifies one batch's entry on one partition.
type objectKey struct {
	partition int32
	object    string
}

// findAttempt searches the batches committed before fence point pt and appended since
// since for an owned attempt of m's request, and returns it as the claim it would have
// made (its body, placement and each block's offsets). A request of blocks is found on its own
// partitions; one of records, whose placement a partition increase may have changed, on
// every partition of the topic.
func (l *Log) findAttempt(ctx context.Context, m *member, pt store.FencePoint, since time.Time) (*store.RequestClaim, error) {
	var parts []int32
	if m.placedBy == 0 {
		for _, g := range m.groups {
			parts = append(parts, g.partition)
		}
	} else {
		for p := range m.t.Partitions {
			parts = append(parts, p)
		}
	}
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
				es, err := l.fenceWindow(ctx, m.topic, p, pt.Next[p], since)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					return
				}
				for _, e := range es {
					entries[objectKey{p, e.ObjectKey}] = e
					if !e.AppendedAt.Before(since) && e.MembersLength > 0 && !e.Duplicate {
						tables[e.ObjectKey] = [2]int64{e.MembersOffset, e.MembersLength}
					}
				}
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	if err := scan(parts); err != nil {
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
					// A partition not searched: the topic grew since this host read it.
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
// watermark at a fence) whose batches may have been committed since since: from the
// newest entry appended before since minus the commit window (every batch commits within
// the commit window of its append, so earlier ones committed before since) up to hw. It
// waits until the index covers that range without a gap, at most retryIndexWait.
func (l *Log) fenceWindow(ctx context.Context, topic string, p int32, hw int64, since time.Time) ([]store.IndexEntry, error) {
	floor := since.Add(-l.commitWindow)
	deadline := time.Now().Add(retryIndexWait)
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		es, done, err := l.windowOnce(ctx, topic, p, hw, floor)
		if err != nil || done {
			return es, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w: %s/%d: the index does not cover [.., %d) after %s; the retry cannot tell whether an earlier attempt was appended",
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
func (l *Log) windowOnce(ctx context.Context, topic string, p int32, hw int64, floor time.Time) ([]store.IndexEntry, bool, error) {
	logStart, _, err := l.bounds(ctx, topic, p)
	if err != nil {
		return nil, false, err
	}
	lo := logStart
	for step := int64(windowPage); hw-step > logStart; step *= 4 {
		es, err := l.meta.IndexEntries(ctx, topic, p, hw-step, 1)
		if err != nil {
			return nil, false, storeErr(err)
		}
		if len(es) == 1 && es[0].BaseOffset <= hw-step && es[0].End() > hw-step && es[0].AppendedAt.Before(floor) {
			lo = es[0].BaseOffset
			break
		}
	}
	var out []store.IndexEntry
	next := lo
	for next < hw {
		page, err := l.meta.IndexEntries(ctx, topic, p, next, windowPage)
		if err != nil {
			return nil, false, storeErr(err)
		}
		from := next
		for _, e := range page {
			switch {
			case e.End() <= next:
				continue // the entry before next
			case e.BaseOffset > next:
				return nil, false, nil // a gap: a commit not yet indexed
			case e.BaseOffset >= hw:
				return out, true, nil
			}
			out = append(out, e)
			next = e.End()
		}
		if next == from {
			return nil, false, nil // nothing past next: the rest is not yet indexed
		}
	}
	return out, true, nil
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
