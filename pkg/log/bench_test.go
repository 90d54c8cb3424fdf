package log_test

import (
	"context"
	"fmt"
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
