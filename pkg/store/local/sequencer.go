package local

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/stratalog/strata/pkg/store"
)

// seqRec is a partition's sequencer row: the counter, the log start and the newest commit.
type seqRec struct {
	Topic      string        `json:"topic"`
	Partition  int32         `json:"partition"`
	NextOffset int64         `json:"next_offset"`
	NextSeq    int64         `json:"next_seq"`
	LogStart   int64         `json:"log_start"`
	Last       *seqCommitRec `json:"last,omitempty"`
}

type seqCommitRec struct {
	Entry          indexRec `json:"entry"`
	IdempotencyKey string   `json:"idempotency_key,omitempty"`
	BodyHash       string   `json:"body_hash,omitempty"`
	Seq            int64    `json:"seq"`
	MembersOffset  int64    `json:"members_offset,omitempty"`
	MembersLength  int64    `json:"members_length,omitempty"`
	// Batch is the commit's batch number on a topic commit topic.
	Batch int64 `json:"batch,omitempty"`
}

func (r seqRec) toStore() store.SeqState {
	st := store.SeqState{Topic: r.Topic, Partition: r.Partition, NextOffset: r.NextOffset, NextSeq: r.NextSeq, LogStart: r.LogStart}
	if r.Last != nil {
		st.Last = &store.SeqCommit{Entry: r.Last.Entry.toStore(), IdempotencyKey: r.Last.IdempotencyKey, BodyHash: r.Last.BodyHash, Seq: r.Last.Seq,
			MembersOffset: r.Last.MembersOffset, MembersLength: r.Last.MembersLength, Batch: r.Last.Batch}
	}
	return st
}

// seqLocked returns the partition's sequencer row, seeding it inside tx when absent:
// from the newest index entry's end and the legacy partitions row, which is how the
// index-as-sequencer format is upgraded (idempotently: an existing row is kept).
func seqLocked(tx *bolt.Tx, topic string, partition int32) (seqRec, error) {
	key := partitionKey(topic, partition)
	rec, ok, err := getRec[seqRec](tx, bucketSequencer, key)
	if err != nil || ok {
		return rec, err
	}
	rec = seqRec{Topic: topic, Partition: partition}
	c := tx.Bucket([]byte(bucketIndex)).Cursor()
	if k, v := seekLastBefore(c, prefixEnd(key)); k != nil && bytes.HasPrefix(k, key) {
		var last indexRec
		if err := decodeRec(bucketIndex, k, v, &last); err != nil {
			return rec, err
		}
		rec.NextOffset = last.BaseOffset + last.Count
	}
	legacy, _, err := getRec[partitionRec](tx, bucketPartitions, key)
	if err != nil {
		return rec, err
	}
	rec.LogStart = min(legacy.LogStartOffset, rec.NextOffset)
	if tx.Writable() {
		err = putRec(tx, bucketSequencer, key, rec)
	}
	return rec, err
}

// migrate upgrades the file on open: legacy tombstones (a deleted topic's row kept with
// a tombstone beside it) move to the graveyard, freeing their names; then every live
// partition's sequencer row is seeded.
func migrate(tx *bolt.Tx) error {
	if err := migrateTombstones(tx); err != nil {
		return err
	}
	return tx.Bucket([]byte(bucketTopics)).ForEach(func(k, v []byte) error {
		var t topicRec
		if err := json.Unmarshal(v, &t); err != nil {
			return fmt.Errorf("local: migrate: decode topic %q: %w", k, err)
		}
		for p := int32(0); p < t.Partitions; p++ {
			if _, err := seqLocked(tx, t.toStore().ID(), p); err != nil {
				return fmt.Errorf("local: migrate %s/%d: %w", t.Name, p, err)
			}
		}
		return nil
	})
}

// Sequence adds the block to the partition's counter and writes its index entry and
// idempotency claim in the same transaction, so a local commit is always materialised.
func (m *MetaStore) Sequence(ctx context.Context, c store.SeqCommit) (store.SeqCommit, error) {
	out, errs := m.SequenceBatch(ctx, []store.SeqCommit{c})
	return out[0], errs[0]
}

