package dynamo

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stratalog/strata/pkg/store"
)

// Request fences (fenced idempotency) live on the topic item: the fences of key k are
// f_<h> = {k: key, a: its latest attempt, t: when that was set (epoch ms), o: its owner
// (absent when "")} and, per
// fencing attempt n, fb_<h>_<n> = the batch count when attempt n fenced, h being 16 hex
// digits of sha256(k). A later attempt adds its fb_<h>_<n> beside the earlier ones and
// never replaces them: a batch is decided alike from any later image of the item (a lost
// answer resolved by a read, a fence's stream record re-carrying the newest batch), and
// the earlier attempt's fence may apply to it where the later one does not. The batch
// count is copied from bseq by the fence's own update (SET fb_<h>_<n> = bseq), so a fence
// is one write that never races the batches: no read first, no condition on bseq that a
// busy topic would keep failing. A key's fences cost about 130 bytes on the item while
// present (plus ~25 per further attempt), and so on the write units of every batch, whose
// write is billed on the item's size; commits (never fences) drop a key's fences once its
// latest is past store.FenceHorizon.
const (
	prefixFence      = "f_"
	prefixFenceBatch = "fb_"
	fenceKeyField    = "k"
	fenceAttempt     = "a"
	fenceAt          = "t"
	fenceOwner       = "o"
	// maxPrunePerCommit bounds the fence attributes one commit removes, so a commit's
	// expression stays small; the rest go with the next commits.
	maxPrunePerCommit = 32
)

// fenceName is the attribute of key's fence.
func fenceName(key string) string {
	sum := sha256.Sum256([]byte(key))
	return prefixFence + hex.EncodeToString(sum[:8])
}

// fenceBatchName is the batch attribute of attempt's fence beside the fence attribute
// name.
func fenceBatchName(name string, attempt int32) string {
	return prefixFenceBatch + strings.TrimPrefix(name, prefixFence) + "_" + strconv.Itoa(int(attempt))
}

// fenceOfBatchName is the fence attribute and the attempt a batch attribute belongs to.
func fenceOfBatchName(name string) (string, int32, bool) {
	h, n, ok := strings.Cut(strings.TrimPrefix(name, prefixFenceBatch), "_")
	a, err := strconv.ParseInt(n, 10, 32)
	if !ok || err != nil || a < 1 || strconv.FormatInt(a, 10) != n {
		return "", 0, false
	}
	return prefixFence + h, int32(a), true
}

// avFence encodes a fence's own fields (its batch is a separate attribute).
func avFence(f store.RequestFence) types.AttributeValue {
	m := item{fenceKeyField: avS(f.Key), fenceAttempt: avN(int64(f.Attempt)), fenceAt: avN(f.At.UnixMilli())}
	if f.Owner != "" {
		m[fenceOwner] = avS(f.Owner)
	}
	return &types.AttributeValueMemberM{Value: m}
}

// decodeFences decodes every fence of a topic item whose batch count is batches, in key
// then attempt order: each f_<h> a map of exactly its three fields (four with a
// non-empty owner), named by its key's
// hash, its latest attempt from 1 and a time from the epoch on, with an fb_<h>_<n> in
// [0, batches] for that attempt and for any earlier fencing attempt n. An fb_ whose
// fence is gone (a commit that pruned the key from a view older than its latest attempt)
// is no fence — by then its attempts can no longer commit — and is returned among
// orphans for the next commit to remove.
func decodeFences(d *decoder, batches int64) (fences []store.RequestFence, orphans []string) {
	latest := map[string]store.RequestFence{}
	for name, v := range d.it {
		if !strings.HasPrefix(name, prefixFence) {
			continue
		}
		m, ok := v.(*types.AttributeValueMemberM)
		owned := false
		if ok {
			_, owned = m.Value[fenceOwner]
		}
		if !ok || len(m.Value) != 3 && !(owned && len(m.Value) == 4) {
			d.fail(name, "not a fence (%T)", v)
			return nil, nil
		}
		fd := decoder{it: m.Value}
		f := store.RequestFence{Key: fd.str(fenceKeyField, true), Owner: fd.str(fenceOwner, owned)}
		attempt, at := fd.num(fenceAttempt, true), fd.num(fenceAt, true)
		switch {
		case fd.err != nil:
			d.fail(name, "%v", fd.err)
		case f.Key == "" || len(f.Key) > store.MaxFenceKey || fenceName(f.Key) != name:
			d.fail(name, "key of %d bytes does not name the fence", len(f.Key))
		case owned && (f.Owner == "" || len(f.Owner) > store.MaxFenceOwner):
			d.fail(name, "owner of %d bytes out of range", len(f.Owner))
		case attempt < 1 || attempt > math.MaxInt32 || at < 0:
			d.fail(name, "attempt %d, time %d out of range", attempt, at)
		}
		if d.err != nil {
			return nil, nil
		}
		f.Attempt, f.At = int32(attempt), time.UnixMilli(at).UTC()
		latest[name] = f
	}
	for name := range d.it {
		if !strings.HasPrefix(name, prefixFenceBatch) {
			continue
		}
		fname, attempt, ok := fenceOfBatchName(name)
		if !ok {
			d.fail(name, "not a fence's batch")
			return nil, nil
		}
		f, has := latest[fname]
		if !has || attempt > f.Attempt {
			orphans = append(orphans, name)
			continue
		}
		f.Attempt, f.Batch = attempt, d.num(name, true)
		if d.err == nil && (f.Batch < 0 || f.Batch > batches) {
			d.fail(name, "batch %d of %d out of range", f.Batch, batches)
		}
		if d.err != nil {
			return nil, nil
		}
		fences = append(fences, f)
	}
	for name, f := range latest {
		if _, ok := d.it[fenceBatchName(name, f.Attempt)]; !ok {
			d.fail(name, "the latest attempt's batch is missing")
			return nil, nil
		}
	}
	slices.SortFunc(fences, func(a, b store.RequestFence) int {
		return cmp.Or(strings.Compare(a.Key, b.Key), cmp.Compare(a.Attempt, b.Attempt))
	})
	slices.Sort(orphans)
	return fences, orphans
}

