package client

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
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
	// MaxBatchBytes bounds ProducerConfig.BatchBytes and the record bytes of one append
	// request, all its partitions' batches together, so that a request stays under the
	// server's 6 MiB of record bytes. A server that takes smaller bodies says so
	// (wire.HeaderMaxBody: the api function behind Lambda takes 4 MiB), and the
	// Producer's requests then stay within that, a request refused as too large being
	// split. Against a server without the binary format a
	// request goes as JSON requests of at most MaxBatchBytes each, base64 and JSON
	// included (the blocks of a request are smaller than its JSON).
	MaxBatchBytes = 5 << 20

	// DefaultBufferBytes is the default ProducerConfig.BufferBytes: about two rounds of
	// requests, so that a producer sending flat out waits about two request times per
	// record rather than for a deep queue (see ProducerConfig). On strata dev (8
	// partitions, one producer sending 1 KB records flat out, `strata bench peers`, a
	// 2-core machine, docs/BENCHMARKS.md), with one request per round, 3 MiB gave p99 ack
	// latencies of 41–50 ms at 101k–125k records/s; 3.5 MiB 47–54 ms at 108k–124k;
	// 2.5 MiB 36–45 ms at 95k–112k. (With one request per partition batch 3.5 MiB gave
	// 42–44 ms at 133k; the former 32 MiB 280–400 ms.)
	DefaultBufferBytes = 3 << 20
	// DefaultBatchBytes is the default ProducerConfig.BatchBytes with the default
	// buffer: half of it.
	DefaultBatchBytes   = DefaultBufferBytes / 2
	DefaultBatchRecords = 1000
	DefaultMaxRetries   = 10
	DefaultBackoff      = 100 * time.Millisecond
	DefaultMaxBackoff   = 10 * time.Second
	// DefaultDeliveryTimeout is the default ProducerConfig.DeliveryTimeout, as Kafka's
	// delivery.timeout.ms; it must stay below wire.MaxRetryElapsed.
	DefaultDeliveryTimeout = 2 * time.Minute
	// DefaultMaxInFlightRequests is the default ProducerConfig.MaxInFlightRequests, as
	// Kafka's max.in.flight.requests.per.connection. A producer whose partitions all
	// have records keeps one request in flight; more are in flight only while some
	// partitions fill or flush apart from a request already out, or a request is slow.
	DefaultMaxInFlightRequests = 5

	// MaxTimestampMs is the largest record timestamp the server accepts (the end of 9999).
	MaxTimestampMs = wire.MaxTimestampMs
)

// frameOverhead is what a frame adds to its records' blockSize in a binary append: its
// partition number and its block header.
const frameOverhead = 4 + segment.HeaderSize

// ErrProducerClosed is returned by Send after Close, and fails the records Close could
// not deliver before its context ended.
var ErrProducerClosed = errors.New("strata: producer closed")

// ProducerConfig tunes a Producer; zero fields take the defaults above. Byte sizes count
// a record's encoded size in a block: key, value, header names and values, plus the
// framing of segment's varints, counted at its bound (15 to 20 bytes a record, 2 or more
// a header).
//
// Latency. A partition has one batch in flight while its next batch fills, so a record
// is acknowledged after the request ahead of it and then its own: up to two request
// times (on strata dev its group-commit window and fsyncs; on AWS an S3 PUT and
// DynamoDB writes), plus Linger. A partition whose batch is due while another request
// is in flight waits for that request, at most about one request time (the moving
// average of recent ones), to join the next round. A producer that sends faster than
// the server acknowledges keeps its buffer full, and then every record also waits for
// the bytes buffered ahead of it: ack latency ≈ buffered bytes / throughput. The
// default buffer holds about two rounds of requests, which keeps that wait near two
// request times; the former 32 MiB queued 150–400 ms of records behind each Send on
// strata dev. Linger stays 0: batches form anyway while a request is in flight.
//
// Throughput. The bytes in flight bound it: about BufferBytes / 2 per request time. A
// longer request time (a distant server, the api function on AWS) or a producer that
// needs throughput more than latency wants a larger BufferBytes; BatchBytes grows with
// it.
//
// Cost. Each request is an append: on AWS one S3 PUT, one API Gateway request and one
// Lambda invocation, plus a DynamoDB commit and index write per partition in it. A
// round's request carries every partition that has records and no batch in flight (up
// to MaxBatchBytes and wire.MaxRecordsPerBatch records), so a producer writing to many
// partitions pays per round, not per partition batch. Smaller rounds mean more of them:
// raise BufferBytes (and BatchBytes, Linger) where requests cost more than latency.
type ProducerConfig struct {
	// Linger is how long a partition's first buffered record waits for more before its
	// batch is due. 0 makes it due at once (records arriving while the partition has a
	// batch in flight still batch up). A batch may go before its linger ends, with a
	// request that another partition's due batch starts.
	Linger time.Duration
	// AlignLinger makes a batch due at the next tick of a wall-clock grid of period
	// Linger instead of Linger after its first record, so a record still waits at most
	// Linger. Producers on hosts whose clocks agree (Amazon Time Sync keeps EC2 and
	// Lambda within about a millisecond) then send their rounds together, and the api
	// function's group-commit window on Lambda Managed Instances merges their requests
	// into one segment object per execution environment: fewer objects, index entries
	// and consumer reads for the same records and the same ack latency. The price is a
	// burst of requests at each tick, which the api's execution environments must
	// hold at once (AlignSlots spreads it). A batch that fills, a Flush and a Send
	// waiting for buffer space still send at once, so BufferBytes must hold a linger's
	// records for the rounds to stay on the grid. It needs a Linger of at least 1 ms.
	AlignLinger bool
	// AlignSlots splits an aligned grid's period into this many slots (default 1); the
	// producer takes one slot at random and its ticks fall at that slot's offset, so a
	// fleet's requests arrive in AlignSlots bursts a period, each 1/AlignSlots of the
	// fleet. Size it so that a burst fits the api's execution environments (32
	// invocations each on Managed Instances).
	AlignSlots int
	// BatchBytes and BatchRecords cap one partition's batch; reaching either sends it at
	// once. BatchBytes defaults to half of BufferBytes (at most MaxBatchBytes), so that a
	// partition with the buffer to itself keeps one batch in flight while the next fills.
	BatchBytes   int
	BatchRecords int
	// MaxRetries bounds the retries of a request after a 503, a 429, a 409 superseded,
	// a transport error or a garbled answer (at most wire.MaxFencedAttempt); negative disables
	// retries.
	MaxRetries int
	// DeliveryTimeout bounds how long after a request's first attempt it is retried, as
	// Kafka's delivery.timeout.ms (default DefaultDeliveryTimeout): no retry is sent once
	// the time since the first attempt plus the backoff would pass it, and the request's
	// records then fail with ErrDeliveryTimeout wrapping the last error (whether they
	// were appended is unknown). It must be below wire.MaxRetryElapsed, the longest a
	// server searches the log for a request's earlier attempts.
	DeliveryTimeout time.Duration
	// Backoff is the first retry delay, doubled per attempt up to MaxBackoff, with
	// jitter. A Retry-After header replaces it for that attempt.
	Backoff    time.Duration
	MaxBackoff time.Duration
	// Partitions is the topic's partition count; 0 describes the topic to learn it. It
	// must be the server's count, or keys land elsewhere than the server would put them.
	Partitions int32
	// PartitionRefresh is how often the producer describes the topic to learn a raised
	// partition count (`topics alter`), so that its keys follow the count other clients
	// use (default DefaultPartitionRefresh; negative never). Records already buffered
	// keep their partitions; a count never falls.
	PartitionRefresh time.Duration
	// BufferBytes bounds the bytes of records sent but not yet acknowledged or failed;
	// Send blocks while a record does not fit.
	BufferBytes int
	// MaxInFlightRequests bounds the append requests in flight at once; their partitions
	// are always disjoint.
	MaxInFlightRequests int
}

