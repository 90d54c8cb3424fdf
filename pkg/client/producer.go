package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/oklog/ulid/v2"

	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/wire"
)

// Producer limits and defaults.
const (
	// MaxBatchBytes bounds ProducerConfig.BatchBytes so that a batch, one block, stays
	// under the server's 6 MiB of record bytes per request. Against a server without
	// the binary format a batch goes as JSON requests of at most MaxBatchBytes each,
	// base64 and JSON included (the block of a batch is smaller than its JSON).
	MaxBatchBytes = 5 << 20

	// DefaultBufferBytes is the default ProducerConfig.BufferBytes: about two rounds of
	// requests, so that a producer sending flat out waits about two request times per
	// record rather than for a deep queue (see ProducerConfig). On strata dev (8
	// partitions, one producer sending 1 KB records flat out, `strata bench peers`, a
	// 2-core machine, docs/BENCHMARKS.md) 3.5 MiB gave p99 ack latencies of 42–44 ms at
	// 133k records/s; 4 MiB 49–51 ms at 138k–148k; 3 MiB 42–47 ms at 120k; the former
	// 32 MiB 280–400 ms.
	DefaultBufferBytes = 7 << 19
	// DefaultBatchBytes is the default ProducerConfig.BatchBytes with the default
	// buffer: half of it.
	DefaultBatchBytes   = DefaultBufferBytes / 2
	DefaultBatchRecords = 1000
	DefaultMaxRetries   = 10
	DefaultBackoff      = 100 * time.Millisecond
	DefaultMaxBackoff   = 10 * time.Second

	// MaxTimestampMs is the largest record timestamp the server accepts (the end of 9999).
	MaxTimestampMs = wire.MaxTimestampMs
)

// ErrProducerClosed is returned by Send after Close, and fails the records Close could
// not deliver before its context ended.
var ErrProducerClosed = errors.New("strata: producer closed")

// ProducerConfig tunes a Producer; zero fields take the defaults above. Byte sizes count
// a record's encoded size in a block: key, value, header names and values, plus the
// framing of segment's varints, counted at its bound (15 to 20 bytes a record, 2 or more
// a header).
//
// Latency. A partition has one request in flight while its next batch fills, so a
// record is acknowledged after the rest of the request ahead of it and then its own:
// up to two request times (on strata dev its group-commit window and fsyncs; on AWS an
// S3 PUT and DynamoDB writes), plus Linger. A producer that sends faster than the
// server acknowledges keeps its buffer full, and then every record also waits for the
// bytes buffered ahead of it: ack latency ≈ buffered bytes / throughput. The default
// buffer holds about two rounds of requests, which keeps that wait near two request
// times; the former 32 MiB queued 150–400 ms of records behind each Send on strata dev.
// Linger stays 0: batches form anyway while a partition's request is in flight, and
// the server's group commit merges concurrent requests.
//
// Throughput. The bytes in flight bound it: about BufferBytes / 2 per request time. A
// longer request time (a distant server, the api function on AWS) or a producer that
// needs throughput more than latency wants a larger BufferBytes; BatchBytes grows with
// it.
//
// Cost. Each request is an append: on AWS one S3 PUT and a DynamoDB commit and index
// write per partition, unless the server's group commit merges concurrent requests
// into one object (strata dev; the api function on Lambda Managed Instances, not on
// demand). Smaller batches mean more of them: raise BufferBytes (and BatchBytes,
// Linger) where requests cost more than latency.
type ProducerConfig struct {
	// Linger is how long a partition's first buffered record waits for more before its
	// batch is sent. 0 sends as soon as the partition has no batch in flight (records
	// arriving meanwhile still batch up).
	Linger time.Duration
	// BatchBytes and BatchRecords cap one request; reaching either sends at once.
	// BatchBytes defaults to half of BufferBytes (at most MaxBatchBytes), so that a
	// partition with the buffer to itself keeps one batch in flight while the next fills.
	BatchBytes   int
	BatchRecords int
	// MaxRetries bounds the retries of a batch after a 503, a 429, a transport error or
	// a garbled answer; negative disables retries.
	MaxRetries int
	// Backoff is the first retry delay, doubled per attempt up to MaxBackoff, with
	// jitter. A Retry-After header replaces it for that attempt.
	Backoff    time.Duration
	MaxBackoff time.Duration
	// Partitions is the topic's partition count; 0 describes the topic to learn it. It
	// must be the server's count, or keys land elsewhere than the server would put them.
	Partitions int32
	// BufferBytes bounds the bytes of records sent but not yet acknowledged or failed;
	// Send blocks while a record does not fit.
	BufferBytes int
}

