package dynamo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stratalog/strata/pkg/store"
)

// The topic commit (issue 20 item 2): a topic of the topic commit layout
// (store.TopicCommits) has one sequencer item for all its partitions, keyed
// "<topic ID>#t", and a batch is sequenced by one UpdateItem on it, whatever the number
// of partitions it touches. The item holds, per partition p that was ever written,
// o<p> (the high watermark), s<p> (the commit count) and l<p> (the log start; absent is
// 0), and the newest batch's payload: its object, times and the list of its commits, so
// that its stream record carries everything the materialiser needs for every partition
// of the batch. An absent o<p> is 0: ADD treats a missing number as 0, so a new topic's
// item holds only its batch count and grows by about 20 bytes per partition written.
const (
	attrBatches  = "bseq"
	attrBObject  = "b_obj"
	attrBAt      = "b_at"
	attrBExpires = "b_exp"
	// attrBMembers locates the batch's members table in its object ("offset:length";
	// folded claims), absent when it has no idempotent member.
	attrBMembers  = "b_members"
	attrBCommits  = "b_c"
	topicItemTail = "#t"
	prefixNext    = "o"
	prefixSeq     = "s"
	prefixStart   = "l"
)

// A topic item's payload is under b_* names; each commit of its list is
// [partition, count, byte offset, byte length, max timestamp(, key, body hash)].
var (
	batchPayload = payloadAttrs{obj: attrBObject, at: attrBAt, exp: attrBExpires, members: attrBMembers}
	batchBlock   = blockAttrs{count: "1", boff: "2", blen: "3", maxts: "4", idem: "5", hash: "6"}
)

func topicItemKey(topic string) item { return item{attrTP: avS(topic + topicItemTail)} }

// partCounters are one partition's counters on a topic item.
type partCounters struct {
	next, seq, logStart int64
}

// batchItem is a decoded topic item.
type batchItem struct {
	topic   string
	batches int64
	parts   map[int32]partCounters
	// batch is the newest batch's commits in their order, with bases and Seq set.
	batch []store.SeqCommit
	// fences are the topic's request fences, in key then attempt order; orphans the
	// batch attributes of fences pruned from a stale view (decodeFences).
	fences  []store.RequestFence
	orphans []string
}

// stamp sets the newest batch's number (on the commit and its entry) and the item's
// fences on a commit of it.
func (t batchItem) stamp(c *store.SeqCommit) {
	c.Batch, c.Fences = t.batches, slices.Clone(t.fences)
	c.Entry.Batch = t.batches
}

// state is partition p's sequencer state; Last is p's last commit in the newest batch
// (nil when the batch did not touch p).
func (t batchItem) state(p int32) store.SeqState {
	pc := t.parts[p]
	st := store.SeqState{Topic: t.topic, Partition: p, NextOffset: pc.next, NextSeq: pc.seq, LogStart: pc.logStart}
	for i := len(t.batch) - 1; i >= 0; i-- {
		if t.batch[i].Entry.Partition == p {
			c := t.batch[i]
			t.stamp(&c)
			st.Last = &c
			break
		}
	}
	if st.Last == nil && pc.seq > 0 && len(t.batch) > 0 {
		st.BatchAt = t.batch[0].Entry.AppendedAt
	}
	return st
}

// states are the stream's view of the item: one state per commit of the newest batch,
// each with the partition's high watermark just after that commit, so the materialiser
// and dispatch see a batch as the commits it is.
func (t batchItem) states() []store.SeqState {
	out := make([]store.SeqState, 0, len(t.batch))
	for _, c := range t.batch {
		pc := t.parts[c.Entry.Partition]
		c := c
		t.stamp(&c)
		out = append(out, store.SeqState{Topic: t.topic, Partition: c.Entry.Partition, NextOffset: c.Entry.End(),
			NextSeq: c.Seq, LogStart: min(pc.logStart, c.Entry.End()), Last: &c})
	}
	return out
}

// IsTopicItem reports whether a sequencer item (or stream image) is a topic item.
func IsTopicItem(it map[string]types.AttributeValue) bool {
	_, ok := it[attrBatches]
	return ok
}

// DecodeSequencerImages decodes any sequencer item or stream image into the commits'
// states it carries: a partition item gives its one state, a topic item one state per
// commit of its newest batch (none before the first batch).
func DecodeSequencerImages(it map[string]types.AttributeValue) ([]store.SeqState, error) {
	if !IsTopicItem(it) {
		st, err := DecodeSequencerImage(it)
		if err != nil {
			return nil, err
		}
		return []store.SeqState{st}, nil
	}
	t, err := decodeBatchItem(it)
	if err != nil {
		return nil, err
	}
	return t.states(), nil
}

