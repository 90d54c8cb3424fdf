package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/stratalog/strata/pkg/store"
)

// Attributes of the sequencer item (one per partition, key attrTP). The newest commit's
// payload is kept under c_* names so the stream carries everything the materialiser
// needs; the item stays well under 1 KB (DynamoDB bills an update on the larger of the
// old and new item).
const (
	attrNextSeq  = "next_seq"
	attrLogStart = "log_start"
	attrCCount   = "c_count"
	attrCObject  = "c_obj"
	attrCByteOff = "c_boff"
	attrCByteLen = "c_blen"
	attrCMaxTs   = "c_maxts"
	attrCAt      = "c_at"
	attrCExpires = "c_exp"
	attrCIdem    = "c_idem"
	attrCHash    = "c_hash"
	// attrCMembers locates the commit's idempotent members' table in the segment object
	// ("offset:length"), absent when it has none.
	attrCMembers = "c_members"
)

func seqKey(topic string, partition int32) item { return item{attrTP: avS(tpKey(topic, partition))} }

// DecodeSequencerImage decodes a sequencer item, as GetItem returns it or as a stream
// record's NEW_IMAGE carries it (convert the stream's attribute values first). The
// dispatch function and the in-process stream reader materialise State.Last from it.
func DecodeSequencerImage(it map[string]types.AttributeValue) (store.SeqState, error) {
	d := decoder{it: it}
	st := store.SeqState{
		Topic:      d.str(attrTopic, true),
		Partition:  d.int32(attrPartition, true),
		NextOffset: d.num(attrNextOffset, true),
		NextSeq:    d.num(attrNextSeq, false),
		LogStart:   d.num(attrLogStart, false),
	}
	if _, ok := it[attrCObject]; ok && d.err == nil {
		c := d.commit(d.payload(partPayload), partBlock, st.Topic, st.Partition)
		c.Entry.BaseOffset, c.Seq = st.NextOffset-c.Entry.Count, st.NextSeq
		if c.Entry.Count < 1 || c.Entry.BaseOffset < 0 {
			d.fail(attrCCount, "%d does not fit next_offset %d", c.Entry.Count, st.NextOffset)
		}
		st.Last = &c
	}
	if d.err == nil && st.Partition < 0 {
		d.fail(attrPartition, "%d is negative", st.Partition)
	}
	if d.err == nil && (st.NextOffset < 0 || st.LogStart < 0 || st.LogStart > st.NextOffset || st.NextSeq < 0) {
		d.fail(attrLogStart, "bounds [%d, %d) out of order", st.LogStart, st.NextOffset)
	}
	if d.err != nil {
		return store.SeqState{}, d.err
	}
	return st, nil
}

// payload is the part of a commit item's newest write that its commits share: the
// segment object, its times and the members table's place in the object. A partition
// item and a topic item hold it under their own names (payloadAttrs); one decoder reads
// both.
type payload struct {
	obj                    string
	at, exp                time.Time
	membersOff, membersLen int64
}

// payloadAttrs names a payload's attributes on one kind of commit item.
type payloadAttrs struct{ obj, at, exp, members string }

// blockAttrs names one commit's block fields on one kind of commit item.
type blockAttrs struct{ count, boff, blen, maxts, idem, hash string }

var (
	partPayload = payloadAttrs{obj: attrCObject, at: attrCAt, exp: attrCExpires, members: attrCMembers}
	partBlock   = blockAttrs{count: attrCCount, boff: attrCByteOff, blen: attrCByteLen, maxts: attrCMaxTs, idem: attrCIdem, hash: attrCHash}
)

// payload decodes the payload under the names a; a members table that is not
// "offset:length" (avMembers) fails the decoder.
func (d *decoder) payload(a payloadAttrs) payload {
	p := payload{obj: d.str(a.obj, true), at: d.time(a.at), exp: d.time(a.exp)}
	if mt := d.str(a.members, false); mt != "" {
		if n, _ := fmt.Sscanf(mt, "%d:%d", &p.membersOff, &p.membersLen); n != 2 || p.membersOff < 0 || p.membersLen < 1 {
			d.fail(a.members, "%q is not offset:length", mt)
		}
	}
	return p
}

