package log

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// Record is one record to append.
type Record struct {
	Key []byte
	// Value nil is a null value (Kafka's tombstone), kept apart from an empty one.
	Value []byte
	// Headers are kept in order, repeated keys and null (nil) values included.
	Headers []segment.Header
	// Partition, when set, places the record; otherwise a keyed record goes to
	// PartitionForKey and an unkeyed one to the next partition in round-robin order.
	Partition *int32
	// Timestamp (milliseconds since the epoch), when set, is stored as is (CreateTime);
	// otherwise, and always on a topic of LogAppendTime, the append time is used.
	Timestamp *int64
}

// AppendOptions are optional parameters of Append.
type AppendOptions struct {
	// IdempotencyKey (1–128 characters), when set, makes a retry with the same key and
	// the same records return the first call's offsets and append nothing twice.
	IdempotencyKey string
	// FirstAttempt says the caller sent no earlier attempt of this request (the SDK's
	// Strata-Attempt: 0): the key's claim is not read before the append, since no
	// earlier attempt can hold one. Its claim, written after the commits, still decides:
	// a key reused by mistake, or a "first" attempt that was in fact a resend, has its
	// blocks skipped and is answered as the claim says (ErrIdempotencyKeyReused for
	// another body, the claim's offsets for the same one). A wrong hint costs appended,
	// skipped bytes, never a duplicate.
	FirstAttempt bool
	// Producer says IdempotencyKey names one request of a producer session (fenced
	// idempotency, wire.IdempotencyProducer): no claim is read or written. Attempt is
	// which attempt of the request this is (0: the first send, FirstAttempt); a retry
	// fences the earlier attempts and searches the log for them in the batches numbered
	// above BatchFloor (wire.HeaderBatchFloor: the topic's batch mark the client had
	// when it first sent the request; a retry needs it). RetryElapsed, the time since
	// the first send by the client's clock, only bounds a retry (at most
	// wire.MaxRetryElapsed): it decides nothing. On a topic without the topic commit
	// layout the key is claimed as without Producer.
	Producer     bool
	Attempt      int32
	RetryElapsed time.Duration
	BatchFloor   *wire.BatchMark
	// Principal is who appends: an idempotency key is scoped by it as well as by the
	// topic's incarnation, so the same key sent by two principals names two requests and
	// no principal can claim, fence or answer another's. The HTTP API passes the
	// authenticated caller (never empty); "" is the in-process principal (consumers'
	// dead-letter and parking appends), which no HTTP caller can be. A principal's
	// producer retries never use up the fences another's need (store.FenceLimits.Room).
	Principal string
	// Gate, when set, must return nil before the append commits: the append's batch
	// object is written meanwhile, so what the caller must make durable first (the Kafka
	// gateway's record of a batch in flight) overlaps the write instead of preceding it.
	// A Gate that fails fails the append's whole batch, nothing of it committed
	// (ErrUnavailable: every member may retry). Only a first attempt may carry one.
	Gate func(ctx context.Context) error

	// fence is the point at which this retry fenced its earlier attempts, when a call
	// made again placed by another partition count already did.
	fence *store.FencePoint
}

// Result is the outcome of one record of an append, in request order.
type Result struct {
	Partition int32
	Offset    int64
	// AppendTime is, on a topic of LogAppendTime, the timestamp (ms) the record was
	// stamped with; 0 on other topics and for a partition an earlier attempt of an
	// idempotent request appended.
	AppendTime int64
	// Err is set when the record's partition failed (only inside *AppendError).
	Err error
}

// Block is one partition's records as one encoded segment block: the binary wire
// format's frame. AppendBlocks stores it as it is.
type Block struct {
	Partition int32
	Data      []byte
}

// BlockResult is the outcome of one Block of AppendBlocks, in request order: record i
// of the block has offset BaseOffset+i.
type BlockResult struct {
	Partition  int32
	BaseOffset int64
	Count      int
	// Err is set when the block's partition failed (only inside *AppendError).
	Err error
}