// decodeBatchItem decodes and checks a topic item: counters in bounds, and the newest
// batch fitting them (each partition's commits end at its high watermark).
func decodeBatchItem(it item) (batchItem, error) {
	d := decoder{it: it}
	t := batchItem{topic: d.str(attrTopic, true), batches: d.num(attrBatches, true), parts: map[int32]partCounters{}}
	if d.err != nil {
		return batchItem{}, d.err
	}
	if !store.TopicCommits(t.topic) || t.batches < 0 {
		d.fail(attrTopic, "%q with %d batches is not a topic commit's item", t.topic, t.batches)
		return batchItem{}, d.err
	}
	for name := range it {
		var prefix string
		switch {
		case strings.HasPrefix(name, prefixNext), strings.HasPrefix(name, prefixSeq), strings.HasPrefix(name, prefixStart):
			prefix = name[:1]
		default:
			continue
		}
		n, err := strconv.ParseInt(name[1:], 10, 32)
		if err != nil || n < 0 || strconv.FormatInt(n, 10) != name[1:] {
			continue // not a counter (b_obj, ...)
		}
		p := int32(n)
		pc := t.parts[p]
		v := d.num(name, true)
		switch prefix {
		case prefixNext:
			pc.next = v
		case prefixSeq:
			pc.seq = v
		case prefixStart:
			pc.logStart = v
		}
		t.parts[p] = pc
	}
	for p, pc := range t.parts {
		if d.err == nil && (pc.next < 0 || pc.seq < 0 || pc.logStart < 0 || pc.logStart > pc.next) {
			d.fail(prefixNext+strconv.Itoa(int(p)), "partition %d bounds [%d, %d), %d commits, out of order", p, pc.logStart, pc.next, pc.seq)
		}
	}
	if _, ok := it[attrBCommits]; ok && d.err == nil {
		t.batch = decodeBatch(&d, t)
	}
	if d.err == nil {
		t.fences, t.orphans = decodeFences(&d, t.batches)
	}
	if d.err != nil {
		return batchItem{}, d.err
	}
	return t, nil
}

// decodeBatch decodes the newest batch's commit list: each commit is
// [partition, count, byte offset, byte length, max timestamp] with, for an idempotent
// commit, its key and body hash after them.
func decodeBatch(d *decoder, t batchItem) []store.SeqCommit {
	list, ok := d.it[attrBCommits].(*types.AttributeValueMemberL)
	if !ok {
		d.fail(attrBCommits, "not a list (%T)", d.it[attrBCommits])
		return nil
	}
	if len(list.Value) == 0 {
		d.fail(attrBCommits, "empty")
		return nil
	}
	pl := d.payload(batchPayload)
	if d.err != nil {
		return nil
	}
	total, seen := map[int32]int64{}, map[int32]int64{}
	out := make([]store.SeqCommit, 0, len(list.Value))
	for i, v := range list.Value {
		fields, ok := v.(*types.AttributeValueMemberL)
		if !ok || (len(fields.Value) != 5 && len(fields.Value) != 7) {
			d.fail(attrBCommits, "commit %d is not a list of 5 or 7 fields", i)
			return nil
		}
		fd := decoder{it: item{}}
		for j, f := range fields.Value {
			fd.it[strconv.Itoa(j)] = f
		}
		p := fd.int32("0", true)
		c := fd.commit(pl, batchBlock, t.topic, p)
		if fd.err != nil {
			d.fail(attrBCommits, "commit %d: %v", i, fd.err)
			return nil
		}
		if p < 0 || c.Entry.Count < 1 || c.Entry.ByteOffset < 0 || c.Entry.ByteLength < 1 {
			d.fail(attrBCommits, "commit %d: partition %d, count %d, bytes [%d, +%d) out of range", i, p, c.Entry.Count, c.Entry.ByteOffset, c.Entry.ByteLength)
			return nil
		}
		total[p] += c.Entry.Count
		seen[p]++
		if total[p] < 0 {
			d.fail(attrBCommits, "partition %d: counts overflow", p)
			return nil
		}
		out = append(out, c)
	}
	for p, n := range total {
		if pc := t.parts[p]; n > pc.next || seen[p] > pc.seq {
			d.fail(attrBCommits, "partition %d: %d records in %d commits do not fit next offset %d after %d commits", p, n, seen[p], pc.next, pc.seq)
			return nil
		}
	}
	done, ndone := map[int32]int64{}, map[int32]int64{}
	for i := range out {
		p := out[i].Entry.Partition
		pc := t.parts[p]
		out[i].Entry.BaseOffset = pc.next - total[p] + done[p]
		ndone[p]++
		out[i].Seq = pc.seq - seen[p] + ndone[p]
		done[p] += out[i].Entry.Count
	}
	return out
}

