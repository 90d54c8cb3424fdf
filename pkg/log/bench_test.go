package log_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
)

// BenchmarkPollTail polls the newest 100 records of a partition holding 1k and 100k
// records on the embedded backend: Poll's cost must not grow with the log's length.
//
//	go test -run='^$' -bench=PollTail -benchtime=2000x ./pkg/log
func BenchmarkPollTail(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			ctx := context.Background()
			l := newLog(b, backendtest.Local(ctx, b))
			mustTopic(b, l, "bench", 1)
			const batch = 100
			value := make([]byte, 1000)
			recs := make([]log.Record, batch)
			for i := range recs {
				recs[i] = log.Record{Key: []byte("k"), Value: value, Partition: i32(0)}
			}
			for i := 0; i < n; i += batch {
				if _, err := l.Append(ctx, "bench", recs, log.AppendOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			from := int64(n - batch)
			b.SetBytes(int64(batch * len(value)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res, err := l.Poll(ctx, "bench", 0, from, log.PollOptions{MaxRecords: batch})
				if err != nil || len(res.Records) != batch {
					b.Fatalf("poll: %d records, %v", len(res.Records), err)
				}
			}
		})
	}
}

// BenchmarkAppendContention measures the sequencer's contention curve on the embedded
// backend: N independent Log instances (as N API hosts) append single-record batches to
// one partition; it reports appends/s and lost races per append.
//
//	go test -run='^$' -bench=AppendContention -benchtime=400x ./pkg/log
func BenchmarkAppendContention(b *testing.B) {
	for _, hosts := range []int{1, 2, 4, 8, 16} {
		b.Run(fmt.Sprintf("hosts=%d", hosts), func(b *testing.B) {
			ctx := context.Background()
			s := backendtest.Local(ctx, b)
			m := &countingMetrics{}
			logs := make([]*log.Log, hosts)
			for i := range logs {
				var err error
				if logs[i], err = log.New(log.Config{Objects: s.Objects, Meta: s.Meta, Metrics: m}); err != nil {
					b.Fatal(err)
				}
			}
			mustTopic(b, logs[0], "c", 1)
			recs := []log.Record{{Value: make([]byte, 100), Partition: i32(0)}}
			b.ResetTimer()
			var wg sync.WaitGroup
			next := make(chan struct{}, b.N)
			for i := 0; i < b.N; i++ {
				next <- struct{}{}
			}
			close(next)
			for _, l := range logs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range next {
						if _, err := l.Append(ctx, "c", recs, log.AppendOptions{}); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
			b.ReportMetric(float64(m.conflicts.Load())/float64(b.N), "conflicts/append")
		})
	}
}
