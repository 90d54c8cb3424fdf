package kafka

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"pgregory.net/rapid"

	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/wire"
)

var planNow = time.UnixMilli(1_800_000_000_000)

// TestPlanBatch: the sequence plan as a table: a new producer, the next batch, a client
// retry of an appended batch (its offset, nothing appended), a retry of a batch in
// flight (the next attempt, the first attempt's floor), gaps, a different batch at a
// known sequence, epochs older and newer.
func TestPlanBatch(t *testing.T) {
	floor := wire.BatchMark{Batch: 40, Incarnation: "inc"}
	pending := &pendingBatch{Seq: 10, Count: 5, Attempt: 2, FloorBatch: 7, FloorIncarnation: "inc", FirstMs: planNow.UnixMilli() - 3000}
	steady := seqRow{Epoch: 3, Next: 10, Recent: []doneBatch{{Seq: 0, Count: 4, Offset: 100}, {Seq: 4, Count: 6, Offset: 200}}}
	inFlight := steady
	inFlight.Pending = pending
	pipelined := inFlight
	pipelined.Next = 20
	pipelined.More = []pendingBatch{{Seq: 15, Count: 5, Attempt: 1, FloorBatch: 8, FirstMs: planNow.UnixMilli() - 3000}}
	exhausted := steady
	exhausted.Pending = &pendingBatch{Seq: 10, Count: 5, Attempt: wire.MaxFencedAttempt}
	b := func(epoch int16, seq, count int32) producerBatch {
		return producerBatch{ID: 9, Epoch: epoch, Seq: seq, Count: count}
	}
	for _, tc := range []struct {
		name    string
		row     seqRow
		exists  bool
		batch   producerBatch
		action  seqAction
		code    int16
		offset  int64
		attempt int32
		floor   wire.BatchMark
	}{
		{"new producer, sequence 0", seqRow{}, false, b(0, 0, 3), seqAppend, 0, 0, 0, floor},
		{"new producer, sequence 5", seqRow{}, false, b(0, 5, 3), seqRefuse, outOfOrderSequence, 0, 0, floor},
		{"next in sequence", steady, true, b(3, 10, 5), seqAppend, 0, 0, 0, floor},
		{"retry of the last batch", steady, true, b(3, 4, 6), seqDuplicate, 0, 200, 0, floor},
		{"retry of an older batch", steady, true, b(3, 0, 4), seqDuplicate, 0, 100, 0, floor},
		{"known sequence, other count", steady, true, b(3, 4, 2), seqRefuse, outOfOrderSequence, 0, 0, floor},
		{"gap", steady, true, b(3, 12, 5), seqRefuse, outOfOrderSequence, 0, 0, floor},
		{"unknown older sequence", steady, true, b(3, 2, 1), seqRefuse, outOfOrderSequence, 0, 0, floor},
		{"older epoch", steady, true, b(2, 10, 5), seqRefuse, invalidProducerEpoch, 0, 0, floor},
		{"newer epoch from 0", steady, true, b(4, 0, 5), seqAppend, 0, 0, 0, floor},
		{"newer epoch not from 0", steady, true, b(4, 10, 5), seqRefuse, outOfOrderSequence, 0, 0, floor},
		{"retry of the batch in flight", inFlight, true, b(3, 10, 5), seqAppend, 0, 0, 3, wire.BatchMark{Batch: 7, Incarnation: "inc"}},
		{"next batch while one is in flight (pipelined)", inFlight, true, b(3, 15, 5), seqAppend, 0, 0, 0, floor},
		{"retry of the second batch in flight", pipelined, true, b(3, 15, 5), seqAppend, 0, 0, 2, wire.BatchMark{Batch: 8}},
		{"next after two in flight", pipelined, true, b(3, 20, 1), seqAppend, 0, 0, 0, floor},
		{"gap after the batches in flight", pipelined, true, b(3, 21, 1), seqRefuse, outOfOrderSequence, 0, 0, floor},
		{"other count at a sequence in flight", pipelined, true, b(3, 15, 4), seqRefuse, outOfOrderSequence, 0, 0, floor},
		{"appended batch while one is in flight", inFlight, true, b(3, 4, 6), seqDuplicate, 0, 200, 0, floor},
		{"new epoch drops the batch in flight", inFlight, true, b(4, 0, 1), seqAppend, 0, 0, 0, floor},
		{"retry past the fenced attempts", exhausted, true, b(3, 10, 5), seqRefuse, invalidRecord, 0, 0, floor},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := planBatch(tc.row, tc.exists, tc.batch, floor, planNow)
			if p.action != tc.action || p.code != tc.code {
				t.Fatalf("plan %+v, want action %d code %d", p, tc.action, tc.code)
			}
			switch p.action {
			case seqRefuse:
				if p.msg == "" {
					t.Error("a refusal without a message")
				}
			case seqDuplicate:
				if p.offset != tc.offset {
					t.Errorf("offset %d, want %d", p.offset, tc.offset)
				}
			case seqAppend:
				if p.attempt != tc.attempt || p.floor != tc.floor {
					t.Errorf("attempt %d floor %v, want %d %v", p.attempt, p.floor, tc.attempt, tc.floor)
				}
				ps := p.next.inFlight()
				i := slices.IndexFunc(ps, func(q pendingBatch) bool { return q.Seq == tc.batch.Seq })
				if i < 0 || ps[i].Count != tc.batch.Count || ps[i].Attempt != tc.attempt || p.next.Epoch != tc.batch.Epoch {
					t.Errorf("next row %+v (in flight %+v) does not record attempt %d of the batch", p.next, ps, tc.attempt)
				}
				if want := max(tc.row.normalized().Next, addSeq(tc.batch.Seq, tc.batch.Count)); tc.batch.Epoch == tc.row.Epoch && p.next.Next != want {
					t.Errorf("next sequence %d, want %d", p.next.Next, want)
				}
				if tc.attempt > 0 && p.elapsed != 3*time.Second {
					t.Errorf("retry elapsed %s, want 3s", p.elapsed)
				}
			}
		})
	}
}