// encodeBatch is decodeBatch's inverse for the commit list.
func encodeBatch(cs []store.SeqCommit) types.AttributeValue {
	list := make([]types.AttributeValue, len(cs))
	for i, c := range cs {
		e := c.Entry
		f := []types.AttributeValue{avN(int64(e.Partition)), avN(e.Count), avN(e.ByteOffset), avN(e.ByteLength), avN(e.MaxTimestamp.UnixMilli())}
		if c.IdempotencyKey != "" {
			f = append(f, avS(c.IdempotencyKey), avS(c.BodyHash))
		}
		list[i] = &types.AttributeValueMemberL{Value: f}
	}
	return &types.AttributeValueMemberL{Value: list}
}

// SequenceBatch sequences a batch: on a topic commit topic in one UpdateItem of its
// topic item (all or nothing); on another topic one Sequence per commit, in parallel.
func (s *MetaStore) SequenceBatch(ctx context.Context, cs []store.SeqCommit) ([]store.SeqCommit, []error) {
	out, errs := make([]store.SeqCommit, len(cs)), make([]error, len(cs))
	if len(cs) == 0 {
		return out, errs
	}
	if !store.TopicCommits(cs[0].Entry.Topic) {
		var wg sync.WaitGroup
		for i := range cs {
			wg.Go(func() { out[i], errs[i] = s.Sequence(ctx, cs[i]) })
		}
		wg.Wait()
		return out, errs
	}
	res, err := s.sequenceTopic(ctx, cs)
	for i := range cs {
		if err != nil {
			errs[i] = err
		} else {
			out[i] = res[i]
		}
	}
	return out, errs
}

// sequenceTopic is the topic commit: ADD every partition's count to its o<p> and the
// number of its commits to s<p>, 1 to the batch count, SET the batch's payload, on
// condition that the item exists (a missing one is created and the add tried once
// more). A lost answer is resolved as Sequence resolves one (resolveBatch).
func (s *MetaStore) sequenceTopic(ctx context.Context, cs []store.SeqCommit) ([]store.SeqCommit, error) {
	topic := cs[0].Entry.Topic
	op := fmt.Sprintf("topic commit %s (%d commits)", topic, len(cs))
	first := cs[0].Entry
	counts, ncommits := map[int32]int64{}, map[int32]int64{}
	for _, c := range cs {
		e := c.Entry
		switch {
		case e.Topic != topic:
			return nil, fmt.Errorf("dynamo: %s: commit of %s in the batch", op, e.Topic)
		case e.Count < 1 || e.Partition < 0:
			return nil, fmt.Errorf("dynamo: %s: partition %d count %d: the count must be positive", op, e.Partition, e.Count)
		case e.ObjectKey != first.ObjectKey || !e.AppendedAt.Equal(first.AppendedAt) || !e.ExpiresAt.Equal(first.ExpiresAt):
			return nil, fmt.Errorf("dynamo: %s: a batch's commits must share one object and its times", op)
		}
		counts[e.Partition] += e.Count
		ncommits[e.Partition]++
	}
	parts := make([]int32, 0, len(counts))
	for p := range counts {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	lo, err := s.lowerBounds(ctx, op, topic, parts)
	if err != nil {
		return nil, err
	}
	names := map[string]string{"#b": attrBatches, "#bo": attrBObject, "#ba": attrBAt, "#be": attrBExpires, "#bc": attrBCommits, "#bm": attrBMembers}
	values := item{":one": avN(1), ":obj": avS(first.ObjectKey), ":at": avN(first.AppendedAt.UnixMilli()),
		":exp": avN(first.ExpiresAt.UnixMilli()), ":c": encodeBatch(cs)}
	members, remove := "", []string{"#bm"}
	for _, c := range cs {
		if c.MembersLength > 0 {
			members, remove = ", #bm = :bm", nil
			values[":bm"] = avMembers(c.MembersOffset, c.MembersLength)
			break
		}
	}
	for i, name := range expiredFences(s.seenFences(topic), first.AppendedAt, maxPrunePerCommit) {
		names["#x"+strconv.Itoa(i)] = name
		remove = append(remove, "#x"+strconv.Itoa(i))
	}
	if len(remove) > 0 {
		members += " REMOVE " + strings.Join(remove, ", ")
	}
	var add strings.Builder
	add.WriteString("ADD #b :one")
	for _, p := range parts {
		ps := strconv.Itoa(int(p))
		names["#o"+ps], names["#s"+ps] = prefixNext+ps, prefixSeq+ps
		values[":n"+ps], values[":k"+ps] = avN(counts[p]), avN(ncommits[p])
		fmt.Fprintf(&add, ", #o%s :n%s, #s%s :k%s", ps, ps, ps, ps)
	}
	in := &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.sequencer),
		Key:                       topicItemKey(topic),
		UpdateExpression:          aws.String(add.String() + " SET #bo = :obj, #ba = :at, #be = :exp, #bc = :c" + members),
		ConditionExpression:       aws.String("attribute_exists(#b)"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
		ReturnValues:              types.ReturnValueAllNew,
	}
	return sendCommit(ctx, s, op, in, func(it item) ([]store.SeqCommit, error) {
		t, err := decodeBatchItem(it)
		if err != nil || !sameBatch(t.batch, cs) {
			return nil, fmt.Errorf("dynamo: %s: decode the updated topic item: %w", op, errors.Join(err, store.ErrUnavailable))
		}
		for _, p := range parts {
			s.observe(tpKey(topic, p), t.parts[p].next)
		}
		s.noteFences(topic, t)
		return assigned(cs, t), nil
	}, func() error {
		return s.putTopicItem(ctx, topic)
	}, func(cause error) ([]store.SeqCommit, bool, error) {
		return s.resolveBatch(ctx, op, cs, lo, cause)
	})
}