// expiredFences is the plan of a commit at now: the attributes to remove — every
// attribute of each key whose latest fence (as this store last saw the topic's) was set
// more than store.FenceHorizon before it, a key's all together, and the orphaned batch
// attributes the view holds — at most limit of them (a first key over the limit whole).
// A key pruned from a stale view may have been fenced again since: that later fence's
// batch attribute is left an orphan and its fence gone, which is harmless, as every
// attempt of a request is sent within wire.MaxRetryElapsed of its first and
// store.FenceHorizon exceeds that by the time an attempt takes to commit.
func expiredFences(v fenceView, now time.Time, limit int) []string {
	var out []string
	for i := 0; i < len(v.fences); {
		j := i
		for j < len(v.fences) && v.fences[j].Key == v.fences[i].Key {
			j++
		}
		key := v.fences[i:j:j]
		if now.Sub(key[len(key)-1].At) > store.FenceHorizon && (len(out) == 0 || len(out)+1+len(key) <= limit) {
			name := fenceName(key[0].Key)
			out = append(out, name)
			for _, f := range key {
				out = append(out, fenceBatchName(name, f.Attempt))
			}
		}
		i = j
	}
	for _, o := range v.orphans {
		if len(out) < limit {
			out = append(out, o)
		}
	}
	return out
}

// fenceView is a topic item's fences and orphaned fence batches as a store last saw them.
type fenceView struct {
	fences  []store.RequestFence
	orphans []string
}

// noteFences records the fences of topic's item as last seen in an answer, for the
// next commit's pruning.
func (s *MetaStore) noteFences(topic string, t batchItem) {
	if len(t.fences) == 0 && len(t.orphans) == 0 {
		s.fences.Delete(topic)
		return
	}
	s.fences.Store(topic, fenceView{fences: t.fences, orphans: t.orphans})
}

func (s *MetaStore) seenFences(topic string) fenceView {
	v, ok := s.fences.Load(topic)
	if !ok {
		return fenceView{}
	}
	return v.(fenceView)
}

// fencePoint is the state of a topic item as a fence found it.
func fencePoint(t batchItem) store.FencePoint {
	fp := store.FencePoint{Batch: t.batches, Next: make(map[int32]int64, len(t.parts))}
	for p, pc := range t.parts {
		fp.Next[p] = pc.next
	}
	return fp
}