// commit decodes one commit's block under the names a, in topic/partition, with its
// write's payload p. Its base and commit number are the caller's to set: they follow
// from the item's counters.
func (d *decoder) commit(p payload, a blockAttrs, topic string, partition int32) store.SeqCommit {
	return store.SeqCommit{
		Entry: store.IndexEntry{Topic: topic, Partition: partition, Count: d.num(a.count, true),
			ObjectKey: p.obj, ByteOffset: d.num(a.boff, true), ByteLength: d.num(a.blen, true),
			MaxTimestamp: d.time(a.maxts), AppendedAt: p.at, ExpiresAt: p.exp,
			MembersOffset: p.membersOff, MembersLength: p.membersLen},
		IdempotencyKey: d.str(a.idem, false),
		BodyHash:       d.str(a.hash, false),
		MembersOffset:  p.membersOff,
		MembersLength:  p.membersLen,
	}
}

// avMembers encodes a members table's place in its object as payload decodes it.
func avMembers(offset, length int64) types.AttributeValue {
	return avS(fmt.Sprintf("%d:%d", offset, length))
}

// commitRetryer retries a sequencer add only after errors that prove the request was
// not applied (throttling, a transaction in progress on the item). Anything else — a
// timeout, a 5xx, a broken connection — may have been applied with its answer lost, and
// an add is not idempotent, so it is resolved by reading the item instead.
func commitRetryer() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = 5
		o.MaxBackoff = 200 * time.Millisecond
		o.RateLimiter = ratelimit.None
		o.Retryables = []retry.IsErrorRetryable{retry.IsErrorRetryableFunc(func(err error) aws.Ternary {
			var apiErr smithy.APIError
			if errors.As(err, &apiErr) && refusedCode(apiErr.ErrorCode()) {
				return aws.TrueTernary
			}
			return aws.FalseTernary
		})}
	})
}

// refusedCode reports whether an error code means DynamoDB refused the request before
// applying it and it may be sent again: throttling, or a transaction holding the item.
func refusedCode(code string) bool {
	switch code {
	case "ProvisionedThroughputExceededException", "RequestLimitExceeded", "ThrottlingException",
		"TransactionConflictException":
		return true
	}
	return false
}

// notApplied reports whether DynamoDB answered the request without applying it.
func notApplied(err error) bool {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch code := apiErr.ErrorCode(); code {
	case "ConditionalCheckFailedException", "ValidationException", "ResourceNotFoundException",
		"AccessDeniedException", "UnrecognizedClientException":
		return true
	default:
		return refusedCode(code)
	}
}