// sameBatch reports whether the item's newest batch is cs (same blocks, same order).
func sameBatch(batch, cs []store.SeqCommit) bool {
	if len(batch) != len(cs) {
		return false
	}
	for i := range cs {
		a, b := batch[i].Entry, cs[i].Entry
		if a.ObjectKey != b.ObjectKey || a.ByteOffset != b.ByteOffset || a.Partition != b.Partition || a.Count != b.Count {
			return false
		}
	}
	return true
}

// assigned returns cs with the bases and commit numbers of the topic item's newest
// batch (cs), its number and the item's fences; each entry carries its commit's members
// table location, so whoever writes it keeps that.
func assigned(cs []store.SeqCommit, t batchItem) []store.SeqCommit {
	out := slices.Clone(cs)
	for i := range out {
		out[i].Entry.BaseOffset, out[i].Seq = t.batch[i].Entry.BaseOffset, t.batch[i].Seq
		out[i].Entry.Duplicate, out[i].Materialized, out[i].Claim = false, false, nil
		out[i].Entry.MembersOffset, out[i].Entry.MembersLength = out[i].MembersOffset, out[i].MembersLength
		t.stamp(&out[i])
	}
	return out
}

// lowerBounds returns, per partition of a batch, a lower bound of the base its commit
// will get: the greatest high watermark this store has seen there, learnt from one read
// of the topic item the first time a partition is met.
func (s *MetaStore) lowerBounds(ctx context.Context, op, topic string, parts []int32) (map[int32]int64, error) {
	lo := make(map[int32]int64, len(parts))
	read := false
	for _, p := range parts {
		v, ok := s.seen.Load(tpKey(topic, p))
		if !ok {
			read = true
			break
		}
		lo[p] = v.(int64)
	}
	if !read {
		return lo, nil
	}
	it, err := s.getItem(ctx, op, s.sequencer, topicItemKey(topic))
	if err != nil {
		return nil, err
	}
	t := batchItem{parts: map[int32]partCounters{}}
	if it != nil {
		if t, err = decodeBatchItem(it); err != nil {
			return nil, fmt.Errorf("dynamo: %s: %w", op, err)
		}
	}
	for _, p := range parts {
		lo[p] = s.observe(tpKey(topic, p), t.parts[p].next)
	}
	return lo, nil
}

