package local

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func openQueue(t *testing.T) *txQueue {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "q.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucket([]byte("b"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return &txQueue{db: db}
}

func put(k string) func(*bolt.Tx) error {
	return func(tx *bolt.Tx) error { return tx.Bucket([]byte("b")).Put([]byte(k), []byte(k)) }
}

func stored(t *testing.T, q *txQueue) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	if err := q.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("b")).ForEach(func(k, _ []byte) error {
			got[string(k)] = true
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// waitPending blocks until n calls wait for the queue's next transaction.
func waitPending(q *txQueue, n int) {
	for {
		q.mu.Lock()
		k := len(q.pending)
		q.mu.Unlock()
		if k >= n {
			return
		}
		runtime.Gosched()
	}
}

// TestTxQueueSharesTheNextTransaction: calls made while a transaction runs wait for it
// and then commit together, in one transaction of their own.
func TestTxQueueSharesTheNextTransaction(t *testing.T) {
	q := openQueue(t)
	release := make(chan struct{})
	var mu sync.Mutex
	txOf := map[string]int{}
	record := func(k string, tx *bolt.Tx) {
		mu.Lock()
		defer mu.Unlock()
		txOf[k] = tx.ID()
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := q.update(func(tx *bolt.Tx) error {
			record("first", tx)
			<-release
			return put("first")(tx)
		}); err != nil {
			t.Error(err)
		}
	})
	// The first call runs at once: its transaction is under way with nothing waiting.
	for {
		mu.Lock()
		_, ok := txOf["first"]
		mu.Unlock()
		if ok {
			break
		}
		runtime.Gosched()
	}
	for i := range 3 {
		k := fmt.Sprint("next", i)
		wg.Go(func() {
			if err := q.update(func(tx *bolt.Tx) error { record(k, tx); return put(k)(tx) }); err != nil {
				t.Error(err)
			}
		})
	}
	waitPending(q, 3)
	close(release)
	wg.Wait()
	if txOf["next0"] == txOf["first"] || txOf["next0"] != txOf["next1"] || txOf["next1"] != txOf["next2"] {
		t.Fatalf("transactions %v: want the first alone and the three after it in one", txOf)
	}
	if got := stored(t, q); len(got) != 4 {
		t.Fatalf("stored %v, want all four", got)
	}
	if q.busy || len(q.pending) != 0 {
		t.Fatalf("queue busy %v with %d pending after every call returned", q.busy, len(q.pending))
	}
}

// TestTxQueueFailureIsTheCallersAlone: a call that fails gets its own error and writes
// nothing; the calls sharing its transaction commit.
func TestTxQueueFailureIsTheCallersAlone(t *testing.T) {
	q := openQueue(t)
	release := make(chan struct{})
	started := make(chan struct{})
	boom := errors.New("boom")
	var wg sync.WaitGroup
	wg.Go(func() {
		_ = q.update(func(tx *bolt.Tx) error {
			select {
			case <-started:
			default:
				close(started)
			}
			<-release
			return put("first")(tx)
		})
	})
	<-started
	errs := make([]error, 3)
	for i := range 3 {
		wg.Go(func() {
			errs[i] = q.update(func(tx *bolt.Tx) error {
				if err := put(fmt.Sprint("k", i))(tx); err != nil {
					return err
				}
				if i == 1 {
					return boom
				}
				return nil
			})
		})
	}
	waitPending(q, 3)
	close(release)
	wg.Wait()
	if errs[0] != nil || !errors.Is(errs[1], boom) || errs[2] != nil {
		t.Fatalf("errors %v: want only the second call's", errs)
	}
	got := stored(t, q)
	if !got["k0"] || got["k1"] || !got["k2"] || !got["first"] {
		t.Fatalf("stored %v: want first, k0 and k2, not k1", got)
	}
}

// TestTxQueuePanicIsTheCallersAlone: a call that panics panics in its caller and writes
// nothing; the others commit.
func TestTxQueuePanicIsTheCallersAlone(t *testing.T) {
	q := openQueue(t)
	var wg sync.WaitGroup
	panicked := make(chan any, 8)
	for i := range 8 {
		wg.Go(func() {
			defer func() { panicked <- recover() }()
			_ = q.update(func(tx *bolt.Tx) error {
				if i == 3 {
					panic("boom")
				}
				return put(fmt.Sprint("k", i))(tx)
			})
		})
	}
	wg.Wait()
	close(panicked)
	n := 0
	for p := range panicked {
		if p != nil {
			n++
		}
	}
	got := stored(t, q)
	if n != 1 || len(got) != 7 || got["k3"] {
		t.Fatalf("%d panics, stored %v: want one panic and the other seven keys", n, got)
	}
}