// FenceRequest sets f on the topic item with one conditional UpdateItem: SET f_<h> and
// fb_<h> = bseq, on condition that the item exists and holds no fence of f.Key or one of
// a lower attempt; the updated item (ALL_NEW) is the fence point. A missing item is
// created and the update tried once more. A failed condition is ErrSuperseded when the
// stored fence's attempt is at least f.Attempt. The SDK does not resend the update by
// itself (commitRetryer); an answer that may be lost is resolved by reading the item:
// a fence there that is f itself was applied — its point is the item's when no batch
// committed since, else lost (ErrCommitUnknown: this attempt must give up, a later one
// fences again) — and one not there is sent again.
func (s *MetaStore) FenceRequest(ctx context.Context, topic string, f store.RequestFence) (store.FencePoint, error) {
	op := fmt.Sprintf("fence %q attempt %d on %s", f.Key, f.Attempt, topic)
	if err := store.CheckFence(topic, f); err != nil {
		return store.FencePoint{}, fmt.Errorf("dynamo: %w", err)
	}
	// The caps are checked against this store's latest view of the item (every answer
	// about it updates the view), so hosts racing past one add about a fence each.
	if seen := s.seenFences(topic).fences; len(seen) > 0 {
		if _, ok := store.LatestFence(seen, f.Key); !ok {
			if err := s.cfg.FenceLimits.Room(seen, f); err != nil {
				return store.FencePoint{}, fmt.Errorf("dynamo: %s: %w", op, err)
			}
		}
	}
	name := fenceName(f.Key)
	in := &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.sequencer),
		Key:                 topicItemKey(topic),
		UpdateExpression:    aws.String("SET #f = :f, #fb = #b"),
		ConditionExpression: aws.String("attribute_exists(#b) AND (attribute_not_exists(#f) OR (#f.#k = :k AND #f.#a < :a))"),
		ExpressionAttributeNames: map[string]string{"#f": name, "#fb": fenceBatchName(name, f.Attempt), "#b": attrBatches,
			"#k": fenceKeyField, "#a": fenceAttempt},
		ExpressionAttributeValues:           item{":f": avFence(f), ":k": avS(f.Key), ":a": avN(int64(f.Attempt))},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	created, lost, resends := false, false, 0
	for {
		out, err := s.client.UpdateItem(ctx, in, func(o *dynamodb.Options) { o.Retryer = commitRetryer() })
		if err == nil {
			t, derr := decodeBatchItem(out.Attributes)
			if derr != nil {
				return store.FencePoint{}, fmt.Errorf("dynamo: %s: decode the updated topic item: %w", op, derr)
			}
			s.noteFences(topic, t)
			return fencePoint(t), nil
		}
		var old item
		var cf *conditionFailed
		if merr := mapError(op, err); errors.As(merr, &cf) {
			if old = cf.item; old == nil {
				if created {
					return store.FencePoint{}, fmt.Errorf("dynamo: %s: topic item missing after creating it: %w", op, store.ErrUnavailable)
				}
				created = true
				if err := s.putTopicItem(ctx, topic); err != nil {
					return store.FencePoint{}, err
				}
				continue
			}
		} else if notApplied(err) {
			return store.FencePoint{}, merr
		} else {
			lost = true
			if old, err = s.getItem(ctx, op, s.sequencer, topicItemKey(topic)); err != nil {
				return store.FencePoint{}, fmt.Errorf("dynamo: %s: %w: %w", op, store.ErrCommitUnknown, err)
			}
		}
		fp, done, err := s.fenceOutcome(op, topic, f, old, lost)
		if done || err != nil {
			return fp, err
		}
		if resends >= maxResends || ctx.Err() != nil {
			return store.FencePoint{}, fmt.Errorf("dynamo: %s: not applied: %w", op, store.ErrUnavailable)
		}
		resends++
	}
}

// fenceOutcome decides a fence from the topic item as it is after a failed condition or
// a lost answer (nil: no item): once an answer was lost, f itself there is done (its
// point, or ErrCommitUnknown when batches committed since); a fence of f.Key of at
// least f.Attempt is ErrSuperseded, another key's fence under the same name an error;
// else f was not applied (done false).
func (s *MetaStore) fenceOutcome(op, topic string, f store.RequestFence, old item, lost bool) (store.FencePoint, bool, error) {
	if old == nil {
		return store.FencePoint{}, false, nil
	}
	t, err := decodeBatchItem(old)
	if err != nil {
		return store.FencePoint{}, false, fmt.Errorf("dynamo: %s: decode the topic item: %w", op, err)
	}
	s.noteFences(topic, t)
	stored, ok := store.LatestFence(t.fences, f.Key)
	switch {
	case lost && ok && stored.Attempt == f.Attempt && stored.At.UnixMilli() == f.At.UnixMilli():
		if stored.Batch != t.batches {
			return store.FencePoint{}, true, fmt.Errorf("dynamo: %s: %w: the fence was set at batch %d, its point lost to %d batches since",
				op, store.ErrCommitUnknown, stored.Batch, t.batches-stored.Batch)
		}
		return fencePoint(t), true, nil
	case ok && stored.Attempt >= f.Attempt:
		return store.FencePoint{}, true, fmt.Errorf("dynamo: %s: attempt %d fenced already: %w", op, stored.Attempt, store.ErrSuperseded)
	case !ok:
		if _, taken := old[fenceName(f.Key)]; taken {
			return store.FencePoint{}, true, fmt.Errorf("dynamo: %s: another key's fence holds attribute %s", op, fenceName(f.Key))
		}
	}
	return store.FencePoint{}, false, nil
}