// TestCompleteBatch: recording an appended batch clears the batch in flight, advances
// the sequence (wrapping past MaxInt32 as Kafka's does) and keeps the last five
// batches; a row that no longer has that batch in flight is left alone.
func TestCompleteBatch(t *testing.T) {
	row := seqRow{Epoch: 1, Next: 25}
	for i := range 5 {
		row.Recent = append(row.Recent, doneBatch{Seq: int32(i * 5), Count: 5, Offset: int64(i * 5)})
	}
	row.Pending = &pendingBatch{Seq: 25, Count: 5}
	next, ok := completeBatch(row, producerBatch{Epoch: 1, Seq: 25, Count: 5}, 77)
	if !ok || next.Pending != nil || next.Next != 30 || len(next.Recent) != recentBatches || next.Recent[0].Seq != 5 || next.Recent[4] != (doneBatch{25, 5, 77}) {
		t.Fatalf("completed row %+v (ok %v)", next, ok)
	}
	if _, ok := completeBatch(next, producerBatch{Epoch: 1, Seq: 25, Count: 5}, 77); ok {
		t.Error("a row without the batch in flight was completed again")
	}
	// Two batches in flight, completed out of order: each leaves the other in flight,
	// and the next sequence stays after the last.
	two := seqRow{Epoch: 1, Next: 40, Pending: &pendingBatch{Seq: 30, Count: 5}, More: []pendingBatch{{Seq: 35, Count: 5}}}
	later, ok := completeBatch(two, producerBatch{Epoch: 1, Seq: 35, Count: 5}, 90)
	if !ok || later.Pending == nil || later.Pending.Seq != 30 || len(later.More) != 0 || later.Next != 40 || later.Recent[0] != (doneBatch{35, 5, 90}) {
		t.Fatalf("completed the later of two: %+v (ok %v)", later, ok)
	}
	both, ok := completeBatch(later, producerBatch{Epoch: 1, Seq: 30, Count: 5}, 85)
	if !ok || both.Pending != nil || both.Next != 40 || len(both.Recent) != 2 || both.Recent[0].Seq != 30 || both.Recent[1].Seq != 35 {
		t.Fatalf("completed both: %+v (ok %v), want the recent batches in log order", both, ok)
	}
	// Completed out of order with a full list, the oldest in the log is the one left out.
	full := seqRow{Epoch: 1, Next: 35, Pending: &pendingBatch{Seq: 25, Count: 5}, More: []pendingBatch{{Seq: 30, Count: 5}}}
	for i := range 4 {
		full.Recent = append(full.Recent, doneBatch{Seq: int32(5 + i*5), Count: 5, Offset: int64(5 + i*5)})
	}
	full, _ = completeBatch(full, producerBatch{Epoch: 1, Seq: 30, Count: 5}, 30)
	full, _ = completeBatch(full, producerBatch{Epoch: 1, Seq: 25, Count: 5}, 25)
	if got := fmt.Sprint(full.Recent); got != "[{10 5 10} {15 5 15} {20 5 20} {25 5 25} {30 5 30}]" {
		t.Fatalf("recent batches %s, want sequences 10–30 in log order", got)
	}
	if got := addSeq(math.MaxInt32-1, 3); got != 1 {
		t.Errorf("addSeq wraps to %d, want 1", got)
	}
}