// resolveBatch decides a topic commit whose answer may have been lost, as resolveCommit
// does for one partition's: the batch was applied if the item's newest batch is it, or
// if its first commit is indexed in [lo, high watermark) of its partition — the batch is
// atomic, so then every commit of it is, and their entries are waited for. A first
// partition's range tiled without it proves the batch was not applied (applied false).
func (s *MetaStore) resolveBatch(ctx context.Context, op string, cs []store.SeqCommit, lo map[int32]int64, cause error) ([]store.SeqCommit, bool, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.resolveWait())
	defer cancel()
	topic := cs[0].Entry.Topic
	var hw map[int32]int64
	bases := make([]int64, len(cs))
	for i := range bases {
		bases[i] = -1
	}
	var last error
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		if hw == nil {
			it, gerr := s.getItem(rctx, op, s.sequencer, topicItemKey(topic))
			last = gerr
			if gerr == nil && it != nil {
				t, derr := decodeBatchItem(it)
				last = derr
				if derr == nil {
					if sameBatch(t.batch, cs) {
						return assigned(cs, t), true, nil
					}
					hw = map[int32]int64{}
					for _, c := range cs {
						p := c.Entry.Partition
						hw[p] = t.parts[p].next
						lo[p] = max(lo[p], t.parts[p].logStart)
					}
				}
			}
		}
		if hw != nil {
			done := true
			for i, c := range cs {
				if bases[i] >= 0 {
					continue
				}
				p := c.Entry.Partition
				base, tiled, ierr := s.findCommit(rctx, c.Entry, lo[p], hw[p])
				switch {
				case ierr != nil:
					last, done = ierr, false
				case base >= 0:
					bases[i] = base
				case tiled && i == 0:
					return nil, false, nil
				case tiled:
					return nil, false, fmt.Errorf("dynamo: %s: %w: commit %d of an applied batch is not in %s/%d's index [%d, %d)",
						op, store.ErrCommitUnknown, i, topic, p, lo[p], hw[p])
				default:
					done = false
				}
				if bases[0] < 0 {
					break // the batch's first commit decides whether it was applied
				}
			}
			if done && bases[0] >= 0 {
				out := slices.Clone(cs)
				for i := range out {
					out[i].Entry.BaseOffset, out[i].Seq = bases[i], 0
					out[i].Entry.Duplicate, out[i].Materialized, out[i].Claim = false, false, nil
					out[i].Entry.MembersOffset, out[i].Entry.MembersLength = out[i].MembersOffset, out[i].MembersLength
				}
				return out, true, nil
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-rctx.Done():
			t.Stop()
			return nil, false, fmt.Errorf("dynamo: %s: %w: the batch's commits were not all found within %s (%v): %w: %w",
				op, store.ErrCommitUnknown, s.cfg.resolveWait(), last, store.ErrUnavailable, mapError(op, cause))
		case <-t.C:
		}
	}
}

// putTopicItem creates a topic commit topic's item only if it has none. A topic of that
// layout never had another counter, so an item created late starts at zero rightly.
func (s *MetaStore) putTopicItem(ctx context.Context, topic string) error {
	it := topicItemKey(topic)
	it[attrTopic] = avS(topic)
	it[attrBatches] = avN(0)
	return s.createSequencerItem(ctx, "create topic item of "+topic, it)
}

// topicSequencer reads partition p's state from its topic item, strongly consistently
// or, when consistent is false, from any replica; a missing item is a topic never
// written, read as zeros without writing.
func (s *MetaStore) topicSequencer(ctx context.Context, topic string, p int32, consistent bool) (store.SeqState, error) {
	op := fmt.Sprintf("sequencer of %s/%d", topic, p)
	it, err := s.readItem(ctx, op, s.sequencer, topicItemKey(topic), consistent)
	if err != nil {
		return store.SeqState{}, err
	}
	if it == nil {
		return store.SeqState{Topic: topic, Partition: p}, nil
	}
	t, err := decodeBatchItem(it)
	if err != nil {
		return store.SeqState{}, fmt.Errorf("dynamo: %s: %w", op, err)
	}
	return t.state(p), nil
}

// advanceTopicLogStart raises l<p> on the topic item on condition that it is below the
// new value and o<p> is not.
func (s *MetaStore) advanceTopicLogStart(ctx context.Context, topic string, p int32, offset int64) error {
	op := fmt.Sprintf("advance log start of %s/%d to %d", topic, p, offset)
	if offset <= 0 {
		return nil
	}
	ps := strconv.Itoa(int(p))
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.sequencer),
		Key:                                 topicItemKey(topic),
		UpdateExpression:                    aws.String("SET #l = :ls"),
		ConditionExpression:                 aws.String("attribute_exists(#o) AND #o >= :ls AND (attribute_not_exists(#l) OR #l < :ls)"),
		ExpressionAttributeNames:            map[string]string{"#l": prefixStart + ps, "#o": prefixNext + ps},
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
	var st store.SeqState
	if cf.item != nil {
		t, derr := decodeBatchItem(cf.item)
		if derr != nil {
			return fmt.Errorf("dynamo: %s: %w", op, derr)
		}
		st = t.state(p)
	}
	return logStartRefused(op, offset, st)
}
