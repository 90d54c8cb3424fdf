package log

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/store"
)

// Group commit: the validated requests of one topic that arrive within a short window
// (Config.GroupCommitWindow, or until Config.GroupCommitBytes of records are waiting)
// are written as one batch — one segment object, then one commit per partition. Every
// request arrives with one encoded block per partition (its own, from the binary wire
// format, or encoded by prepare); blocks are never merged or re-encoded. All requests
// of a batch, idempotent or not, share one commit per partition: their blocks lie back
// to back, in the order the requests joined, and one index entry covers them all.
//
// Idempotency costs one write per request (folded claims): after the commits, each
// idempotent request writes its one claim carrying every partition's offsets
// (store.ClaimRequest). A partition's slot in a claim is write-once, so when two
// attempts of one request both commit a partition, the first to claim it owns it and
// the other's block is listed in its entry's Skip, which readers pass over; the later
// attempt answers the owner's offsets. The batch object ends with a table of its
// idempotent members, so the stream materialiser can make the same claims for a commit
// whose appender stopped before making them.

// member is one validated request waiting for its batch.
type member struct {
	ctx context.Context
	// topic is t's incarnation (store.TopicID): batches, index entries and claims are
	// per incarnation.
	topic string
	t     store.Topic
	nrecs int
	// groups are the request's partitions (their outcomes once done); pending the same,
	// in partition order.
	groups, pending []*partGroup
	// idemKey ("<topic ID>#key") and bodyHash are set for an idempotent request, and
	// placedBy, for a request of records, the partition count its records were placed by.
	idemKey, bodyHash string
	placedBy          int32
	// explicit says every record of a request of records names its partition: its
	// placement does not depend on the partition count.
	explicit bool
	// owner is the appending principal's scope, the owner of a producer retry's fence.
	owner string
	// producer marks a producer session's request (fenced idempotency: no claim), and
	// attempt is which attempt of it this is.
	producer bool
	attempt  int32
	// size is the record bytes of the pending partitions: the byte budget's measure.
	size  int
	start time.Time
	// out carries the outcome; it is buffered so a batch never waits for a caller that
	// left.
	out chan error
	// gate must pass before the member's batch commits (AppendOptions.Gate).
	gate func(ctx context.Context) error
	// after is the batch of the append this one was queued behind (Queued.After): its
	// batch sequences after that one, and fails if that one failed. batch is the batch
	// it joined.
	after, batch *batch
}

// batchExpiry is the mark of a batch's object (store.Expiry): Expiring only when the
// entries every member's view of its topic would write carry an expiry (entryExpiry:
// the topic deletes by time and the log has a maximum retention). So an object holding a
// record of a compacted topic is never one the lifecycle backstop may take, and every
// Expiring object is referred to by expiring entries only, which is how the compaction
// pass of a topic altered to compact finds the objects to keep.
func (l *Log) batchExpiry(members []*member, at time.Time) store.Expiry {
	for _, m := range members {
		if store.ExpiryOf(m.t) != store.Expiring || l.entryExpiry(m.t, at).IsZero() {
			return store.Kept
		}
	}
	return store.Expiring
}

// commitPlan is one commit of a batch: the blocks of one partition from every request
// of the batch that has records there, back to back in the object, so one index entry
// covers them all.
type commitPlan struct {
	partition      int32
	parts          []*partGroup // in object order
	members        []store.CommitMember
	offset, length int64 // the byte range in the object
	count          int64
	maxTs          int64
	sc             store.SeqCommit // once sequenced
	err            error
}

// planCommits assigns the members' pending groups to one commit per partition, in
// partition order, each group's records at g.rel from its commit's base.
func planCommits(members []*member) []*commitPlan {
	byP := map[int32]*commitPlan{}
	var plans []*commitPlan
	for _, m := range members {
		for _, g := range m.pending {
			c := byP[g.partition]
			if c == nil {
				c = &commitPlan{partition: g.partition}
				byP[g.partition] = c
				plans = append(plans, c)
			}
			if len(c.parts) == 0 || g.maxTs > c.maxTs {
				c.maxTs = g.maxTs
			}
			g.m, g.rel, g.commit = m, c.count, c
			if m.idemKey != "" {
				c.members = append(c.members, store.CommitMember{Key: m.idemKey, BodyHash: m.bodyHash, Total: int64(m.nrecs),
					Partitions: m.placedBy, Offset: g.rel, Count: int64(g.count), Producer: m.producer, Attempt: m.attempt})
			}
			c.parts = append(c.parts, g)
			c.count += int64(g.count)
		}
	}
	sort.SliceStable(plans, func(i, j int) bool { return plans[i].partition < plans[j].partition })
	return plans
}

