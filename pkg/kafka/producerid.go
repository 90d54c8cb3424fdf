package kafka

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// Idempotent producing. InitProducerId hands out a producer id from the store's counter
// (store.ProducerStore.NextProducerID: unique across gateways) at epoch 0, or bumps the
// epoch of a producer id it knows when the producer reinitialises with its current one
// (KIP-360). A batch with a producer id is one request of Strata's fenced idempotency
// (log.AppendOptions.Producer): its key is "<producer>.<base sequence>", the producer
// naming the id, the epoch and the partition (Kafka numbers sequences per partition).
// Kafka clients number no attempts and keep no batch floor, so the gateway keeps them:
// a row per (principal, topic incarnation, partition, producer id) in the store holds
// the epoch, the next expected sequence, the last batches appended with their offsets,
// and the batch in flight (its attempt count and the batch floor read before its first
// send). Every move of a row is a conditional write on its version, so gateways serving
// one producer agree: an attempt is numbered by the write that records it, and a retry
// of an attempt another gateway may still be appending fences it and searches the log
// for it down to the floor, as the SDK's retries do. No clock decides a duplicate.

// Error codes of idempotent producing.
var (
	outOfOrderSequence   = int16(45) // OUT_OF_ORDER_SEQUENCE_NUMBER
	invalidProducerEpoch = int16(47) // INVALID_PRODUCER_EPOCH
	producerFenced       = int16(90) // PRODUCER_FENCED (InitProducerId v4+)
)

const (
	// recentBatches is how many appended batches a sequence row remembers, as Kafka
	// keeps five per producer and partition (a client has at most five in flight).
	recentBatches = 5
	// producerTTL is how long an idle producer's rows are kept (Kafka's
	// producer.id.expiration.ms is a day).
	producerTTL = 7 * 24 * time.Hour
	// rowAttempts bounds the rereads of a row when concurrent writers move it.
	rowAttempts = 8
)

// producerRow is a producer id's row: its current epoch and the principal it was given to.
type producerRow struct {
	Epoch int16  `json:"e"`
	Owner string `json:"o"`
}

// seqRow is a producer's sequence state on one partition of one topic incarnation.
type seqRow struct {
	Epoch int16 `json:"e"`
	// Next is the base sequence the next new batch must have.
	Next int32 `json:"n"`
	// Recent are the last batches appended, oldest first.
	Recent []doneBatch `json:"r,omitempty"`
	// Pending is the oldest batch being appended (its attempts' outcome not recorded
	// yet), More the batches in flight after it, in sequence order: a producer pipelines
	// up to five. With a batch in flight, Next is the sequence after the last of them.
	Pending *pendingBatch  `json:"p,omitempty"`
	More    []pendingBatch `json:"m,omitempty"`
}

// inFlight are the row's batches in flight, oldest first.
func (r seqRow) inFlight() []pendingBatch {
	if r.Pending == nil {
		return nil
	}
	return append([]pendingBatch{*r.Pending}, r.More...)
}

// withInFlight is r with ps as its batches in flight.
func (r seqRow) withInFlight(ps []pendingBatch) seqRow {
	r.Pending, r.More = nil, nil
	if len(ps) > 0 {
		first := ps[0]
		r.Pending = &first
		r.More = slices.Clone(ps[1:])
	}
	return r
}

// normalized is r with Next after its batches in flight: a row written before batches
// were pipelined kept Next at the one batch in flight.
func (r seqRow) normalized() seqRow {
	if p := r.Pending; p != nil && len(r.More) == 0 && r.Next == p.Seq {
		r.Next = addSeq(p.Seq, p.Count)
	}
	return r
}

type doneBatch struct {
	Seq    int32 `json:"s"`
	Count  int32 `json:"c"`
	Offset int64 `json:"o"`
}

type pendingBatch struct {
	Seq     int32 `json:"s"`
	Count   int32 `json:"c"`
	Attempt int32 `json:"a"`
	// FloorBatch and FloorIncarnation are the batch mark read before the first attempt.
	FloorBatch       int64  `json:"fb"`
	FloorIncarnation string `json:"fi,omitempty"`
	// FirstMs is when the first attempt was recorded (milliseconds): it only bounds a
	// retry (wire.MaxRetryElapsed), it decides nothing.
	FirstMs int64 `json:"t"`
}