// Sequence is one UpdateItem: ADD the block's count to next_offset and 1 to next_seq,
// SET the c_* payload, on condition that the counter exists; the new next_offset minus
// the count is the block's base. A missing counter is seeded (migration) and the add
// tried once more. An answer that may have been lost is resolved (resolveCommit): the
// commit is found on the item or, once materialised, in the index; a commit proven not
// applied is sent again.
func (s *MetaStore) Sequence(ctx context.Context, c store.SeqCommit) (store.SeqCommit, error) {
	e := c.Entry
	op := fmt.Sprintf("commit %s/%d (%d records)", e.Topic, e.Partition, e.Count)
	if e.Count < 1 {
		return store.SeqCommit{}, fmt.Errorf("dynamo: %s: count must be positive", op)
	}
	if store.TopicCommits(e.Topic) {
		out, err := s.sequenceTopic(ctx, []store.SeqCommit{c})
		if err != nil {
			return store.SeqCommit{}, err
		}
		return out[0], nil
	}
	tp := tpKey(e.Topic, e.Partition)
	var lo int64
	if v, known := s.seen.Load(tp); known {
		lo = v.(int64)
	} else {
		// The first commit of this store on the partition: learn a lower bound of its
		// base (one read per partition for the store's life; none for a topic it created).
		st, err := s.Sequencer(ctx, e.Topic, e.Partition)
		if err != nil {
			return store.SeqCommit{}, err
		}
		lo = s.observe(tp, st.NextOffset)
	}
	set := "SET #co = :obj, #cb = :boff, #cl = :blen, #cc = :n, #cm = :mts, #ca = :at, #ce = :exp"
	names := map[string]string{"#no": attrNextOffset, "#ns": attrNextSeq, "#co": attrCObject, "#cb": attrCByteOff,
		"#cl": attrCByteLen, "#cc": attrCCount, "#cm": attrCMaxTs, "#ca": attrCAt, "#ce": attrCExpires,
		"#ci": attrCIdem, "#ch": attrCHash, "#cmt": attrCMembers}
	values := item{":n": avN(e.Count), ":one": avN(1), ":obj": avS(e.ObjectKey), ":boff": avN(e.ByteOffset),
		":blen": avN(e.ByteLength), ":mts": avN(e.MaxTimestamp.UnixMilli()), ":at": avN(e.AppendedAt.UnixMilli()),
		":exp": avN(e.ExpiresAt.UnixMilli())}
	var removed []string
	if c.IdempotencyKey != "" {
		set += ", #ci = :idem, #ch = :hash"
		values[":idem"], values[":hash"] = avS(c.IdempotencyKey), avS(c.BodyHash)
	} else {
		removed = append(removed, "#ci", "#ch")
	}
	if c.MembersLength > 0 {
		set += ", #cmt = :mt"
		values[":mt"] = avMembers(c.MembersOffset, c.MembersLength)
	} else {
		removed = append(removed, "#cmt")
	}
	remove := ""
	if len(removed) > 0 {
		remove = " REMOVE " + strings.Join(removed, ", ")
	}
	in := &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.sequencer),
		Key:                       seqKey(e.Topic, e.Partition),
		UpdateExpression:          aws.String("ADD #no :n, #ns :one " + set + remove),
		ConditionExpression:       aws.String("attribute_exists(#no)"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
		ReturnValues:              types.ReturnValueAllNew,
	}
	return sendCommit(ctx, s, op, in, func(it item) (store.SeqCommit, error) {
		st, err := DecodeSequencerImage(it)
		if err != nil || st.Last == nil {
			return store.SeqCommit{}, fmt.Errorf("dynamo: %s: decode the updated counter: %w", op, err)
		}
		s.observe(tp, st.NextOffset)
		c.Entry.BaseOffset, c.Seq = st.Last.Entry.BaseOffset, st.NextSeq
		c.Entry.Duplicate, c.Entry.Skip, c.Materialized, c.Claim, c.Claims = false, "", false, nil, nil
		c.Entry.MembersOffset, c.Entry.MembersLength = c.MembersOffset, c.MembersLength
		return c, nil
	}, func() error {
		_, err := s.Sequencer(ctx, e.Topic, e.Partition)
		return err
	}, func(cause error) (store.SeqCommit, bool, error) {
		return s.resolveCommit(ctx, op, c, lo, cause)
	})
}

// sendCommit sends the sequencer add in and decodes its answer (decode). The add is
// conditional on the item existing: when it does not, seed creates it and the add is
// sent once more. An error that does not prove the add unapplied is resolved (resolve:
// the result, or applied false when the add is proven not applied, which may then be
// sent again, at most maxResends times).
func sendCommit[T any](ctx context.Context, s *MetaStore, op string, in *dynamodb.UpdateItemInput,
	decode func(item) (T, error), seed func() error, resolve func(cause error) (T, bool, error)) (T, error) {
	var zero T
	seeded, resends := false, 0
	for {
		out, err := s.client.UpdateItem(ctx, in, func(o *dynamodb.Options) { o.Retryer = commitRetryer() })
		if err == nil {
			return decode(out.Attributes)
		}
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) && !seeded {
			seeded = true
			if err := seed(); err != nil {
				return zero, err
			}
			continue
		}
		if notApplied(err) {
			return zero, mapError(op, err)
		}
		res, applied, rerr := resolve(err)
		if applied || rerr != nil {
			return res, rerr
		}
		// Proven not applied: the add may be sent again.
		if resends >= maxResends || ctx.Err() != nil {
			return zero, fmt.Errorf("dynamo: %s: not applied: %w: %w", op, store.ErrUnavailable, mapError(op, err))
		}
		resends++
	}
}

// maxResends bounds how often one commit proven not applied is sent again.
const maxResends = 3