// TestBatchProducer: the producer fields are read from the batch header; a producer's
// partition holding two batches, or a batch without a sequence, is INVALID_RECORD.
func TestBatchProducer(t *testing.T) {
	ok := []kmsg.Record{rec("k", "v"), rec("k", "w")}
	idem := func(b *kmsg.RecordBatch) { b.ProducerID, b.ProducerEpoch, b.FirstSequence = 12, 3, 40 }
	pb, berr := batchProducer(testBatch(t, codecNone, ok, idem, true))
	if berr != nil || pb == nil || *pb != (producerBatch{ID: 12, Epoch: 3, Seq: 40, Count: 2}) {
		t.Fatalf("producer %+v, %v", pb, berr)
	}
	if pb, berr := batchProducer(testBatch(t, codecNone, ok, nil, true)); pb != nil || berr != nil {
		t.Fatalf("a batch without a producer id: %+v, %v", pb, berr)
	}
	two := append(testBatch(t, codecNone, ok, idem, true), testBatch(t, codecNone, ok, idem, true)...)
	if _, berr := batchProducer(two); berr == nil || berr.code != invalidRecord || !strings.Contains(berr.msg, "exactly one") {
		t.Fatalf("two batches: %v", berr)
	}
	noSeq := testBatch(t, codecNone, ok, func(b *kmsg.RecordBatch) { b.ProducerID, b.ProducerEpoch, b.FirstSequence = 12, 0, -1 }, true)
	if _, berr := batchProducer(noSeq); berr == nil || berr.code != invalidRecord {
		t.Fatalf("no sequence: %v", berr)
	}
}

// TestPropertyPlanAppendsOnce: a producer's batches sent in order, each attempted any
// number of times (a lost answer, a retry, attempts whose appends fail), with plans
// applied as the gateway applies them: every batch is appended by exactly one owned
// attempt or found, and every answer of a batch is that one offset. The log's fenced
// idempotency is modelled: of a batch's attempts that reached the log, the first owns
// it and later attempts find it.
func TestPropertyPlanAppendsOnce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var row seqRow
		exists := false
		nextOffset := int64(0)
		owned := map[int32]int64{} // base sequence → offset its owned attempt got
		seq := int32(0)
		batches := rapid.IntRange(1, 24).Draw(t, "batches")
		for range batches {
			b := producerBatch{ID: 1, Epoch: 0, Seq: seq, Count: int32(rapid.IntRange(1, 4).Draw(t, "count"))}
			answered := false
			for try := 0; !answered; try++ {
				p := planBatch(row, exists, b, wire.BatchMark{}, planNow)
				switch p.action {
				case seqRefuse:
					t.Fatalf("batch %d try %d refused: %s", b.Seq, try, p.msg)
				case seqDuplicate:
					if off, ok := owned[b.Seq]; !ok || off != p.offset {
						t.Fatalf("duplicate answer %d for sequence %d, owned %v", p.offset, b.Seq, owned)
					}
					answered = true
					continue
				}
				if try > 0 && p.attempt == 0 {
					t.Fatalf("a retry of sequence %d planned as a first attempt", b.Seq)
				}
				row, exists = p.next, true
				if n := len(row.inFlight()); n > staleAfter {
					t.Fatalf("%d batches recorded in flight, at most %d", n, staleAfter)
				}
				if rapid.Bool().Draw(t, "append fails") && try < 6 {
					continue // the attempt failed or its answer was lost: the row stays in flight
				}
				off, ok := owned[b.Seq]
				if !ok {
					off = nextOffset
					nextOffset += int64(b.Count)
					owned[b.Seq] = off
				}
				if rapid.Bool().Draw(t, "record lost") && try < 6 {
					// Appended, but the gateway stopped before recording it: either
					// before answering (the client retries) or after (it goes on).
					answered = rapid.Bool().Draw(t, "answered before the record")
					continue
				}
				next, _ := completeBatch(row, b, off)
				row = next
				answered = rapid.Bool().Draw(t, "answer arrives") || try >= 6
			}
			seq = addSeq(seq, b.Count)
		}
		if len(owned) != batches {
			t.Fatalf("%d batches owned, want %d", len(owned), batches)
		}
		offs := slices.Sorted(func(yield func(int64) bool) {
			for _, o := range owned {
				if !yield(o) {
					return
				}
			}
		})
		if offs[0] != 0 {
			t.Fatalf("first batch at %d", offs[0])
		}
	})
}