// ProducerStats are cumulative counters of a Producer.
type ProducerStats struct {
	Requests       int64 // append requests made, retries included
	Retries        int64 // of those, retries
	Frames         int64 // partition batches carried by those requests, retries included
	Batches        int64 // partition batches acknowledged
	RecordsSent    int64 // records acknowledged
	RecordsFailed  int64 // records whose future failed
	MaxBatchRecord int64 // largest partition batch sent, in records
}

// Producer appends records to one topic in per-partition batches, the ready batches of
// several partitions in one request, as Kafka's producer packs them into one
// ProduceRequest. A record goes to its explicit partition, else to
// wire.PartitionForKey of its key (the server's placement), else round-robin.
//
// One sender goroutine forms the requests. Once some partition's batch is due (full,
// flushed, lingered, or the producer closing), a request takes one batch of every
// partition that has records and no batch in flight, up to MaxBatchBytes and
// wire.MaxRecordsPerBatch records; partitions left over go in further requests, up to
// MaxInFlightRequests. A partition has at most one batch in flight, and a request is
// retried whole with the same Idempotency-Key and body (the server answers with what an
// earlier attempt appended), so records of a partition are appended exactly once and in
// Send order.
//
// Idempotency is fenced, as Kafka's idempotent producer (enable.idempotence): each
// Producer is a session with a producer id (a ULID made by NewProducer) that numbers
// its requests, and a request's Idempotency-Key is "<producer id>.<sequence>"
// (wire.ProducerRequestKey). Every attempt says Strata-Idempotency: producer and
// Strata-Attempt (0, 1, 2…), and a retry Strata-Retry-Elapsed-Ms, the time since the
// request's first attempt was sent: the server then keeps no claim per request (a
// first attempt writes nothing beyond its commit), and a retry fences the earlier
// attempts and searches the log for them from that time on. A 409 superseded (another
// delivery of the same attempt, duplicated on the way, fenced it) is retried like a
// 503: the next attempt decides. Retries stop at MaxRetries or, as Kafka's
// delivery.timeout.ms, once the next one would be sent past DeliveryTimeout after the
// first attempt; the records then fail with ErrDeliveryTimeout and the last error,
// their fate unknown. A Producer's sequence is its own: two Producers never share a
// key, and records sent again through a new Producer (after a failure) are a new
// request. Client.Append, whose caller picks keys, keeps claimed keys instead.
//
// A request completes all its partitions' futures at
// once: a partition the server is slow to append, or that keeps failing, holds the
// others in its request until the request succeeds or its retries run out, and since
// they then become ready together they tend to share the next requests too (as in
// Kafka, whose ProduceRequest waits for all its partitions). A partition not in that
// request waits for it at most about one request time before going in a request of
// its own. Safe for concurrent use; Send order among concurrent callers is the order
// in which Send buffers their records. Close it to stop its goroutines.
//
// A batch is sent as one segment block in the binary format (wire.ContentTypeBlocks),
// one frame per partition, which the server stores without decoding: no base64 or JSON
// on either side. A server that refuses the format (415, or a 400 before any binary
// append of the Client succeeded: a server predating it, or a proxy mangling binary
// bodies) is sent JSON instead, the refused request included, by every Producer of the
// Client from then on: each record with its explicit partition, in JSON requests of at
// most MaxBatchBytes.
type Producer struct {
	c     *Client
	topic string
	cfg   ProducerConfig
	// id names the producer session (a ULID made by NewProducer), seq numbers its
	// requests: a request's Idempotency-Key is wire.ProducerRequestKey(id, seq).
	id     string
	seq    atomic.Uint64
	nparts int32 // guarded by mu: the refresher raises it

	refreshStop chan struct{}  // closed by Close: the refresher exits
	refreshWG   sync.WaitGroup // the refresher

	ctx    context.Context // bounds in-flight sends; cancelled when Close gives up
	cancel context.CancelFunc
	wg     sync.WaitGroup // the sender and its requests
	wake   chan struct{}  // capacity 1: a pending wake-up for the sender

	mu       sync.Mutex // guards the fields below
	parts    []partQueue
	buffered int
	spaceCh  chan struct{} // closed and replaced whenever buffer space frees up
	waiters  int           // Sends waiting for buffer space
	closed   bool          // Send refuses records
	stopping bool          // the sender sends what is left, then exits
	started  bool          // the sender runs
	inflight int           // requests in flight
	reqTime  time.Duration // moving average of successful request times; 0 before the first
	next     int32         // partition a request starts from, rotating
	rr       uint32
	failN    int64
	firstErr error

	requests, retries, frames, batches, sent, failed, maxBatch atomic.Int64

	phase time.Duration // with AlignLinger: the offset of this producer's ticks on the grid
}