// membersTable is the batch's members table (nil without idempotent members).
func membersTable(members []*member) ([]byte, error) {
	var ms []tableMember
	for _, m := range members {
		if m.idemKey == "" {
			continue
		}
		tm := tableMember{Key: m.idemKey, BodyHash: m.bodyHash, Total: int64(m.nrecs), Partitions: m.placedBy,
			Producer: m.producer, Attempt: m.attempt}
		for _, g := range m.pending {
			tm.Blocks = append(tm.Blocks, tableBlock{Partition: g.partition, Offset: g.rel, Count: int64(g.count)})
		}
		ms = append(ms, tm)
	}
	if len(ms) == 0 {
		return nil, nil
	}
	return encodeMembers(ms)
}

// writeBatch writes the members' blocks (all of one topic) back to back as one object,
// then commits each partition, claims each idempotent member's key once, writes the
// entries and answers every member on its out channel. A failed object PUT (or a batch
// stalled past the commit window) fails every member with nothing appended; a failed
// commit fails the groups of that partition only, each member getting an *AppendError
// (its caller fills in the outcomes).
func (l *Log) writeBatch(ctx context.Context, topic string, members []*member, b *batch) {
	// A batch's commits are sequenced once the batches it is ordered after are (b.after):
	// a failed one fails it, nothing committed, so an ordered append never lands
	// without the one it follows. b.sequenced tells the batches ordered after this one.
	defer b.sequenced(true)
	failAll := func(err error) {
		for _, m := range members {
			m.out <- err
		}
	}
	now := l.now()
	nowMs := now.UnixMilli()
	t := members[0].t
	plans := planCommits(members)
	table, err := membersTable(members)
	if err != nil {
		failAll(fmt.Errorf("log: encode the members table: %w", err))
		return
	}

	size := len(table)
	for _, c := range plans {
		for _, g := range c.parts {
			size += len(g.data)
		}
	}
	var obj []byte
	if len(plans) == 1 && len(plans[0].parts) == 1 && table == nil {
		obj = plans[0].parts[0].data // one block: the object is that block, uncopied
	} else {
		obj = make([]byte, 0, size)
		for _, c := range plans {
			for _, g := range c.parts {
				obj = append(obj, g.data...)
			}
		}
	}
	off := int64(0)
	for _, c := range plans {
		c.offset = off
		for _, g := range c.parts {
			off += int64(len(g.data))
		}
		c.length = off - c.offset
	}
	tableAt := int64(len(obj))
	obj = append(obj, table...)
	key := segment.ObjectKey(t.Name, t.Incarnation, ulid.MustNew(ulid.Timestamp(now), crand.Reader))
	if err := l.objects.Put(ctx, key, obj, l.batchExpiry(members, now)); err != nil {
		failAll(storeErr(fmt.Errorf("put segment object: %w", err)))
		return
	}
	// An object is only ever committed within commitWindow of its name's time, so
	// retention, which deletes objects by that time plus a larger margin, never deletes
	// one that an entry at or above the log start still refers to.
	cctx, cancel, err := l.commitContext(ctx, now)
	if err != nil {
		failAll(err)
		return
	}
	defer cancel()

	if err := b.waitAfter(cctx); err != nil {
		failAll(err)
		return
	}
	for _, m := range members {
		if m.gate == nil {
			continue
		}
		if err := m.gate(cctx); err != nil {
			failAll(fmt.Errorf("%w: a member of the batch could not go on (%w); nothing of the batch was committed", ErrUnavailable, err))
			return
		}
	}
	cs := make([]store.SeqCommit, len(plans))
	for i, c := range plans {
		e := store.IndexEntry{
			Topic: topic, Partition: c.partition, Count: c.count, ObjectKey: key,
			ByteOffset: c.offset, ByteLength: c.length,
			MaxTimestamp: time.UnixMilli(c.maxTs), AppendedAt: time.UnixMilli(nowMs),
			ExpiresAt: l.entryExpiry(t, time.UnixMilli(nowMs)),
		}
		cs[i] = store.SeqCommit{Entry: e, Members: c.members}
		if len(c.members) > 0 {
			cs[i].ClaimExpiresAt, cs[i].MembersOffset, cs[i].MembersLength = claimExpiry(e), tableAt, int64(len(table))
		}
	}
	sequenced := func(i int, res store.SeqCommit, err error) {
		c := plans[i]
		if err != nil {
			c.err = storeErr(fmt.Errorf("commit %s/%d: %w", topic, c.partition, err))
			return
		}
		res.Members = c.members
		if res.Entry.Batch == 0 {
			res.Entry.Batch = res.Batch
		}
		l.noteBatch(topic, res.Batch)
		c.sc = res
	}
	if store.TopicCommits(topic) {
		// A topic of the topic commit layout sequences the whole batch in one step.
		out, errs := l.meta.SequenceBatch(cctx, cs)
		for i := range plans {
			sequenced(i, out[i], errs[i])
		}
	} else {
		// Per-partition counters: independent commits (the counter add queues them),
		// so in parallel.
		var wg sync.WaitGroup
		for i := range plans {
			wg.Go(func() {
				res, err := l.meta.Sequence(cctx, cs[i])
				sequenced(i, res, err)
			})
		}
		wg.Wait()
	}
	b.sequenced(slices.ContainsFunc(plans, func(c *commitPlan) bool { return c.err != nil }))
	// Each idempotent member's one claim, for the partitions whose commits are not
	// materialised (a materialising backend claimed in the commit).
	claimed := l.claimMembers(cctx, members)
	// The entries of the commits left to index, their members' blocks decided.
	var pending []*commitPlan
	for _, c := range plans {
		if c.err == nil && !c.sc.Materialized {
			pending = append(pending, c)
		}
	}
	parallel(pending, func(c *commitPlan) {
		claims := make([]store.RequestClaim, 0, len(c.members))
		for _, g := range c.parts {
			if g.m.idemKey == "" {
				continue
			}
			if g.m.producer {
				claims = append(claims, store.RequestClaim{}) // decided by the commit's fences
				continue
			}
			cl := claimed[g.m]
			if cl.err != nil {
				// The member's claim failed: the entry is left to the materialiser,
				// which claims it from the members table.
				c.err = fmt.Errorf("%w: claim idempotency key of %s/%d: %w", ErrUnavailable, topic, c.partition, cl.err)
				return
			}
			claims = append(claims, cl.claim)
		}
		c.sc.Claims = claims
		if c.sc.Batch == 0 && c.producers() {
			// A commit resolved from the index (its answer lost): the fences its batch
			// found are not known here, but its entry is written (the resolution found
			// it), and it decides.
			c.sc.Entry, c.err = l.storedEntry(cctx, c.sc.Entry)
			return
		}
		c.sc.Entry.SetSkip(store.SkipFor(c.sc))
		c.sc.Entry, c.err = l.putEntry(cctx, c.sc.Entry)
	})
	for _, c := range plans {
		k := 0
		for _, g := range c.parts {
			if c.err != nil {
				g.err = c.err
				continue
			}
			if g.m.idemKey == "" {
				g.base = c.sc.Entry.BaseOffset + g.rel
				continue
			}
			if g.m.producer {
				g.base, g.err = decideProducer(c.sc.Entry, g)
				k++
				continue
			}
			g.base, g.err = g.m.decide(c.sc.Claims[k], g)
			k++
		}
	}

	notified := map[int32]bool{}
	for _, c := range plans {
		if c.err == nil && !notified[c.partition] {
			notified[c.partition] = true
			l.notifier.notify(tpKey{topic, c.partition})
		}
	}
	for _, m := range members {
		m.out <- l.answer(m)
	}
}