// SequenceBatch commits every commit of a batch in one transaction — one fsync for the
// batch, the embedded backend's topic commit — keeping the per-partition counter rows
// (bbolt has no per-row throughput to spread: its unit of cost is the transaction), so
// every topic, of either layout, commits this way and no data directory is rewritten.
// On a topic commit topic the transaction is one batch: numbered (Batch) and given the
// topic's fences (Fences) before its commits are materialised, so that producer members
// are skipped by them.
func (m *MetaStore) SequenceBatch(ctx context.Context, cs []store.SeqCommit) ([]store.SeqCommit, []error) {
	out := slices.Clone(cs)
	errs := make([]error, len(cs))
	err := m.commit(ctx, func(tx *bolt.Tx) error {
		type batch struct {
			n      int64
			fences []store.RequestFence
		}
		batches := map[string]batch{}
		for i := range out {
			topic := out[i].Entry.Topic
			out[i].Batch, out[i].Fences = 0, nil
			if store.TopicCommits(topic) {
				b, ok := batches[topic]
				if !ok {
					var err error
					if b.n, b.fences, err = beginBatchLocked(tx, topic, out[i].Entry.AppendedAt); err != nil {
						return err
					}
					batches[topic] = b
				}
				out[i].Batch, out[i].Fences = b.n, slices.Clone(b.fences)
			}
			if err := sequenceLocked(tx, &out[i]); err != nil {
				return err
			}
		}
		return nil
	})
	for i := range out {
		if err != nil {
			out[i], errs[i] = store.SeqCommit{}, err
		} else {
			out[i].Materialized = true
		}
	}
	return out, errs
}

// sequenceLocked applies one commit inside tx: the counter add, the idempotency claim
// and the index entry.
func sequenceLocked(tx *bolt.Tx, c *store.SeqCommit) error {
	st, err := seqLocked(tx, c.Entry.Topic, c.Entry.Partition)
	if err != nil {
		return err
	}
	if c.Entry.Count < 1 {
		return fmt.Errorf("local: commit %s/%d: count must be positive", c.Entry.Topic, c.Entry.Partition)
	}
	c.Entry.BaseOffset = st.NextOffset
	c.Entry.Duplicate = false
	st.NextOffset += c.Entry.Count
	st.NextSeq++
	c.Seq = st.NextSeq
	c.Claim = nil
	if c.IdempotencyKey != "" {
		exp := c.ClaimExpiresAt
		if exp.IsZero() {
			exp = c.Entry.ExpiresAt
		}
		claim := store.IdempotencyRecord{Key: c.IdempotencyKey, Partition: c.Entry.Partition, BodyHash: c.BodyHash,
			BaseOffset: c.Entry.BaseOffset, Count: c.Entry.Count, ExpiresAt: exp}
		ikey := idempotencyKey(claim.Key, claim.Partition)
		existing, ok, err := getRec[idempotencyRec](tx, bucketIdempotency, ikey)
		if err != nil {
			return err
		}
		// A commit of the format before folded claims whose key a folded claim holds (a
		// retry made after the upgrade): the claim's slot owns the partition.
		if req, found, err := getRec[idempotencyRec](tx, bucketIdempotency, idempotencyKey(claim.Key, -1)); err != nil {
			return err
		} else if found && req.Folded {
			if pc, has := req.toRequestClaim().Part(claim.Partition); has {
				existing, ok = idempotencyRec{Key: claim.Key, Partition: pc.Partition, BodyHash: req.BodyHash,
					BaseOffset: pc.BaseOffset, Count: pc.Count, ExpiresAt: req.ExpiresAt}, true
			}
		}
		if ok {
			claim = existing.toStore()
			c.Entry.Duplicate = true
		} else if err := putExpiring(tx, expiryIdempotency, ikey, idempotencyToRec(claim), claim.ExpiresAt); err != nil {
			return err
		}
		c.Claim = &claim
	}
	c.Claims = nil
	for _, mb := range c.Members {
		if mb.Producer {
			c.Claims = append(c.Claims, store.RequestClaim{}) // decided by fences, not claimed
			continue
		}
		exp := c.ClaimExpiresAt
		if exp.IsZero() {
			exp = c.Entry.ExpiresAt
		}
		claim, err := claimLocked(tx, store.RequestClaim{Key: mb.Key, BodyHash: mb.BodyHash, Count: mb.Total,
			Partitions: mb.Partitions, ExpiresAt: exp,
			Parts: []store.PartClaim{{Partition: c.Entry.Partition, BaseOffset: c.Entry.BaseOffset + mb.Offset, Count: mb.Count}}})
		if err != nil {
			return err
		}
		c.Claims = append(c.Claims, claim)
	}
	if len(c.Members) > 0 {
		c.Entry.SetSkip(store.SkipFor(*c))
	}
	c.Entry.MembersOffset, c.Entry.MembersLength, c.Entry.Batch = c.MembersOffset, c.MembersLength, c.Batch
	if err := putIndexIfAbsent(tx, c.Entry); err != nil {
		return fmt.Errorf("local: the counter of %s/%d is behind its index: %w", c.Entry.Topic, c.Entry.Partition, err)
	}
	st.Last = &seqCommitRec{Entry: indexToRec(c.Entry), IdempotencyKey: c.IdempotencyKey, BodyHash: c.BodyHash, Seq: c.Seq,
		MembersOffset: c.MembersOffset, MembersLength: c.MembersLength, Batch: c.Batch}
	return putRec(tx, bucketSequencer, partitionKey(c.Entry.Topic, c.Entry.Partition), st)
}

