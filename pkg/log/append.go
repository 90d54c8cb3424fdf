package log

import (
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/stratalog/strata/internal/ctxtime"
	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/store"
)

// Record is one record to append.
type Record struct {
	Key     []byte
	Value   []byte
	Headers []segment.Header
	// Partition, when set, places the record; otherwise a keyed record goes to
	// PartitionForKey and an unkeyed one to the next partition in round-robin order.
	Partition *int32
	// Timestamp (milliseconds since the epoch), when set, is stored as is; otherwise the
	// append time is used.
	Timestamp *int64
}

// AppendOptions are optional parameters of Append.
type AppendOptions struct {
	// IdempotencyKey (1–128 characters), when set, makes a retry with the same key and
	// the same records return the first call's offsets and append nothing twice.
	IdempotencyKey string
}

// Result is the outcome of one record of an append, in request order.
type Result struct {
	Partition int32
	Offset    int64
	// Err is set when the record's partition failed (only inside *AppendError).
	Err error
}

// Append makes the records durable and returns their offsets in request order. All
// records share one segment object; each partition's block is then sequenced with one
// conditional index write. A validation error changes nothing. If some partitions fail
// after others succeeded, the error is an *AppendError listing both.
func (l *Log) Append(ctx context.Context, topic string, recs []Record, opt AppendOptions) ([]Result, error) {
	start := l.now()
	t, err := l.Topic(ctx, topic)
	if err != nil {
		return nil, err
	}
	if len(opt.IdempotencyKey) > 128 {
		return nil, invalidf("Idempotency-Key must be 1–128 characters")
	}
	parts, err := l.place(t, recs, opt.IdempotencyKey)
	if err != nil {
		return nil, err
	}
	// Keys are scoped to the topic: the same key on two topics names two requests.
	idemKey := ""
	if opt.IdempotencyKey != "" {
		idemKey = topic + "#" + opt.IdempotencyKey
	}
	groups := groupByPartition(parts)
	now := l.now()
	nowMs := now.UnixMilli()

	results := make([]Result, len(recs))
	var bodyHash string
	pending := groups
	if idemKey != "" {
		bodyHash = hashBody(recs, parts)
		pending, err = l.replayIdempotent(ctx, idemKey, bodyHash, groups, results)
		if err != nil {
			return nil, err
		}
		if len(pending) == 0 {
			return results, nil
		}
	}

	// One object holds a block per pending partition.
	var obj []byte
	blocks := make([]blockRef, len(pending))
	var nbytes int
	for i, g := range pending {
		srecs := make([]segment.Record, len(g.idx))
		var maxTs int64
		for j, ri := range g.idx {
			r := recs[ri]
			ts := nowMs
			if r.Timestamp != nil {
				ts = *r.Timestamp
			}
			if j == 0 || ts > maxTs {
				maxTs = ts
			}
			srecs[j] = segment.Record{Timestamp: ts, Key: r.Key, Value: r.Value, Headers: r.Headers}
			nbytes += segment.RecordSize(srecs[j])
		}
		off := len(obj)
		obj, err = segment.AppendBlock(obj, srecs)
		if err != nil {
			return nil, invalidf("encode partition %d: %v", g.partition, err)
		}
		blocks[i] = blockRef{offset: int64(off), length: int64(len(obj) - off), maxTs: maxTs}
	}
	key := fmt.Sprintf("v1/%s/%s", topic, ulid.MustNew(ulid.Timestamp(now), crand.Reader).String())
	if err := l.objects.Put(ctx, key, obj); err != nil {
		return nil, storeErr(fmt.Errorf("put segment object: %w", err))
	}

	// Sequence each partition's block; partitions are independent, so in parallel.
	errs := make([]error, len(pending))
	var wg sync.WaitGroup
	for i, g := range pending {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := store.IndexEntry{
				Topic: topic, Partition: g.partition, Count: int64(len(g.idx)), ObjectKey: key,
				ByteOffset: blocks[i].offset, ByteLength: blocks[i].length,
				MaxTimestamp: time.UnixMilli(blocks[i].maxTs), AppendedAt: time.UnixMilli(nowMs),
				ExpiresAt: time.UnixMilli(nowMs).Add(t.Retention + retentionGrace),
			}
			var idem *store.IdempotencyRecord
			if idemKey != "" {
				idem = &store.IdempotencyRecord{Key: idemKey, Partition: g.partition, BodyHash: bodyHash,
					Count: int64(len(g.idx)), ExpiresAt: e.ExpiresAt}
			}
			base, err := l.sequence(ctx, e, idem)
			if err != nil {
				errs[i] = err
				return
			}
			for j, ri := range g.idx {
				results[ri] = Result{Partition: g.partition, Offset: base + int64(j)}
			}
		}()
	}
	wg.Wait()

	var firstErr error
	for i, g := range pending {
		if errs[i] == nil {
			l.notifier.notify(tpKey{topic, g.partition})
			continue
		}
		if errors.Is(errs[i], ErrIdempotencyKeyReused) {
			return nil, errs[i]
		}
		if firstErr == nil {
			firstErr = errs[i]
		}
		for _, ri := range g.idx {
			results[ri] = Result{Partition: g.partition, Offset: -1, Err: errs[i]}
		}
	}
	if firstErr != nil {
		if !errors.Is(firstErr, ErrUnavailable) {
			firstErr = fmt.Errorf("%w: %w", ErrUnavailable, firstErr)
		}
		return results, &AppendError{Results: results, Err: firstErr}
	}
	l.metrics.Appended(topic, len(recs), nbytes, l.now().Sub(start))
	return results, nil
}

