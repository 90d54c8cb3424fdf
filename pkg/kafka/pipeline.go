package kafka

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"

	"github.com/stratalog/strata/pkg/log"
)

// Pipelining. A Kafka client sends up to max.in.flight.requests.per.connection requests
// (five by default) without waiting, and Kafka answers them in request order. The
// gateway serves a connection's produce requests concurrently, up to maxInFlight at once,
// and writes the answers in request order; every other request waits for those before it
// and holds back those after it, so it runs alone, as before. Produce requests of a
// connection keep their order on each partition: each partition's append is enqueued
// in the log after the connection's previous one there (log.Enqueue), so consecutive
// requests can share one commit, and a producer's batch is recorded in flight in its
// sequence row only after the batch before it was: its change of the row is queued
// behind the one before's as soon as that is queued, not once it is written, so the
// in-flight records of consecutive batches share the row's writes.

// maxInFlight bounds the requests of one connection being served at once.
const maxInFlight = 8

// produceKey is the key of the requests served concurrently: a consumer has one fetch in
// flight per connection, and serving a client's other requests one at a time keeps the
// store's load from one connection as it was (a serialising emulator showed group
// heartbeats queued behind a pipelined client's metadata and offset requests).
const produceKey int16 = 0

func pipelined(key int16) bool { return key == produceKey }

// answer is one request's response, written in request order once done is closed.
type answer struct {
	done chan struct{}
	resp []byte
	err  error
}

// serveConn answers c's requests until the peer goes, a frame is malformed or the
// server closes: the answers in request order, the requests served as above.
func (s *Server) serveConn(c net.Conn, b broker) {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	r := bufio.NewReaderSize(c, 64<<10)
	ss := s.newSession()
	order := &connOrder{last: map[topicPartition]*partSlot{}}
	answers := make(chan *answer, maxInFlight)
	written := make(chan struct{})
	go func() {
		defer close(written)
		s.writeAnswers(ctx, c, answers, cancel)
	}()
	var running sync.WaitGroup
	defer func() {
		close(answers)
		<-written
		running.Wait()
	}()
	var size [4]byte
	var turn chan struct{} // closed once the previous produce request took its places
	for {
		if _, err := io.ReadFull(r, size[:]); err != nil {
			return
		}
		n := int32(binary.BigEndian.Uint32(size[:]))
		if n < minFrame || int(n) > s.cfg.MaxFrameBytes {
			s.logger.Warn("kafka: closing a connection: frame size out of bounds", "remote", c.RemoteAddr().String(), "size", n, "max", s.cfg.MaxFrameBytes)
			return
		}
		// The frame's buffer grows as its bytes arrive, so a peer that announces a
		// large frame and sends nothing holds no more than it sent.
		var frame bytes.Buffer
		if _, err := io.CopyN(&frame, r, int64(n)); err != nil {
			return
		}
		key := int16(binary.BigEndian.Uint16(frame.Bytes()))
		concurrent := pipelined(key) && ss.phase == phaseAuthorized
		if !concurrent {
			running.Wait()
		}
		a := &answer{done: make(chan struct{})}
		select {
		case answers <- a:
		case <-ctx.Done():
			return
		}
		if !concurrent {
			a.resp, a.err = s.serveFrame(ctx, b, ss, frame.Bytes())
			close(a.done)
			if a.err != nil {
				return
			}
			continue
		}
		rctx := ctx
		if key == produceKey {
			pt := &produceTurn{order: order, prev: turn, mine: make(chan struct{})}
			turn = pt.mine
			rctx = withProduceTurn(ctx, pt)
		}
		running.Add(1)
		go func() {
			defer running.Done()
			defer close(a.done)
			a.resp, a.err = s.serveFrame(rctx, b, ss, frame.Bytes())
			if pt := produceTurnOf(rctx); pt != nil {
				pt.taken()
			}
		}()
	}
}