// TestPlanBatchDropsStaleBatches: a batch recorded in flight with staleAfter batches
// after it (in flight, recently appended, and the new one) was answered, so the next
// batch drops it from the row; with fewer after it, it stays, as a retry may still come.
func TestPlanBatchDropsStaleBatches(t *testing.T) {
	pend := func(seqs ...int32) []pendingBatch {
		var ps []pendingBatch
		for _, s := range seqs {
			ps = append(ps, pendingBatch{Seq: s, Count: 1})
		}
		return ps
	}
	done := func(seqs ...int32) []doneBatch {
		var ds []doneBatch
		for _, s := range seqs {
			ds = append(ds, doneBatch{Seq: s, Count: 1, Offset: int64(s)})
		}
		return ds
	}
	wrap := int32(math.MaxInt32)
	for _, tc := range []struct {
		name     string
		inFlight []pendingBatch
		recent   []doneBatch
		next     int32
		want     []int32 // in flight after the plan, the new batch last
	}{
		{"ten in flight keep the five newest", pend(10, 11, 12, 13, 14, 15, 16, 17, 18, 19), nil, 20, []int32{15, 16, 17, 18, 19, 20}},
		{"five appended after a lost record drop it", pend(0), done(1, 2, 3, 4, 5), 6, []int32{6}},
		{"four appended after it keep it", pend(0), done(1, 2, 3, 4), 5, []int32{0, 5}},
		{"appended before it do not count", pend(4), done(0, 1, 2, 3), 5, []int32{4, 5}},
		{"mixed: three appended and two in flight after it", pend(0, 4, 5), done(1, 2, 3), 6, []int32{4, 5, 6}},
		{"across the sequence wrap", pend(wrap - 1), done(wrap, 0, 1, 2, 3), 4, []int32{4}},
		{"a pipelining producer's five", pend(1, 2, 3, 4), done(0), 5, []int32{1, 2, 3, 4, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			row := seqRow{Epoch: 1, Next: tc.next, Recent: tc.recent}.withInFlight(tc.inFlight)
			p := planBatch(row, true, producerBatch{ID: 1, Epoch: 1, Seq: tc.next, Count: 1}, wire.BatchMark{}, planNow)
			if p.action != seqAppend || p.attempt != 0 {
				t.Fatalf("plan %+v, want a first attempt", p)
			}
			var got []int32
			for _, q := range p.next.inFlight() {
				got = append(got, q.Seq)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("in flight %v, want %v", got, tc.want)
			}
		})
	}
}

// TestAppendCode: a superseded or undecided attempt is retriable, another body under a
// taken sequence and bad input are INVALID_RECORD.
func TestAppendCode(t *testing.T) {
	for err, want := range map[error]int16{
		log.ErrSuperseded:           storageError,
		log.ErrRetryUndecided:       storageError,
		log.ErrIdempotencyKeyReused: invalidRecord,
		log.ErrInvalid:              invalidRecord,
		log.ErrUnavailable:          storageError,
		log.ErrRetryLimit:           storageError,
	} {
		if got := appendCode(fmt.Errorf("wrapped: %w", err)); got != want {
			t.Errorf("%v: code %d, want %d", err, got, want)
		}
	}
}