// ProducerStats are cumulative counters of a Producer.
type ProducerStats struct {
	Requests       int64 // append requests made, retries included
	Retries        int64 // of those, retries
	Batches        int64 // batches acknowledged
	RecordsSent    int64 // records acknowledged
	RecordsFailed  int64 // records whose future failed
	MaxBatchRecord int64 // largest batch sent, in records
}

// Producer appends records to one topic in per-partition batches. A record goes to its
// explicit partition, else to wire.PartitionForKey of its key (the server's placement),
// else round-robin. Each partition has at most one request in flight, and a batch is
// retried with the same Idempotency-Key and body, so records of a partition are
// appended exactly once and in Send order. Safe for concurrent use; Send order among
// concurrent callers is the order in which Send buffers their records. Close it to stop
// its goroutines.
//
// A batch is sent as one segment block in the binary format (wire.ContentTypeBlocks),
// which the server stores without decoding it: no base64 or JSON on either side. A
// server that refuses the format (415, or a 400 before any binary append of the Client
// succeeded: a server predating it, or a proxy mangling binary bodies) is sent JSON
// instead, the refused batch included, by every Producer of the Client from then on.
type Producer struct {
	c      *Client
	topic  string
	cfg    ProducerConfig
	nparts int32
	parts  []*partQueue

	ctx    context.Context // bounds in-flight sends; cancelled when Close gives up
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex // guards the fields below; taken before a partQueue's mu
	buffered int
	spaceCh  chan struct{} // closed and replaced whenever buffer space frees up
	closed   bool
	rr       uint32
	failN    int64
	firstErr error

	requests, retries, batches, sent, failed, maxBatch atomic.Int64
}

