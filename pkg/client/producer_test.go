package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"pgregory.net/rapid"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/wire"
)

type tb interface {
	Helper()
	Fatalf(string, ...any)
	Errorf(string, ...any)
	Cleanup(func())
}

func newProducer(t tb, f *fakeServer, cfg client.ProducerConfig) *client.Producer {
	t.Helper()
	c, err := client.New(f.URL)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	p, err := client.NewProducer(context.Background(), c, "orders", cfg)
	if err != nil {
		t.Fatalf("producer: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = p.Close(ctx)
	})
	return p
}

// sent is one record handed to Send and its future.
type sent struct {
	rec  client.Record
	want int32 // the partition it must land on
	fut  *client.Future
}

// checkDelivery asserts exactly-once, in-order delivery: every future succeeded at the
// position where the fake holds its record; each partition's log is exactly the records
// sent to it, in Send order; there was never more than one request in flight per
// partition (a request may carry several partitions); no request exceeded the server's
// limits; every retry reused its key's body byte for byte; and every delivery is a
// producer request's attempt numbered in order (checkAttempt).
func checkDelivery(t tb, f *fakeServer, all []sent) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	calls, logs, maxIn, _ := f.snapshot()
	wantLog := map[int32][][]byte{}
	for i, s := range all {
		res, err := s.fut.Wait(ctx)
		if err != nil {
			t.Fatalf("record %d failed: %v\n%s", i, err, callsSummary(calls))
		}
		if res.Partition != s.want {
			t.Fatalf("record %d landed on partition %d, want %d", i, res.Partition, s.want)
		}
		l := logs[res.Partition]
		if res.Offset < 0 || res.Offset >= int64(len(l)) || !bytes.Equal(l[res.Offset].Value, s.rec.Value) {
			t.Fatalf("record %d (%q): result %+v does not point at it", i, s.rec.Value, res)
		}
		wantLog[s.want] = append(wantLog[s.want], s.rec.Value)
	}
	for p, l := range logs {
		if len(l) != len(wantLog[p]) {
			t.Fatalf("partition %d holds %d records, %d were sent to it (duplicates or losses)\n%s",
				p, len(l), len(wantLog[p]), callsSummary(calls))
		}
		for i, r := range l {
			if !bytes.Equal(r.Value, wantLog[p][i]) {
				t.Fatalf("partition %d offset %d holds %q, want %q (order broken)", p, i, r.Value, wantLog[p][i])
			}
		}
	}
	for p, m := range maxIn {
		if m > 1 {
			t.Fatalf("partition %d had %d requests in flight at once", p, m)
		}
	}
	bodies := map[string][]byte{}
	attempts := map[string][]appendCall{} // per key, its calls so far
	for i, c := range calls {
		if c.Key == "" {
			t.Fatalf("call %d has no Idempotency-Key", i)
		}
		if err := checkProducerKey(c.Key); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if err := checkAttempt(c, attempts[c.Key]); err != nil {
			t.Fatalf("call %d: %v\n%s", i, err, callsSummary(calls))
		}
		attempts[c.Key] = append(attempts[c.Key], c)
		if c.Records > wire.MaxRecordsPerBatch || len(c.Body) > 9<<20 {
			t.Fatalf("call %d of %d records, %d bytes: over the request limits", i, c.Records, len(c.Body))
		}
		if b, ok := bodies[c.Key]; ok && !bytes.Equal(b, c.Body) {
			t.Fatalf("call %d reuses key %s with a different body", i, c.Key)
		}
		bodies[c.Key] = c.Body
	}
}

// TestProducerRetryReusesKeyAndBody: a batch that meets a 503, a dropped answer (after
// the fake appended it) and a 429 is sent four times with one Idempotency-Key and one
// body, is appended once, and the 429's Retry-After is waited out.
func TestProducerRetryReusesKeyAndBody(t *testing.T) {
	f := newFake(t, 1)
	f.retryAfter = "1"
	f.inject = func(n int, _ appendCall) fault {
		return [...]fault{fault503, faultDrop, fault429, faultNone, faultNone}[min(n, 4)]
	}
	p := newProducer(t, f, client.ProducerConfig{Partitions: 1, Linger: 20 * time.Millisecond, Backoff: time.Millisecond})
	var all []sent
	for i := range 3 {
		rec := client.Record{Key: []byte("k"), Value: fmt.Appendf(nil, "v%d", i)}
		fut, err := p.Send(context.Background(), rec)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, sent{rec: rec, fut: fut})
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkDelivery(t, f, all)
	calls, logs, _, _ := f.snapshot()
	if len(calls) != 4 {
		t.Fatalf("%d calls, want 4 (503, drop, 429, ok):\n%s", len(calls), callsSummary(calls))
	}
	for i, c := range calls {
		if c.Key != calls[0].Key || !bytes.Equal(c.Body, calls[0].Body) || c.Records != 3 || !c.Binary {
			t.Fatalf("call %d differs from call 0:\n%s", i, callsSummary(calls))
		}
	}
	if len(logs[0]) != 3 {
		t.Fatalf("log holds %d records, want 3", len(logs[0]))
	}
	if gap := calls[3].At.Sub(calls[2].At); gap < 900*time.Millisecond {
		t.Fatalf("retry %v after a 429 with Retry-After: 1", gap)
	}
	if s := p.Stats(); s.Batches != 1 || s.RecordsSent != 3 || s.Retries < 2 {
		t.Fatalf("stats %+v", s)
	}
}

