package log_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
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