// NewProducer returns a Producer for topic. With cfg.Partitions 0 it describes the topic
// (hence the context).
func NewProducer(ctx context.Context, c *Client, topic string, cfg ProducerConfig) (*Producer, error) {
	if cfg.BatchRecords == 0 {
		cfg.BatchRecords = DefaultBatchRecords
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = DefaultMaxRetries
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	if cfg.BufferBytes == 0 {
		cfg.BufferBytes = DefaultBufferBytes
	}
	if cfg.BatchBytes == 0 {
		cfg.BatchBytes = max(min(cfg.BufferBytes/2, MaxBatchBytes), 1)
	}
	switch {
	case cfg.BatchBytes < 0 || cfg.BatchBytes > MaxBatchBytes:
		return nil, fmt.Errorf("%w: BatchBytes %d outside [1, %d]", ErrInvalid, cfg.BatchBytes, MaxBatchBytes)
	case cfg.BatchRecords < 0 || cfg.BatchRecords > wire.MaxRecordsPerBatch:
		return nil, fmt.Errorf("%w: BatchRecords %d outside [1, %d]", ErrInvalid, cfg.BatchRecords, wire.MaxRecordsPerBatch)
	case cfg.Linger < 0 || cfg.Backoff < 0 || cfg.MaxBackoff < 0 || cfg.BufferBytes < 0 || cfg.Partitions < 0:
		return nil, fmt.Errorf("%w: negative producer setting", ErrInvalid)
	}
	if cfg.Partitions == 0 {
		t, err := c.DescribeTopic(ctx, topic)
		if err != nil {
			return nil, err
		}
		cfg.Partitions = t.Partitions
		if cfg.Partitions <= 0 {
			return nil, fmt.Errorf("strata: topic %q has %d partitions: %w", topic, cfg.Partitions, ErrBadResponse)
		}
	}
	pctx, cancel := context.WithCancel(context.Background())
	p := &Producer{c: c, topic: topic, cfg: cfg, nparts: cfg.Partitions, ctx: pctx, cancel: cancel,
		spaceCh: make(chan struct{})}
	p.parts = make([]*partQueue, cfg.Partitions)
	for i := range p.parts {
		p.parts[i] = &partQueue{p: p, id: int32(i), wake: make(chan struct{}, 1)}
	}
	return p, nil
}

// Future is the pending outcome of one sent record. A failure after a transport error
// (the last attempt's answer lost) leaves it unknown whether the record was appended.
type Future struct {
	rec  Record
	ts   int64 // rec's timestamp in ms, stamped at Send when rec has none
	size int   // blockSize(rec)
	seq  uint64
	at   time.Time
	done chan struct{}
	res  Result
	err  error
}

// Done is closed once the record is acknowledged or has failed.
func (f *Future) Done() <-chan struct{} { return f.done }

// Wait returns where the record landed, or why it failed; it returns ctx's error if ctx
// ends first (the record may still be delivered).
func (f *Future) Wait(ctx context.Context) (Result, error) {
	select {
	case <-f.done:
		return f.res, f.err
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
}

// Result is the outcome once Done is closed (zero and nil before).
func (f *Future) Result() (Result, error) {
	select {
	case <-f.done:
		return f.res, f.err
	default:
		return Result{}, nil
	}
}

// Send buffers rec for its partition and returns its Future; rec's slices and map must
// not change until the Future is done. A record without a Timestamp is stamped now.
// Send blocks while the buffer is full (sending what lingers, until space frees, ctx
// ends, or the producer closes); ctx bounds only that wait, not delivery. A record over
// the server's 1 MiB limit, with an empty or non-UTF-8 header name, a timestamp before
// 1970 or after 9999, or a partition out of range fails at once (ErrPayloadTooLarge,
// ErrInvalid) rather than failing its whole batch at the server.
func (p *Producer) Send(ctx context.Context, rec Record) (*Future, error) {
	if n := rec.Size(); n > wire.MaxRecordBytes {
		return nil, fmt.Errorf("%w: record is %d bytes, at most %d", ErrPayloadTooLarge, n, wire.MaxRecordBytes)
	}
	for k := range rec.Headers {
		if k == "" || !utf8.ValidString(k) {
			return nil, fmt.Errorf("%w: header name %q: empty or not UTF-8", ErrInvalid, k)
		}
	}
	ts := time.Now().UnixMilli()
	if !rec.Timestamp.IsZero() {
		ts = rec.Timestamp.UnixMilli()
	}
	if ts < 0 || ts > MaxTimestampMs {
		return nil, fmt.Errorf("%w: timestamp %v outside [1970, 9999]", ErrInvalid, rec.Timestamp)
	}
	if rec.Partition != nil && (*rec.Partition < 0 || *rec.Partition >= p.nparts) {
		return nil, fmt.Errorf("%w: partition %d outside [0, %d)", ErrInvalid, *rec.Partition, p.nparts)
	}
	f := &Future{rec: rec, ts: ts, size: blockSize(rec), done: make(chan struct{})}
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, ErrProducerClosed
		}
		if p.buffered == 0 || p.buffered+f.size <= p.cfg.BufferBytes {
			p.buffered += f.size
			p.parts[p.place(rec)].enqueue(f)
			p.mu.Unlock()
			return f, nil
		}
		ch := p.spaceCh
		p.mu.Unlock()
		// Space frees only as batches complete: stop lingering so it does.
		for _, q := range p.parts {
			q.flushAll()
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("strata: send to %q: waiting for buffer space: %w", p.topic, ctx.Err())
		}
	}
}