// TestFakeDetectsConcurrency is the control of the in-flight assertion: plain
// concurrent Appends to one partition do overlap at the fake.
func TestFakeDetectsConcurrency(t *testing.T) {
	f := newFake(t, 1)
	f.delay = 20 * time.Millisecond
	c, _ := client.New(f.URL)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, err := c.Append(context.Background(), "orders", []client.Record{{Value: []byte("x")}}, client.AppendOptions{}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if _, _, maxIn, _ := f.snapshot(); maxIn[0] < 2 {
		t.Fatalf("max in flight %d: the fake cannot see overlapping requests", maxIn[0])
	}
}

// TestProducerOneInFlightPerPartition: 600 keyed records over 4 partitions with 25%
// injected failures: at most one request per partition at any moment (while partitions
// do go in parallel, several in a request), and each partition's log is the Send order
// exactly once.
func TestProducerOneInFlightPerPartition(t *testing.T) {
	f := newFake(t, 4)
	f.delay = 2 * time.Millisecond
	rng := rand.New(rand.NewPCG(1, 2))
	var rngMu sync.Mutex
	f.inject = func(int, appendCall) fault {
		rngMu.Lock()
		defer rngMu.Unlock()
		switch rng.IntN(12) {
		case 0:
			return fault503
		case 1:
			return faultDrop
		case 2:
			return fault429
		}
		return faultNone
	}
	p := newProducer(t, f, client.ProducerConfig{Partitions: 4, BatchRecords: 7, Backoff: time.Millisecond,
		MaxBackoff: 4 * time.Millisecond, MaxRetries: wire.MaxFencedAttempt})
	var all []sent
	for i := range 600 {
		key := fmt.Appendf(nil, "key-%d", i%37)
		rec := client.Record{Key: key, Value: fmt.Appendf(nil, "%s/%d", key, i)}
		fut, err := p.Send(context.Background(), rec)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, sent{rec: rec, want: wire.PartitionForKey(key, 4), fut: fut})
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkDelivery(t, f, all)
	// Partitions go in parallel inside one request rather than as overlapping requests
	// (one per partition before requests carried several).
	calls, _, _, maxTotal := f.snapshot()
	faults, widest := 0, 0
	for _, c := range calls {
		if c.Fault != faultNone {
			faults++
		}
		widest = max(widest, len(c.Partitions))
	}
	if widest < 2 {
		t.Fatalf("no request carried more than one partition: partitions did not go in parallel")
	}
	if faults < 10 {
		t.Fatalf("only %d faults injected in %d calls", faults, len(calls))
	}
	t.Logf("%d calls, %d faults, max %d in flight overall, stats %+v", len(calls), faults, maxTotal, p.Stats())
}

// TestProducerProperty: for random partition counts, batch sizes, lingers, record
// placements (keyed, unkeyed, explicit) and fault sequences, delivery is exactly once,
// in Send order per partition, one request in flight per partition, retries identical.
func TestProducerProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		nparts := rapid.Int32Range(1, 4).Draw(rt, "partitions")
		faults := rapid.SliceOfN(rapid.SampledFrom([]fault{faultNone, fault503, fault429, faultDrop}), 0, 12).Draw(rt, "faults")
		f := newFake(rt, nparts)
		f.inject = func(n int, _ appendCall) fault {
			if n < len(faults) {
				return faults[n]
			}
			return faultNone
		}
		cfg := client.ProducerConfig{
			Partitions:   nparts,
			BatchRecords: rapid.IntRange(1, 12).Draw(rt, "batchRecords"),
			BatchBytes:   rapid.IntRange(200, 2000).Draw(rt, "batchBytes"),
			Linger:       rapid.SampledFrom([]time.Duration{0, 500 * time.Microsecond, 2 * time.Millisecond}).Draw(rt, "linger"),
			Backoff:      time.Millisecond, MaxBackoff: 2 * time.Millisecond, MaxRetries: wire.MaxFencedAttempt,
		}
		p := newProducer(rt, f, cfg)
		n := rapid.IntRange(1, 80).Draw(rt, "records")
		var all []sent
		rr := int32(0)
		for i := range n {
			rec := client.Record{Value: fmt.Appendf(nil, "v%d-%s", i, strings.Repeat("x", rapid.IntRange(0, 100).Draw(rt, "pad")))}
			var want int32
			switch kind := rapid.IntRange(0, 2).Draw(rt, "kind"); kind {
			case 0:
				rec.Key = fmt.Appendf(nil, "k%d", rapid.IntRange(0, 5).Draw(rt, "key"))
				want = wire.PartitionForKey(rec.Key, nparts)
			case 1:
				want = rr % nparts
				rr++
			case 2:
				want = rapid.Int32Range(0, nparts-1).Draw(rt, "explicit")
				rec.Partition = &want
			}
			fut, err := p.Send(context.Background(), rec)
			if err != nil {
				rt.Fatalf("send: %v", err)
			}
			all = append(all, sent{rec: rec, want: want, fut: fut})
		}
		if err := p.Flush(context.Background()); err != nil {
			rt.Fatalf("flush: %v", err)
		}
		checkDelivery(rt, f, all)
	})
}