// writeAnswers writes the answers in order as each is done, flushing when the next is
// not done yet (so answers done together share a write); after one that closes the
// connection, or a failed write, it closes c and ends the connection's requests.
func (s *Server) writeAnswers(ctx context.Context, c net.Conn, answers <-chan *answer, cancel context.CancelFunc) {
	w := bufio.NewWriterSize(c, 64<<10)
	failed := false
	var next *answer
	for {
		a := next
		next = nil
		if a == nil {
			var ok bool
			if a, ok = <-answers; !ok {
				break
			}
		}
		<-a.done
		if failed {
			continue
		}
		if len(a.resp) > 0 {
			_, err := w.Write(a.resp)
			failed = err != nil
		}
		if a.err != nil {
			if ctx.Err() == nil {
				s.logger.Warn("kafka: closing a connection", "remote", c.RemoteAddr().String(), "error", a.err)
			}
			_ = w.Flush()
			failed = true
		}
		if !failed {
			select {
			case next = <-answers: // nil once closed
			default:
			}
			if next == nil || !isDone(next) {
				failed = w.Flush() != nil
			}
		}
		if failed {
			cancel()
			_ = c.Close()
		}
	}
	if !failed {
		_ = w.Flush()
	}
}

func isDone(a *answer) bool {
	select {
	case <-a.done:
		return true
	default:
		return false
	}
}

// topicPartition names a partition by its topic's name.
type topicPartition struct {
	topic     string
	partition int32
}

// connOrder is a connection's last produce job on each partition.
type connOrder struct {
	mu   sync.Mutex
	last map[topicPartition]*partSlot
}

// partSlot is one produce job's place on its partition. It is passed in two steps: rows
// is closed once the job's change of its producer's sequence row is queued in the row's
// writer (rows.go), so the next job there may queue its own, which the writer applies
// after it, in the same write or the next; ready is closed once its append is enqueued
// (q, nil when it appends nothing), so the next job may enqueue its own. Releasing a
// job passes both.
type partSlot struct {
	ready    chan struct{}
	once     sync.Once
	q        *log.Queued
	rows     chan struct{}
	rowsOnce sync.Once
}

func newPartSlot() *partSlot {
	return &partSlot{ready: make(chan struct{}), rows: make(chan struct{})}
}

func (p *partSlot) release(q *log.Queued) {
	if p == nil {
		return
	}
	p.rowQueued()
	p.once.Do(func() {
		p.q = q
		close(p.ready)
	})
}

// rowQueued lets the next job on the partition queue its sequence-row change.
func (p *partSlot) rowQueued() {
	if p == nil {
		return
	}
	p.rowsOnce.Do(func() { close(p.rows) })
}

// waitRow waits until the job before has queued its sequence-row change (or was
// released).
func (p *partSlot) waitRow(ctx context.Context) error {
	if p == nil {
		return nil
	}
	select {
	case <-p.rows:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// wait waits until the job before is enqueued and returns its append (nil if none).
func (p *partSlot) wait(ctx context.Context) (*log.Queued, error) {
	if p == nil {
		return nil, nil
	}
	select {
	case <-p.ready:
		return p.q, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// produceTurn is a produce request's turn to take its places: after the connection's
// previous produce request took its own (prev closed), before the next (mine).
type produceTurn struct {
	order *connOrder
	prev  chan struct{}
	mine  chan struct{}
	once  sync.Once
}

// places takes the request's place on each partition, in request order, and returns
// each partition's job before it (nil: none).
func (t *produceTurn) places(ctx context.Context, parts []topicPartition) ([]*partSlot, []*partSlot, error) {
	if t.prev != nil {
		select {
		case <-t.prev:
		case <-ctx.Done():
			t.taken()
			return nil, nil, ctx.Err()
		}
	}
	defer t.taken()
	t.order.mu.Lock()
	defer t.order.mu.Unlock()
	before, mine := make([]*partSlot, len(parts)), make([]*partSlot, len(parts))
	for i, k := range parts {
		mine[i] = newPartSlot()
		before[i] = t.order.last[k]
		t.order.last[k] = mine[i]
	}
	return before, mine, nil
}

// taken lets the next produce request take its places (once).
func (t *produceTurn) taken() { t.once.Do(func() { close(t.mine) }) }

type produceTurnKey struct{}

func withProduceTurn(ctx context.Context, t *produceTurn) context.Context {
	return context.WithValue(ctx, produceTurnKey{}, t)
}

func produceTurnOf(ctx context.Context) *produceTurn {
	t, _ := ctx.Value(produceTurnKey{}).(*produceTurn)
	return t
}
