package kafka

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/store/local"
)

// heldRows is the embedded metadata store with one producer-row write held: once armed,
// the next PutProducerRow says so on entered and waits for release.
type heldRows struct {
	*local.MetaStore
	mu      sync.Mutex
	armed   bool
	entered chan struct{}
	release chan struct{}
	// holding is set while the held write waits; committedWhileHeld says a batch was
	// sequenced meanwhile.
	holding, committedWhileHeld bool
}

func (h *heldRows) PutProducerRow(ctx context.Context, key string, data []byte, prev int64, expires time.Time) error {
	h.mu.Lock()
	hold := h.armed
	h.armed = false
	h.holding = hold
	h.mu.Unlock()
	if hold {
		close(h.entered)
		<-h.release
		h.mu.Lock()
		h.holding = false
		h.mu.Unlock()
	}
	return h.MetaStore.PutProducerRow(ctx, key, data, prev, expires)
}

func (h *heldRows) SequenceBatch(ctx context.Context, cs []store.SeqCommit) ([]store.SeqCommit, []error) {
	h.mu.Lock()
	if h.holding {
		h.committedWhileHeld = true
	}
	h.mu.Unlock()
	return h.MetaStore.SequenceBatch(ctx, cs)
}

// signalledObjects is the embedded object store that says on put when an object is
// written.
type signalledObjects struct {
	*local.ObjectStore
	put chan struct{}
}

func (o *signalledObjects) Put(ctx context.Context, key string, data []byte, expiry store.Expiry) error {
	err := o.ObjectStore.Put(ctx, key, data, expiry)
	select {
	case o.put <- struct{}{}:
	default:
	}
	return err
}

// heldServer is a gateway on the embedded backend whose producer-row writes can be
// held (heldRows) and whose object writes are signalled, with the log's group-commit
// window (0: the default).
func heldServer(t *testing.T, window time.Duration) (*Server, *log.Log, *heldRows, *signalledObjects) {
	t.Helper()
	dir := t.TempDir()
	meta, err := local.OpenMetaStore(filepath.Join(dir, "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = meta.Close() })
	lobjects, err := local.NewObjectStore(filepath.Join(dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	objects := &signalledObjects{ObjectStore: lobjects, put: make(chan struct{}, 1)}
	held := &heldRows{MetaStore: meta, entered: make(chan struct{}), release: make(chan struct{})}
	l, err := log.New(log.Config{Objects: objects, Meta: held, GroupCommitWindow: window})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Log: l})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv, l, held, objects
}

// TestFirstAttemptCommitsAfterItsInFlightRecord: a batch's first attempt writes its
// object while its in-flight record is being written, and commits only once that
// record is durable, so a retry through any gateway finds every attempt that may have
// committed.
func TestFirstAttemptCommitsAfterItsInFlightRecord(t *testing.T) {
	ctx := context.Background()
	srv, l, held, objects := heldServer(t, time.Millisecond)
	meta := held.MetaStore
	if _, err := l.CreateTopicWith(ctx, "gated", log.TopicSpec{Partitions: 1, Retention: time.Hour}); err != nil {
		t.Fatal(err)
	}
	id, err := meta.NextProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	held.mu.Lock()
	held.armed = true
	held.mu.Unlock()
	answered := make(chan int64, 1)
	go func() {
		resp, err := srv.produce(ctx, idemReq(t, "gated", producerBatch{ID: id, Seq: 0, Count: 1}, "a"))
		if err != nil {
			answered <- -2
			return
		}
		if p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]; p.ErrorCode == 0 {
			answered <- p.BaseOffset
			return
		}
		answered <- -1
	}()
	<-held.entered
	// Liveness bounds, not timings: the object is written while the record is held.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	select {
	case <-objects.put:
	case <-wctx.Done():
		close(held.release)
		t.Fatal("the batch's object was not written while its in-flight record was being written")
	}
	if _, hw, _ := l.Bounds(ctx, "gated", 0); hw != 0 {
		close(held.release)
		t.Fatalf("high watermark %d before the in-flight record is durable", hw)
	}
	close(held.release)
	if off := <-answered; off != 0 {
		t.Fatalf("answer %d, want offset 0", off)
	}
	held.mu.Lock()
	early := held.committedWhileHeld
	held.mu.Unlock()
	if early {
		t.Fatal("the batch was sequenced before its in-flight record was written")
	}
	if _, hw, _ := l.Bounds(ctx, "gated", 0); hw != 1 {
		t.Fatalf("high watermark %d after the answer, want 1", hw)
	}
}

// TestNextBatchQueuesItsRowChangeDuringTheWrite: of two pipelined batches of one
// producer on a partition, the second's in-flight record is queued in the row's writer
// while the first's is still being written (not once it is written and the first
// appended), so consecutive batches' row changes share writes; both are then appended
// in order, each once, and recorded appended.
func TestNextBatchQueuesItsRowChangeDuringTheWrite(t *testing.T) {
	ctx := context.Background()
	srv, l, held, _ := heldServer(t, 0)
	meta := held.MetaStore
	topic, err := l.CreateTopicWith(ctx, "rows", log.TopicSpec{Partitions: 1, Retention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	id, err := meta.NextProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if off := producedAt(t, srv, idemReq(t, "rows", producerBatch{ID: id, Seq: 0}, "a", "b")); off != 0 {
		t.Fatalf("first batch at %d", off)
	}

	held.mu.Lock()
	held.armed = true
	held.mu.Unlock()
	order := &connOrder{last: map[topicPartition]*partSlot{}}
	first := &produceTurn{order: order, mine: make(chan struct{})}
	second := &produceTurn{order: order, prev: first.mine, mine: make(chan struct{})}
	type answer struct {
		off  int64
		code int16
	}
	answers := make([]chan answer, 2)
	for i, turn := range []*produceTurn{first, second} {
		answers[i] = make(chan answer, 1)
		req := idemReq(t, "rows", producerBatch{ID: id, Seq: int32(2 + 2*i)}, "c", "d")
		go func() {
			resp, err := srv.produce(withProduceTurn(ctx, turn), req)
			if err != nil {
				answers[i] <- answer{code: -1}
				return
			}
			p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
			answers[i] <- answer{p.BaseOffset, p.ErrorCode}
		}()
		if i == 0 {
			<-held.entered // the first batch's in-flight record is being written
		}
	}
	<-second.mine
	order.mu.Lock()
	slot := order.last[topicPartition{"rows", 0}]
	order.mu.Unlock()
	// A liveness bound, not a timing: before the change the second batch waited for the
	// first's write, which is held until this returns.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	select {
	case <-slot.rows:
	case <-wctx.Done():
		close(held.release)
		t.Fatal("the second batch's row change was not queued while the first's write was held")
	}
	close(held.release)
	for i, want := range []int64{2, 4} {
		if a := <-answers[i]; a.code != 0 || a.off != want {
			t.Fatalf("batch %d: offset %d code %d, want offset %d", i, a.off, a.code, want)
		}
	}
	srv.rowWriters.Wait() // the "appended" records are written after the answers
	var row seqRow
	if _, err := loadRow(ctx, meta, seqRowKey(appendPrincipal(ctx), topic.ID(), 0, id), &row); err != nil {
		t.Fatal(err)
	}
	if row.Pending != nil || len(row.Recent) != 3 || row.Recent[2].Seq != 4 || row.Recent[2].Offset != 4 || row.Next != 6 {
		t.Fatalf("row %+v", row)
	}
}