// partQueue is one partition's buffered records; Producer.mu guards it.
type partQueue struct {
	buf          []*Future
	bufBytes     int
	seq          uint64  // seq of the last enqueued record
	flushThrough uint64  // records up to this seq are sent without lingering or waiting
	last         *Future // last enqueued record
	inflight     bool    // a batch of the partition is in a request in flight
}

// request is one append: a frame (one batch) per partition, partitions distinct.
type request struct {
	frames []frame
	size   int           // blockSize of its records
	took   time.Duration // the successful attempt's time, 0 if none succeeded
}

// frame is one partition's batch in a request.
type frame struct {
	part  int32
	batch []*Future
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
	if cfg.DeliveryTimeout == 0 {
		cfg.DeliveryTimeout = DefaultDeliveryTimeout
	}
	if cfg.BufferBytes == 0 {
		cfg.BufferBytes = DefaultBufferBytes
	}
	if cfg.BatchBytes == 0 {
		cfg.BatchBytes = max(min(cfg.BufferBytes/2, MaxBatchBytes), 1)
	}
	if cfg.MaxInFlightRequests == 0 {
		cfg.MaxInFlightRequests = DefaultMaxInFlightRequests
	}
	if cfg.PartitionRefresh == 0 {
		cfg.PartitionRefresh = DefaultPartitionRefresh
	}
	switch {
	case cfg.BatchBytes < 0 || cfg.BatchBytes > MaxBatchBytes:
		return nil, fmt.Errorf("%w: BatchBytes %d outside [1, %d]", ErrInvalid, cfg.BatchBytes, MaxBatchBytes)
	case cfg.BatchRecords < 0 || cfg.BatchRecords > wire.MaxRecordsPerBatch:
		return nil, fmt.Errorf("%w: BatchRecords %d outside [1, %d]", ErrInvalid, cfg.BatchRecords, wire.MaxRecordsPerBatch)
	case cfg.Linger < 0 || cfg.Backoff < 0 || cfg.MaxBackoff < 0 || cfg.BufferBytes < 0 || cfg.Partitions < 0 ||
		cfg.MaxInFlightRequests < 0 || cfg.DeliveryTimeout < 0:
		return nil, fmt.Errorf("%w: negative producer setting", ErrInvalid)
	case cfg.MaxRetries > wire.MaxFencedAttempt:
		return nil, fmt.Errorf("%w: MaxRetries %d above %d (wire.MaxFencedAttempt, the last attempt of a request a server fences)", ErrInvalid, cfg.MaxRetries, wire.MaxFencedAttempt)
	case cfg.AlignSlots < 0 || (cfg.AlignSlots > 0 && !cfg.AlignLinger):
		return nil, fmt.Errorf("%w: AlignSlots %d needs AlignLinger and must not be negative", ErrInvalid, cfg.AlignSlots)
	case cfg.AlignLinger && cfg.Linger < time.Millisecond:
		return nil, fmt.Errorf("%w: AlignLinger needs a Linger of at least 1ms, got %v", ErrInvalid, cfg.Linger)
	case cfg.AlignLinger && cfg.Linger/time.Duration(max(cfg.AlignSlots, 1)) < time.Millisecond:
		return nil, fmt.Errorf("%w: AlignSlots %d leaves slots under 1ms of Linger %v", ErrInvalid, cfg.AlignSlots, cfg.Linger)
	case cfg.DeliveryTimeout >= wire.MaxRetryElapsed:
		return nil, fmt.Errorf("%w: DeliveryTimeout %v must be below %v (wire.MaxRetryElapsed)", ErrInvalid, cfg.DeliveryTimeout, wire.MaxRetryElapsed)
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
	p := &Producer{c: c, topic: topic, cfg: cfg, id: ulid.Make().String(), nparts: cfg.Partitions, ctx: pctx, cancel: cancel,
		wake: make(chan struct{}, 1), spaceCh: make(chan struct{}), parts: make([]partQueue, cfg.Partitions),
		refreshStop: make(chan struct{})}
	if cfg.AlignLinger {
		slots := max(cfg.AlignSlots, 1)
		p.phase = cfg.Linger / time.Duration(slots) * time.Duration(rand.N(slots))
	}
	if cfg.PartitionRefresh > 0 {
		p.refreshWG.Add(1)
		go p.refreshPartitions()
	}
	return p, nil
}

// DefaultPartitionRefresh is ProducerConfig.PartitionRefresh's default: the server's
// own topic cache (log.TopicCacheTTL), so a producer follows a raised count within
// about twice that.
const DefaultPartitionRefresh = 5 * time.Second

// refreshPartitions raises the producer's partition count when the topic's grew, every
// PartitionRefresh until Close: from the count an append answer told since the last
// tick (wire.HeaderPartitions), so a producer that appends describes nothing, else by
// describing the topic. A failed describe is tried again at the next tick.
func (p *Producer) refreshPartitions() {
	defer p.refreshWG.Done()
	tick := time.NewTicker(p.cfg.PartitionRefresh)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-p.refreshStop:
			return
		case <-tick.C:
		}
		since := last
		last = time.Now()
		if n, ok := p.c.countSince(p.topic, since); ok {
			p.growPartitions(n)
			continue
		}
		ctx, cancel := context.WithTimeout(p.ctx, max(p.cfg.PartitionRefresh, 5*time.Second))
		t, err := p.c.DescribeTopic(ctx, p.topic)
		cancel()
		if err == nil {
			p.growPartitions(t.Partitions)
		}
	}
}