type blockRef struct {
	offset, length int64
	maxTs          int64
}

type partGroup struct {
	partition int32
	idx       []int // indexes into the request, in request order
}

// place validates the records and returns each one's partition. Unkeyed records go
// round-robin, except in an idempotent request, where their placement derives from the
// idempotency key so that a retry places them exactly as the first attempt did.
func (l *Log) place(t store.Topic, recs []Record, idempotencyKey string) ([]int32, error) {
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
		switch {
		case r.Partition != nil:
			if *r.Partition < 0 || *r.Partition >= t.Partitions {
				return nil, invalidf("record %d: partition %d outside [0, %d)", i, *r.Partition, t.Partitions)
			}
			parts[i] = *r.Partition
		case r.Key != nil:
			parts[i] = PartitionForKey(r.Key, t.Partitions)
		case idempotencyKey != "":
			parts[i] = PartitionForKey(fmt.Appendf(nil, "%s#%d", idempotencyKey, i), t.Partitions)
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

func groupByPartition(parts []int32) []partGroup {
	byP := map[int32][]int{}
	for i, p := range parts {
		byP[p] = append(byP[p], i)
	}
	out := make([]partGroup, 0, len(byP))
	for p, idx := range byP {
		out = append(out, partGroup{partition: p, idx: idx})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].partition < out[b].partition })
	return out
}

// replayIdempotent fills results for the partitions an earlier call with the same key
// already appended and returns the groups still to append.
func (l *Log) replayIdempotent(ctx context.Context, key, bodyHash string, groups []partGroup, results []Result) ([]partGroup, error) {
	var pending []partGroup
	for _, g := range groups {
		rec, err := l.meta.GetIdempotency(ctx, key, g.partition)
		if errors.Is(err, store.ErrNotFound) {
			pending = append(pending, g)
			continue
		}
		if err != nil {
			return nil, storeErr(err)
		}
		if rec.BodyHash != bodyHash || rec.Count != int64(len(g.idx)) {
			return nil, fmt.Errorf("%w: key %q", ErrIdempotencyKeyReused, key)
		}
		for j, ri := range g.idx {
			results[ri] = Result{Partition: g.partition, Offset: rec.BaseOffset + int64(j)}
		}
	}
	return pending, nil
}

