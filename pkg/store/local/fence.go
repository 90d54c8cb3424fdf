package local

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/stratalog/strata/pkg/store"
)

// A topic commit topic's batches and request fences (fenced idempotency): the number
// of batches committed (one per SequenceBatch transaction touching the topic), and the
// fences, one row per request key, which every batch's commits get in Fences.
const (
	bucketTopicBatches = "topic_batches" // topic → topicBatchRec
	bucketFences       = "topic_fences"  // topic, key → fenceRec
)

type topicBatchRec struct {
	Batches int64 `json:"batches"`
}

type fenceRec struct {
	Key     string    `json:"key"`
	Owner   string    `json:"owner,omitempty"`
	Attempt int32     `json:"attempt"`
	Batch   int64     `json:"batch"`
	At      time.Time `json:"at"`
}

func (r fenceRec) toStore() store.RequestFence {
	return store.RequestFence{Key: r.Key, Owner: r.Owner, Attempt: r.Attempt, Batch: r.Batch, At: r.At}
}

func topicKey(topic string) []byte { return appendString(nil, topic) }

// fenceKey prefixes the fences of key; fenceAttemptKey is one attempt's. A later attempt's
// fence is a row beside the earlier ones, never in their place: a batch is decided alike
// from any later view.
func fenceKey(topic, key string) []byte { return appendString(topicKey(topic), key) }

func fenceAttemptKey(topic, key string, attempt int32) []byte {
	return binary.BigEndian.AppendUint32(fenceKey(topic, key), uint32(attempt))
}

// batchesLocked returns the number of batches topic committed.
func batchesLocked(tx *bolt.Tx, topic string) (int64, error) {
	rec, _, err := getRec[topicBatchRec](tx, bucketTopicBatches, topicKey(topic))
	return rec.Batches, err
}

// fencesLocked returns topic's fences in key then attempt order.
func fencesLocked(tx *bolt.Tx, topic string) ([]store.RequestFence, error) {
	var out []store.RequestFence
	err := scanPrefix(tx, bucketFences, topicKey(topic), func(r fenceRec) { out = append(out, r.toStore()) })
	return out, err
}

// beginBatchLocked numbers a new batch of topic committed at now (its commits'
// AppendedAt) and returns its number and the fences its commits carry, first dropping
// the fences set more than store.FenceHorizon before now: only a commit prunes fences.
func beginBatchLocked(tx *bolt.Tx, topic string, now time.Time) (int64, []store.RequestFence, error) {
	n, err := batchesLocked(tx, topic)
	if err != nil {
		return 0, nil, err
	}
	n++
	if err := putRec(tx, bucketTopicBatches, topicKey(topic), topicBatchRec{Batches: n}); err != nil {
		return 0, nil, err
	}
	fences, err := fencesLocked(tx, topic)
	if err != nil {
		return 0, nil, err
	}
	kept := fences[:0]
	for _, f := range fences {
		if now.Sub(f.At) > store.FenceHorizon {
			if err := tx.Bucket([]byte(bucketFences)).Delete(fenceAttemptKey(topic, f.Key, f.Attempt)); err != nil {
				return 0, nil, fmt.Errorf("local: drop fence %q of %s: %w", f.Key, topic, err)
			}
			continue
		}
		kept = append(kept, f)
	}
	return n, slices.Clip(kept), nil
}

// FenceRequest sets f among the topic's fences in one transaction, with the topic's
// batch count, unless a fence of f.Key of at least f.Attempt is there (ErrSuperseded)
// or a new key finds no room (store.FenceLimits.Room); the point is the batch count and every partition's high watermark then.
func (m *MetaStore) FenceRequest(ctx context.Context, topic string, f store.RequestFence) (store.FencePoint, error) {
	if err := store.CheckFence(topic, f); err != nil {
		return store.FencePoint{}, fmt.Errorf("local: %w", err)
	}
	var fp store.FencePoint
	err := m.update(ctx, func(tx *bolt.Tx) error {
		fences, err := fencesLocked(tx, topic)
		if err != nil {
			return err
		}
		latest, ok := store.LatestFence(fences, f.Key)
		switch {
		case ok && latest.Attempt >= f.Attempt:
			return fmt.Errorf("local: fence %q attempt %d on %s: attempt %d fenced already: %w", f.Key, f.Attempt, topic, latest.Attempt, store.ErrSuperseded)
		case !ok:
			if err := m.fenceLimits.Room(fences, f); err != nil {
				return fmt.Errorf("local: fence %q on %s: %w", f.Key, topic, err)
			}
		}
		if fp.Batch, err = batchesLocked(tx, topic); err != nil {
			return err
		}
		if err := putRec(tx, bucketFences, fenceAttemptKey(topic, f.Key, f.Attempt), fenceRec{Key: f.Key, Owner: f.Owner, Attempt: f.Attempt, Batch: fp.Batch, At: f.At.UTC()}); err != nil {
			return err
		}
		fp.Next = map[int32]int64{}
		return scanPrefix(tx, bucketSequencer, topicKey(topic), func(st seqRec) { fp.Next[st.Partition] = st.NextOffset })
	})
	if err != nil {
		return store.FencePoint{}, err
	}
	return fp, nil
}