// growPartitions raises the producer's partition count to n; a lower or equal n (a
// node whose cache is behind) changes nothing.
func (p *Producer) growPartitions(n int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n <= p.nparts || n > wire.MaxPartitions {
		return
	}
	p.parts = append(p.parts, make([]partQueue, n-p.nparts)...)
	p.nparts = n
}

// Partitions is the partition count the producer places records by.
func (p *Producer) Partitions() int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.nparts
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
	for _, h := range rec.HeaderList {
		if h.Key == "" || !utf8.ValidString(h.Key) {
			return nil, fmt.Errorf("%w: header name %q: empty or not UTF-8", ErrInvalid, h.Key)
		}
	}
	ts := time.Now().UnixMilli()
	if !rec.Timestamp.IsZero() {
		ts = rec.Timestamp.UnixMilli()
	}
	if ts < 0 || ts > MaxTimestampMs {
		return nil, fmt.Errorf("%w: timestamp %v outside [1970, 9999]", ErrInvalid, rec.Timestamp)
	}
	if n := p.Partitions(); rec.Partition != nil && (*rec.Partition < 0 || *rec.Partition >= n) {
		return nil, fmt.Errorf("%w: partition %d outside [0, %d)", ErrInvalid, *rec.Partition, n)
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
			p.enqueue(p.place(rec), f)
			p.mu.Unlock()
			p.signal()
			return f, nil
		}
		// Space frees only as requests complete: while Sends wait, batches are due
		// without lingering (see take).
		ch := p.spaceCh
		p.waiters++
		p.mu.Unlock()
		p.signal()
		var err error
		select {
		case <-ch:
		case <-ctx.Done():
			err = fmt.Errorf("strata: send to %q: waiting for buffer space: %w", p.topic, ctx.Err())
		}
		p.mu.Lock()
		p.waiters--
		p.mu.Unlock()
		if err != nil {
			return nil, err
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

// enqueue appends f to partition part's buffer and starts the sender if it is not
// running; p.mu is held.
func (p *Producer) enqueue(part int32, f *Future) {
	q := &p.parts[part]
	q.seq++
	f.seq = q.seq
	f.at = time.Now()
	q.buf = append(q.buf, f)
	q.bufBytes += f.size
	q.last = f
	if !p.started {
		p.started = true
		p.wg.Add(1)
		go p.run()
	}
}

// signal wakes the sender up, or leaves it a pending wake-up.
func (p *Producer) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// SendSync sends rec and waits for its outcome.
func (p *Producer) SendSync(ctx context.Context, rec Record) (Result, error) {
	f, err := p.Send(ctx, rec)
	if err != nil {
		return Result{}, err
	}
	return f.Wait(ctx)
}

// Flush sends every buffered record without waiting for Linger or for requests in
// flight, and waits until all records sent before the call are acknowledged or failed.
// It returns ctx's error if ctx ends first; otherwise, if any record failed since the
// previous Flush, an error counting them and wrapping the first failure (Futures tell
// which).
func (p *Producer) Flush(ctx context.Context) error {
	var waits []*Future
	p.mu.Lock()
	for i := range p.parts {
		q := &p.parts[i]
		q.flushThrough = q.seq
		if q.last != nil {
			waits = append(waits, q.last)
		}
	}
	p.mu.Unlock()
	p.signal()
	// Records of a partition complete in order: when its last is done, all are.
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

// Close stops accepting records, flushes, and stops the sender. If ctx ends first,
// in-flight requests are abandoned and the undelivered records fail with
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
	close(p.refreshStop)
	p.refreshWG.Wait()
	err := p.Flush(ctx)
	if ctx.Err() != nil {
		p.cancel()
	}
	p.mu.Lock()
	p.stopping = true
	p.mu.Unlock()
	p.signal()
	p.wg.Wait()
	p.cancel()
	return err
}

// Stats returns the producer's counters.
func (p *Producer) Stats() ProducerStats {
	return ProducerStats{Requests: p.requests.Load(), Retries: p.retries.Load(), Frames: p.frames.Load(),
		Batches: p.batches.Load(), RecordsSent: p.sent.Load(), RecordsFailed: p.failed.Load(),
		MaxBatchRecord: p.maxBatch.Load()}
}

// run is the sender: it forms requests as take says and sends each in a goroutine of
// its own, until the producer stops and nothing is left to send.
func (p *Producer) run() {
	defer p.wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		reqs, wait, exit := p.take(time.Now())
		for _, r := range reqs {
			go p.sendRequest(r)
		}
		if exit {
			return
		}
		if wait > 0 {
			timer.Reset(wait)
		}
		select {
		case <-p.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// alignedDue is the first tick at or after at of the wall-clock grid of period linger
// offset by phase. Ticks are multiples of linger since Go's zero time, a reference every
// host shares, so producers with the same linger and phase tick together.
func alignedDue(at time.Time, linger, phase time.Duration) time.Time {
	due := at.Add(-phase).Truncate(linger).Add(phase)
	if due.Before(at) {
		due = due.Add(linger)
	}
	return due
}

// take forms the requests to send now, marking their partitions in flight; otherwise it
// says how long until a batch is due (0: wait for a wake-up), or that the sender is done.
//
// A partition with records and no batch in flight is ready at once when its batch is
// full, flushed, or the producer stops; else once its first record has lingered (at
// once while Sends wait for buffer space). While other requests are in flight it waits
// for them up to reqTime longer, so that partitions that became ready apart join one
// request rather than each going alone. Once one partition is ready, every partition
// with records and no batch in flight goes: one batch each, in requests of at most
// requestBytes and wire.MaxRecordsPerBatch, up to MaxInFlightRequests in flight.
func (p *Producer) take(now time.Time) (reqs []*request, wait time.Duration, exit bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cfg := &p.cfg
	empty, ready := true, false
	for i := range p.parts {
		q := &p.parts[i]
		if len(q.buf) == 0 {
			continue
		}
		empty = false
		if q.inflight || ready {
			continue
		}
		if p.stopping || q.buf[0].seq <= q.flushThrough || len(q.buf) >= cfg.BatchRecords || q.bufBytes >= cfg.BatchBytes {
			ready = true
			continue
		}
		due := q.buf[0].at.Add(cfg.Linger)
		if cfg.AlignLinger {
			due = alignedDue(q.buf[0].at, cfg.Linger, p.phase)
		}
		if p.waiters > 0 {
			due = now
		}
		if p.inflight > 0 {
			due = due.Add(p.reqTime)
		}
		if !now.Before(due) {
			ready = true
		} else if d := due.Sub(now); wait == 0 || d < wait {
			wait = d
		}
	}
	if empty && p.stopping {
		return nil, 0, true
	}
	if !ready || p.inflight >= cfg.MaxInFlightRequests {
		return nil, wait, false
	}
	var r *request
	records, bytes := 0, 0
	limit := p.requestBytes()
	for k := range p.nparts {
		part := (p.next + k) % p.nparts
		q := &p.parts[part]
		if len(q.buf) == 0 || q.inflight {
			continue
		}
		n, size := batchLen(q.buf, cfg, limit)
		if r == nil || records+n > wire.MaxRecordsPerBatch || bytes+size+frameOverhead > limit {
			if p.inflight+len(reqs) >= cfg.MaxInFlightRequests {
				continue
			}
			r = &request{}
			reqs = append(reqs, r)
			records, bytes = 0, 0
		}
		batch := slices.Clone(q.buf[:n])
		clear(q.buf[:n])
		q.buf = q.buf[n:]
		q.bufBytes -= size
		q.inflight = true
		r.frames = append(r.frames, frame{part: part, batch: batch})
		r.size += size
		records += n
		bytes += size + frameOverhead
		for m := p.maxBatch.Load(); int64(n) > m && !p.maxBatch.CompareAndSwap(m, int64(n)); {
			m = p.maxBatch.Load()
		}
	}
	p.next = (p.next + 1) % p.nparts
	p.inflight += len(reqs)
	p.wg.Add(len(reqs))
	return reqs, 0, false
}

// requestBytes bounds the record bytes plus frame overheads of one binary request:
// MaxBatchBytes, or less when the server takes smaller bodies (Client.maxBody, less the
// body's prologue), as the api function behind Lambda does (4 MiB).
func (p *Producer) requestBytes() int {
	if m := int(p.c.maxBody.Load()); m > 0 {
		return max(min(MaxBatchBytes, m-binaryPrologue), 1)
	}
	return MaxBatchBytes
}

// binaryPrologue is what a binary append body holds before its frames ("STRA", version).
const binaryPrologue = 5

// batchLen is how many of the first records of buf make one batch, and their bytes: up
// to BatchRecords and BatchBytes, and within limit with its frame's overhead, at least
// one.
func batchLen(buf []*Future, cfg *ProducerConfig, limit int) (n, size int) {
	most := min(cfg.BatchBytes, limit-frameOverhead)
	for n < len(buf) && n < cfg.BatchRecords {
		if n > 0 && size+buf[n].size > most {
			break
		}
		size += buf[n].size
		n++
	}
	return n, size
}

// sendRequest appends r, completes its futures and frees their buffer space, then
// makes its partitions eligible again. The futures complete before that, so that a
// partition's records complete in order.
func (p *Producer) sendRequest(r *request) {
	defer p.wg.Done()
	results, err := p.deliver(r)
	var acked, nfail, nrec int64
	var firstErr error
	for i, fr := range r.frames {
		var res []Result
		if i < len(results) {
			res = results[i]
		}
		var ferr error
		if err != nil {
			ferr = err
			if p.ctx.Err() != nil {
				ferr = fmt.Errorf("%w: %w", ErrProducerClosed, ferr)
			}
			ferr = fmt.Errorf("strata: produce to %s/%d: %w", p.topic, fr.part, ferr)
		}
		ok := true
		for j, f := range fr.batch {
			switch {
			case err == nil:
				f.res = res[j]
			case len(res) == len(fr.batch) && res[j].Err == nil:
				// Appended before the request failed: in a partially failed request whose
				// retries ran out, or in an earlier request of one split for JSON.
				f.res = res[j]
			default:
				f.err = ferr
				nfail++
				ok = false
				if firstErr == nil {
					firstErr = ferr
				}
			}
			f.rec = Record{}
		}
		if ok {
			acked++
		}
		nrec += int64(len(fr.batch))
	}
	// Counters and Flush's failure tally are updated before the futures complete, so
	// whoever waits on a future sees them.
	p.batches.Add(acked)
	p.sent.Add(nrec - nfail)
	p.failed.Add(nfail)
	p.mu.Lock()
	p.buffered -= r.size
	close(p.spaceCh)
	p.spaceCh = make(chan struct{})
	if nfail > 0 {
		if p.failN == 0 {
			p.firstErr = firstErr
		}
		p.failN += nfail
	}
	p.mu.Unlock()
	for _, fr := range r.frames {
		for _, f := range fr.batch {
			close(f.done)
		}
	}
	p.mu.Lock()
	for _, fr := range r.frames {
		p.parts[fr.part].inflight = false
	}
	p.inflight--
	if r.took > 0 {
		if p.reqTime == 0 {
			p.reqTime = r.took
		} else {
			p.reqTime += (r.took - p.reqTime) / 8
		}
	}
	p.mu.Unlock()
	p.signal()
}

// deliver appends r: as one binary append, unless the server is known not to take
// blocks or refuses this one's content type, then as JSON. It returns, per frame, one
// Result per record, or an error with, when some records were appended nonetheless,
// their Results (Err nil) among the others (Err set) for the frames it knows them of.
//
// A first attempt refused as too large (413: a server taking smaller bodies than the
// Producer knew, nothing of it appended) is split into requests within the limit it
// now knows (deliverSplit).
func (p *Producer) deliver(r *request) ([][]Result, error) {
	if p.c.blocks.Load() != blocksOff {
		res, refused, err := p.deliverBlocks(r)
		switch refused {
		case refusedNot:
			return res, err
		case refusedTooLarge:
			return p.deliverSplit(r, err)
		}
	}
	return p.deliverJSON(r)
}

// Why a first attempt was refused with nothing appended (deliverBlocks).
const (
	refusedNot      = iota
	refusedFormat   // the server does not take the binary format
	refusedTooLarge // the body is larger than the server takes
)

// deliverSplit delivers r, whose first attempt was refused whole as too large (err), as
// requests within requestBytes, one after the other so that each partition's records
// keep their order, and assembles r's per-frame results from theirs. After a failed
// request the rest are not sent and fail with its error. A request that cannot be split
// (one record) fails with err.
func (p *Producer) deliverSplit(r *request, err error) ([][]Result, error) {
	subs := splitRequest(r, p.requestBytes())
	if len(subs) < 2 {
		return nil, err
	}
	frameOf := make(map[int32]int, len(r.frames))
	for i, fr := range r.frames {
		frameOf[fr.part] = i
	}
	out := make([][]Result, len(r.frames))
	var firstErr error
	var took time.Duration
	for _, sub := range subs {
		var res [][]Result
		err := firstErr
		if err == nil {
			res, err = p.deliver(sub)
			took += sub.took
		}
		for i, fr := range sub.frames {
			k := frameOf[fr.part]
			if i < len(res) && len(res[i]) == len(fr.batch) {
				out[k] = append(out[k], res[i]...)
				continue
			}
			for range fr.batch {
				out[k] = append(out[k], Result{Partition: fr.part, Err: err})
			}
		}
		if firstErr == nil && err != nil {
			firstErr = err
		}
	}
	if firstErr == nil {
		r.took = took
	}
	return out, firstErr
}

// splitRequest cuts r's records, in order, into requests whose record bytes plus frame
// overheads stay within limit (a record larger than that goes alone), each partition at
// most once per request.
func splitRequest(r *request, limit int) []*request {
	var out []*request
	cur, bytes := &request{}, 0
	for _, fr := range r.frames {
		for batch := fr.batch; len(batch) > 0; {
			n, size := 0, 0
			for n < len(batch) && bytes+frameOverhead+size+batch[n].size <= limit {
				size += batch[n].size
				n++
			}
			if n == 0 && len(cur.frames) > 0 {
				out, cur, bytes = append(out, cur), &request{}, 0
				continue
			}
			if n == 0 {
				n, size = 1, batch[0].size
			}
			cur.frames = append(cur.frames, frame{part: fr.part, batch: batch[:n:n]})
			cur.size += size
			bytes += frameOverhead + size
			if batch = batch[n:]; len(batch) > 0 {
				out, cur, bytes = append(out, cur), &request{}, 0
			}
		}
	}
	if len(cur.frames) > 0 {
		out = append(out, cur)
	}
	return out
}

// blocksRefused reports whether err, the answer to the first attempt of a binary
// append, says the server does not take the binary format, and if so remembers it for
// the Client's life. That is a 415; or a 400 before any binary append succeeded, which
// is what a server predating the format (it parses the body as JSON) or a proxy that
// mangles binary bodies answers. Nothing of the request was appended then (no earlier
// attempt exists), so it may be sent again as JSON under a new key. The answer to a
// retry is never read so: an earlier attempt may have been appended with its answer
// lost, and re-sending it under another key would append it twice.
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

// deliverBlocks sends r as one binary append, a frame per partition, retrying with the
// same Idempotency-Key and the very same bytes. refused reports that the first attempt
// was refused with nothing appended: as a format the server does not take
// (blocksRefused; the caller sends r as JSON instead), or as too large (the caller
// splits r).
func (p *Producer) deliverBlocks(r *request) (results [][]Result, refused int, err error) {
	body := make([]byte, 0, 5+r.size+len(r.frames)*frameOverhead)
	body = wire.AppendRequest(body, nil)
	var recs []segment.Record
	for _, fr := range r.frames {
		recs = recs[:0]
		for _, f := range fr.batch {
			recs = append(recs, segment.Record{Timestamp: f.ts, Key: f.rec.Key, Value: f.rec.Value, Headers: f.rec.headers()})
		}
		// A frame is its partition (big-endian int32) then its block, appended in place
		// rather than built apart and copied.
		body = binary.BigEndian.AppendUint32(body, uint32(fr.part))
		var err error
		if body, err = segment.AppendBlock(body, recs); err != nil {
			return nil, refusedNot, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
	}
	key := p.requestKey()
	err = p.retry(len(r.frames), func(attempt int, elapsed time.Duration, floor wire.BatchMark) error {
		start := time.Now()
		blocks, err := p.c.appendBlocks(p.ctx, p.topic, body, appendIdem{key: key, attempt: attempt, producer: true, elapsed: elapsed, floor: floor})
		if err != nil && attempt == 0 && p.blocksRefused(err) {
			refused = refusedFormat
			return err
		}
		if err != nil && attempt == 0 && p.c.tooLarge(err, len(body)) {
			refused = refusedTooLarge
			return err
		}
		results = nil
		if err == nil {
			p.c.blocks.CompareAndSwap(blocksUnknown, blocksOn)
			results, err = frameResults(blocks, r.frames)
			if err == nil {
				r.took = time.Since(start)
			}
			return err
		}
		if res, rerr := frameResults(blocks, r.frames); rerr == nil {
			results = res
		}
		return err
	})
	return results, refused, err
}

// frameResults maps the answer to a binary append of frames to per-record Results, per
// frame: it must hold one result per frame, in frame order, each of which blockResults
// checks against its frame.
func frameResults(blocks []wire.BlockResult, frames []frame) ([][]Result, error) {
	if len(blocks) != len(frames) {
		return nil, fmt.Errorf("%w: %d results for %d blocks", ErrBadResponse, len(blocks), len(frames))
	}
	out := make([][]Result, len(frames))
	for i, fr := range frames {
		res, err := blockResults(blocks[i:i+1], fr.part, len(fr.batch))
		if err != nil {
			return nil, fmt.Errorf("result %d: %w", i, err)
		}
		out[i] = res
	}
	return out, nil
}

// blockResults maps the answer for one frame, n records for part, to per-record
// Results. The one result must be that frame's (partition and count) with a base
// offset; anything else is ErrBadResponse. The "blocks" extra of a partial failure may
// give the frame an error instead: its records get it, and blockResults returns them
// with a nil error, for the caller to keep beside the request's error.
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

// deliverJSON sends r as JSON, each record with its explicit partition, in as few
// requests as the server's limits allow (blocks are smaller than the JSON of their
// records, base64 and field names included, so a request may need more than one), one
// after the other. A failed JSON request fails the rest of r.
func (p *Producer) deliverJSON(r *request) ([][]Result, error) {
	var all []*Future
	var parts []int32
	for _, fr := range r.frames {
		for _, f := range fr.batch {
			all = append(all, f)
			parts = append(parts, fr.part)
		}
	}
	results := make([]Result, 0, len(all))
	for done := 0; done < len(all); {
		n := jsonChunk(all[done:], p.jsonBytes())
		res, tooLarge, err := p.sendJSON(all[done:done+n], parts[done:done+n])
		if tooLarge && jsonChunk(all[done:], p.jsonBytes()) < n {
			continue // nothing appended; cut again within the limit now known
		}
		if err != nil {
			out := make([]Result, len(all))
			copy(out, results)
			for i := done; i < len(all); i++ {
				out[i] = Result{Partition: parts[i], Err: err}
				if j := i - done; j < len(res) && res[j].Err == nil {
					out[i] = res[j]
				}
			}
			return splitResults(out, r.frames), err
		}
		results = append(results, res...)
		done += n
	}
	return splitResults(results, r.frames), nil
}

// splitResults cuts the Results of r's records, in frame order, into one slice per frame.
func splitResults(res []Result, frames []frame) [][]Result {
	out := make([][]Result, len(frames))
	for i, fr := range frames {
		out[i], res = res[:len(fr.batch):len(fr.batch)], res[len(fr.batch):]
	}
	return out
}

// jsonBytes bounds the jsonSize sum of one JSON request: MaxBatchBytes, or less when
// the server takes smaller bodies (Client.maxBody, less the body's wrapper).
func (p *Producer) jsonBytes() int {
	if m := int(p.c.maxBody.Load()); m > 0 {
		return max(min(MaxBatchBytes, m-jsonWrapper), 1)
	}
	return MaxBatchBytes
}

// jsonWrapper bounds what a JSON append body holds beside its records' jsonSize.
const jsonWrapper = 64

// jsonChunk is how many of the first records of recs fit one JSON request: their
// jsonSize sum stays within limit (one record always fits).
func jsonChunk(recs []*Future, limit int) int {
	n, size := 0, 0
	for n < len(recs) {
		size += jsonSize(recs[n].rec)
		if n > 0 && size > limit {
			break
		}
		n++
	}
	return n
}

// sendJSON sends chunk as one JSON request, record i with the explicit partition
// parts[i], retrying with the same Idempotency-Key and the very same body. On failure it
// returns the Results of a partial failure if every appended record landed on its
// partition, else none. tooLarge reports that the first attempt was refused as too
// large (nothing appended; the Client's maxBody is now below the body's size).
func (p *Producer) sendJSON(chunk []*Future, parts []int32) (_ []Result, tooLarge bool, _ error) {
	recs := make([]Record, len(chunk))
	for i, f := range chunk {
		recs[i] = f.rec
		recs[i].Timestamp = time.UnixMilli(f.ts)
		recs[i].Partition = &parts[i]
	}
	body, err := encodeAppend(recs, nil)
	if err != nil {
		return nil, false, err
	}
	key := p.requestKey()
	var res []Result
	err = p.retry(len(distinctParts(parts)), func(attempt int, elapsed time.Duration, floor wire.BatchMark) error {
		var err error
		res, err = p.c.appendBody(p.ctx, p.topic, body, len(chunk), appendIdem{key: key, attempt: attempt, producer: true, elapsed: elapsed, floor: floor})
		if err != nil && attempt == 0 && p.c.tooLarge(err, len(body)) {
			tooLarge = true
		}
		if i := strayResult(res, parts); i >= 0 {
			r := res[i]
			res = nil
			if err == nil {
				err = fmt.Errorf("%w: record %d for partition %d landed on %d", ErrBadResponse, i, parts[i], r.Partition)
			}
		}
		return err
	})
	return res, tooLarge, err
}

// distinctParts counts the partitions of parts, in which each partition's records are
// adjacent.
func distinctParts(parts []int32) []int32 { return slices.Compact(slices.Clone(parts)) }

// strayResult is the index of the first appended record of res not on parts[i], or -1.
func strayResult(res []Result, parts []int32) int {
	for i, r := range res {
		if r.Err == nil && (i >= len(parts) || r.Partition != parts[i]) {
			return i
		}
	}
	return -1
}

// requestKey is the Idempotency-Key of the producer's next request: its producer id
// and the request's sequence number (wire.ProducerRequestKey), one per request, which
// every attempt of the request sends.
func (p *Producer) requestKey() string {
	return wire.ProducerRequestKey(p.id, p.seq.Add(1)-1)
}

// retry calls send with the attempt number (0 first), on a retry the time since the
// first attempt was sent (monotonic), and the request's batch floor (the topic's batch
// mark the Client had received when the first attempt was sent, the same on every
// attempt: every batch that can hold an attempt is numbered above it), for one request
// of frames partition batches,
// until it succeeds, fails for good (not retryable), the producer gives up, MaxRetries
// retries are spent, or the next retry would be sent past DeliveryTimeout after the
// first attempt (then ErrDeliveryTimeout wrapping the last error), waiting retryDelay
// between attempts.
func (p *Producer) retry(frames int, send func(attempt int, elapsed time.Duration, floor wire.BatchMark) error) error {
	var first time.Time
	var floor wire.BatchMark
	for attempt := 0; ; attempt++ {
		var elapsed time.Duration
		if attempt == 0 {
			floor, first = p.c.batchFloor(p.topic), time.Now()
		} else {
			elapsed = time.Since(first)
		}
		p.requests.Add(1)
		p.frames.Add(int64(frames))
		err := send(attempt, elapsed, floor)
		if err == nil || p.ctx.Err() != nil || !producerRetryable(err) || attempt >= p.cfg.MaxRetries {
			return err
		}
		delay := p.retryDelay(attempt, err)
		if time.Since(first)+delay > p.cfg.DeliveryTimeout {
			return deliveryTimeout(p.cfg.DeliveryTimeout, attempt+1, err)
		}
		if !sleepCtx(p.ctx, delay) {
			return err
		}
		if time.Since(first) > p.cfg.DeliveryTimeout {
			return deliveryTimeout(p.cfg.DeliveryTimeout, attempt+1, err)
		}
		p.retries.Add(1)
	}
}

// ErrDeliveryTimeout fails the records of a request whose next retry would have been
// sent past ProducerConfig.DeliveryTimeout after its first attempt; it wraps the last
// attempt's error. Whether the records were appended is unknown (an answer may have
// been lost), as with Kafka's delivery.timeout.ms.
var ErrDeliveryTimeout = errors.New("strata: delivery timeout")

// deliveryTimeout is the error of a request given up at the delivery timeout d after
// attempts attempts, the last failing with err.
func deliveryTimeout(d time.Duration, attempts int, err error) error {
	return fmt.Errorf("%w (%v, %d attempts), the last: %w", ErrDeliveryTimeout, d, attempts, err)
}

// producerRetryable says whether the Producer retries a request that failed with err:
// when IsRetryable, and on ErrSuperseded (another delivery of the same attempt fenced
// it, so the next attempt decides the request's outcome).
func producerRetryable(err error) bool {
	return IsRetryable(err) || errors.Is(err, ErrSuperseded)
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