// Append makes the records durable and returns their offsets in request order. All
// records share one segment object; each partition's block is then sequenced with one
// counter add (its commit). A validation error changes nothing. If some partitions fail
// after others succeeded, the error is an *AppendError listing both.
//
// With group commit on (Config.GroupCommitWindow), a validated request joins the
// topic's open batch: every request of the batch shares one object and one commit per
// partition (see group.go). A request whose ctx ends while it waits leaves the batch
// without harming it; its records may still be committed, like an append whose
// response was lost.
func (l *Log) Append(ctx context.Context, topic string, recs []Record, opt AppendOptions) ([]Result, error) {
	m, err := l.prepare(ctx, topic, recs, opt, 0)
	if err == nil {
		err = l.run(ctx, m)
	}
	var re *replaceError
	if errors.As(err, &re) {
		return l.replace(ctx, topic, recs, opt, re)
	}
	return l.outcome(ctx, m, err)
}

// replace makes an append again placed by the partition count of its earlier attempt
// (the topic grew between the two): this attempt's blocks are skipped, and the earlier
// attempt's claim then answers.
func (l *Log) replace(ctx context.Context, topic string, recs []Record, opt AppendOptions, re *replaceError) ([]Result, error) {
	opt.FirstAttempt, opt.fence = false, re.fence
	m, err := l.prepare(ctx, topic, recs, opt, re.partitions)
	if err != nil {
		return nil, err
	}
	return l.outcome(ctx, m, l.run(ctx, m))
}

// outcome is what Append returns for the request m (nil: it was refused before it was
// prepared) run with the result err.
func (l *Log) outcome(ctx context.Context, m *member, err error) ([]Result, error) {
	if err != nil {
		var ae *AppendError
		if m != nil && errors.As(err, &ae) {
			if kerr := l.indexKeys(ctx, m); kerr != nil {
				return nil, kerr
			}
			ae.Results = m.recordResults()
		}
		return nil, err
	}
	if err := l.indexKeys(ctx, m); err != nil {
		return nil, err
	}
	return m.recordResults(), nil
}

// AppendBlocks is Append for records already encoded, one block per partition (each
// partition at most once): the binary wire format. Each block is verified with
// segment.Check and then stored byte for byte, never decoded or re-encoded; the records
// keep the timestamps their producer gave them. Limits, idempotency and group commit
// are Append's. On a partial failure the *AppendError's Blocks lists every block's
// outcome.
func (l *Log) AppendBlocks(ctx context.Context, topic string, blocks []Block, opt AppendOptions) ([]BlockResult, error) {
	m, err := l.prepareBlocks(ctx, topic, blocks, opt)
	if err != nil {
		return nil, err
	}
	if err := l.run(ctx, m); err != nil {
		var ae *AppendError
		if errors.As(err, &ae) {
			if kerr := l.indexKeys(ctx, m); kerr != nil {
				return nil, kerr
			}
			ae.Blocks = m.blockResults()
		}
		return nil, err
	}
	if err := l.indexKeys(ctx, m); err != nil {
		return nil, err
	}
	return m.blockResults(), nil
}

// Queued is an append that Enqueue has given its place; Wait awaits its outcome.
type Queued struct {
	l    *Log
	ctx  context.Context
	m    *member
	recs []Record
	opt  AppendOptions
	// res and err are the outcome when it was known at Enqueue (a refusal, a replay, an
	// append without group commit); done says so.
	done bool
	res  []Result
	err  error
}

// Enqueue is Append in two steps: it validates the records and gives the append its
// place in the topic's next batch, returning before the append is durable; Wait then
// returns what Append would. An append enqueued with after set to an earlier one (of
// the same topic) commits after it on every partition they share — in the same batch
// and commit, or in a batch sequenced after that one's — and fails, nothing of it
// committed, when the earlier one's batch failed or was left: so a caller that
// enqueues one partition's appends in order, each after the one before, has them
// committed in that order, pipelined, with no gaps. Without group commit, Enqueue
// appends and waits as Append does.
func (l *Log) Enqueue(ctx context.Context, topic string, recs []Record, opt AppendOptions, after *Queued) *Queued {
	q := &Queued{l: l, ctx: ctx, recs: recs, opt: opt}
	m, err := l.prepare(ctx, topic, recs, opt, 0)
	var re *replaceError
	switch {
	case errors.As(err, &re):
		q.res, q.err = l.replace(ctx, topic, recs, opt, re)
		q.done = true
		return q
	case err != nil:
		q.err, q.done = err, true
		return q
	case len(m.pending) == 0 || l.group == nil:
		q.m = m
		q.err = l.run(ctx, m)
		q.done = true
		return q
	}
	q.m = m
	if after != nil && after.m != nil && after.m.topic == m.topic {
		m.after = after.m.batch
	}
	l.group.submit(m)
	return q
}

