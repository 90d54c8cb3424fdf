package log_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
)

// refuseSequence refuses (not applied) the commits of one partition while armed, as a
// throttled sequencer item would.
type refuseSequence struct {
	store.MetaStore
	partition int32
	armed     atomic.Bool
}

func (r *refuseSequence) Sequence(ctx context.Context, c store.SeqCommit) (store.SeqCommit, error) {
	if r.armed.Load() && c.Entry.Partition == r.partition {
		return store.SeqCommit{}, fmt.Errorf("injected: %w", store.ErrUnavailable)
	}
	return r.MetaStore.Sequence(ctx, c)
}

// SequenceBatch refuses a batch holding a commit of the partition whole: a topic
// commit is one write.
func (r *refuseSequence) SequenceBatch(ctx context.Context, cs []store.SeqCommit) ([]store.SeqCommit, []error) {
	for _, c := range cs {
		if r.armed.Load() && c.Entry.Partition == r.partition && store.TopicCommits(c.Entry.Topic) {
			errs := make([]error, len(cs))
			for i := range errs {
				errs[i] = fmt.Errorf("injected: %w", store.ErrUnavailable)
			}
			return make([]store.SeqCommit, len(cs)), errs
		}
	}
	if len(cs) > 0 && !store.TopicCommits(cs[0].Entry.Topic) {
		out, errs := make([]store.SeqCommit, len(cs)), make([]error, len(cs))
		for i, c := range cs {
			out[i], errs[i] = r.Sequence(ctx, c)
		}
		return out, errs
	}
	return r.MetaStore.SequenceBatch(ctx, cs)
}

// TestIdempotentRetryAfterPartitionIncrease (issue 18 item 7): a request whose first
// attempt appended some partitions and failed on another is retried, with the same key
// and the same body, after the topic went from 2 to 4 partitions. The request hash used
// to cover the server's placement, so the retry got 422 and a client that believed it
// dropped the records never committed. Now the hash covers what was sent and the retry
// is placed by the first attempt's partition count: every record lands where its first
// attempt put it, the replayed partitions keep their offsets, and each record is stored
// once. (The retry goes to another host, which knows the new count.)
func TestIdempotentRetryAfterPartitionIncrease(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		keys := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
		moved := 0
		for _, k := range keys {
			if log.PartitionForKey([]byte(k), 2) != log.PartitionForKey([]byte(k), 4) {
				moved++
			}
		}
		if moved == 0 {
			t.Fatal("no key of the test moves from 2 to 4 partitions")
		}
		var recs []log.Record
		for _, k := range keys {
			recs = append(recs, log.Record{Key: []byte(k), Value: []byte("v-" + k)})
		}
		recs = append(recs, log.Record{Value: []byte("unkeyed-0")}, log.Record{Value: []byte("unkeyed-1")})

		meta := &refuseSequence{MetaStore: s.Meta, partition: log.PartitionForKey([]byte("a"), 2)}
		l, err := log.New(log.Config{Objects: s.Objects, Meta: meta})
		if err != nil {
			t.Fatal(err)
		}
		mustTopic(t, l, "grow", 2)
		opt := log.AppendOptions{IdempotencyKey: "req-1"}

		meta.armed.Store(true)
		first, err := l.Append(ctx, "grow", recs, opt)
		var ae *log.AppendError
		if !errors.As(err, &ae) {
			t.Fatalf("first attempt = %v, %v; want a partial failure", first, err)
		}
		meta.armed.Store(false)
		if _, err := newLog(t, s).IncreasePartitions(ctx, "grow", 4); err != nil {
			t.Fatal(err)
		}
		// The retry reaches another host, which reads the new count.
		l = newLog(t, s)

		res, err := l.Append(ctx, "grow", recs, opt)
		if err != nil {
			t.Fatalf("retry after the partition increase: %v", err)
		}
		for i, r := range res {
			// A record its first attempt did not acknowledge has no claim to be placed
			// by (folded claims are written after the commits; a topic commit fails the
			// whole batch): only acknowledged records must stay where they were.
			want := ae.Results[i].Partition
			if ae.Results[i].Err == nil && r.Partition != want {
				t.Fatalf("record %d landed on partition %d, its first attempt on %d", i, r.Partition, want)
			}
			if ae.Results[i].Err == nil && r.Offset != ae.Results[i].Offset {
				t.Fatalf("record %d: offset %d, the first attempt appended it at %d", i, r.Offset, ae.Results[i].Offset)
			}
		}
		// Once more: the whole request replays with the same answer.
		again, err := l.Append(ctx, "grow", recs, opt)
		if err != nil {
			t.Fatalf("second retry: %v", err)
		}
		for i := range again {
			if again[i] != res[i] {
				t.Fatalf("second retry record %d = %+v, want %+v", i, again[i], res[i])
			}
		}
		total := 0
		for p := int32(0); p < 4; p++ {
			total += len(readAll(t, l, "grow", p))
		}
		if total != len(recs) {
			t.Fatalf("%d records stored, want %d (each once)", total, len(recs))
		}
	})
}

// TestRetryHashCoversWhatWasSent (issue 18 item 7): with the count unchanged, a body
// differing only in an explicit partition is another request (422), and the same body
// is the same request.
func TestRetryHashCoversWhatWasSent(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l := newLog(t, s)
		mustTopic(t, l, "sent", 2)
		p := log.PartitionForKey([]byte("k"), 2)
		opt := log.AppendOptions{IdempotencyKey: "req"}
		if _, err := l.Append(ctx, "sent", []log.Record{{Key: []byte("k"), Value: []byte("v")}}, opt); err != nil {
			t.Fatal(err)
		}
		// The same placement given explicitly is still another body than none given.
		_, err := l.Append(ctx, "sent", []log.Record{{Key: []byte("k"), Value: []byte("v"), Partition: i32(p)}}, opt)
		if !errors.Is(err, log.ErrIdempotencyKeyReused) {
			t.Fatalf("explicit partition under the key = %v, want ErrIdempotencyKeyReused", err)
		}
	})
}