// tooOld fails a producer request that arrived more than a commit window before its
// batch is written (a search, a slow batch): committed now, it could land later than two
// commit windows after its arrival, past what a retry's fence is kept for
// (store.FenceHorizon). It answers ErrUnavailable, nothing of it written; the client's
// next attempt decides.
func (l *Log) tooOld(m *member) bool {
	if !m.producer || l.now().Sub(m.start) <= l.commitWindow {
		return false
	}
	m.out <- fmt.Errorf("%w: the request waited %s before its batch was written; nothing was appended",
		ErrUnavailable, l.now().Sub(m.start).Round(time.Millisecond))
	return true
}

// parallel runs fn on every plan at once and waits.
func parallel(plans []*commitPlan, fn func(*commitPlan)) {
	var wg sync.WaitGroup
	for _, c := range plans {
		wg.Go(func() { fn(c) })
	}
	wg.Wait()
}

// claimResult is a member's claim as stored, or why it could not be made.
type claimResult struct {
	claim store.RequestClaim
	err   error
}

// claimMembers writes each idempotent member's one claim, with a slot per partition
// committed and not materialised, in parallel; a member whose commits were all
// materialised (or all failed) writes nothing and is not in the answer.
func (l *Log) claimMembers(ctx context.Context, members []*member) map[*member]claimResult {
	var mu sync.Mutex
	out := map[*member]claimResult{}
	var wg sync.WaitGroup
	for _, m := range members {
		if m.idemKey == "" || m.producer {
			continue
		}
		rec := store.RequestClaim{Key: m.idemKey, BodyHash: m.bodyHash, Count: int64(m.nrecs), Partitions: m.placedBy}
		for _, g := range m.pending {
			c := g.commit
			if c.err == nil && !c.sc.Materialized {
				rec.Parts = append(rec.Parts, store.PartClaim{Partition: g.partition, BaseOffset: c.sc.Entry.BaseOffset + g.rel, Count: int64(g.count)})
				rec.ExpiresAt = c.sc.ClaimExpiresAt
			}
		}
		if len(rec.Parts) == 0 {
			continue
		}
		wg.Go(func() {
			claim, err := l.meta.ClaimRequest(ctx, rec)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				err = storeErr(err)
				out[m] = claimResult{err: err}
				return
			}
			out[m] = claimResult{claim: claim}
		})
	}
	wg.Wait()
	return out
}