// place picks rec's partition; p.mu is held (for the round-robin counter).
func (p *Producer) place(rec Record) int32 {
	switch {
	case rec.Partition != nil:
		return *rec.Partition
	case rec.Key != nil:
		return wire.PartitionForKey(rec.Key, p.nparts)
	}
	p.rr++
	return int32((p.rr - 1) % uint32(p.nparts))
}

// SendSync sends rec and waits for its outcome.
func (p *Producer) SendSync(ctx context.Context, rec Record) (Result, error) {
	f, err := p.Send(ctx, rec)
	if err != nil {
		return Result{}, err
	}
	return f.Wait(ctx)
}

// Flush sends every buffered record without waiting for Linger and waits until all
// records sent before the call are acknowledged or failed. It returns ctx's error if
// ctx ends first; otherwise, if any record failed since the previous Flush, an error
// counting them and wrapping the first failure (Futures tell which).
func (p *Producer) Flush(ctx context.Context) error {
	var waits []*Future
	for _, q := range p.parts {
		if f := q.flushAll(); f != nil {
			waits = append(waits, f)
		}
	}
	for _, f := range waits {
		select {
		case <-f.done:
		case <-ctx.Done():
			return fmt.Errorf("strata: flush %q: %w", p.topic, ctx.Err())
		}
	}
	p.mu.Lock()
	n, first := p.failN, p.firstErr
	p.failN, p.firstErr = 0, nil
	p.mu.Unlock()
	if n > 0 {
		return fmt.Errorf("strata: flush %q: %d records failed since the last flush, first: %w", p.topic, n, first)
	}
	return nil
}

// Close stops accepting records, flushes, and stops the partition senders. If ctx ends
// first, in-flight requests are abandoned and the undelivered records fail with
// ErrProducerClosed (an abandoned request may still have been appended).
func (p *Producer) Close(ctx context.Context) error {
	p.mu.Lock()
	already := p.closed
	p.closed = true
	close(p.spaceCh)
	p.spaceCh = make(chan struct{})
	p.mu.Unlock()
	if already {
		p.wg.Wait()
		return nil
	}
	err := p.Flush(ctx)
	if ctx.Err() != nil {
		p.cancel()
	}
	for _, q := range p.parts {
		q.stop()
	}
	p.wg.Wait()
	p.cancel()
	return err
}

// Stats returns the producer's counters.
func (p *Producer) Stats() ProducerStats {
	return ProducerStats{Requests: p.requests.Load(), Retries: p.retries.Load(), Batches: p.batches.Load(),
		RecordsSent: p.sent.Load(), RecordsFailed: p.failed.Load(), MaxBatchRecord: p.maxBatch.Load()}
}

// partQueue is one partition's buffer and its sender goroutine, which sends one batch
// at a time: that is what keeps one request in flight per partition.
type partQueue struct {
	p    *Producer
	id   int32
	wake chan struct{} // capacity 1: a pending wake-up for the sender

	mu           sync.Mutex
	buf          []*Future
	bufBytes     int
	seq          uint64  // seq of the last enqueued record
	flushThrough uint64  // records up to this seq are sent without lingering
	last         *Future // last enqueued record
	started      bool
	stopping     bool
}

func (q *partQueue) enqueue(f *Future) {
	q.mu.Lock()
	q.seq++
	f.seq = q.seq
	f.at = time.Now()
	q.buf = append(q.buf, f)
	q.bufBytes += f.size
	q.last = f
	if !q.started {
		q.started = true
		q.p.wg.Add(1)
		go q.run()
	}
	q.mu.Unlock()
	q.signal()
}