// observe records hw as seen on the partition tp and returns the greatest seen so far.
func (s *MetaStore) observe(tp string, hw int64) int64 {
	for {
		old, loaded := s.seen.LoadOrStore(tp, hw)
		if !loaded {
			return hw
		}
		if old.(int64) >= hw {
			return old.(int64)
		}
		if s.seen.CompareAndSwap(tp, old, hw) {
			return hw
		}
	}
}

// resolveCommit decides a commit whose answer may have been lost, sent when the
// partition's high watermark was at least lo. It reads the counter: the commit was
// applied if the newest payload is its block. Otherwise, if applied, it lies in [lo, the
// high watermark read), and its entry is written by the materialiser (which indexes
// every commit from the stream; the appenders of the others write theirs at once). So
// it waits, up to CommitResolveWait, until the index tiles that range: an entry of this
// block there gives its base (applied); a range tiled without one proves the commit was
// not applied (applied false, no error), and the caller may send it again. When the
// range is not tiled in time the outcome is unknown (ErrCommitUnknown), and the caller
// must not retry it.
func (s *MetaStore) resolveCommit(ctx context.Context, op string, c store.SeqCommit, lo int64, cause error) (res store.SeqCommit, applied bool, err error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.resolveWait())
	defer cancel()
	e := c.Entry
	// A commit found in the index has Seq 0: its commit number is not known there.
	found := func(base int64, seq int64) store.SeqCommit {
		c.Entry.BaseOffset, c.Seq = base, seq
		c.Entry.Duplicate, c.Entry.Skip, c.Materialized, c.Claim, c.Claims = false, "", false, nil, nil
		c.Entry.MembersOffset, c.Entry.MembersLength = c.MembersOffset, c.MembersLength
		return c
	}
	var hw int64 = -1
	var last error
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		if hw < 0 {
			it, gerr := s.getItem(rctx, op, s.sequencer, seqKey(e.Topic, e.Partition))
			last = gerr
			if gerr == nil && it != nil {
				st, derr := DecodeSequencerImage(it)
				if derr == nil {
					if st.Last != nil && st.Last.Entry.ObjectKey == e.ObjectKey && st.Last.Entry.ByteOffset == e.ByteOffset {
						return found(st.Last.Entry.BaseOffset, st.NextSeq), true, nil
					}
					hw = st.NextOffset
					lo = max(lo, st.LogStart)
				}
			}
		}
		if hw >= 0 {
			base, tiled, ierr := s.findCommit(rctx, e, lo, hw)
			switch {
			case ierr != nil:
				last = ierr
			case base >= 0:
				return found(base, 0), true, nil
			case tiled:
				return store.SeqCommit{}, false, nil
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-rctx.Done():
			t.Stop()
			state := fmt.Sprintf("the counter was not readable (%v)", last)
			if hw >= 0 {
				state = fmt.Sprintf("offsets [%d, %d) not all indexed within %s (%v)", lo, hw, s.cfg.resolveWait(), last)
			}
			return store.SeqCommit{}, false, fmt.Errorf("dynamo: %s: %w: %s: %w: %w", op, store.ErrCommitUnknown, state, store.ErrUnavailable, mapError(op, cause))
		case <-t.C:
		}
	}
}

// findCommit looks for e's block (object key and byte offset) among the index entries
// of [lo, hw): its base, or -1 and whether the entries tile the whole range (no commit
// of it is left unindexed).
func (s *MetaStore) findCommit(ctx context.Context, e store.IndexEntry, lo, hw int64) (base int64, tiled bool, err error) {
	for cur := lo; cur < hw; {
		page, err := s.IndexEntries(ctx, e.Topic, e.Partition, cur, 100)
		if err != nil {
			return -1, false, err
		}
		moved := false
		for _, x := range page {
			if x.End() <= cur {
				continue
			}
			if x.BaseOffset > cur {
				return -1, false, nil // a commit not materialised yet
			}
			if x.ObjectKey == e.ObjectKey && x.ByteOffset == e.ByteOffset {
				return x.BaseOffset, true, nil
			}
			cur, moved = x.End(), true
			if cur >= hw {
				break
			}
		}
		if !moved {
			return -1, false, nil
		}
	}
	return -1, true, nil
}