// decide is an idempotent member's outcome for its group g given its claim as stored:
// the claim's offsets for g's partition when the claim names this request (this
// attempt's own, or an earlier attempt's), ErrIdempotencyKeyReused for another body, and
// a *replaceError when the claim was placed by another partition count.
func (m *member) decide(claim store.RequestClaim, g *partGroup) (int64, error) {
	me := store.RequestClaim{BodyHash: m.bodyHash, Count: int64(m.nrecs)}
	if !claim.Matches(me) {
		return 0, fmt.Errorf("%w: key %q", ErrIdempotencyKeyReused, m.idemKey)
	}
	if claim.Partitions != 0 && m.placedBy != 0 && claim.Partitions != m.placedBy {
		return 0, &replaceError{partitions: claim.Partitions}
	}
	pc, ok := claim.Part(g.partition)
	switch {
	case !ok:
		return 0, fmt.Errorf("%w: the claim of key %q has no slot for partition %d", ErrUnavailable, m.idemKey, g.partition)
	case pc.Count != int64(g.count):
		return 0, fmt.Errorf("%w: key %q", ErrIdempotencyKeyReused, m.idemKey)
	}
	return pc.BaseOffset, nil
}

// producers reports whether the commit holds a producer request's block.
func (c *commitPlan) producers() bool {
	for _, m := range c.members {
		if m.Producer {
			return true
		}
	}
	return false
}

// decideProducer is a producer request's outcome for its group g given the commit's
// entry as written: its offsets, or ErrSuperseded when the entry skips its block (a
// later attempt fenced it before the commit).
func decideProducer(e store.IndexEntry, g *partGroup) (int64, error) {
	if blockSkipped(e, g.rel) {
		return 0, fmt.Errorf("%w: key %q, attempt %d", ErrSuperseded, g.m.idemKey, g.m.attempt)
	}
	return e.BaseOffset + g.rel, nil
}

// blockSkipped reports whether entry e skips the block of one member at rel from its
// base (a skip run covers a member's block whole or not at all; an unreadable Skip
// owns nothing).
func blockSkipped(e store.IndexEntry, rel int64) bool {
	if e.Duplicate {
		return true
	}
	runs, err := e.SkipRanges()
	return err != nil || skipped(runs, rel)
}