// Wait returns the queued append's outcome, as Append returns it.
func (q *Queued) Wait() ([]Result, error) {
	if !q.done {
		select {
		case q.err = <-q.m.out:
		case <-q.ctx.Done():
			q.err = q.ctx.Err()
		}
		q.done = true
	}
	if q.m == nil {
		return q.res, q.err
	}
	var re *replaceError
	if errors.As(q.err, &re) {
		return q.l.replace(q.ctx, q.m.t.Name, q.recs, q.opt, re)
	}
	return q.l.outcome(q.ctx, q.m, q.err)
}

// run appends a prepared request's pending groups (alone, or in its topic's batch) and
// waits for the outcome, which is then in m's groups.
func (l *Log) run(ctx context.Context, m *member) error {
	if len(m.pending) == 0 {
		return nil // every partition replayed from an earlier attempt
	}
	if l.group == nil {
		if !l.tooOld(m) {
			l.writeBatch(ctx, m.topic, []*member{m}, nil)
		}
		return <-m.out
	}
	l.group.submit(m)
	select {
	case err := <-m.out:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// recordResults are a record request's outcomes, in request order.
func (m *member) recordResults() []Result {
	out := make([]Result, m.nrecs)
	for _, g := range m.groups {
		for j, ri := range g.idx {
			if g.err != nil {
				out[ri] = Result{Partition: g.partition, Offset: -1, Err: g.err}
			} else {
				out[ri] = Result{Partition: g.partition, Offset: g.base + int64(j), AppendTime: g.appendTime}
			}
		}
	}
	return out
}

// blockResults are a block request's outcomes, in request order.
func (m *member) blockResults() []BlockResult {
	out := make([]BlockResult, len(m.groups))
	for _, g := range m.groups {
		r := BlockResult{Partition: g.partition, BaseOffset: g.base, Count: g.count, Err: g.err}
		if g.err != nil {
			r.BaseOffset = -1
		}
		out[g.frame] = r
	}
	return out
}

// prepare validates a request of records, encodes each partition's records as one
// block and, for an idempotent request, claims its key and fills in the partitions an
// earlier attempt appended: everything an append does before it may share an object
// with others, so one caller's bad input or reused key fails that caller alone. A
// member with no pending partition is done (a full replay).
func (l *Log) prepare(ctx context.Context, topic string, recs []Record, opt AppendOptions, placedBy int32) (*member, error) {
	t, err := l.Topic(ctx, topic)
	if err != nil {
		return nil, err
	}
	if t, err = l.topicCovering(ctx, t, recs); err != nil {
		return nil, err
	}
	if len(opt.IdempotencyKey) > wire.MaxIdempotencyKey {
		return nil, invalidf("Idempotency-Key must be 1–%d characters", wire.MaxIdempotencyKey)
	}
	if placedBy > t.Partitions {
		if t, err = l.reloadTopic(ctx, topic); err != nil {
			return nil, err
		}
	}
	if placedBy == 0 {
		placedBy = t.Partitions
	}
	parts, err := l.place(t, recs, opt.IdempotencyKey, placedBy)
	if err != nil {
		return nil, err
	}
	m := &member{ctx: ctx, topic: t.ID(), t: t, nrecs: len(recs), start: l.now(), groups: groupByPartition(parts)}
	if opt.IdempotencyKey != "" {
		m.bodyHash, m.placedBy = hashBody(recs), placedBy
		m.explicit = !slices.ContainsFunc(recs, func(r Record) bool { return r.Partition == nil })
	}
	if err := l.admit(ctx, m, opt); err != nil {
		return nil, err
	}
	if t.Compacted() {
		for _, g := range m.groups {
			g.keys = make([]keyMark, len(g.idx))
			for j, ri := range g.idx {
				g.keys[j] = keyMark{key: recs[ri].Key, tombstone: recs[ri].Value == nil}
			}
		}
	}
	nowMs := l.now().UnixMilli()
	srecs := make([]segment.Record, 0, len(recs))
	for _, g := range m.pending {
		srecs = srecs[:0]
		for j, ri := range g.idx {
			r := recs[ri]
			ts := nowMs
			if r.Timestamp != nil && !t.LogAppendTime {
				ts = *r.Timestamp
			}
			if j == 0 || ts > g.maxTs {
				g.maxTs = ts
			}
			srecs = append(srecs, segment.Record{Timestamp: ts, Key: r.Key, Value: r.Value, Headers: r.Headers})
			g.size += segment.RecordSize(srecs[j])
		}
		if g.data, err = segment.EncodeBlock(srecs); err != nil {
			return nil, invalidf("encode partition %d: %v", g.partition, err)
		}
		if t.LogAppendTime {
			g.appendTime = nowMs
		}
		m.size += g.size
	}
	return m, nil
}

// prepareBlocks validates a request of blocks (checking every block without decoding
// it) and admits it as prepare does.
func (l *Log) prepareBlocks(ctx context.Context, topic string, blocks []Block, opt AppendOptions) (*member, error) {
	t, err := l.Topic(ctx, topic)
	if err != nil {
		return nil, err
	}
	if len(opt.IdempotencyKey) > wire.MaxIdempotencyKey {
		return nil, invalidf("Idempotency-Key must be 1–%d characters", wire.MaxIdempotencyKey)
	}
	if len(blocks) == 0 {
		return nil, invalidf("the request holds no block")
	}
	for _, b := range blocks {
		if b.Partition >= t.Partitions {
			if t, err = l.reloadTopic(ctx, topic); err != nil {
				return nil, err
			}
			break
		}
	}
	m := &member{ctx: ctx, topic: t.ID(), t: t, start: l.now(), groups: make([]*partGroup, len(blocks))}
	seen := make(map[int32]bool, len(blocks))
	for i, b := range blocks {
		if b.Partition < 0 || b.Partition >= t.Partitions {
			return nil, invalidf("block %d: partition %d outside [0, %d)", i, b.Partition, t.Partitions)
		}
		if seen[b.Partition] {
			return nil, invalidf("block %d: partition %d has another block in this request", i, b.Partition)
		}
		seen[b.Partition] = true
		sum, err := segment.Check(b.Data)
		if err != nil {
			return nil, invalidf("block %d (partition %d): %v", i, b.Partition, err)
		}
		switch {
		case sum.MaxRecordBytes > MaxRecordBytes:
			return nil, tooLargef("block %d holds a record of %d bytes, at most %d", i, sum.MaxRecordBytes, MaxRecordBytes)
		case sum.BadHeaderName >= 0:
			return nil, invalidf("block %d: record %d has an empty or non-UTF-8 header name", i, sum.BadHeaderName)
		case sum.MinTimestamp < 0 || sum.MaxTimestamp > wire.MaxTimestampMs:
			return nil, invalidf("block %d: timestamps must be 0–%d, got %d–%d", i, int64(wire.MaxTimestampMs), sum.MinTimestamp, sum.MaxTimestamp)
		}
		m.nrecs += sum.Count
		m.size += sum.RecordBytes
		g := &partGroup{partition: b.Partition, frame: i, data: b.Data, count: sum.Count, maxTs: sum.MaxTimestamp, size: sum.RecordBytes}
		if t.LogAppendTime {
			// The one case a block is re-encoded: the topic keeps append times, not the
			// producer's. The idempotency hash still covers the block as sent.
			nowMs := l.now().UnixMilli()
			if g.data, err = restamp(b.Data, nowMs); err != nil {
				return nil, invalidf("block %d (partition %d): %v", i, b.Partition, err)
			}
			g.maxTs, g.appendTime = nowMs, nowMs
		}
		if t.Compacted() {
			if g.keys, err = blockKeys(t, i, b); err != nil {
				return nil, err
			}
		}
		m.groups[i] = g
	}
	if m.nrecs > MaxRecordsPerBatch {
		return nil, tooLargef("%d records, at most %d per request", m.nrecs, MaxRecordsPerBatch)
	}
	if m.size > MaxBatchBytes {
		return nil, tooLargef("request carries %d bytes of records, at most %d", m.size, MaxBatchBytes)
	}
	if opt.IdempotencyKey != "" {
		m.bodyHash = hashBlocks(blocks)
	}
	if err := l.admit(ctx, m, opt); err != nil {
		return nil, err
	}
	m.size = 0
	for _, g := range m.pending {
		m.size += g.size
	}
	return m, nil
}

// admit readies a prepared request to join a batch, its groups pending in partition
// order. An idempotent request's key is scoped to the topic's incarnation (the same key
// on two topics, or on two incarnations of one name, names two requests). Unless the
// caller says this is its first attempt (which no claim can precede), the key's claim is
// read once (no write): a key that names another body is refused with nothing written,
// and partitions an earlier attempt holds are answered from the claim, not appended
// again. A claim placed by another partition count is a *replaceError. The request's
// one claim is written after its commits (folded claims, group.go), which decide even
// when this read missed a concurrent attempt or was skipped.
func (l *Log) admit(ctx context.Context, m *member, opt AppendOptions) error {
	m.out = make(chan error, 1)
	m.pending = slices.Clone(m.groups)
	sort.Slice(m.pending, func(a, b int) bool { return m.pending[a].partition < m.pending[b].partition })
	if err := checkProducer(opt); err != nil {
		return err
	}
	if opt.Gate != nil && opt.Attempt != 0 {
		return fmt.Errorf("%w: only a first attempt may wait for a gate", ErrInvalid)
	}
	m.gate = opt.Gate
	if opt.IdempotencyKey == "" {
		return nil
	}
	m.idemKey = ScopedKey(m.topic, opt.Principal, opt.IdempotencyKey)
	m.owner = PrincipalScope(opt.Principal)
	if opt.Producer && store.TopicCommits(m.topic) {
		m.producer, m.attempt = true, opt.Attempt
		if opt.Attempt == 0 {
			return nil
		}
		return l.admitRetry(ctx, m, opt)
	}
	if opt.FirstAttempt || (opt.Producer && opt.Attempt == 0) {
		return nil
	}
	parts := make([]int32, len(m.pending))
	for i, g := range m.pending {
		parts[i] = g.partition
	}
	claim, err := l.meta.GetRequestClaim(ctx, m.idemKey, parts)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil
	case err != nil:
		return storeErr(fmt.Errorf("read idempotency claim: %w", err))
	}
	if claim.Matches(store.RequestClaim{BodyHash: m.bodyHash, Count: int64(m.nrecs)}) &&
		claim.Partitions != 0 && m.placedBy != 0 && claim.Partitions != m.placedBy {
		return &replaceError{partitions: claim.Partitions}
	}
	pending := m.pending[:0:0]
	for _, g := range m.pending {
		if _, ok := claim.Part(g.partition); !ok && claim.Matches(store.RequestClaim{BodyHash: m.bodyHash, Count: int64(m.nrecs)}) {
			pending = append(pending, g)
			continue
		}
		if g.base, err = m.decide(claim, g); err != nil {
			return err
		}
	}
	m.pending = pending
	return nil
}

// ScopedKey is the key under which an Idempotency-Key is claimed, fenced and listed in
// a batch's members table: "<topic ID>#<key>" for the in-process principal (""), as
// before principals scoped keys, so what in-process consumers wrote stays theirs; and
// "@<scope>#<topic ID>#<key>" for any other, scope being PrincipalScope(principal). A
// topic ID never starts with '@', so no principal's key is ever the in-process one's,
// and two principals' keys differ by their scopes.
func ScopedKey(topicID, principal, key string) string {
	if principal == "" {
		return topicID + "#" + key
	}
	return "@" + PrincipalScope(principal) + "#" + topicID + "#" + key
}

// PrincipalScope names a principal in keys and fences: 16 hex digits of SHA-256 over
// its name ("" for the in-process principal), short whatever the name's length (an
// IAM ARN), and the owner of its fences (store.RequestFence.Owner).
func PrincipalScope(principal string) string {
	if principal == "" {
		return ""
	}
	sum := sha256.Sum256([]byte("strata principal\x00" + principal))
	return hex.EncodeToString(sum[:8])
}

// replaceError says that an idempotent request's claim was placed by another partition
// count than this attempt: it is made again placed by partitions.
type replaceError struct {
	partitions int32
	// fence is set when a producer request's retry found its attempt: the call made
	// again searches from the same fence instead of fencing again.
	fence *store.FencePoint
}

func (e *replaceError) Error() string {
	return fmt.Sprintf("log: the request's first attempt was placed by %d partitions", e.partitions)
}

// commitContext bounds the commits of an object stamped at objectTime to the commit
// window, refusing outright when the window has passed (a stalled append).
func (l *Log) commitContext(ctx context.Context, objectTime time.Time) (context.Context, context.CancelFunc, error) {
	left := l.commitWindow - l.now().Sub(objectTime)
	if left <= 0 {
		return nil, nil, fmt.Errorf("%w: the append stalled %s after writing its object; nothing was committed",
			ErrUnavailable, l.now().Sub(objectTime).Round(time.Millisecond))
	}
	cctx, cancel := context.WithTimeout(ctx, left)
	return cctx, cancel, nil
}

// materialize writes the index entry of a commit whose appender did not (the stream
// materialiser's path), first claiming the keys of its idempotent requests: their
// members table is read from the segment object, each member's slot of the partition is
// claimed as its appender would have, and the blocks of members another attempt owns are
// skipped. A commit sequenced before folded claims carries one key and claims it per
// partition (a commit that finds the key claimed by another is marked a duplicate). The
// claims and the entry are write-once and decided the same way by the appender and the
// materialiser, so either order is right.
func (l *Log) materialize(ctx context.Context, c store.SeqCommit) (store.SeqCommit, error) {
	e := &c.Entry
	if e.Batch == 0 {
		e.Batch = c.Batch
	}
	switch {
	case c.IdempotencyKey != "":
		claim := store.IdempotencyRecord{Key: c.IdempotencyKey, Partition: e.Partition, BodyHash: c.BodyHash,
			BaseOffset: e.BaseOffset, Count: e.Count, ExpiresAt: claimExpiry(*e)}
		// A folded claim of the key (a retry made after the upgrade) owns the partition
		// when it has its slot.
		if rc, err := l.meta.GetRequestClaim(ctx, c.IdempotencyKey, []int32{e.Partition}); err == nil {
			if pc, ok := rc.Part(e.Partition); ok {
				claim = store.IdempotencyRecord{Key: c.IdempotencyKey, Partition: e.Partition, BodyHash: rc.BodyHash,
					BaseOffset: pc.BaseOffset, Count: pc.Count, ExpiresAt: rc.ExpiresAt}
				e.Duplicate = pc.BaseOffset != e.BaseOffset
				c.Claim = &claim
				_, err := l.putEntry(ctx, *e)
				return c, err
			}
		} else if !errors.Is(err, store.ErrNotFound) {
			return c, storeErr(fmt.Errorf("read idempotency claim of %s/%d@%d: %w", e.Topic, e.Partition, e.BaseOffset, err))
		}
		err := l.meta.ClaimIdempotency(ctx, claim)
		var ie *store.IdempotencyError
		switch {
		case errors.As(err, &ie):
			claim = ie.Existing
			e.Duplicate = claim.BaseOffset != e.BaseOffset
		case err != nil:
			return c, storeErr(fmt.Errorf("claim idempotency key of %s/%d@%d: %w", e.Topic, e.Partition, e.BaseOffset, err))
		}
		c.Claim = &claim
	case c.MembersLength > 0:
		if c.Members == nil {
			ms, err := l.membersOf(ctx, e.ObjectKey, c.MembersOffset, c.MembersLength)
			if err != nil {
				return c, fmt.Errorf("%s/%d@%d: %w", e.Topic, e.Partition, e.BaseOffset, err)
			}
			c.Members = commitMembers(ms, e.Partition)
		}
		c.Claims = make([]store.RequestClaim, len(c.Members))
		for i, mb := range c.Members {
			if mb.Producer {
				continue // decided by the fences the commit's batch found (c.Fences)
			}
			claim, err := l.meta.ClaimRequest(ctx, store.RequestClaim{Key: mb.Key, BodyHash: mb.BodyHash, Count: mb.Total,
				Partitions: mb.Partitions, ExpiresAt: claimExpiry(*e),
				Parts: []store.PartClaim{{Partition: e.Partition, BaseOffset: e.BaseOffset + mb.Offset, Count: mb.Count}}})
			if err != nil {
				return c, storeErr(fmt.Errorf("claim idempotency key of %s/%d@%d: %w", e.Topic, e.Partition, e.BaseOffset, err))
			}
			c.Claims[i] = claim
		}
		e.SetSkip(store.SkipFor(c))
	}
	_, err := l.putEntry(ctx, *e)
	return c, err
}

// putEntry writes a commit's index entry and returns the entry as stored; finding it
// written already (by the materialiser, or by an appender whose answer was lost) is
// success, and then the entry written first is the one returned: the two decide alike,
// except that a producer member is decided by the fences its batch found, which only
// the first writer may have known.
func (l *Log) putEntry(ctx context.Context, e store.IndexEntry) (store.IndexEntry, error) {
	err := l.meta.PutIndexEntry(ctx, e)
	var ce *store.ConflictError
	switch {
	case err == nil:
	case errors.As(err, &ce) && ce.Existing.ObjectKey == e.ObjectKey && ce.Existing.ByteOffset == e.ByteOffset:
		// Written already, by the materialiser or by an SDK retry whose answer was lost.
		return ce.Existing, nil
	case errors.As(err, &ce):
		return e, fmt.Errorf("%w: %s/%d@%d: the sequencer assigned an offset another entry holds (%s)",
			ErrCorrupt, e.Topic, e.Partition, e.BaseOffset, ce.Existing.ObjectKey)
	default:
		return e, storeErr(fmt.Errorf("index entry %s/%d@%d: %w", e.Topic, e.Partition, e.BaseOffset, err))
	}
	return e, nil
}

// storedEntry reads the index entry of commit e (same base offset and block), which
// must be written.
func (l *Log) storedEntry(ctx context.Context, e store.IndexEntry) (store.IndexEntry, error) {
	es, err := l.meta.IndexEntries(ctx, e.Topic, e.Partition, e.BaseOffset, 1)
	if err != nil {
		return e, storeErr(fmt.Errorf("index entry %s/%d@%d: %w", e.Topic, e.Partition, e.BaseOffset, err))
	}
	if len(es) == 0 || es[0].BaseOffset != e.BaseOffset || es[0].ObjectKey != e.ObjectKey || es[0].ByteOffset != e.ByteOffset {
		return e, fmt.Errorf("%w: %s/%d@%d: the resolved commit's entry is not written", ErrUnavailable, e.Topic, e.Partition, e.BaseOffset)
	}
	return es[0], nil
}

// claimExpiry is the TTL of a commit's idempotency claim: the window from its append.
// The appender and the materialiser derive it from the entry alike.
func claimExpiry(e store.IndexEntry) time.Time { return e.AppendedAt.Add(IdempotencyWindow) }

// partGroup is one partition's records of a request, encoded as one block.
type partGroup struct {
	partition int32
	// idx are the records' indexes in a request of records, in request order; frame is
	// the block's index in a request of blocks.
	idx   []int
	frame int
	data  []byte // the encoded block
	count int
	maxTs int64
	size  int // record bytes (segment.RecordSize summed)
	// appendTime is the timestamp every record got on a topic of LogAppendTime.
	appendTime int64
	// keys are, on a compacted topic, each record's key and whether its value is null,
	// in offset order: the key index entries written once the group is appended.
	keys []keyMark
	// base is the first offset once appended (the canonical one of an idempotent
	// request: its claim's); err the failure.
	base int64
	err  error
	// m is the request the group belongs to; rel its first record's offset from its
	// commit's base (set while its batch is written).
	m      *member
	rel    int64
	commit *commitPlan
}

// place validates the records and returns each one's partition: an explicit one as
// given (within t's count), a keyed record by its key's hash over nparts partitions.
// Unkeyed records go round-robin, except in an idempotent request, where their placement
// derives from the idempotency key (over nparts) so that a retry places them exactly as
// the first attempt did.
func (l *Log) place(t store.Topic, recs []Record, idempotencyKey string, nparts int32) ([]int32, error) {
	if len(recs) == 0 {
		return nil, invalidf("records must not be empty")
	}
	if len(recs) > MaxRecordsPerBatch {
		return nil, tooLargef("%d records, at most %d per request", len(recs), MaxRecordsPerBatch)
	}
	parts := make([]int32, len(recs))
	total := 0
	for i, r := range recs {
		size := segment.RecordSize(segment.Record{Key: r.Key, Value: r.Value, Headers: r.Headers})
		if size > MaxRecordBytes {
			return nil, tooLargef("record %d is %d bytes, at most %d", i, size, MaxRecordBytes)
		}
		total += size
		for _, h := range r.Headers {
			if h.Key == "" {
				return nil, invalidf("record %d has an empty header name", i)
			}
		}
		if r.Key == nil && t.Compacted() {
			return nil, keylessf(t, fmt.Sprintf("record %d", i))
		}
		switch {
		case r.Partition != nil:
			if *r.Partition < 0 || *r.Partition >= t.Partitions {
				return nil, invalidf("record %d: partition %d outside [0, %d)", i, *r.Partition, t.Partitions)
			}
			parts[i] = *r.Partition
		case r.Key != nil:
			parts[i] = PartitionForKey(r.Key, nparts)
		case idempotencyKey != "":
			parts[i] = PartitionForKey(fmt.Appendf(nil, "%s#%d", idempotencyKey, i), nparts)
		default:
			l.mu.Lock()
			parts[i] = int32(l.rr % uint32(t.Partitions))
			l.rr++
			l.mu.Unlock()
		}
	}
	if total > MaxBatchBytes {
		return nil, tooLargef("request carries %d bytes of records, at most %d", total, MaxBatchBytes)
	}
	return parts, nil
}

func groupByPartition(parts []int32) []*partGroup {
	byP := map[int32]*partGroup{}
	var out []*partGroup
	for i, p := range parts {
		g := byP[p]
		if g == nil {
			g = &partGroup{partition: p}
			byP[p] = g
			out = append(out, g)
		}
		g.idx = append(g.idx, i)
		g.count++
	}
	return out
}

// hashBody identifies an append request for idempotency by what was sent: the explicit
// partition (if any), given timestamp, key, value and headers of every record, in order.
// It never covers the server's placement, which a partition increase changes between a
// request and its retry.
func hashBody(recs []Record) string {
	h := sha256.New()
	var buf [binary.MaxVarintLen64]byte
	writeBytes := func(b []byte, isNil bool) {
		if isNil {
			h.Write(buf[:binary.PutVarint(buf[:], -1)])
			return
		}
		h.Write(buf[:binary.PutVarint(buf[:], int64(len(b)))])
		h.Write(b)
	}
	h.Write([]byte("records/2"))
	for _, r := range recs {
		if r.Partition != nil {
			h.Write(buf[:binary.PutVarint(buf[:], int64(*r.Partition))])
		} else {
			writeBytes(nil, true)
		}
		if r.Timestamp != nil {
			h.Write(buf[:binary.PutVarint(buf[:], *r.Timestamp)])
		} else {
			writeBytes(nil, true)
		}
		writeBytes(r.Key, r.Key == nil)
		writeBytes(r.Value, r.Value == nil)
		h.Write(buf[:binary.PutVarint(buf[:], int64(len(r.Headers)))])
		for _, hd := range r.Headers {
			writeBytes([]byte(hd.Key), false)
			writeBytes(hd.Value, hd.Value == nil)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// restamp re-encodes block b with every record's timestamp set to ts.
func restamp(b []byte, ts int64) ([]byte, error) {
	recs, err := segment.DecodeBlock(b, 0)
	if err != nil {
		return nil, err
	}
	for i := range recs {
		recs[i].Timestamp = ts
	}
	return segment.EncodeBlock(recs)
}

// hashBlocks identifies a request of blocks for idempotency: each block's partition and
// fixed header, in order. The header holds the CRC32C of the rest of the block (checked
// by segment.Check), its count, timestamps and length, so hashing it instead of every
// byte spares a SHA-256 pass over megabytes (8% of the server's CPU) at the price of
// taking two bodies with equal headers, a 2^-32 chance for a key reused by mistake, as
// one. (A record request and a block request are never the same request.)
func hashBlocks(blocks []Block) string {
	h := sha256.New()
	var buf [binary.MaxVarintLen64]byte
	h.Write([]byte("blocks"))
	for _, b := range blocks {
		h.Write(buf[:binary.PutVarint(buf[:], int64(b.Partition))])
		h.Write(b.Data[:segment.HeaderSize])
	}
	return hex.EncodeToString(h.Sum(nil))
}