func (q *partQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// flushAll marks every buffered record for immediate sending and returns the last
// record enqueued (nil if none is pending): records of a partition complete in order,
// so when it is done, all are.
func (q *partQueue) flushAll() *Future {
	q.mu.Lock()
	f := q.last
	q.flushThrough = q.seq
	q.mu.Unlock()
	if f == nil {
		return nil
	}
	select {
	case <-f.done:
		return nil
	default:
	}
	q.signal()
	return f
}

func (q *partQueue) stop() {
	q.mu.Lock()
	q.stopping = true
	q.mu.Unlock()
	q.signal()
}

func (q *partQueue) run() {
	defer q.p.wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		batch, wait, exit := q.take(time.Now())
		if exit {
			return
		}
		if batch == nil {
			if wait > 0 {
				timer.Reset(wait)
			}
			select {
			case <-q.wake:
			case <-timer.C:
			}
			timer.Stop()
			continue
		}
		q.p.sendBatch(q.id, batch)
	}
}

// take removes the next batch if one is due (full, flushed, stopping, or lingered
// long enough); otherwise it says how long until the linger ends (0: wait for a wake-up).
func (q *partQueue) take(now time.Time) (batch []*Future, wait time.Duration, exit bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	cfg := &q.p.cfg
	if len(q.buf) == 0 {
		return nil, 0, q.stopping
	}
	due := q.buf[0].at.Add(cfg.Linger)
	ready := q.stopping || len(q.buf) >= cfg.BatchRecords || q.bufBytes >= cfg.BatchBytes ||
		q.buf[0].seq <= q.flushThrough || !now.Before(due)
	if !ready {
		return nil, due.Sub(now), false
	}
	n, size := 0, 0
	for n < len(q.buf) && n < cfg.BatchRecords {
		if n > 0 && size+q.buf[n].size > cfg.BatchBytes {
			break
		}
		size += q.buf[n].size
		n++
	}
	batch = slices.Clone(q.buf[:n])
	clear(q.buf[:n])
	q.buf = q.buf[n:]
	q.bufBytes -= size
	return batch, 0, false
}

// sendBatch appends one batch of partition part, then completes its futures and frees
// its buffer space.
func (p *Producer) sendBatch(part int32, batch []*Future) {
	size := 0
	for _, f := range batch {
		size += f.size
	}
	for m := p.maxBatch.Load(); int64(len(batch)) > m && !p.maxBatch.CompareAndSwap(m, int64(len(batch))); {
		m = p.maxBatch.Load()
	}
	results, err := p.deliver(part, batch)
	if err != nil {
		if p.ctx.Err() != nil {
			err = fmt.Errorf("%w: %w", ErrProducerClosed, err)
		}
		err = fmt.Errorf("strata: produce to %s/%d: %w", p.topic, part, err)
	} else {
		p.batches.Add(1)
	}
	var nfail int64
	for i, f := range batch {
		switch {
		case err == nil:
			f.res = results[i]
		case len(results) == len(batch) && results[i].Err == nil:
			// Appended before the batch failed: in a partially failed request whose
			// retries ran out, or in an earlier request of a batch split for JSON.
			f.res = results[i]
		default:
			f.err = err
			nfail++
		}
		f.rec = Record{}
	}
	// Counters and Flush's failure tally are updated before the futures complete, so
	// whoever waits on a future sees them.
	p.sent.Add(int64(len(batch)) - nfail)
	p.failed.Add(nfail)
	p.mu.Lock()
	p.buffered -= size
	close(p.spaceCh)
	p.spaceCh = make(chan struct{})
	if nfail > 0 {
		if p.failN == 0 {
			p.firstErr = err
		}
		p.failN += nfail
	}
	p.mu.Unlock()
	for _, f := range batch {
		close(f.done)
	}
}

