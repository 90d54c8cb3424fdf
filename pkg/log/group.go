package log

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/store"
)

// Group commit: the validated requests of one topic that arrive within a short window
// (Config.GroupCommitWindow, or until Config.GroupCommitBytes of records are waiting)
// are written as one batch — one segment object, then one commit per partition and
// key. Every request arrives with one encoded block per partition (its own, from the
// binary wire format, or encoded by prepare); blocks are never merged or re-encoded.
// The requests without an idempotency key share one commit per partition: their blocks
// lie back to back, in the order the requests joined, and one index entry covers them
// all. An idempotent request keeps a commit of its own per partition, under its key, so
// that its exactly-once claim (per key and partition) covers exactly its records.

// member is one validated request waiting for its batch.
type member struct {
	ctx context.Context
	// topic is t's incarnation (store.TopicID): batches, index entries and claims are
	// per incarnation.
	topic string
	t     store.Topic
	nrecs int
	// groups are the request's partitions (their outcomes once done); pending those
	// still to append, in partition order (an earlier attempt appended the others).
	groups, pending []*partGroup
	// idemKey ("<topic ID>#key") and bodyHash are set for an idempotent request.
	idemKey, bodyHash string
	// size is the record bytes of the pending partitions: the byte budget's measure.
	size  int
	start time.Time
	// out carries the outcome; it is buffered so a batch never waits for a caller that
	// left.
	out chan error

	// commits are the batch's commits holding the member's groups, set while the batch
	// is written.
	commits []*commitPlan
}

// commitPlan is one commit of a batch: the blocks of one partition from one request, or
// from every non-idempotent request of the batch that has records there. Its blocks lie
// back to back in the object, so one index entry covers them all.
type commitPlan struct {
	partition         int32
	idemKey, bodyHash string
	parts             []*partGroup // in object order
	offset, length    int64        // the byte range in the object
	count             int64
	maxTs             int64
	err               error
}

// planCommits assigns the members' pending groups to commits, in partition order and,
// within a partition, the shared commit first then idempotent ones in joining order.
func planCommits(members []*member) []*commitPlan {
	shared := map[int32]*commitPlan{}
	var plans []*commitPlan
	for _, m := range members {
		for _, g := range m.pending {
			var c *commitPlan
			switch {
			case m.idemKey != "":
				c = &commitPlan{partition: g.partition, idemKey: m.idemKey, bodyHash: m.bodyHash}
				plans = append(plans, c)
			case shared[g.partition] != nil:
				c = shared[g.partition]
			default:
				c = &commitPlan{partition: g.partition}
				shared[g.partition] = c
				plans = append(plans, c)
			}
			if len(c.parts) == 0 || g.maxTs > c.maxTs {
				c.maxTs = g.maxTs
			}
			c.parts = append(c.parts, g)
			c.count += int64(g.count)
			m.commits = append(m.commits, c)
		}
	}
	sort.SliceStable(plans, func(i, j int) bool { return plans[i].partition < plans[j].partition })
	return plans
}

// writeBatch writes the members' blocks (all of one topic) back to back as one object,
// commits each plan and answers every member on its out channel. A failed object PUT
// (or a batch stalled past the commit window) fails every member with nothing appended;
// a failed commit fails the groups of that plan only, each member getting an
// *AppendError (its caller fills in the outcomes).
func (l *Log) writeBatch(ctx context.Context, topic string, members []*member) {
	failAll := func(err error) {
		for _, m := range members {
			m.out <- err
		}
	}
	now := l.now()
	nowMs := now.UnixMilli()
	t := members[0].t
	plans := planCommits(members)

	size := 0
	for _, c := range plans {
		for _, g := range c.parts {
			size += len(g.data)
		}
	}
	var obj []byte
	if len(plans) == 1 && len(plans[0].parts) == 1 {
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
	key := segment.ObjectKey(t.Name, t.Incarnation, ulid.MustNew(ulid.Timestamp(now), crand.Reader))
	if err := l.objects.Put(ctx, key, obj); err != nil {
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

	cs := make([]store.SeqCommit, len(plans))
	for i, c := range plans {
		e := store.IndexEntry{
			Topic: topic, Partition: c.partition, Count: c.count, ObjectKey: key,
			ByteOffset: c.offset, ByteLength: c.length,
			MaxTimestamp: time.UnixMilli(c.maxTs), AppendedAt: time.UnixMilli(nowMs),
			ExpiresAt: time.UnixMilli(nowMs).Add(t.Retention + retentionGrace),
		}
		cs[i] = store.SeqCommit{Entry: e, IdempotencyKey: c.idemKey, BodyHash: c.bodyHash}
		if c.idemKey != "" {
			cs[i].ClaimExpiresAt = claimExpiry(e)
		}
	}
	// A topic of the topic commit layout sequences the whole batch in one step; then (or
	// for a topic of per-partition counters, commit by commit) each commit's entry is
	// materialised, in parallel.
	var bases []int64
	var errs []error
	if store.TopicCommits(topic) {
		bases, errs = l.commitBatch(cctx, cs)
	} else {
		bases, errs = make([]int64, len(cs)), make([]error, len(cs))
		var wg sync.WaitGroup
		for i := range cs {
			wg.Go(func() { bases[i], errs[i] = l.commit(cctx, cs[i]) })
		}
		wg.Wait()
	}
	for i, c := range plans {
		c.err = errs[i]
		base := bases[i]
		for _, g := range c.parts {
			g.base, g.err = base, c.err
			base += int64(g.count)
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

// answer is a member's outcome once its batch's commits are done; the outcomes of its
// groups are in the groups.
func (l *Log) answer(m *member) error {
	var firstErr error
	for _, c := range m.commits {
		if errors.Is(c.err, ErrIdempotencyKeyReused) {
			return c.err
		}
		if c.err != nil && firstErr == nil {
			firstErr = c.err
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
		b = &batch{}
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
	go c.write(topic, b.members)
}

// write writes a closed batch. Members whose context ended before the batch was written
// have left: their records are not written. The batch's own context keeps the first
// remaining member's values but none of the members' cancellation, bounded by the
// commit window (no commit may come later anyway).
func (c *coalescer) write(topic string, members []*member) {
	live := members[:0:0]
	for _, m := range members {
		if m.ctx.Err() == nil {
			live = append(live, m)
		}
	}
	if len(live) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(live[0].ctx), c.l.commitWindow)
	defer cancel()
	c.l.writeBatch(ctx, topic, live)
}