// answer is a member's outcome once its batch's commits are done; the outcomes of its
// groups are in the groups.
func (l *Log) answer(m *member) error {
	var firstErr error
	for _, g := range m.pending {
		var re *replaceError
		if errors.Is(g.err, ErrIdempotencyKeyReused) || errors.Is(g.err, ErrSuperseded) || errors.As(g.err, &re) {
			return g.err
		}
		if g.err != nil && firstErr == nil {
			firstErr = g.err
		}
	}
	if firstErr == nil {
		l.metrics.Appended(m.t.Name, m.nrecs, m.size, l.now().Sub(m.start))
		return nil
	}
	if !errors.Is(firstErr, ErrUnavailable) {
		firstErr = fmt.Errorf("%w: %w", ErrUnavailable, firstErr)
	}
	return &AppendError{Err: firstErr}
}

// coalescer holds each topic's open batch. A batch opens with its first member and is
// written when the window has passed since then or when its records reach the byte
// budget, whichever comes first; members arriving after that open the next batch, so
// several batches of a topic may be in flight at once, each with its own object.
type coalescer struct {
	l      *Log
	window time.Duration
	budget int

	mu   sync.Mutex
	open map[string]*batch // by topic
}

type batch struct {
	members []*member
	size    int
	timer   *time.Timer
	// after are the earlier batches some member of this one is ordered after; seq is
	// closed once this batch's commits are sequenced, or it failed (failed set first).
	after  []*batch
	seq    chan struct{}
	once   sync.Once
	failed bool
	// dropped says a member left before the batch was written: what was ordered after
	// it must not commit without it.
	dropped bool
}

// sequenced marks b's commits sequenced (failed: some were not, or none were); only the
// first call counts. A nil b (an append outside a batch) has nothing to tell.
func (b *batch) sequenced(failed bool) {
	if b == nil {
		return
	}
	b.once.Do(func() {
		b.failed = failed || b.dropped
		close(b.seq)
	})
}

// waitAfter waits until the batches b is ordered after are sequenced: ErrUnavailable
// when one failed (or ctx ended first).
func (b *batch) waitAfter(ctx context.Context) error {
	if b == nil {
		return nil
	}
	for _, a := range b.after {
		select {
		case <-a.seq:
			if a.failed {
				return fmt.Errorf("%w: an append this one was queued after failed; nothing of this batch was committed", ErrUnavailable)
			}
		case <-ctx.Done():
			return fmt.Errorf("%w: waiting for an earlier queued append: %w", ErrUnavailable, ctx.Err())
		}
	}
	return nil
}

func newCoalescer(l *Log, window time.Duration, budget int) *coalescer {
	return &coalescer{l: l, window: window, budget: budget, open: map[string]*batch{}}
}

// submit adds m to its topic's open batch (opening one, or writing out a batch the
// member would overfill first). The answer comes on m.out.
func (c *coalescer) submit(m *member) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.open[m.topic]
	if b != nil && b.size+m.size > c.budget {
		c.closeLocked(m.topic, b)
		b = nil
	}
	if b == nil {
		b = &batch{seq: make(chan struct{})}
		c.open[m.topic] = b
		b.timer = time.AfterFunc(c.window, func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.open[m.topic] == b {
				c.closeLocked(m.topic, b)
			}
		})
	}
	b.members = append(b.members, m)
	b.size += m.size
	m.batch = b
	if a := m.after; a != nil && a != b && !slices.Contains(b.after, a) {
		b.after = append(b.after, a)
	}
	if b.size >= c.budget {
		c.closeLocked(m.topic, b)
	}
}

// closeLocked takes b out of the open batches (c.mu held) and writes it in the
// background. Only the open batch of a topic is ever closed, so each batch is written
// once.
func (c *coalescer) closeLocked(topic string, b *batch) {
	delete(c.open, topic)
	b.timer.Stop()
	go c.write(topic, b)
}

// write writes a closed batch. Members whose context ended before the batch was written
// have left: their records are not written. The batch's own context keeps the first
// remaining member's values but none of the members' cancellation, bounded by the
// commit window (no commit may come later anyway).
func (c *coalescer) write(topic string, b *batch) {
	live := b.members[:0:0]
	for _, m := range b.members {
		if m.ctx.Err() == nil && !c.l.tooOld(m) {
			live = append(live, m)
		}
	}
	b.dropped = len(live) < len(b.members)
	if len(live) == 0 {
		b.sequenced(true)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(live[0].ctx), c.l.commitWindow)
	defer cancel()
	c.l.writeBatch(ctx, topic, live, b)
}