// TestProducerLingerFlushesPartialBatch: a batch below its size limits goes out once
// its first record has lingered, as one request, and not before.
func TestProducerLingerFlushesPartialBatch(t *testing.T) {
	f := newFake(t, 2)
	p := newProducer(t, f, client.ProducerConfig{Partitions: 2, Linger: 100 * time.Millisecond, BatchRecords: 100})
	start := time.Now()
	var futs []*client.Future
	for i := range 3 {
		fut, err := p.Send(context.Background(), client.Record{Partition: i32(1), Value: fmt.Appendf(nil, "%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		futs = append(futs, fut)
	}
	time.Sleep(40 * time.Millisecond)
	if calls, _, _, _ := f.snapshot(); len(calls) != 0 {
		t.Fatalf("sent after %v, before the linger ended", time.Since(start))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i, fut := range futs {
		res, err := fut.Wait(ctx)
		if err != nil || res.Partition != 1 || res.Offset != int64(i) {
			t.Fatalf("record %d: %+v, %v", i, res, err)
		}
	}
	calls, _, _, _ := f.snapshot()
	if len(calls) != 1 || calls[0].Records != 3 {
		t.Fatalf("want one request of 3 records:\n%s", callsSummary(calls))
	}
	if d := calls[0].At.Sub(start); d < 90*time.Millisecond || d > 2*time.Second {
		t.Fatalf("partial batch sent %v after the first record, linger 100ms", d)
	}
}

// TestProducerFullBatchSendsAtOnce: reaching BatchRecords or BatchBytes sends without
// waiting for a long linger; the remainder waits for Flush.
func TestProducerFullBatchSendsAtOnce(t *testing.T) {
	f := newFake(t, 1)
	p := newProducer(t, f, client.ProducerConfig{Partitions: 1, Linger: time.Hour, BatchRecords: 4})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var last *client.Future
	for i := range 4 {
		var err error
		if last, err = p.Send(ctx, client.Record{Value: fmt.Appendf(nil, "%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := last.Wait(ctx); err != nil {
		t.Fatal(err)
	}

	// Each record takes at most 216 bytes in a block; a 500-byte batch holds two.
	g := newFake(t, 1)
	q := newProducer(t, g, client.ProducerConfig{Partitions: 1, Linger: time.Hour, BatchBytes: 500})
	val := bytes.Repeat([]byte("x"), 200)
	var futs []*client.Future
	for range 3 {
		fut, err := q.Send(ctx, client.Record{Value: val})
		if err != nil {
			t.Fatal(err)
		}
		futs = append(futs, fut)
	}
	if _, err := futs[1].Wait(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-futs[2].Done():
		t.Fatal("the third record did not wait for its linger")
	case <-time.After(30 * time.Millisecond):
	}
	if err := q.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	calls, _, _, _ := g.snapshot()
	if len(calls) != 2 || calls[0].Records != 2 || calls[1].Records != 1 {
		t.Fatalf("want batches of 2 then 1:\n%s", callsSummary(calls))
	}
}

// TestProducerBatchBytesFollowBuffer: without BatchBytes, a batch is half the buffer:
// with 700 buffer bytes, three 115-byte records (345) wait for their linger, a fourth
// sends the first three at once.
func TestProducerBatchBytesFollowBuffer(t *testing.T) {
	f := newFake(t, 1)
	p := newProducer(t, f, client.ProducerConfig{Partitions: 1, Linger: time.Hour, BufferBytes: 700})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	val := bytes.Repeat([]byte("x"), 100)
	var futs []*client.Future
	for i := range 4 {
		fut, err := p.Send(ctx, client.Record{Value: val})
		if err != nil {
			t.Fatal(err)
		}
		futs = append(futs, fut)
		if i == 2 {
			time.Sleep(30 * time.Millisecond)
			if calls, _, _, _ := f.snapshot(); len(calls) != 0 {
				t.Fatalf("sent 345 bytes of records, under half the buffer:\n%s", callsSummary(calls))
			}
		}
	}
	if _, err := futs[2].Wait(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-futs[3].Done():
		t.Fatal("the fourth record did not wait for its linger")
	case <-time.After(30 * time.Millisecond):
	}
	if calls, _, _, _ := f.snapshot(); len(calls) != 1 || calls[0].Records != 3 {
		t.Fatalf("want one batch of 3:\n%s", callsSummary(calls))
	}
}

// TestProducerNonRetryableFailsBatch: once the server has taken a binary append, a 400
// fails the batch at once (one request), the next batch of the partition still goes
// through, and Flush reports the failure once.
func TestProducerNonRetryableFailsBatch(t *testing.T) {
	f := newFake(t, 1)
	f.inject = func(n int, _ appendCall) fault {
		if n == 1 {
			return fault400
		}
		return faultNone
	}
	p := newProducer(t, f, client.ProducerConfig{Partitions: 1, Backoff: time.Millisecond})
	ctx := context.Background()
	if _, err := p.SendSync(ctx, client.Record{Value: []byte("0")}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.SendSync(ctx, client.Record{Value: []byte("a")}); !errors.Is(err, client.ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
	if err := p.Flush(ctx); err == nil || !errors.Is(err, client.ErrInvalid) || !strings.Contains(err.Error(), "1 records failed") {
		t.Fatalf("flush after a failure: %v", err)
	}
	res, err := p.SendSync(ctx, client.Record{Value: []byte("b")})
	if err != nil || res.Offset != 1 {
		t.Fatalf("next record: %+v, %v", res, err)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatalf("second flush: %v", err)
	}
	calls, _, _, _ := f.snapshot()
	if len(calls) != 3 {
		t.Fatalf("%d calls, want 3 (a 400 is not retried)", len(calls))
	}
	for i, c := range calls {
		if !c.Binary {
			t.Fatalf("call %d fell back to JSON after a 400", i)
		}
	}
	if s := p.Stats(); s.RecordsFailed != 1 || s.RecordsSent != 2 || s.Retries != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// TestProducerRetriesExhausted: after MaxRetries the batch fails with the last error.
func TestProducerRetriesExhausted(t *testing.T) {
	f := newFake(t, 1)
	f.inject = func(int, appendCall) fault { return fault503 }
	p := newProducer(t, f, client.ProducerConfig{Partitions: 1, MaxRetries: 2, Backoff: time.Millisecond})
	_, err := p.SendSync(context.Background(), client.Record{Value: []byte("a")})
	if !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("err = %v", err)
	}
	if calls, _, _, _ := f.snapshot(); len(calls) != 3 {
		t.Fatalf("%d calls, want 1 + 2 retries", len(calls))
	}
}

// TestProducerPlacement: keyed records land where wire.PartitionForKey puts them,
// explicit partitions are kept, unkeyed ones go round-robin.
func TestProducerPlacement(t *testing.T) {
	f := newFake(t, 8)
	p := newProducer(t, f, client.ProducerConfig{Partitions: 8})
	ctx := context.Background()
	var all []sent
	counts := map[int32]int{}
	for i := range 64 {
		var s sent
		switch i % 3 {
		case 0:
			s.rec = client.Record{Key: fmt.Appendf(nil, "user-%d", i)}
			s.want = wire.PartitionForKey(s.rec.Key, 8)
		case 1:
			s.want = int32(i % 8)
			s.rec = client.Record{Key: []byte("ignored"), Partition: i32(s.want)}
		case 2:
			s.want = -1
		}
		s.rec.Value = fmt.Appendf(nil, "v%d", i)
		fut, err := p.Send(ctx, s.rec)
		if err != nil {
			t.Fatal(err)
		}
		s.fut = fut
		all = append(all, s)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for i, s := range all {
		res, err := s.fut.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if s.want >= 0 && res.Partition != s.want {
			t.Fatalf("record %d on %d, want %d", i, res.Partition, s.want)
		}
		if s.want < 0 {
			counts[res.Partition]++
		}
	}
	for part := range int32(8) {
		if c := counts[part]; c < 2 || c > 3 {
			t.Fatalf("unkeyed records per partition %v: not round-robin", counts)
		}
	}
}

// TestProducerBufferBlocksSend: with the buffer full, Send waits and gives up with its
// context; once space frees up, Send proceeds.
func TestProducerBufferBlocksSend(t *testing.T) {
	f := newFake(t, 1)
	f.hold = make(chan struct{})
	p := newProducer(t, f, client.ProducerConfig{Partitions: 1, BufferBytes: 200})
	ctx := context.Background()
	first, err := p.Send(ctx, client.Record{Value: bytes.Repeat([]byte("a"), 100)})
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := p.Send(short, client.Record{Value: bytes.Repeat([]byte("b"), 100)}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("send into a full buffer: %v, want a deadline error", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := p.SendSync(ctx, client.Record{Value: []byte("c")})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("send returned %v while the buffer was full", err)
	case <-time.After(30 * time.Millisecond):
	}
	close(f.hold)
	wait, cancel2 := context.WithTimeout(ctx, 5*time.Second)
	defer cancel2()
	if _, err := first.Wait(wait); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	_, logs, _, _ := f.snapshot()
	if len(logs[0]) != 2 || logs[0][1].Value[0] != 'c' {
		t.Fatalf("log holds %d records", len(logs[0]))
	}
}

// TestProducerFullBufferOverridesLinger: a Send waiting for buffer space makes the
// lingering records go, rather than stalling for the whole linger.
func TestProducerFullBufferOverridesLinger(t *testing.T) {
	f := newFake(t, 1)
	p := newProducer(t, f, client.ProducerConfig{Partitions: 1, Linger: time.Hour, BufferBytes: 200})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	first, err := p.Send(ctx, client.Record{Value: bytes.Repeat([]byte("a"), 100)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Send(ctx, client.Record{Value: bytes.Repeat([]byte("b"), 100)}); err != nil {
		t.Fatalf("send into a full buffer of lingering records: %v", err)
	}
	if _, err := first.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestProducerCloseGivesUp: Close with an expiring context abandons a hung request,
// fails its records with ErrProducerClosed, and refuses later sends.
func TestProducerCloseGivesUp(t *testing.T) {
	f := newFake(t, 1)
	f.inject = func(int, appendCall) fault { return faultHang }
	p := newProducer(t, f, client.ProducerConfig{Partitions: 1})
	ctx := context.Background()
	fut, err := p.Send(ctx, client.Record{Value: []byte("a")})
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := p.Close(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("close: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("close took %v", d)
	}
	if _, err := fut.Result(); !errors.Is(err, client.ErrProducerClosed) {
		t.Fatalf("abandoned record: %v", err)
	}
	if _, err := p.Send(ctx, client.Record{}); !errors.Is(err, client.ErrProducerClosed) {
		t.Fatalf("send after close: %v", err)
	}
}

// TestProducerCloseFlushes: Close delivers records still lingering, every partition's
// batch in one request.
func TestProducerCloseFlushes(t *testing.T) {
	f := newFake(t, 3)
	p := newProducer(t, f, client.ProducerConfig{Partitions: 3, Linger: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var futs []*client.Future
	for i := range 9 {
		fut, err := p.Send(ctx, client.Record{Value: fmt.Appendf(nil, "%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		futs = append(futs, fut)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for i, fut := range futs {
		if _, err := fut.Result(); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	// The three partitions' batches are due together: one request carries them all.
	if calls, _, _, _ := f.snapshot(); len(calls) != 1 || len(calls[0].Partitions) != 3 {
		t.Fatalf("want one call of 3 partitions:\n%s", callsSummary(calls))
	}
}

// TestProducerRejectsBadRecords: records the server would refuse fail at Send, before
// they can fail a whole batch.
func TestProducerRejectsBadRecords(t *testing.T) {
	f := newFake(t, 2)
	p := newProducer(t, f, client.ProducerConfig{Partitions: 2})
	ctx := context.Background()
	big := client.Record{Key: []byte("k"), Value: make([]byte, wire.MaxRecordBytes)}
	if _, err := p.Send(ctx, big); !errors.Is(err, client.ErrPayloadTooLarge) {
		t.Fatalf("oversized: %v", err)
	}
	if _, err := p.Send(ctx, client.Record{Headers: map[string][]byte{"": nil}}); !errors.Is(err, client.ErrInvalid) {
		t.Fatalf("empty header name: %v", err)
	}
	if _, err := p.Send(ctx, client.Record{Partition: i32(2)}); !errors.Is(err, client.ErrInvalid) {
		t.Fatalf("partition out of range: %v", err)
	}
	if _, err := p.Send(ctx, client.Record{Timestamp: time.UnixMilli(-1)}); !errors.Is(err, client.ErrInvalid) {
		t.Fatalf("timestamp before 1970: %v", err)
	}
	if _, err := p.Send(ctx, client.Record{Timestamp: time.UnixMilli(client.MaxTimestampMs + 1)}); !errors.Is(err, client.ErrInvalid) {
		t.Fatalf("timestamp after 9999: %v", err)
	}
	exact := client.Record{Key: []byte("k"), Value: make([]byte, wire.MaxRecordBytes-1)}
	if _, err := p.SendSync(ctx, exact); err != nil {
		t.Fatalf("a record of exactly 1 MiB: %v", err)
	}
	if calls, _, _, _ := f.snapshot(); len(calls) != 1 {
		t.Fatalf("%d calls, want 1", len(calls))
	}
}

// TestNewProducerDescribesTopic: without Partitions, the producer learns the count.
func TestNewProducerDescribesTopic(t *testing.T) {
	f := newFake(t, 3)
	c, _ := client.New(f.URL)
	ctx := context.Background()
	p, err := client.NewProducer(ctx, c, "orders", client.ProducerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	seen := map[int32]bool{}
	for range 6 {
		res, err := p.SendSync(ctx, client.Record{})
		if err != nil {
			t.Fatal(err)
		}
		seen[res.Partition] = true
	}
	if len(seen) != 3 {
		t.Fatalf("unkeyed records reached partitions %v, want all 3", seen)
	}
	if _, err := client.NewProducer(ctx, c, "missing", client.ProducerConfig{}); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("unknown topic: %v", err)
	}
	if _, err := client.NewProducer(ctx, c, "orders", client.ProducerConfig{BatchRecords: wire.MaxRecordsPerBatch + 1}); !errors.Is(err, client.ErrInvalid) {
		t.Fatalf("too many records per batch: %v", err)
	}
}

// TestProducerOneRequestPerRound: records ready on 8 partitions go as one request of 8
// frames, one per partition, as Kafka's producer packs partitions into one
// ProduceRequest (before, each partition's batch was a request of its own).
func TestProducerOneRequestPerRound(t *testing.T) {
	f := newFake(t, 8)
	p := newProducer(t, f, client.ProducerConfig{Partitions: 8, Linger: time.Hour})
	ctx := context.Background()
	var all []sent
	for i := range 80 {
		part := int32(i % 8)
		rec := client.Record{Partition: i32(part), Value: fmt.Appendf(nil, "v%d", i)}
		fut, err := p.Send(ctx, rec)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, sent{rec: rec, want: part, fut: fut})
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	checkDelivery(t, f, all)
	calls, _, _, _ := f.snapshot()
	if len(calls) != 1 || !calls[0].Binary || len(calls[0].Partitions) != 8 || calls[0].Records != 80 {
		t.Fatalf("want one binary request of 8 partitions, 80 records:\n%s", callsSummary(calls))
	}
	frames, err := wire.DecodeRequest(calls[0].Body)
	if err != nil || len(frames) != 8 {
		t.Fatalf("%d frames, %v; want 8", len(frames), err)
	}
	if s := p.Stats(); s.Requests != 1 || s.Frames != 8 || s.Batches != 8 || s.RecordsSent != 80 || s.MaxBatchRecord != 10 {
		t.Fatalf("stats %+v", s)
	}
}

// TestProducerRoundsUnderLoad: a producer sending flat out to 8 partitions with Linger
// 0 and a small buffer (Sends wait for space) keeps its partitions together: on average
// at least 4 partitions a request, where one request per partition batch made it 1.
func TestProducerRoundsUnderLoad(t *testing.T) {
	f := newFake(t, 8)
	f.delay = 3 * time.Millisecond
	p := newProducer(t, f, client.ProducerConfig{Partitions: 8, BufferBytes: 32 << 10})
	ctx := context.Background()
	var all []sent
	for i := range 4000 {
		key := fmt.Appendf(nil, "k%d", i%101)
		rec := client.Record{Key: key, Value: fmt.Appendf(nil, "%s/%d/%s", key, i, strings.Repeat("x", 80))}
		fut, err := p.Send(ctx, rec)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, sent{rec: rec, want: wire.PartitionForKey(key, 8), fut: fut})
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	checkDelivery(t, f, all)
	s := p.Stats()
	t.Logf("stats %+v: %.1f partitions a request", s, float64(s.Frames)/float64(s.Requests))
	if s.Frames < 4*s.Requests {
		t.Fatalf("%d frames in %d requests: partitions go apart", s.Frames, s.Requests)
	}
}

// TestProducerSlowPartition: a request the server is slow with (it carries partition 0)
// holds only its own partitions: a record for partition 1 sent while it is out waits at
// most about one request time, goes in a request of its own and is acknowledged long
// before. (Partitions in the slow request wait for it: see Producer.)
func TestProducerSlowPartition(t *testing.T) {
	f := newFake(t, 2)
	p := newProducer(t, f, client.ProducerConfig{Partitions: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range 3 {
		if _, err := p.SendSync(ctx, client.Record{Partition: i32(1), Value: fmt.Appendf(nil, "warm%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	f.mu.Lock()
	f.slow = map[int32]time.Duration{0: 2 * time.Second}
	f.mu.Unlock()
	slow, err := p.Send(ctx, client.Record{Partition: i32(0), Value: []byte("slow")})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Second); ; time.Sleep(time.Millisecond) {
		if calls, _, _, _ := f.snapshot(); len(calls) == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slow request never reached the fake")
		}
	}
	start := time.Now()
	res, err := p.SendSync(ctx, client.Record{Partition: i32(1), Value: []byte("fast")})
	if err != nil || res.Offset != 3 {
		t.Fatalf("fast record: %+v, %v", res, err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("a record of partition 1 took %v behind a slow request of partition 0", d)
	}
	select {
	case <-slow.Done():
		t.Fatal("the slow request finished first")
	default:
	}
	if _, err := slow.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	calls, _, _, _ := f.snapshot()
	if len(calls) != 5 || len(calls[4].Partitions) != 1 || calls[4].Partitions[0] != 1 {
		t.Fatalf("want the fast record in a request of its own:\n%s", callsSummary(calls))
	}
}

// TestProducerJSONRequestCarriesPartitions: falling back to JSON, a request of several
// partitions' batches goes as one JSON body placing every record with an explicit
// "partition" (unkeyed records sent round-robin would land elsewhere if the server
// placed them), and the futures point where the records landed.
func TestProducerJSONRequestCarriesPartitions(t *testing.T) {
	f := newFake(t, 4)
	f.blocks = blocks415
	p := newProducer(t, f, client.ProducerConfig{Partitions: 4, Linger: time.Hour})
	ctx := context.Background()
	var all []sent
	for i := range 14 {
		rec := client.Record{Value: fmt.Appendf(nil, "v%d", i)}
		fut, err := p.Send(ctx, rec)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, sent{rec: rec, want: int32(i % 4), fut: fut})
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	calls, _, _, _ := f.snapshot()
	if len(calls) != 2 || !calls[0].Refused || calls[1].Binary || len(calls[1].Partitions) != 4 || calls[1].Records != 14 {
		t.Fatalf("want a refused binary call, then one JSON call of 4 partitions:\n%s", callsSummary(calls))
	}
	var body struct {
		Records []struct {
			Partition *int32 `json:"partition"`
		} `json:"records"`
	}
	if err := json.Unmarshal(calls[1].Body, &body); err != nil {
		t.Fatal(err)
	}
	for i, r := range body.Records {
		if r.Partition == nil {
			t.Fatalf("JSON record %d without a partition", i)
		}
	}
	f.mu.Lock()
	f.calls = withoutRefused(f.calls)
	f.mu.Unlock()
	checkDelivery(t, f, all)
}

// TestProducerPropertyFailures: random faults (refusals, 429s, answers lost after the
// append, partial and total partial failures) on requests of up to 8 partitions, with
// so few retries that some records fail: every acknowledged record is where its future
// says, each partition's log holds no record twice and keeps Send order, at most one
// request per partition was in flight, and each retry repeated its key's body.
func TestProducerPropertyFailures(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		nparts := rapid.Int32Range(1, 8).Draw(rt, "partitions")
		faults := rapid.SliceOfN(rapid.SampledFrom([]fault{faultNone, fault503, fault429, faultDrop, faultPartial,
			faultAllFailed}), 0, 30).Draw(rt, "faults")
		f := newFake(rt, nparts)
		f.inject = func(n int, _ appendCall) fault {
			if n < len(faults) {
				return faults[n]
			}
			return faultNone
		}
		p := newProducer(rt, f, client.ProducerConfig{
			Partitions:   nparts,
			BatchRecords: rapid.IntRange(1, 12).Draw(rt, "batchRecords"),
			Linger:       rapid.SampledFrom([]time.Duration{0, time.Millisecond}).Draw(rt, "linger"),
			BufferBytes:  rapid.SampledFrom([]int{300, 3000, 1 << 20}).Draw(rt, "bufferBytes"),
			Backoff:      time.Millisecond, MaxBackoff: time.Millisecond,
			MaxRetries: rapid.IntRange(-1, 3).Draw(rt, "maxRetries"),
		})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		n := rapid.IntRange(1, 120).Draw(rt, "records")
		var all []sent
		for i := range n {
			part := rapid.Int32Range(0, nparts-1).Draw(rt, "partition")
			rec := client.Record{Partition: &part, Value: fmt.Appendf(nil, "%d", i)}
			fut, err := p.Send(ctx, rec)
			if err != nil {
				rt.Fatalf("send: %v", err)
			}
			all = append(all, sent{rec: rec, want: part, fut: fut})
		}
		_ = p.Flush(ctx)
		calls, logs, maxIn, _ := f.snapshot()
		sendIdx := map[string]int{}
		for i, s := range all {
			sendIdx[string(s.rec.Value)] = i
			res, err := s.fut.Wait(ctx)
			if err != nil {
				continue
			}
			l := logs[s.want]
			if res.Partition != s.want || res.Offset < 0 || res.Offset >= int64(len(l)) || !bytes.Equal(l[res.Offset].Value, s.rec.Value) {
				rt.Fatalf("acknowledged record %d: %+v does not point at it\n%s", i, res, callsSummary(calls))
			}
		}
		for part, l := range logs {
			last := -1
			for off, r := range l {
				i, ok := sendIdx[string(r.Value)]
				if !ok || all[i].want != part || i <= last {
					rt.Fatalf("partition %d offset %d holds %q: duplicate, misplaced or out of order\n%s",
						part, off, r.Value, callsSummary(calls))
				}
				last = i
			}
		}
		for part, m := range maxIn {
			if m > 1 {
				rt.Fatalf("partition %d had %d requests in flight at once", part, m)
			}
		}
		bodies := map[string][]byte{}
		for i, c := range calls {
			if b, ok := bodies[c.Key]; ok && !bytes.Equal(b, c.Body) {
				rt.Fatalf("call %d reuses key %s with a different body", i, c.Key)
			}
			bodies[c.Key] = c.Body
		}
	})
}

// checkProducerKey fails unless key is a producer request's Idempotency-Key: a ULID
// (the producer id), a dot, a decimal sequence number without a leading zero.
func checkProducerKey(key string) error {
	id, seq, ok := strings.Cut(key, ".")
	if !ok {
		return fmt.Errorf("key %q is not <producer id>.<sequence>", key)
	}
	if _, err := ulid.ParseStrict(id); err != nil {
		return fmt.Errorf("key %q: producer id is not a ULID: %w", key, err)
	}
	n, err := strconv.ParseUint(seq, 10, 64)
	if err != nil || strconv.FormatUint(n, 10) != seq {
		return fmt.Errorf("key %q: sequence %q is not a decimal number", key, seq)
	}
	return nil
}

// checkAttempt fails unless call c, following the calls before of its key, is its
// request's next attempt in producer mode: Strata-Idempotency: producer, Strata-Attempt
// one above the previous call's (0 first), Strata-Retry-Elapsed-Ms absent on attempt 0,
// and on a retry within the contract's bounds and not below the previous retry's.
func checkAttempt(c appendCall, before []appendCall) error {
	if c.Idempotency != wire.IdempotencyProducer {
		return fmt.Errorf("key %s: Strata-Idempotency %q, want %q", c.Key, c.Idempotency, wire.IdempotencyProducer)
	}
	if want := strconv.Itoa(len(before)); c.Attempt != want {
		return fmt.Errorf("key %s: Strata-Attempt %q, want %s (each delivery is the next attempt)", c.Key, c.Attempt, want)
	}
	if len(before) == 0 {
		if c.Elapsed != "" {
			return fmt.Errorf("key %s: the first attempt sends Strata-Retry-Elapsed-Ms %q", c.Key, c.Elapsed)
		}
		return nil
	}
	d, _, err := wire.ParseRetryElapsed([]string{c.Elapsed})
	if err != nil {
		return fmt.Errorf("key %s attempt %s: %w", c.Key, c.Attempt, err)
	}
	if prev := before[len(before)-1]; prev.Elapsed != "" {
		if p, _, _ := wire.ParseRetryElapsed([]string{prev.Elapsed}); d < p {
			return fmt.Errorf("key %s attempt %s: elapsed %v below the previous attempt's %v", c.Key, c.Attempt, d, p)
		}
	}
	return nil
}

// TestProducerAlignedLingerSendsOnTheGrid: two producers with AlignLinger, whose first
// records come at different moments of one period, send them at the same tick of the
// wall-clock grid — not each a linger after its own first record — and a Flush still
// sends at once. Timers never fire early, so each request comes at or after the tick;
// the upper bound is loose (half a period) for a loaded machine. A scenario whose second
// Send slipped into the next period (a stalled test goroutine) is run again.
func TestProducerAlignedLingerSendsOnTheGrid(t *testing.T) {
	const linger = 400 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := client.ProducerConfig{Partitions: 1, Linger: linger, AlignLinger: true}
	for try := 0; ; try++ {
		f := newFake(t, 1)
		// Start early in a period, so that both Sends fall in it.
		if off := time.Duration(time.Now().UnixNano()) % linger; off > linger/8 {
			time.Sleep(linger - off)
		}
		a, b := newProducer(t, f, cfg), newProducer(t, f, cfg)
		first := time.Now()
		fa, err := a.Send(ctx, client.Record{Value: []byte("a")})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(linger * 5 / 8) // unaligned, b's request would come more than linger/2 after the tick
		second := time.Now()
		fb, err := b.Send(ctx, client.Record{Value: []byte("b")})
		if err != nil {
			t.Fatal(err)
		}
		for _, fut := range []*client.Future{fa, fb} {
			if _, err := fut.Wait(ctx); err != nil {
				t.Fatal(err)
			}
		}
		tick := first.Truncate(linger).Add(linger)
		if !second.Before(tick) {
			if try == 4 {
				t.Fatalf("the second Send came after the tick in %d tries: the machine is too loaded to tell", try+1)
			}
			t.Logf("try %d: the second Send came at %v, after the tick at %v; again", try, second.Format("15:04:05.000"), tick.Format("15:04:05.000"))
			continue
		}
		calls, _, _, _ := f.snapshot()
		if len(calls) != 2 {
			t.Fatalf("want a request from each producer:\n%s", callsSummary(calls))
		}
		for _, c := range calls {
			if c.At.Before(tick) || c.At.Sub(tick) > linger/2 {
				t.Errorf("a request came at %v, the tick at %v (first record at %v, second at %v, linger %v)",
					c.At.Format("15:04:05.000"), tick.Format("15:04:05.000"), first.Format("15:04:05.000"), second.Format("15:04:05.000"), linger)
			}
		}

		// A Flush does not wait for the grid.
		fc, err := a.Send(ctx, client.Record{Value: []byte("c")})
		if err != nil {
			t.Fatal(err)
		}
		flushed := time.Now()
		if err := a.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := fc.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		calls, _, _, _ = f.snapshot()
		next := flushed.Truncate(linger).Add(linger)
		if last := calls[len(calls)-1]; next.Sub(flushed) > linger/4 && !last.At.Before(next) {
			t.Errorf("a flushed record waited for the next tick (%v): sent at %v", next.Format("15:04:05.000"), last.At.Format("15:04:05.000"))
		}
		return
	}
}

// TestProducerAlignSettingsChecked: AlignSlots without AlignLinger, negative slots and
// an aligned linger under a millisecond a slot are refused.
func TestProducerAlignSettingsChecked(t *testing.T) {
	f := newFake(t, 1)
	c, err := client.New(f.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []client.ProducerConfig{
		{Partitions: 1, Linger: time.Second, AlignSlots: 2},
		{Partitions: 1, Linger: time.Second, AlignLinger: true, AlignSlots: -1},
		{Partitions: 1, AlignLinger: true},
		{Partitions: 1, Linger: 3 * time.Millisecond, AlignLinger: true, AlignSlots: 4},
	} {
		if _, err := client.NewProducer(context.Background(), c, "orders", cfg); !errors.Is(err, client.ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", cfg, err)
		}
	}
}