// producerBatch is what a batch says of its producer.
type producerBatch struct {
	ID    int64
	Epoch int16
	Seq   int32
	Count int32
}

// Offsets of the producer fields in a record batch v2 header.
const (
	batchProducerIDAt = 43
	batchEpochAt      = 51
	batchSeqAt        = 53
	batchCountAt      = 57
)

// batchProducer reads the producer fields of one partition's batches, already checked by
// decodeBatches: nil when no batch has a producer id. A producer's batches must come
// one per partition, with a sequence and an epoch (INVALID_RECORD otherwise), since one
// base sequence names the whole append.
func batchProducer(data []byte) (*producerBatch, *batchError) {
	var out *producerBatch
	n := 0
	for len(data) >= batchHeadBytes {
		length := int(binary.BigEndian.Uint32(data[8:12]))
		raw := data[:batchHeadBytes+length]
		data = data[len(raw):]
		n++
		if len(raw) < batchCountAt+4 {
			continue
		}
		id := int64(binary.BigEndian.Uint64(raw[batchProducerIDAt:]))
		if id < 0 {
			continue
		}
		out = &producerBatch{
			ID:    id,
			Epoch: int16(binary.BigEndian.Uint16(raw[batchEpochAt:])),
			Seq:   int32(binary.BigEndian.Uint32(raw[batchSeqAt:])),
			Count: int32(binary.BigEndian.Uint32(raw[batchCountAt:])),
		}
	}
	switch {
	case out == nil:
		return nil, nil
	case n != 1:
		return nil, refuse(invalidRecord, "an idempotent producer's partition must hold exactly one record batch, it holds %d", n)
	case out.Epoch < 0 || out.Seq < 0:
		return nil, refuse(invalidRecord, "a batch of producer id %d needs an epoch and a base sequence, it has %d and %d", out.ID, out.Epoch, out.Seq)
	}
	return out, nil
}

// addSeq is seq advanced by n, wrapping past math.MaxInt32 to 0 as Kafka's sequences do.
func addSeq(seq, n int32) int32 {
	return int32((int64(seq) + int64(n)) % (math.MaxInt32 + 1))
}

// seqAction is what a batch's plan does.
type seqAction int

const (
	seqRefuse    seqAction = iota // answer code
	seqDuplicate                  // answer offset, append nothing
	seqAppend                     // write next, then append as attempt
)

// seqPlan is planBatch's decision.
type seqPlan struct {
	action  seqAction
	code    int16
	msg     string
	offset  int64
	attempt int32
	floor   wire.BatchMark
	elapsed time.Duration
	next    seqRow
}

