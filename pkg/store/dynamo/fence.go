package dynamo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stratalog/strata/pkg/store"
)

// Request fences (fenced idempotency) live on the topic item: a fence of key k is two
// attributes, f_<h> = {k: key, a: attempt, t: set at (epoch ms)} and fb_<h> = the batch
// count when it was set, h being 16 hex digits of sha256(k). The batch count is copied
// from bseq by the fence's own update (SET fb_<h> = bseq), so a fence is one write that
// never races the batches: no read first, no condition on bseq that a busy topic would
// keep failing. A fence costs about 100 bytes on the item while present, and so on the
// write units of every batch, whose write is billed on the item's size; commits (never
// fences) drop the ones past store.FenceHorizon.
const (
	prefixFence      = "f_"
	prefixFenceBatch = "fb_"
	fenceKeyField    = "k"
	fenceAttempt     = "a"
	fenceAt          = "t"
	// maxPrunePerCommit bounds the fences one commit removes, so a commit's expression
	// stays small; the rest go with the next commits.
	maxPrunePerCommit = 16
)

// fenceName is the attribute of key's fence.
func fenceName(key string) string {
	sum := sha256.Sum256([]byte(key))
	return prefixFence + hex.EncodeToString(sum[:8])
}

// fenceBatchName is the batch attribute beside the fence attribute name.
func fenceBatchName(name string) string {
	return prefixFenceBatch + strings.TrimPrefix(name, prefixFence)
}

// avFence encodes a fence's own fields (its batch is a separate attribute).
func avFence(f store.RequestFence) types.AttributeValue {
	return &types.AttributeValueMemberM{Value: item{fenceKeyField: avS(f.Key), fenceAttempt: avN(int64(f.Attempt)),
		fenceAt: avN(f.At.UnixMilli())}}
}

// decodeFences decodes every fence of a topic item whose batch count is batches, in key
// order: each f_<h> a map of exactly its three fields, named by its key's hash, with its
// fb_<h> in [0, batches], an attempt from 1 and a time from the epoch on; an fb_<h>
// without its fence fails too.
func decodeFences(d *decoder, batches int64) []store.RequestFence {
	var out []store.RequestFence
	for name, v := range d.it {
		if strings.HasPrefix(name, prefixFenceBatch) {
			if _, ok := d.it[prefixFence+strings.TrimPrefix(name, prefixFenceBatch)]; !ok {
				d.fail(name, "a fence's batch without its fence")
				return nil
			}
			continue
		}
		if !strings.HasPrefix(name, prefixFence) {
			continue
		}
		m, ok := v.(*types.AttributeValueMemberM)
		if !ok || len(m.Value) != 3 {
			d.fail(name, "not a fence (%T)", v)
			return nil
		}
		fd := decoder{it: m.Value}
		f := store.RequestFence{Key: fd.str(fenceKeyField, true)}
		attempt, at := fd.num(fenceAttempt, true), fd.num(fenceAt, true)
		f.Batch = d.num(fenceBatchName(name), true)
		switch {
		case fd.err != nil:
			d.fail(name, "%v", fd.err)
		case d.err != nil:
		case f.Key == "" || len(f.Key) > store.MaxFenceKey || fenceName(f.Key) != name:
			d.fail(name, "key of %d bytes does not name the fence", len(f.Key))
		case attempt < 1 || attempt > math.MaxInt32 || at < 0 || f.Batch < 0 || f.Batch > batches:
			d.fail(name, "attempt %d, time %d, batch %d of %d out of range", attempt, at, f.Batch, batches)
		}
		if d.err != nil {
			return nil
		}
		f.Attempt, f.At = int32(attempt), time.UnixMilli(at).UTC()
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b store.RequestFence) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// fenceOf returns the fence of key among fences.
func fenceOf(fences []store.RequestFence, key string) (store.RequestFence, bool) {
	for _, f := range fences {
		if f.Key == key {
			return f, true
		}
	}
	return store.RequestFence{}, false
}

// expiredFences is the plan of a commit at now: the fences (as this store last saw the
// topic's) set more than store.FenceHorizon before it, at most limit of them. Removing
// one that another attempt of its request replaced since is harmless: every attempt of
// a request is sent within wire.MaxRetryElapsed of its first, far inside the horizon.
func expiredFences(seen []store.RequestFence, now time.Time, limit int) []store.RequestFence {
	var out []store.RequestFence
	for _, f := range seen {
		if len(out) < limit && now.Sub(f.At) > store.FenceHorizon {
			out = append(out, f)
		}
	}
	return out
}

// noteFences records the fences of topic's item as last seen in an answer, for the
// next commit's pruning.
func (s *MetaStore) noteFences(topic string, fences []store.RequestFence) {
	if len(fences) == 0 {
		s.fences.Delete(topic)
		return
	}
	s.fences.Store(topic, fences)
}

func (s *MetaStore) seenFences(topic string) []store.RequestFence {
	v, ok := s.fences.Load(topic)
	if !ok {
		return nil
	}
	return v.([]store.RequestFence)
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
	// The cap is checked against this store's latest view of the item (every answer
	// about it updates the view), so hosts racing past it add at most one fence each.
	if seen := s.seenFences(topic); len(seen) >= store.MaxFences {
		if _, ok := fenceOf(seen, f.Key); !ok {
			return store.FencePoint{}, fmt.Errorf("dynamo: %s: %d fences held: %w", op, len(seen), store.ErrUnavailable)
		}
	}
	name := fenceName(f.Key)
	in := &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.sequencer),
		Key:                 topicItemKey(topic),
		UpdateExpression:    aws.String("SET #f = :f, #fb = #b"),
		ConditionExpression: aws.String("attribute_exists(#b) AND (attribute_not_exists(#f) OR (#f.#k = :k AND #f.#a < :a))"),
		ExpressionAttributeNames: map[string]string{"#f": name, "#fb": fenceBatchName(name), "#b": attrBatches,
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
			s.noteFences(topic, t.fences)
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
	s.noteFences(topic, t.fences)
	stored, ok := fenceOf(t.fences, f.Key)
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