// SequencerEventual is Sequencer: the embedded store has no replica to lag.
func (m *MetaStore) SequencerEventual(ctx context.Context, topic string, partition int32) (store.SeqState, error) {
	return m.Sequencer(ctx, topic, partition)
}

// Sequencer returns the partition's sequencer row, seeding it first when absent. On a
// topic commit topic its last commit carries its batch number and the topic's fences.
func (m *MetaStore) Sequencer(ctx context.Context, topic string, partition int32) (store.SeqState, error) {
	var rec seqRec
	var fences []store.RequestFence
	found := false
	err := m.view(ctx, func(tx *bolt.Tx) error {
		var err error
		if rec, found, err = getRec[seqRec](tx, bucketSequencer, partitionKey(topic, partition)); err != nil || !found {
			return err
		}
		if store.TopicCommits(topic) && rec.Last != nil {
			fences, err = fencesLocked(tx, topic)
		}
		return err
	})
	if err == nil && !found {
		err = m.update(ctx, func(tx *bolt.Tx) error {
			var err error
			rec, err = seqLocked(tx, topic, partition)
			return err
		})
	}
	if err != nil {
		return store.SeqState{}, err
	}
	st := rec.toStore()
	if st.Last != nil {
		st.Last.Fences = fences
	}
	return st, nil
}

// ClaimIdempotency stores rec unless its (key, partition) has a record already.
func (m *MetaStore) ClaimIdempotency(ctx context.Context, rec store.IdempotencyRecord) error {
	return m.update(ctx, func(tx *bolt.Tx) error {
		ikey := idempotencyKey(rec.Key, rec.Partition)
		existing, ok, err := getRec[idempotencyRec](tx, bucketIdempotency, ikey)
		if err != nil {
			return err
		}
		if ok {
			return &store.IdempotencyError{Existing: existing.toStore()}
		}
		return putExpiring(tx, expiryIdempotency, ikey, idempotencyToRec(rec), rec.ExpiresAt)
	})
}

// ClaimRequest merges rec into its key's folded claim in one transaction.
func (m *MetaStore) ClaimRequest(ctx context.Context, rec store.RequestClaim) (store.RequestClaim, error) {
	var out store.RequestClaim
	err := m.update(ctx, func(tx *bolt.Tx) error {
		var err error
		out, err = claimLocked(tx, rec)
		return err
	})
	return out, err
}

