package local

import (
	"errors"
	"fmt"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// txQueue runs write functions in shared bbolt transactions, group commit without a
// timer: a call made while no transaction of the queue runs starts one at once, and calls
// made while one runs wait for it and then share the next. So a lone write pays no delay,
// and concurrent writes share one commit (and its two fdatasyncs) as bbolt's Batch lets
// them, without Batch's wait for more callers — which, on a write path whose writes come
// one after another (a topic's commits, each after the one before), only adds latency.
//
// A function must be safe to run more than once: when one fails, the transaction is rolled
// back, the others run again without it, and it runs alone, its own error its answer
// (bbolt's Batch does the same). A panic in one fails only its caller, as that panic.
type txQueue struct {
	db *bolt.DB

	mu      sync.Mutex
	busy    bool      // a caller is running the queue's transactions
	pending []*txCall // calls waiting for the next transaction
}

type txCall struct {
	fn func(*bolt.Tx) error
	// done gets the call's outcome: its error, errRunAlone, or errLead when the caller
	// is to run the queue's next transaction.
	done chan error
}

var (
	errRunAlone = errors.New("local: run the write alone")
	errLead     = errors.New("local: run the queue's next transaction")
)

// update runs fn in a write transaction, shared with the calls waiting with it.
func (q *txQueue) update(fn func(*bolt.Tx) error) error {
	c := &txCall{fn: fn, done: make(chan error, 1)}
	q.mu.Lock()
	q.pending = append(q.pending, c)
	lead := !q.busy
	q.busy = true
	q.mu.Unlock()
	if lead {
		q.lead()
	}
	err := <-c.done
	if errors.Is(err, errLead) {
		q.lead()
		err = <-c.done
	}
	if errors.Is(err, errRunAlone) {
		return q.db.Update(fn)
	}
	return err
}

// lead runs one transaction of the calls waiting now, then hands the queue to the first
// caller that arrived meanwhile (so no caller keeps writing others' transactions after
// its own is done), or marks it idle.
func (q *txQueue) lead() {
	q.mu.Lock()
	calls := q.pending
	q.pending = nil
	q.mu.Unlock()
	runShared(q.db, calls)
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.pending) == 0 {
		q.busy = false
		return
	}
	q.pending[0].done <- errLead
}

// runShared runs calls in one transaction; a call that fails is taken out and told to
// run alone, and the others run again.
func runShared(db *bolt.DB, calls []*txCall) {
	for len(calls) > 0 {
		failed := -1
		err := db.Update(func(tx *bolt.Tx) error {
			for i, c := range calls {
				if err := callSafely(c.fn, tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if failed < 0 {
			for _, c := range calls {
				c.done <- err
			}
			return
		}
		calls[failed].done <- errRunAlone
		calls = append(calls[:failed:failed], calls[failed+1:]...)
	}
}

// callSafely runs fn, a panic its error (the caller then runs fn alone, and panics).
func callSafely(fn func(*bolt.Tx) error, tx *bolt.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("local: a write panicked: %v", p)
		}
	}()
	return fn(tx)
}