// Sequencer reads the partition's counter strongly consistently. A partition without
// one is seeded: next_offset from its newest index entry's end and log_start from the
// legacy partitions table, put only if absent, so the upgrade is idempotent and a
// concurrent seeder or commit wins.
func (s *MetaStore) Sequencer(ctx context.Context, topic string, partition int32) (store.SeqState, error) {
	if store.TopicCommits(topic) {
		return s.topicSequencer(ctx, topic, partition, true)
	}
	op := fmt.Sprintf("sequencer of %s/%d", topic, partition)
	for attempt := 0; attempt < 3; attempt++ {
		it, err := s.getItem(ctx, op, s.sequencer, seqKey(topic, partition))
		if err != nil {
			return store.SeqState{}, err
		}
		if it != nil {
			st, err := DecodeSequencerImage(it)
			if err != nil {
				return store.SeqState{}, fmt.Errorf("dynamo: %s: %w", op, err)
			}
			return st, nil
		}
		if err := s.seed(ctx, topic, partition); err != nil {
			return store.SeqState{}, err
		}
	}
	return store.SeqState{}, fmt.Errorf("dynamo: %s: seeded counter not readable: %w", op, store.ErrUnavailable)
}

// SequencerEventual reads a topic commit topic's item eventually consistently (a
// replica may lag its latest commits; a topic item not yet on it reads as zeros, as a
// topic before its first commit does). A per-partition counter, which a missing one is
// seeded into, is read as Sequencer reads it.
func (s *MetaStore) SequencerEventual(ctx context.Context, topic string, partition int32) (store.SeqState, error) {
	if store.TopicCommits(topic) {
		return s.topicSequencer(ctx, topic, partition, false)
	}
	return s.Sequencer(ctx, topic, partition)
}

// seedNewTopic creates the counters of a new topic's partitions at zero, so its first
// appends pay no seeding. It is best effort: a counter it misses is seeded on first use.
func (s *MetaStore) seedNewTopic(ctx context.Context, t store.Topic) {
	if store.TopicCommits(t.ID()) {
		// Best effort too: a missing item is created at the first commit. 0 bounds every
		// partition's next base from below, so no read before this store's first commit.
		if s.putTopicItem(ctx, t.ID()) == nil {
			for p := int32(0); p < t.Partitions; p++ {
				s.observe(tpKey(t.ID(), p), 0)
			}
		}
		return
	}
	const workers = 16
	next := make(chan int32)
	var wg sync.WaitGroup
	for range min(workers, int(t.Partitions)) {
		wg.Go(func() {
			for p := range next {
				if s.putCounter(ctx, t.ID(), p, 0, 0) == nil {
					// 0 bounds the base of any later commit from below (a counter
					// that existed already is at least 0): no read before this
					// store's first commit on the partition.
					s.observe(tpKey(t.ID(), p), 0)
				}
			}
		})
	}
	for p := int32(0); p < t.Partitions; p++ {
		next <- p
	}
	close(next)
	wg.Wait()
}

func (s *MetaStore) seed(ctx context.Context, topic string, partition int32) error {
	var next int64
	last, ok, err := s.LastIndexEntry(ctx, topic, partition)
	if err != nil {
		return err
	}
	if ok {
		next = last.End()
	}
	start, err := s.legacyLogStart(ctx, topic, partition)
	if err != nil {
		return err
	}
	return s.putCounter(ctx, topic, partition, next, min(start, next))
}

// putCounter creates a partition's counter only if it has none.
func (s *MetaStore) putCounter(ctx context.Context, topic string, partition int32, next, logStart int64) error {
	op := fmt.Sprintf("seed sequencer of %s/%d", topic, partition)
	it := seqKey(topic, partition)
	it[attrTopic] = avS(topic)
	it[attrPartition] = avN(int64(partition))
	it[attrNextOffset] = avN(next)
	it[attrNextSeq] = avN(0)
	it[attrLogStart] = avN(logStart)
	return s.createSequencerItem(ctx, op, it)
}

