package kafka

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

// Sequence rows are written through one rowCell per row on each gateway: the changes
// that arrive while a write is under way (a pipelining producer's next batch recorded
// in flight, the one before recorded appended) are applied together and written as one
// conditional write, on the row as last written or read. The store stays the authority:
// a write that finds the row moved (another gateway wrote it) rereads it and applies the
// changes again, and a change that decides without writing (a refusal, a duplicate) is
// decided on a row read for it, never on the cached copy alone.

// maxCachedRows bounds the idle rows a gateway keeps cached.
const maxCachedRows = 4096

// rowChange is one change of a sequence row: from the row (exists false: none yet) it
// returns the row to write (write false: nothing to write) and whether what it decided
// needs the row read from the store (fresh) rather than the cached copy.
type rowChange func(row seqRow, exists bool) (next seqRow, write, needsFresh bool)

type rowOp struct {
	change rowChange
	done   chan struct{}
	err    error
	// queued says no caller waits for the op (queueRowChange): a failed write is logged.
	queued bool
	// applied, when not nil, is closed once the change is applied to the row about to
	// be written (or decided without a write): its decision stands unless that write
	// loses a race and the change runs again.
	applied chan struct{}
}

// markApplied closes op.applied, once (only the row's flusher calls it).
func (op *rowOp) markApplied() {
	if op.applied == nil {
		return
	}
	select {
	case <-op.applied:
	default:
		close(op.applied)
	}
}

// rowCell is one row's writer on this gateway.
type rowCell struct {
	mu       sync.Mutex
	queue    []*rowOp
	flushing bool
	// valid, ver and row are the row as last read or written (only the flusher uses them).
	valid bool
	ver   int64
	row   seqRow
}

// rowCells are a gateway's sequence rows being written or cached.
type rowCells struct {
	mu    sync.Mutex
	cells map[string]*rowCell
}

func (rc *rowCells) cell(key string) *rowCell {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.cells == nil {
		rc.cells = map[string]*rowCell{}
	}
	c := rc.cells[key]
	if c == nil {
		if len(rc.cells) >= maxCachedRows {
			rc.evictIdle()
		}
		c = &rowCell{}
		rc.cells[key] = c
	}
	return c
}

// evictIdle forgets the cached rows no writer is using (rc.mu held).
func (rc *rowCells) evictIdle() {
	for k, c := range rc.cells {
		if c.mu.TryLock() {
			if !c.flushing && len(c.queue) == 0 {
				delete(rc.cells, k)
			}
			c.mu.Unlock()
		}
	}
}

// startRowChange queues ch on the row under key behind the changes queued before it and
// returns its op at once: op.applied is closed once ch's decision is about to be
// written, op.done once it is (op.err its outcome). ch may run more than once (the row
// moved under another writer): its last run is the one that counts. queued, when not
// nil, is called once the op has its place in the queue: a change queued after that is
// applied after ch.
func (s *Server) startRowChange(ps store.ProducerStore, key string, ch rowChange, queued func()) *rowOp {
	op := &rowOp{change: ch, done: make(chan struct{}), applied: make(chan struct{})}
	s.enqueueRowOp(ps, key, op, queued)
	return op
}

// queueRowChange queues ch on the row under key and returns before it is written. The
// row's writer applies it before every change queued after it, so the next batch
// recorded in flight on this gateway writes it too; Close waits for it. A change lost
// with its gateway (a crash before the write) leaves what it would have recorded
// undone, which the row's readers must tolerate (planBatch's stale batches in flight).
func (s *Server) queueRowChange(ps store.ProducerStore, key string, ch rowChange) {
	s.enqueueRowOp(ps, key, &rowOp{change: ch, done: make(chan struct{}), queued: true}, nil)
}

// enqueueRowOp puts op in the queue of key's row writer, calls queued (when not nil) and
// starts the writer when none is running; the writers' goroutines count in s.rowWriters.
func (s *Server) enqueueRowOp(ps store.ProducerStore, key string, op *rowOp, queued func()) {
	c := s.rows.cell(key)
	c.mu.Lock()
	c.queue = append(c.queue, op)
	start := !c.flushing
	c.flushing = true
	c.mu.Unlock()
	if queued != nil {
		queued()
	}
	if start {
		s.rowWriters.Add(1)
		go s.drainRow(ps, key, c)
	}
}

// drainRow writes c's queued changes until none is left, then stops flushing. Its
// caller counted it in s.rowWriters.
func (s *Server) drainRow(ps store.ProducerStore, key string, c *rowCell) {
	defer s.rowWriters.Done()
	for {
		c.mu.Lock()
		ops := c.queue
		c.queue = nil
		if len(ops) == 0 {
			c.flushing = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		s.flushRow(s.rowCtx, ps, key, c, ops)
	}
}

// flushRow applies ops in order to c's row and writes the result once, conditionally
// on the version it was read at; a lost race rereads the row and applies them again.
// Each op is then done, with the write's error.
func (s *Server) flushRow(ctx context.Context, ps store.ProducerStore, key string, c *rowCell, ops []*rowOp) {
	err := func() error {
		for range rowAttempts {
			fresh := false
			if !c.valid {
				var row seqRow
				ver, err := loadRow(ctx, ps, key, &row)
				if err != nil {
					return err
				}
				c.row, c.ver, c.valid, fresh = row, ver, true, true
			}
			row, write, stale := c.row, false, false
			for _, op := range ops {
				next, w, needsFresh := op.change(row, c.ver > 0 || write)
				if needsFresh && !fresh {
					stale = true
					break
				}
				if w {
					row, write = next, true
				}
			}
			if stale {
				c.valid = false
				continue
			}
			for _, op := range ops {
				op.markApplied()
			}
			if !write {
				return nil
			}
			ok, err := putRow(ctx, ps, key, row, c.ver, time.Now())
			if err != nil || !ok {
				c.valid = false
				if err != nil {
					return err
				}
				continue
			}
			c.row, c.ver = row, c.ver+1
			return nil
		}
		return fmt.Errorf("%w: the sequence row kept moving under concurrent writers", store.ErrUnavailable)
	}()
	for _, op := range ops {
		op.err = err
		if op.queued && err != nil {
			s.logger.Warn("kafka: a queued sequence-row change was not written", "row", key, "error", err)
		}
		close(op.done)
	}
}
