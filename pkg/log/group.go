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
// are written as one batch — one segment object, then one commit per block. The
// requests without an idempotency key share one block (one commit) per partition; an
// idempotent request keeps a block of its own per partition, committed under its key,
// so that its exactly-once claim (per key and partition) covers exactly its records.
// Inside a shared block the records are in the order the requests joined the batch,
// each request's in request order.

// member is one validated request waiting for its batch.
type member struct {
	ctx   context.Context
	topic string
	t     store.Topic
	recs  []Record
	parts []int32
	// pending are the partitions still to append, in partition order; results (in
	// request order) already holds the partitions an earlier attempt appended.
	pending []partGroup
	results []Result
	// idemKey ("topic#key") and bodyHash are set for an idempotent request.
	idemKey, bodyHash string
	// size is the record bytes of the pending partitions: the byte budget's measure.
	size  int
	start time.Time
	// out carries the answer; it is buffered so a batch never waits for a caller that
	// left.
	out chan outcome

	// Set while the batch is written.
	blocks []*block
	nbytes int
}

type outcome struct {
	results []Result
	err     error
}

// block is one commit of a batch: records of one partition from one request, or from
// every non-idempotent request of the batch that has records there.
type block struct {
	partition         int32
	idemKey, bodyHash string
	owners            []owner // the block's records, in block order
	ref               blockRef
	err               error
}

// owner is one record of a block: record ri of member m.
type owner struct {
	m  *member
	ri int
}

// planBlocks assigns the members' pending records to blocks, in partition order and,
// within a partition, shared block first then idempotent ones in joining order.
func planBlocks(members []*member) []*block {
	shared := map[int32]*block{}
	var blocks []*block
	for _, m := range members {
		for _, g := range m.pending {
			var b *block
			switch {
			case m.idemKey != "":
				b = &block{partition: g.partition, idemKey: m.idemKey, bodyHash: m.bodyHash}
				blocks = append(blocks, b)
			case shared[g.partition] != nil:
				b = shared[g.partition]
			default:
				b = &block{partition: g.partition}
				shared[g.partition] = b
				blocks = append(blocks, b)
			}
			for _, ri := range g.idx {
				b.owners = append(b.owners, owner{m, ri})
			}
			m.blocks = append(m.blocks, b)
		}
	}
	sort.SliceStable(blocks, func(i, j int) bool { return blocks[i].partition < blocks[j].partition })
	return blocks
}

// writeBatch writes the members' records (all of one topic) as one object, commits each
// block and answers every member on its out channel. A failed object PUT (or a batch
// stalled past the commit window) fails every member with nothing appended; a failed
// commit fails the records of that block only, each member getting an *AppendError that
// lists its committed and failed partitions.
func (l *Log) writeBatch(ctx context.Context, topic string, members []*member) {
	failAll := func(err error) {
		for _, m := range members {
			m.out <- outcome{err: err}
		}
	}
	now := l.now()
	nowMs := now.UnixMilli()
	t := members[0].t
	blocks := planBlocks(members)

	var obj []byte
	for _, b := range blocks {
		srecs := make([]segment.Record, len(b.owners))
		var maxTs int64
		for j, o := range b.owners {
			r := o.m.recs[o.ri]
			ts := nowMs
			if r.Timestamp != nil {
				ts = *r.Timestamp
			}
			if j == 0 || ts > maxTs {
				maxTs = ts
			}
			srecs[j] = segment.Record{Timestamp: ts, Key: r.Key, Value: r.Value, Headers: r.Headers}
			o.m.nbytes += segment.RecordSize(srecs[j])
		}
		off := len(obj)
		var err error
		obj, err = segment.AppendBlock(obj, srecs)
		if err != nil {
			failAll(invalidf("encode partition %d: %v", b.partition, err))
			return
		}
		b.ref = blockRef{offset: int64(off), length: int64(len(obj) - off), maxTs: maxTs}
	}
	key := fmt.Sprintf("v1/%s/%s", topic, ulid.MustNew(ulid.Timestamp(now), crand.Reader).String())
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

	// Blocks are independent commits (the counter add queues them), so in parallel.
	var wg sync.WaitGroup
	for _, b := range blocks {
		wg.Go(func() {
			e := store.IndexEntry{
				Topic: topic, Partition: b.partition, Count: int64(len(b.owners)), ObjectKey: key,
				ByteOffset: b.ref.offset, ByteLength: b.ref.length,
				MaxTimestamp: time.UnixMilli(b.ref.maxTs), AppendedAt: time.UnixMilli(nowMs),
				ExpiresAt: time.UnixMilli(nowMs).Add(t.Retention + retentionGrace),
			}
			base, err := l.commit(cctx, store.SeqCommit{Entry: e, IdempotencyKey: b.idemKey, BodyHash: b.bodyHash})
			if err != nil {
				b.err = err
				return
			}
			for j, o := range b.owners {
				o.m.results[o.ri] = Result{Partition: b.partition, Offset: base + int64(j)}
			}
		})
	}
	wg.Wait()

	notified := map[int32]bool{}
	for _, b := range blocks {
		if b.err == nil && !notified[b.partition] {
			notified[b.partition] = true
			l.notifier.notify(tpKey{topic, b.partition})
		}
	}
	for _, m := range members {
		m.out <- l.answer(m)
	}
}

// answer is a member's outcome once its batch's commits are done.
func (l *Log) answer(m *member) outcome {
	var firstErr error
	for _, b := range m.blocks {
		if errors.Is(b.err, ErrIdempotencyKeyReused) {
			return outcome{err: b.err}
		}
		if b.err != nil && firstErr == nil {
			firstErr = b.err
		}
	}
	if firstErr == nil {
		l.metrics.Appended(m.topic, len(m.recs), m.nbytes, l.now().Sub(m.start))
		return outcome{results: m.results}
	}
	for _, b := range m.blocks {
		if b.err == nil {
			continue
		}
		for _, o := range b.owners {
			if o.m == m {
				m.results[o.ri] = Result{Partition: b.partition, Offset: -1, Err: b.err}
			}
		}
	}
	if !errors.Is(firstErr, ErrUnavailable) {
		firstErr = fmt.Errorf("%w: %w", ErrUnavailable, firstErr)
	}
	return outcome{results: m.results, err: &AppendError{Results: m.results, Err: firstErr}}
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