// createSequencerItem puts the sequencer item it only if no item has its key. An item
// there already is no error: it was created first by another seeder or a commit, whose
// counters must not be reset.
func (s *MetaStore) createSequencerItem(ctx context.Context, op string, it item) error {
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(s.sequencer),
		Item:                     it,
		ConditionExpression:      aws.String("attribute_not_exists(#tp)"),
		ExpressionAttributeNames: map[string]string{"#tp": attrTP},
	})
	if err != nil {
		err = mapError(op, err)
		if cf := (*conditionFailed)(nil); errors.As(err, &cf) {
			return nil
		}
		return err
	}
	return nil
}

// ClaimIdempotency puts the idempotency row only if absent; a taken key returns the
// stored row from the failed condition (ALL_OLD).
func (s *MetaStore) ClaimIdempotency(ctx context.Context, rec store.IdempotencyRecord) error {
	op := fmt.Sprintf("claim idempotency key %q partition %d", rec.Key, rec.Partition)
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(s.idem),
		Item:                                idemItem(rec),
		ConditionExpression:                 aws.String("attribute_not_exists(#kp)"),
		ExpressionAttributeNames:            map[string]string{"#kp": attrKP},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return nil
	}
	err = mapError(op, err)
	var cf *conditionFailed
	if !errors.As(err, &cf) {
		return err
	}
	old, err := s.holder(ctx, op, s.idem, idemKey(rec.Key, rec.Partition), cf.item)
	if err != nil {
		return err
	}
	existing, err := decodeIdem(old)
	if err != nil {
		return fmt.Errorf("dynamo: %s: decode the existing idempotency row: %w", op, err)
	}
	return &store.IdempotencyError{Existing: existing}
}

// ClaimRequest creates the folded claim with one conditional PutItem (the steady
// state); a key already claimed is merged with store.MergeClaim and written back on
// condition that its version is unchanged, and a request row of the per-partition format
// is resolved per partition with ClaimIdempotency.
func (s *MetaStore) ClaimRequest(ctx context.Context, rec store.RequestClaim) (store.RequestClaim, error) {
	op := fmt.Sprintf("claim request %q", rec.Key)
	next, _ := store.MergeClaim(nil, rec)
	in := &dynamodb.PutItemInput{
		TableName:                           aws.String(s.idem),
		Item:                                requestClaimItem(next, 1),
		ConditionExpression:                 aws.String("attribute_not_exists(#kp)"),
		ExpressionAttributeNames:            map[string]string{"#kp": attrKP},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	for attempt := 0; ; attempt++ {
		_, err := s.client.PutItem(ctx, in)
		if err == nil {
			return next, nil
		}
		err = mapError(op, err)
		var cf *conditionFailed
		if !errors.As(err, &cf) {
			return store.RequestClaim{}, err
		}
		if attempt >= maxClaimMerges {
			return store.RequestClaim{}, fmt.Errorf("dynamo: %s: %d concurrent merges: %w", op, attempt, store.ErrUnavailable)
		}
		old, err := s.holder(ctx, op, s.idem, idemKey(rec.Key, -1), cf.item)
		if err != nil {
			return store.RequestClaim{}, err
		}
		stored, ver, folded, err := decodeRequestClaim(old)
		if err != nil {
			return store.RequestClaim{}, fmt.Errorf("dynamo: %s: decode the stored claim: %w", op, err)
		}
		if !folded {
			return s.claimLegacy(ctx, stored, rec)
		}
		var write bool
		if next, write = store.MergeClaim(&stored, rec); !write {
			return next, nil
		}
		in = &dynamodb.PutItemInput{
			TableName:                           aws.String(s.idem),
			Item:                                requestClaimItem(next, ver+1),
			ConditionExpression:                 aws.String("#ver = :ver"),
			ExpressionAttributeNames:            map[string]string{"#ver": "ver"},
			ExpressionAttributeValues:           item{":ver": avN(ver)},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}
	}
}

// GetRequestClaim is one eventually consistent GetItem (half a read unit) of the request
// row; a row of the per-partition format reads the partitions' rows too.
func (s *MetaStore) GetRequestClaim(ctx context.Context, key string, partitions []int32) (store.RequestClaim, error) {
	op := fmt.Sprintf("get request claim %q", key)
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.idem), Key: idemKey(key, -1)})
	if err != nil {
		return store.RequestClaim{}, mapError(op, err)
	}
	if out.Item == nil {
		return store.RequestClaim{}, fmt.Errorf("dynamo: %s: %w", op, store.ErrNotFound)
	}
	claim, _, folded, err := decodeRequestClaim(out.Item)
	if err != nil || folded {
		return claim, err
	}
	for _, p := range partitions {
		rec, err := s.GetIdempotency(ctx, key, p)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return store.RequestClaim{}, err
		}
		claim.Parts = append(claim.Parts, store.PartClaim{Partition: p, BaseOffset: rec.BaseOffset, Count: rec.Count})
	}
	return claim, nil
}