// deliver appends batch to partition part: as one block, unless the server is known
// not to take blocks or refuses this one's content type, then as JSON. It returns one
// Result per record, or an error with, when some records were appended nonetheless,
// their Results (Err nil) among the others (Err set).
func (p *Producer) deliver(part int32, batch []*Future) ([]Result, error) {
	if p.c.blocks.Load() != blocksOff {
		res, err := p.deliverBlock(part, batch)
		if !p.blocksRefused(err) {
			return res, err
		}
	}
	return p.deliverJSON(part, batch)
}

// blocksRefused reports whether err, the answer to a binary append, says the server
// does not take the binary format, and if so remembers it for the Client's life. That
// is a 415; or a 400 before any binary append succeeded, which is what a server
// predating the format (it parses the body as JSON) or a proxy that mangles binary
// bodies answers. Nothing was appended then, so the batch is sent again as JSON.
func (p *Producer) blocksRefused(err error) bool {
	var apiErr *APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.Status {
	case http.StatusUnsupportedMediaType:
		p.c.blocks.Store(blocksOff)
		return true
	case http.StatusBadRequest:
		p.c.blocks.CompareAndSwap(blocksUnknown, blocksOff)
		return p.c.blocks.Load() == blocksOff
	}
	return false
}

// deliverBlock sends batch as one block (one frame for part), retrying with the same
// Idempotency-Key and the very same bytes.
func (p *Producer) deliverBlock(part int32, batch []*Future) ([]Result, error) {
	recs := make([]segment.Record, len(batch))
	for i, f := range batch {
		recs[i] = segment.Record{Timestamp: f.ts, Key: f.rec.Key, Value: f.rec.Value, Headers: blockHeaders(f.rec.Headers)}
	}
	// A frame is its partition then its block: the block is appended in place rather
	// than built apart and copied into the frame.
	body := wire.AppendRequest(nil, []wire.Frame{{Partition: part}})
	body, err := segment.AppendBlock(body, recs)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	key := ulid.Make().String()
	var results []Result
	err = p.retry(func() error {
		var blocks []wire.BlockResult
		var err error
		blocks, err = p.c.appendBlocks(p.ctx, p.topic, body, key)
		results = nil
		if err == nil {
			p.c.blocks.CompareAndSwap(blocksUnknown, blocksOn)
			results, err = blockResults(blocks, part, len(batch))
			return err
		}
		if r, rerr := blockResults(blocks, part, len(batch)); rerr == nil {
			results = r
		}
		return err
	})
	return results, err
}