// planBatch decides a producer's batch b on a partition from its sequence row (exists
// false: none yet), the batch mark floor read before it and the time now (which only
// bounds a retry): a batch already appended is answered its offset; the next batch in
// sequence (after those in flight, which a pipelining producer has up to five of), or a
// new epoch's first, is appended as attempt 0 with the row recording it in flight; a
// batch recorded as in flight is appended as its next attempt, which fences the earlier
// ones (at most wire.MaxFencedAttempt attempts: past them the batch's fate is unknown
// and it is refused, INVALID_RECORD); an older epoch is INVALID_PRODUCER_EPOCH; anything
// else is out of order.
func planBatch(row seqRow, exists bool, b producerBatch, floor wire.BatchMark, now time.Time) seqPlan {
	row = row.normalized()
	first := func(r seqRow) seqPlan {
		p := pendingBatch{Seq: b.Seq, Count: b.Count, FloorBatch: floor.Batch, FloorIncarnation: floor.Incarnation, FirstMs: now.UnixMilli()}
		r = r.withInFlight(append(r.inFlight(), p))
		r.Next = addSeq(b.Seq, b.Count)
		return seqPlan{action: seqAppend, floor: floor, next: r}
	}
	outOfOrder := func(format string, args ...any) seqPlan {
		return seqPlan{action: seqRefuse, code: outOfOrderSequence, msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case !exists || b.Epoch > row.Epoch:
		if b.Seq != 0 {
			return outOfOrder("producer %d epoch %d: the first batch on the partition must have sequence 0, not %d", b.ID, b.Epoch, b.Seq)
		}
		return first(seqRow{Epoch: b.Epoch})
	case b.Epoch < row.Epoch:
		return seqPlan{action: seqRefuse, code: invalidProducerEpoch,
			msg: fmt.Sprintf("producer %d epoch %d is older than the partition's epoch %d", b.ID, b.Epoch, row.Epoch)}
	}
	for _, d := range row.Recent {
		if d.Seq == b.Seq {
			if d.Count != b.Count {
				return outOfOrder("producer %d: sequence %d was appended with %d records, this batch has %d", b.ID, b.Seq, d.Count, b.Count)
			}
			return seqPlan{action: seqDuplicate, offset: d.Offset}
		}
	}
	ps := row.inFlight()
	for i, p := range ps {
		if p.Seq != b.Seq {
			continue
		}
		if p.Count != b.Count {
			return outOfOrder("producer %d: the batch at sequence %d (%d records) is not yet appended; got %d records at that sequence",
				b.ID, p.Seq, p.Count, b.Count)
		}
		if p.Attempt >= wire.MaxFencedAttempt {
			return seqPlan{action: seqRefuse, code: invalidRecord, msg: fmt.Sprintf(
				"producer %d: the batch at sequence %d was attempted %d times, the most a retry can fence; whether an attempt was appended is unknown",
				b.ID, b.Seq, p.Attempt+1)}
		}
		np := p
		np.Attempt++
		ps[i] = np
		elapsed := max(now.Sub(time.UnixMilli(p.FirstMs)), 0)
		return seqPlan{action: seqAppend, attempt: np.Attempt, elapsed: elapsed,
			floor: wire.BatchMark{Batch: p.FloorBatch, Incarnation: p.FloorIncarnation}, next: row.withInFlight(ps)}
	}
	if b.Seq != row.Next {
		return outOfOrder("producer %d: expected sequence %d, got %d", b.ID, row.Next, b.Seq)
	}
	return first(row.withInFlight(dropStale(ps, row.Recent, b)))
}

// staleAfter is how many of a partition's batches after a batch recorded in flight
// show that its client has its answer: a Kafka client keeps at most five of a
// partition's batches in flight and retries them in order, so a batch still unanswered
// has at most four sent after it; one more is slack.
const staleAfter = recentBatches + 1

// dropStale is ps, the batches recorded in flight, without those whose clients have
// their answers, as the producer sends its next batch b: staleAfter batches or more
// after one (in flight, recently appended, and b). A gateway that stopped between
// answering a batch and writing its "appended" record leaves such a batch in flight,
// and the rule bounds a row's batches in flight to staleAfter. A retry of a dropped
// batch is out of order, never appended twice. Sequences compare by their distance back
// from b's, so a wrap past math.MaxInt32 orders them too.
func dropStale(ps []pendingBatch, recent []doneBatch, b producerBatch) []pendingBatch {
	back := func(seq int32) int64 { return (int64(b.Seq) - int64(seq) + math.MaxInt32 + 1) % (math.MaxInt32 + 1) }
	all := slices.Clone(ps)
	return slices.DeleteFunc(ps, func(p pendingBatch) bool {
		after := 1
		for _, q := range all {
			if back(q.Seq) < back(p.Seq) {
				after++
			}
		}
		for _, d := range recent {
			if back(d.Seq) < back(p.Seq) {
				after++
			}
		}
		return after >= staleAfter
	})
}

// completeBatch is row after the batch in flight b was appended at offset: no longer in
// flight, remembered among the recent batches. ok is false when row no longer has that
// batch in flight (another attempt recorded it, or a new epoch began).
func completeBatch(row seqRow, b producerBatch, offset int64) (seqRow, bool) {
	row = row.normalized()
	ps := row.inFlight()
	i := slices.IndexFunc(ps, func(p pendingBatch) bool { return p.Seq == b.Seq && p.Count == b.Count })
	if row.Epoch != b.Epoch || i < 0 {
		return row, false
	}
	row = row.withInFlight(slices.Delete(ps, i, i+1))
	// In log order, whatever order the completions come in (batches committed together
	// are answered together), so the oldest is the one left out.
	recent := append(slices.Clone(row.Recent), doneBatch{Seq: b.Seq, Count: b.Count, Offset: offset})
	slices.SortStableFunc(recent, func(x, y doneBatch) int { return cmp.Compare(x.Offset, y.Offset) })
	if n := len(recent); n > recentBatches {
		recent = recent[n-recentBatches:]
	}
	row.Recent = recent
	return row, true
}

// seqRowKey names the sequence row of a producer on a partition of a topic incarnation,
// scoped by the principal.
func seqRowKey(principal, topicID string, partition int32, id int64) string {
	return "s/" + log.PrincipalScope(principal) + "/" + topicID + "/" + strconv.Itoa(int(partition)) + "/" + strconv.FormatInt(id, 10)
}

func producerRowKey(id int64) string { return "p/" + strconv.FormatInt(id, 10) }

// producerKey is the idempotency key of a producer's batch: the producer (id, epoch and
// partition) and its base sequence.
func producerKey(b producerBatch, partition int32) string {
	return wire.ProducerRequestKey(fmt.Sprintf("kafka-%de%dp%d", b.ID, b.Epoch, partition), uint64(b.Seq))
}

// rowEnvelope is a stored row: the row and a nonce of its writer, so a writer that
// finds a row it may have written (a lost answer) tells its own write from another's
// of the same content.
type rowEnvelope struct {
	Row    json.RawMessage `json:"r"`
	Writer string          `json:"w"`
}

// loadRow reads the row under key into v: its version, 0 when there is none.
func loadRow(ctx context.Context, ps store.ProducerStore, key string, v any) (int64, error) {
	data, ver, err := ps.GetProducerRow(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var env rowEnvelope
	if err := json.Unmarshal(data, &env); err != nil {
		return 0, fmt.Errorf("kafka: producer row %q: %w", key, err)
	}
	if err := json.Unmarshal(env.Row, v); err != nil {
		return 0, fmt.Errorf("kafka: producer row %q: %w", key, err)
	}
	return ver, nil
}

// putRow writes v as the row under key at version prev+1 if it is at prev: false when
// another writer moved it. A put whose answer was lost and whose retry then found this
// very write (its writer's nonce) is a success.
func putRow(ctx context.Context, ps store.ProducerStore, key string, v any, prev int64, now time.Time) (bool, error) {
	row, err := json.Marshal(v)
	if err != nil {
		return false, err
	}
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	data, err := json.Marshal(rowEnvelope{Row: row, Writer: hex.EncodeToString(nonce[:])})
	if err != nil {
		return false, err
	}
	err = ps.PutProducerRow(ctx, key, data, prev, now.Add(producerTTL))
	if errors.Is(err, store.ErrVersionMismatch) {
		got, ver, gerr := ps.GetProducerRow(ctx, key)
		if gerr == nil && ver == prev+1 && bytes.Equal(got, data) {
			return true, nil
		}
		return false, nil
	}
	return err == nil, err
}

// produceIdempotent appends one partition's batch of a producer, as planBatch decides:
// the batch is recorded in flight in the sequence row (after the connection's batch
// before it on the partition was) and appended, then answered while its "appended"
// record is queued in the row's writer (rows.go), which writes it with the producer's
// next batch's in-flight record or on its own. Both row changes go through that writer,
// so a pipelining producer's next batch and the one before share a write.
func (s *Server) produceIdempotent(ctx context.Context, t store.Topic, out *kmsg.ProduceResponseTopicPartition, recs []log.Record, b producerBatch, o partOrder) {
	fail := func(code int16, msg string) {
		out.ErrorCode, out.ErrorMessage = code, kmsg.StringPtr(msg)
	}
	defer o.mine.release(nil)
	ps, err := s.log.ProducerStore()
	if err != nil {
		fail(invalidRecord, "idempotent batches need producer state, which this store does not keep: "+err.Error())
		return
	}
	principal := appendPrincipal(ctx)
	key := seqRowKey(principal, t.ID(), out.Partition, b.ID)
	floor := s.batchFloor(ctx, t.Name)
	// The row change goes in behind the one of the connection's batch before on the
	// partition (the row's writer applies changes in the order they were queued); the
	// append, below, behind that batch's append.
	if err := o.before.waitRow(ctx); err != nil {
		fail(errCode(err), err.Error())
		return
	}
	var mu sync.Mutex
	var plan seqPlan
	decided := func() seqPlan {
		mu.Lock()
		defer mu.Unlock()
		return plan
	}
	op := s.startRowChange(ps, key, func(row seqRow, exists bool) (seqRow, bool, bool) {
		p := planBatch(row, exists, b, floor, time.Now())
		mu.Lock()
		plan = p
		mu.Unlock()
		if p.action == seqAppend {
			return p.next, true, false
		}
		return row, false, true // a refusal or a duplicate is decided on the stored row
	}, o.mine.rowQueued)
	// written waits for the row's write (or c's end) and returns its outcome.
	written := func(c context.Context) error {
		select {
		case <-op.done:
			return op.err
		case <-c.Done():
			return c.Err()
		}
	}
	select {
	case <-op.applied:
	case <-op.done:
		if op.err != nil {
			fail(errCode(op.err), op.err.Error())
			return
		}
	case <-ctx.Done():
		fail(errCode(ctx.Err()), ctx.Err().Error())
		return
	}
	p := decided()
	// A first attempt's in-flight record is written while its object is: the append
	// commits only once the record is durable (its gate), so a retry always finds what
	// may have committed. A refusal, a duplicate or a retry (whose fence and search
	// follow the record) waits for the write.
	overlap := p.action == seqAppend && p.attempt == 0
	if !overlap {
		if err := written(ctx); err != nil {
			fail(errCode(err), err.Error())
			return
		}
		p = decided()
	}
	// answered answers a refusal or a duplicate as plan p says: true when it did.
	answered := func(p seqPlan) bool {
		switch p.action {
		case seqRefuse:
			fail(p.code, p.msg)
			return true
		case seqDuplicate:
			out.BaseOffset = p.offset
			return true
		}
		return false
	}
	if answered(p) {
		return
	}
	var gate func(context.Context) error
	if overlap {
		gate = func(gctx context.Context) error {
			if err := written(gctx); err != nil {
				return err
			}
			if f := decided(); f.action != seqAppend || f.attempt != 0 || f.floor != p.floor {
				return errRowMoved
			}
			return nil
		}
	}
	after, err := o.before.wait(ctx)
	if err != nil {
		fail(errCode(err), err.Error())
		return
	}
	enqueue := func(p seqPlan, gate func(context.Context) error, after *log.Queued) *log.Queued {
		return s.log.Enqueue(ctx, t.Name, recs, log.AppendOptions{
			IdempotencyKey: producerKey(b, out.Partition),
			Producer:       true,
			FirstAttempt:   p.attempt == 0,
			Attempt:        p.attempt,
			RetryElapsed:   min(p.elapsed, wire.MaxRetryElapsed+time.Millisecond),
			BatchFloor:     &p.floor,
			Principal:      principal,
			Gate:           gate,
		}, after)
	}
	q := enqueue(p, gate, after)
	o.mine.release(q)
	res, err := q.Wait()
	if errors.Is(err, errRowMoved) {
		// Another gateway moved the row: the change was decided again on the row as
		// stored and written so, and nothing of the first attempt committed. Answer, or
		// append, as that decision says (the batches queued after this one failed with
		// it, and their clients retry).
		if p = decided(); answered(p) {
			return
		}
		res, err = enqueue(p, nil, nil).Wait()
	}
	if err != nil {
		fail(appendCode(err), err.Error())
		return
	}
	offset := res[0].Offset
	// Recorded appended, without waiting for the write: the records are durable and
	// answered by their offset now. Until the row is written the batch stays recorded
	// in flight, which is what a retry needs (it fences this attempt and finds it in the
	// log); the completion is a no-op when the row records it already (another attempt
	// found this one) or has moved past it (a new epoch).
	s.queueRowChange(ps, key, func(row seqRow, _ bool) (seqRow, bool, bool) {
		next, ok := completeBatch(row, b, offset)
		return next, ok, false
	})
	out.BaseOffset = offset
	if res[0].AppendTime != 0 {
		out.LogAppendTime = res[0].AppendTime
	}
}

// errRowMoved fails a first attempt's gate when the batch's in-flight record, decided on
// the row this gateway had cached, was decided otherwise on the row as stored.
var errRowMoved = errors.New("kafka: the producer's sequence row moved while the batch was being written")

// batchFloor is the topic's batch mark as this gateway knows it, read before a batch's
// first attempt: every batch that can hold an attempt commits after it. Unknown, the
// topic is described once to learn it; failing that, the zero mark (a retry then
// searches the partition from its log start).
func (s *Server) batchFloor(ctx context.Context, topic string) wire.BatchMark {
	if m, ok := s.log.BatchMark(topic); ok {
		return m
	}
	if _, err := s.log.DescribeTopic(ctx, topic); err == nil {
		if m, ok := s.log.BatchMark(topic); ok {
			return m
		}
	}
	return wire.BatchMark{}
}

// appendCode is the Kafka error code of a failed idempotent append: a superseded or
// undecided attempt, or one refused a fence for now, is retriable (the client's next
// retry decides), bad input is
// INVALID_RECORD, and so is another batch sent under a sequence already taken.
func appendCode(err error) int16 {
	switch {
	case errors.Is(err, log.ErrSuperseded), errors.Is(err, log.ErrRetryUndecided), errors.Is(err, log.ErrRetryLimit):
		return storageError
	case errors.Is(err, log.ErrInvalid), errors.Is(err, log.ErrIdempotencyKeyReused):
		return invalidRecord
	}
	return errCode(err)
}

// initProducerID answers InitProducerId for a producer without a transactional id: a
// new producer id at epoch 0, or, for a producer that names the id it has and an epoch
// at or above the stored one (KIP-360, v3+), the same id at the next epoch. A stored
// epoch above the one named is PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v4); an id
// this gateway's store never gave to the principal gets a new one, as Kafka gives any
// producer without a transactional id.
func (s *Server) initProducerID(ctx context.Context, r *kmsg.InitProducerIDRequest) *kmsg.InitProducerIDResponse {
	resp := kmsg.NewPtrInitProducerIDResponse()
	resp.SetVersion(r.Version)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if r.TransactionalID != nil {
		resp.ErrorCode = invalidRequest // transactions are not implemented
		return resp
	}
	ps, err := s.log.ProducerStore()
	if err != nil {
		resp.ErrorCode = errCode(err)
		return resp
	}
	owner := log.PrincipalScope(appendPrincipal(ctx))
	id, epoch, code, err := s.allocProducer(ctx, ps, owner, r.ProducerID, r.ProducerEpoch)
	if err != nil {
		s.logger.Warn("kafka: InitProducerId", "error", err)
		resp.ErrorCode = errCode(err)
		return resp
	}
	if code == producerFenced && r.Version < 4 {
		code = invalidProducerEpoch
	}
	resp.ErrorCode = code
	if code == 0 {
		resp.ProducerID, resp.ProducerEpoch = id, epoch
	}
	return resp
}

// allocProducer bumps the epoch of producer id (named at epoch) when owner holds it at
// that epoch or below, else hands out a new id at epoch 0.
func (s *Server) allocProducer(ctx context.Context, ps store.ProducerStore, owner string, id int64, epoch int16) (int64, int16, int16, error) {
	if id >= 0 && epoch >= 0 {
		for range rowAttempts {
			var row producerRow
			ver, err := loadRow(ctx, ps, producerRowKey(id), &row)
			if err != nil {
				return 0, 0, 0, err
			}
			if ver == 0 || row.Owner != owner || epoch >= math.MaxInt16-1 {
				break // unknown here, or out of epochs: a new id
			}
			if epoch < row.Epoch {
				return 0, 0, producerFenced, nil
			}
			next := producerRow{Epoch: epoch + 1, Owner: owner}
			ok, err := putRow(ctx, ps, producerRowKey(id), next, ver, time.Now())
			if err != nil {
				return 0, 0, 0, err
			}
			if ok {
				return id, next.Epoch, 0, nil
			}
		}
	}
	id, err := ps.NextProducerID(ctx)
	if err != nil {
		return 0, 0, 0, err
	}
	if _, err := putRow(ctx, ps, producerRowKey(id), producerRow{Epoch: 0, Owner: owner}, 0, time.Now()); err != nil {
		return 0, 0, 0, err
	}
	return id, 0, 0, nil
}