// maxClaimMerges bounds the merges of one ClaimRequest that lose to a concurrent one.
const maxClaimMerges = 8

// claimLegacy resolves rec against a request row of the per-partition format (legacy):
// each partition's claim is its own row, as before folded claims.
func (s *MetaStore) claimLegacy(ctx context.Context, legacy, rec store.RequestClaim) (store.RequestClaim, error) {
	out := legacy
	out.Parts = nil
	for _, pc := range rec.Parts {
		claim := store.IdempotencyRecord{Key: rec.Key, Partition: pc.Partition, BodyHash: rec.BodyHash,
			BaseOffset: pc.BaseOffset, Count: pc.Count, ExpiresAt: rec.ExpiresAt}
		var err error
		if legacy.Matches(rec) {
			err = s.ClaimIdempotency(ctx, claim)
		} else {
			claim, err = s.GetIdempotency(ctx, rec.Key, pc.Partition)
			if errors.Is(err, store.ErrNotFound) {
				continue // another request's key: claim nothing of it
			}
		}
		var ie *store.IdempotencyError
		if errors.As(err, &ie) {
			claim, err = ie.Existing, nil
		}
		if err != nil {
			return store.RequestClaim{}, err
		}
		out.Parts = append(out.Parts, store.PartClaim{Partition: pc.Partition, BaseOffset: claim.BaseOffset, Count: claim.Count})
	}
	return out, nil
}

// LogStart reads the log start from the partition's counter.
func (s *MetaStore) LogStart(ctx context.Context, topic string, partition int32) (int64, error) {
	st, err := s.Sequencer(ctx, topic, partition)
	return st.LogStart, err
}

// AdvanceLogStart raises log_start on the counter on condition that it is below the new
// value and the high watermark is not; it never touches next_offset.
func (s *MetaStore) AdvanceLogStart(ctx context.Context, topic string, partition int32, offset int64) error {
	if store.TopicCommits(topic) {
		return s.advanceTopicLogStart(ctx, topic, partition, offset)
	}
	op := fmt.Sprintf("advance log start of %s/%d to %d", topic, partition, offset)
	for seeded := false; ; seeded = true {
		_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                           aws.String(s.sequencer),
			Key:                                 seqKey(topic, partition),
			UpdateExpression:                    aws.String("SET #ls = :ls"),
			ConditionExpression:                 aws.String("attribute_exists(#no) AND #ls < :ls AND #no >= :ls"),
			ExpressionAttributeNames:            map[string]string{"#ls": attrLogStart, "#no": attrNextOffset},
			ExpressionAttributeValues:           item{":ls": avN(offset)},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		if err == nil {
			return nil
		}
		err = mapError(op, err)
		var cf *conditionFailed
		if !errors.As(err, &cf) {
			return err
		}
		if cf.item == nil {
			if seeded {
				return fmt.Errorf("dynamo: %s: counter missing after seeding: %w", op, store.ErrUnavailable)
			}
			if _, err := s.Sequencer(ctx, topic, partition); err != nil {
				return err
			}
			continue
		}
		st, derr := DecodeSequencerImage(cf.item)
		if derr != nil {
			return fmt.Errorf("dynamo: %s: %w", op, derr)
		}
		return logStartRefused(op, offset, st)
	}
}

// logStartRefused is the answer to an advance of the log start to offset whose
// condition failed on the partition's state st: none when the log start is there
// already (a repeated or overtaken advance), else ErrBeyondEnd, offset being above the
// high watermark.
func logStartRefused(op string, offset int64, st store.SeqState) error {
	if offset <= st.LogStart {
		return nil
	}
	return fmt.Errorf("dynamo: %s: above the high watermark %d: %w", op, st.NextOffset, store.ErrBeyondEnd)
}
