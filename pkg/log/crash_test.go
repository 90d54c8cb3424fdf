package log_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
)

var errCrash = errors.New("injected crash")

// faultyObjects fails Put before or after the write reaches the store.
type faultyObjects struct {
	store.ObjectStore
	mu         sync.Mutex
	failBefore bool
	failAfter  bool // the object is stored, the caller sees an error (lost response)
}

func (f *faultyObjects) Put(ctx context.Context, key string, data []byte, expiry store.Expiry) error {
	f.mu.Lock()
	before, after := f.failBefore, f.failAfter
	f.mu.Unlock()
	if before {
		return errCrash
	}
	if err := f.ObjectStore.Put(ctx, key, data, expiry); err != nil {
		return err
	}
	if after {
		return errCrash
	}
	return nil
}

// faultyMeta fails the sequencer's commits or the index writes once armed: the first
// ok calls pass, the rest fail, before writing or after (a lost response).
type faultyMeta struct {
	store.MetaStore
	mu        sync.Mutex
	commits   bool // fail Sequence; otherwise fail PutIndexEntry
	armed     bool
	ok        int
	lostReply bool
}

func (f *faultyMeta) gate(commit bool) (pass bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.armed || commit != f.commits {
		return true
	}
	if f.ok > 0 {
		f.ok--
		return true
	}
	return false
}

func (f *faultyMeta) Sequence(ctx context.Context, c store.SeqCommit) (store.SeqCommit, error) {
	if f.gate(true) {
		return f.MetaStore.Sequence(ctx, c)
	}
	if f.lostReply {
		if _, err := f.MetaStore.Sequence(ctx, c); err != nil {
			return store.SeqCommit{}, err
		}
	}
	return store.SeqCommit{}, errCrash
}

// SequenceBatch gates each commit of a topic commit as Sequence does; the batch is one
// write, so a commit that fails fails them all (after applying the batch when the reply
// is lost).
func (f *faultyMeta) SequenceBatch(ctx context.Context, cs []store.SeqCommit) ([]store.SeqCommit, []error) {
	pass := true
	for range cs {
		pass = f.gate(true) && pass
	}
	if pass {
		return f.MetaStore.SequenceBatch(ctx, cs)
	}
	errs := make([]error, len(cs))
	if f.lostReply {
		if _, applied := f.MetaStore.SequenceBatch(ctx, cs); errors.Join(applied...) != nil {
			return make([]store.SeqCommit, len(cs)), applied
		}
	}
	for i := range errs {
		errs[i] = errCrash
	}
	return make([]store.SeqCommit, len(cs)), errs
}

func (f *faultyMeta) PutIndexEntry(ctx context.Context, e store.IndexEntry) error {
	if f.gate(false) {
		return f.MetaStore.PutIndexEntry(ctx, e)
	}
	if f.lostReply {
		if err := f.MetaStore.PutIndexEntry(ctx, e); err != nil {
			return err
		}
	}
	return errCrash
}

// TestCrashPoints fails an append at each step — before and after the object PUT, after
// k of n partition commits (the add refused, or applied with its answer lost), after k of
// n index writes — then retries with the same Idempotency-Key on a fresh Log (a new
// process) and returns the first offsets for what was acknowledged. The materialiser
// indexes the orphaned commits from the stream. No acknowledged record is lost, no offset
// is reused, and every record reaches a reader exactly once: the commits the retry
// superseded are duplicates that readers skip.
func TestCrashPoints(t *testing.T) {
	const partitions = 4
	type step = crashStep
	steps := []step{
		{name: "object put fails", objBefore: true},
		{name: "crash after object put", objAfter: true},
	}
	for k := 0; k < partitions; k++ {
		steps = append(steps,
			step{name: fmt.Sprintf("commit refused after %d of %d commits", k, partitions), metaArmed: true, commits: true, metaOK: k},
			step{name: fmt.Sprintf("commit answer lost after %d of %d commits", k, partitions), metaArmed: true, commits: true, metaOK: k, lostReply: true},
			step{name: fmt.Sprintf("crash after %d of %d index writes", k, partitions), metaArmed: true, metaOK: k},
			step{name: fmt.Sprintf("index answer lost after %d of %d index writes", k, partitions), metaArmed: true, metaOK: k, lostReply: true})
	}
	// Each step in both idempotency modes: a claimed key (a caller's own
	// Idempotency-Key), and a producer request (fenced: the retry fences the crashed
	// attempt and searches the log for it).
	for _, mode := range []string{"claimed", "producer"} {
		t.Run(mode, func(t *testing.T) { crashPoints(t, steps, mode == "producer") })
	}
}

