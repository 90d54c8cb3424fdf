package log_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/wire"
)

// TestEnqueueOrdered: appends of one partition enqueued each after the one before, each
// in its own batch (the byte budget closes a batch per append) and the first batch's
// object PUT held back, are committed in the order enqueued, pipelined; when the first
// batch's PUT fails instead, the appends queued after it fail too and nothing is
// committed, so none lands without the one it follows. On every backend.
func TestEnqueueOrdered(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		v := []byte("ordered")
		for _, tc := range []struct {
			name string
			fail bool
		}{{"held back", false}, {"failed", true}} {
			t.Run(tc.name, func(t *testing.T) {
				var puts atomic.Int64
				release := make(chan struct{})
				injected := errors.New("injected PUT failure")
				l, _, _ := groupLog(t, s, time.Second, recSize(v), func(ctx context.Context) error {
					if puts.Add(1) != 1 {
						return nil
					}
					select {
					case <-release:
					case <-ctx.Done():
					}
					if tc.fail {
						return injected
					}
					return nil
				})
				topic := "ordered-" + map[bool]string{false: "held", true: "failed"}[tc.fail]
				mustTopic(t, l, topic, 1)
				warm(t, l, topic)
				const n = 4
				qs := make([]*log.Queued, n)
				// waitPuts waits until n object PUTs have started.
				waitPuts := func(n int64) {
					for puts.Load() < n {
						time.Sleep(time.Millisecond)
					}
				}
				for i := range n {
					var after *log.Queued
					if i > 0 {
						after = qs[i-1]
					}
					qs[i] = l.Enqueue(ctx, topic, []log.Record{{Value: v, Partition: i32(0)}}, log.AppendOptions{}, after)
					if i == 0 {
						waitPuts(1) // the first batch's PUT is the one held back
					}
				}
				// The later batches' PUTs are done or under way before the first's ends.
				waitPuts(n)
				close(release)
				for i, q := range qs {
					res, err := q.Wait()
					switch {
					case tc.fail && !errors.Is(err, log.ErrUnavailable):
						t.Fatalf("append %d queued after a failed one: %+v, %v; want ErrUnavailable", i, res, err)
					case !tc.fail && (err != nil || res[0].Offset != int64(i)):
						t.Fatalf("append %d: %+v, %v; want offset %d", i, res, err, i)
					}
				}
				if _, hw, err := l.Bounds(ctx, topic, 0); err != nil || (tc.fail && hw != 0) || (!tc.fail && hw != n) {
					t.Fatalf("high watermark %d, %v", hw, err)
				}
			})
		}
	})
}

// TestEnqueueGate: an append's gate is waited for after its batch's object is written
// and before anything commits: a gate that passes lets the batch commit (the object
// already written while it waited), one that fails fails every member of the batch with
// ErrUnavailable and commits nothing. Only a first attempt may carry a gate. On every
// backend.
func TestEnqueueGate(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		v := []byte("gated")
		for _, pass := range []bool{true, false} {
			name := map[bool]string{true: "gate-passes", false: "gate-fails"}[pass]
			t.Run(name, func(t *testing.T) {
				// The byte budget closes the batch at its second member.
				l, objs, _ := groupLog(t, s, 10*time.Second, 2*recSize(v), nil)
				mustTopic(t, l, name, 1)
				warm(t, l, name)
				waited := make(chan int64, 1)
				release := make(chan struct{})
				refused := errors.New("the caller's record could not be written")
				gate := func(ctx context.Context) error {
					waited <- objs.puts.Load()
					<-release
					if pass {
						return nil
					}
					return refused
				}
				gated := l.Enqueue(ctx, name, []log.Record{{Value: v, Partition: i32(0)}}, log.AppendOptions{Gate: gate}, nil)
				other := l.Enqueue(ctx, name, []log.Record{{Value: v, Partition: i32(0)}}, log.AppendOptions{}, nil)
				// A liveness bound, not a timing: the batch asks the gate once written.
				select {
				case puts := <-waited:
					if puts != 1 {
						t.Fatalf("%d object PUTs before the gate was asked, want the batch's 1", puts)
					}
				case <-time.After(30 * time.Second):
					t.Fatal("the batch never asked its member's gate")
				}
				if _, hw, _ := l.Bounds(ctx, name, 0); hw != 0 {
					t.Fatalf("high watermark %d while the gate holds", hw)
				}
				close(release)
				_, gerr := gated.Wait()
				_, oerr := other.Wait()
				_, hw, err := l.Bounds(ctx, name, 0)
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case pass && (gerr != nil || oerr != nil || hw != 2):
					t.Fatalf("gate passed: errors %v, %v, high watermark %d, want both committed", gerr, oerr, hw)
				case !pass && (!errors.Is(gerr, log.ErrUnavailable) || !errors.Is(gerr, refused) || !errors.Is(oerr, log.ErrUnavailable) || hw != 0):
					t.Fatalf("gate failed: errors %v, %v, high watermark %d, want both unavailable and nothing committed", gerr, oerr, hw)
				}
			})
		}
		t.Run("retry refused", func(t *testing.T) {
			l := newLog(t, s)
			mustTopic(t, l, "gate-retry", 1)
			_, err := l.Append(ctx, "gate-retry", []log.Record{{Value: v, Partition: i32(0)}}, log.AppendOptions{
				IdempotencyKey: "p.1", Producer: true, Attempt: 1, BatchFloor: &wire.BatchMark{},
				Gate: func(context.Context) error { return nil }})
			if !errors.Is(err, log.ErrInvalid) {
				t.Fatalf("a retry with a gate: %v, want ErrInvalid", err)
			}
		})
	})
}