// blockHeaders lists a record's headers for a block, sorted by name so that equal
// records encode to equal bytes.
func blockHeaders(h map[string][]byte) []segment.Header {
	if len(h) == 0 {
		return nil
	}
	out := make([]segment.Header, 0, len(h))
	for k, v := range h {
		out = append(out, segment.Header{Key: k, Value: v})
	}
	slices.SortFunc(out, func(a, b segment.Header) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// blockResults maps the answer to a binary append of one frame, n records for part, to
// per-record Results. A 200's one result must be that frame's (partition and count) with
// a base offset; anything else is ErrBadResponse. The "blocks" extra of a partial
// failure may give the frame an error instead: its records get it, and blockResults
// returns them with a nil error, for the caller to keep beside the request's error.
func blockResults(blocks []wire.BlockResult, part int32, n int) ([]Result, error) {
	if len(blocks) != 1 {
		return nil, fmt.Errorf("%w: %d results for one block", ErrBadResponse, len(blocks))
	}
	b := blocks[0]
	if b.Partition != part || b.Count != int64(n) {
		return nil, fmt.Errorf("%w: result for %d records of partition %d, the block holds %d of partition %d",
			ErrBadResponse, b.Count, b.Partition, n, part)
	}
	res := make([]Result, n)
	switch {
	case b.Error != nil:
		e := resultError(b.Error)
		for i := range res {
			res[i] = Result{Partition: part, Err: e}
		}
	case b.BaseOffset == nil || *b.BaseOffset < 0 || *b.BaseOffset > math.MaxInt64-int64(n):
		return nil, fmt.Errorf("%w: block result without a valid base offset", ErrBadResponse)
	default:
		for i := range res {
			res[i] = Result{Partition: part, Offset: *b.BaseOffset + int64(i)}
		}
	}
	return res, nil
}

// deliverJSON sends batch as JSON, in as few requests as the server's limits allow
// (a block is smaller than the JSON of its records, base64 and field names included, so
// a batch may need more than one), one after the other. A failed request fails the rest
// of the batch.
func (p *Producer) deliverJSON(part int32, batch []*Future) ([]Result, error) {
	var results []Result
	for done := 0; done < len(batch); {
		chunk := batch[done : done+jsonChunk(batch[done:])]
		res, err := p.sendJSON(part, chunk)
		if err != nil {
			out := make([]Result, len(batch))
			copy(out, results)
			for i := done; i < len(batch); i++ {
				out[i] = Result{Partition: part, Err: err}
				if j := i - done; j < len(res) && res[j].Err == nil {
					out[i] = res[j]
				}
			}
			return out, err
		}
		results = append(results, res...)
		done += len(chunk)
	}
	return results, nil
}

// jsonChunk is how many of the first records of batch fit one JSON request: their
// jsonSize sum stays within MaxBatchBytes (one record always fits).
func jsonChunk(batch []*Future) int {
	n, size := 0, 0
	for n < len(batch) {
		size += jsonSize(batch[n].rec)
		if n > 0 && size > MaxBatchBytes {
			break
		}
		n++
	}
	return n
}

// sendJSON sends chunk as one JSON request, retrying with the same Idempotency-Key and
// the very same body. On failure it returns the Results of a partial failure if every
// appended record landed on part, else none.
func (p *Producer) sendJSON(part int32, chunk []*Future) ([]Result, error) {
	recs := make([]Record, len(chunk))
	for i, f := range chunk {
		recs[i] = f.rec
		recs[i].Timestamp = time.UnixMilli(f.ts)
	}
	body, err := encodeAppend(recs, &part)
	if err != nil {
		return nil, err
	}
	key := ulid.Make().String()
	var res []Result
	err = p.retry(func() error {
		var err error
		res, err = p.c.appendBody(p.ctx, p.topic, body, len(chunk), key)
		if i := strayResult(res, part); i >= 0 {
			r := res[i]
			res = nil
			if err == nil {
				err = fmt.Errorf("%w: record %d of a batch for partition %d landed on %d", ErrBadResponse, i, part, r.Partition)
			}
		}
		return err
	})
	return res, err
}

// strayResult is the index of the first appended record of res not on part, or -1.
func strayResult(res []Result, part int32) int {
	return slices.IndexFunc(res, func(r Result) bool { return r.Err == nil && r.Partition != part })
}

// retry calls send until it succeeds, fails for good (not IsRetryable), the producer
// gives up, or MaxRetries retries are spent, waiting retryDelay between attempts.
func (p *Producer) retry(send func() error) error {
	for attempt := 0; ; attempt++ {
		p.requests.Add(1)
		err := send()
		if err == nil || p.ctx.Err() != nil || !IsRetryable(err) || attempt >= p.cfg.MaxRetries {
			return err
		}
		if !sleepCtx(p.ctx, p.retryDelay(attempt, err)) {
			return err
		}
		p.retries.Add(1)
	}
}

// retryDelay is the wait before retry attempt+1: the server's Retry-After if given,
// else exponential backoff with jitter in [d/2, d].
func (p *Producer) retryDelay(attempt int, err error) time.Duration {
	var apiErr *APIError
	if errors.As(err, &apiErr) && apiErr.RetryAfter > 0 {
		return apiErr.RetryAfter
	}
	d := p.cfg.Backoff
	for i := 0; i < attempt && d < p.cfg.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, p.cfg.MaxBackoff)
	if d <= 1 {
		return d
	}
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