type crashStep struct {
	name                 string
	objBefore, objAfter  bool
	metaOK               int
	commits              bool
	metaArmed, lostReply bool
}

func crashPoints(t *testing.T, steps []crashStep, producer bool) {
	const partitions = 4
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		setup := newLog(t, s)
		mustTopic(t, setup, "crash", partitions)
		backendtest.Materialise(t, s, setup)
		acked := map[string]log.Result{} // value → where it was acknowledged
		var stored int
		for i, st := range steps {
			if s.Commits == nil && st.metaArmed && !st.commits {
				continue // the embedded backend writes the index entry inside the commit
			}
			fo := &faultyObjects{ObjectStore: s.Objects, failBefore: st.objBefore, failAfter: st.objAfter}
			fm := &faultyMeta{MetaStore: s.Meta, armed: st.metaArmed, ok: st.metaOK, commits: st.commits, lostReply: st.lostReply}
			crashy, err := log.New(log.Config{Objects: fo, Meta: fm})
			if err != nil {
				t.Fatal(err)
			}
			recs := make([]log.Record, 2*partitions)
			for j := range recs {
				p := int32(j % partitions)
				recs[j] = log.Record{Partition: &p, Value: fmt.Appendf(nil, "step%d-rec%d", i, j)}
			}
			opt := log.AppendOptions{IdempotencyKey: fmt.Sprintf("crash-%d", i)}
			if producer {
				opt = log.AppendOptions{IdempotencyKey: opt.IdempotencyKey, Producer: true, FirstAttempt: true}
			}
			res, err := crashy.Append(ctx, "crash", recs, opt)
			if err == nil {
				t.Fatalf("%s: the append must fail", st.name)
			}
			var ae *log.AppendError
			if errors.As(err, &ae) {
				for j, r := range ae.Results {
					if r.Err == nil {
						acked[string(recs[j].Value)] = r
					}
				}
			} else if res != nil {
				t.Fatalf("%s: a failed append returned results without an AppendError", st.name)
			}
			// The retry runs in a "new process": a fresh Log on the healthy stores.
			retry := newLog(t, s)
			if producer {
				opt = retryOf(opt.IdempotencyKey, 1)
			}
			res, err = retry.Append(ctx, "crash", recs, opt)
			if err != nil {
				t.Fatalf("%s: retry: %v", st.name, err)
			}
			for j, r := range res {
				if prev, ok := acked[string(recs[j].Value)]; ok && prev != r {
					t.Fatalf("%s: record %d acknowledged at %+v, retry says %+v", st.name, j, prev, r)
				}
				acked[string(recs[j].Value)] = r
			}
			stored += len(recs)
		}
		// Every acknowledged record is at its offset, and each exactly once.
		seen := map[string]int{}
		for p := int32(0); p < partitions; p++ {
			recs := readAll(t, setup, "crash", p)
			at := map[int64]string{}
			for i, r := range recs {
				if i > 0 && r.Offset <= recs[i-1].Offset {
					t.Fatalf("partition %d: offset %d read after %d", p, r.Offset, recs[i-1].Offset)
				}
				seen[string(r.Value)]++
				at[r.Offset] = string(r.Value)
			}
			for v, a := range acked {
				if a.Partition == p && at[a.Offset] != v {
					t.Fatalf("acknowledged %q at %d/%d, found %q", v, p, a.Offset, at[a.Offset])
				}
			}
		}
		if len(seen) != stored {
			t.Fatalf("%d distinct records stored, want %d", len(seen), stored)
		}
		for v, n := range seen {
			if n != 1 {
				t.Fatalf("record %q stored %d times", v, n)
			}
		}
	})
}