// sequence claims offsets for one partition's block: a conditional put of the index
// entry at the high watermark, retried at the winner's end after a lost race.
func (l *Log) sequence(ctx context.Context, e store.IndexEntry, idem *store.IdempotencyRecord) (int64, error) {
	// Appends through this Log take turns per partition: only one of them could win
	// each offset anyway, so racing would only waste conditional writes.
	unlock, err := l.lockPartition(ctx, tpKey{e.Topic, e.Partition})
	if err != nil {
		return 0, err
	}
	defer unlock()
	hw, ok := l.cachedHW(e.Topic, e.Partition)
	if !ok {
		if hw, err = l.readHW(ctx, e.Topic, e.Partition); err != nil {
			return 0, err
		}
	}
	deadline := time.Now().Add(l.seqLimit)
	attempt := 0
	for ; time.Now().Before(deadline); attempt++ {
		e.BaseOffset = hw
		var err error
		if idem != nil {
			idem.BaseOffset = hw
			err = l.meta.PutIndexEntryIdempotent(ctx, e, *idem)
		} else {
			err = l.meta.PutIndexEntry(ctx, e)
		}
		if err == nil {
			l.noteHW(e.Topic, e.Partition, e.End())
			return hw, nil
		}
		var ce *store.ConflictError
		var ie *store.IdempotencyError
		switch {
		case errors.As(err, &ce) && ce.Existing.ObjectKey == e.ObjectKey && ce.Existing.Partition == e.Partition &&
			ce.Existing.ByteOffset == e.ByteOffset:
			// Our own entry: the SDK retried a put whose response was lost.
			l.noteHW(e.Topic, e.Partition, ce.Existing.End())
			return ce.Existing.BaseOffset, nil
		case errors.As(err, &ce):
			l.metrics.SequencerConflict(e.Topic, e.Partition)
			if end := ce.Existing.End(); end > hw && ce.Existing.BaseOffset == hw {
				hw = end
				l.noteHW(e.Topic, e.Partition, hw)
			} else if hw, err = l.readHW(ctx, e.Topic, e.Partition); err != nil {
				return 0, err
			}
			if attempt > 0 {
				if err := ctxtime.Sleep(ctx, backoff(attempt)); err != nil {
					return 0, err
				}
			}
		case errors.As(err, &ie):
			// A concurrent retry of the same request won: same body, same offsets.
			if ie.Existing.BodyHash != idem.BodyHash || ie.Existing.Count != idem.Count {
				return 0, fmt.Errorf("%w: key %q", ErrIdempotencyKeyReused, idem.Key)
			}
			return ie.Existing.BaseOffset, nil
		default:
			return 0, storeErr(err)
		}
	}
	return 0, fmt.Errorf("%w: partition %s/%d: sequencer contention after %d attempts", ErrUnavailable, e.Topic, e.Partition, attempt)
}

// backoff is a short random delay (up to 2ms) between lost races. It does not grow:
// exponential backoff starves the oldest waiters (each loss makes them sit out longer
// while newcomers win), whereas a flat jitter gives every contender the same odds at
// each offset; the cost is one failed conditional write per loser per round, which the
// producer's batching keeps rare (docs/TRADEOFFS.md).
func backoff(int) time.Duration {
	return time.Duration(rand.Int64N(int64(2*time.Millisecond))) + time.Microsecond
}

// hashBody identifies an append request for idempotency: partition, given timestamp,
// key, value and headers of every record, in order.
func hashBody(recs []Record, parts []int32) string {
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
	for i, r := range recs {
		h.Write(buf[:binary.PutVarint(buf[:], int64(parts[i]))])
		if r.Timestamp != nil {
			h.Write(buf[:binary.PutVarint(buf[:], *r.Timestamp)])
		} else {
			writeBytes(nil, true)
		}
		writeBytes(r.Key, r.Key == nil)
		writeBytes(r.Value, false)
		h.Write(buf[:binary.PutVarint(buf[:], int64(len(r.Headers)))])
		for _, hd := range r.Headers {
			writeBytes([]byte(hd.Key), false)
			writeBytes(hd.Value, false)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