// GetRequestClaim reads key's claim in one read transaction.
func (m *MetaStore) GetRequestClaim(ctx context.Context, key string, partitions []int32) (store.RequestClaim, error) {
	var out store.RequestClaim
	err := m.view(ctx, func(tx *bolt.Tx) error {
		row, ok, err := getRec[idempotencyRec](tx, bucketIdempotency, idempotencyKey(key, -1))
		switch {
		case err != nil:
			return err
		case !ok:
			return fmt.Errorf("local: request claim %q: %w", key, store.ErrNotFound)
		case row.Folded:
			out = row.toRequestClaim()
			return nil
		}
		out = row.toRequestClaim()
		for _, p := range partitions {
			prow, found, err := getRec[idempotencyRec](tx, bucketIdempotency, idempotencyKey(key, p))
			if err != nil {
				return err
			}
			if found {
				out.Parts = append(out.Parts, store.PartClaim{Partition: p, BaseOffset: prow.BaseOffset, Count: prow.Count})
			}
		}
		return nil
	})
	return out, err
}

// claimLocked is ClaimRequest inside tx: store.MergeClaim on a folded request row, or
// the per-partition claims beside a request row of the format before folding.
func claimLocked(tx *bolt.Tx, rec store.RequestClaim) (store.RequestClaim, error) {
	rkey := idempotencyKey(rec.Key, -1)
	row, ok, err := getRec[idempotencyRec](tx, bucketIdempotency, rkey)
	if err != nil {
		return store.RequestClaim{}, err
	}
	if ok && !row.Folded {
		out := store.RequestClaim{Key: row.Key, BodyHash: row.BodyHash, Count: row.Count, Partitions: row.Partitions, ExpiresAt: row.ExpiresAt}
		for _, pc := range rec.Parts {
			pkey := idempotencyKey(rec.Key, pc.Partition)
			prow, found, err := getRec[idempotencyRec](tx, bucketIdempotency, pkey)
			if err != nil {
				return store.RequestClaim{}, err
			}
			if !found {
				if !row.toRequestClaim().Matches(rec) {
					continue // another request's key: claim nothing of it
				}
				prow = idempotencyToRec(store.IdempotencyRecord{Key: rec.Key, Partition: pc.Partition, BodyHash: rec.BodyHash,
					BaseOffset: pc.BaseOffset, Count: pc.Count, ExpiresAt: rec.ExpiresAt})
				if err := putExpiring(tx, expiryIdempotency, pkey, prow, rec.ExpiresAt); err != nil {
					return store.RequestClaim{}, err
				}
			}
			out.Parts = append(out.Parts, store.PartClaim{Partition: pc.Partition, BaseOffset: prow.BaseOffset, Count: prow.Count})
		}
		return out, nil
	}
	var stored *store.RequestClaim
	if ok {
		c := row.toRequestClaim()
		stored = &c
	}
	next, write := store.MergeClaim(stored, rec)
	if write {
		if err := putExpiring(tx, expiryIdempotency, rkey, requestClaimToRec(next), next.ExpiresAt); err != nil {
			return store.RequestClaim{}, err
		}
	}
	return next, nil
}

// LogStart returns the partition's log start offset, 0 if never set.
func (m *MetaStore) LogStart(ctx context.Context, topic string, partition int32) (int64, error) {
	st, err := m.Sequencer(ctx, topic, partition)
	return st.LogStart, err
}

// AdvanceLogStart raises the log start offset on the sequencer row; a lower offset is
// ignored and one above the high watermark refused.
func (m *MetaStore) AdvanceLogStart(ctx context.Context, topic string, partition int32, offset int64) error {
	return m.update(ctx, func(tx *bolt.Tx) error {
		st, err := seqLocked(tx, topic, partition)
		if err != nil {
			return err
		}
		if offset <= st.LogStart {
			return nil
		}
		if offset > st.NextOffset {
			return fmt.Errorf("local: log start %d of %s/%d above its high watermark %d: %w", offset, topic, partition, st.NextOffset, store.ErrBeyondEnd)
		}
		st.LogStart = offset
		return putRec(tx, bucketSequencer, partitionKey(topic, partition), st)
	})
}
