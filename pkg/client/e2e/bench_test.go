package e2e_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/client"
)

// BenchmarkProducer measures producer throughput through the real handler on the
// embedded backend (fsync per append), and how many records each request carries.
func BenchmarkProducer(b *testing.B) {
	for _, linger := range []time.Duration{0, 5 * time.Millisecond} {
		b.Run(fmt.Sprintf("linger=%v", linger), func(b *testing.B) {
			ctx := context.Background()
			url := serveB(b)
			c, err := client.New(url)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := c.CreateTopic(ctx, "bench", client.TopicConfig{Partitions: 4}); err != nil {
				b.Fatal(err)
			}
			p, err := client.NewProducer(ctx, c, "bench", client.ProducerConfig{Linger: linger})
			if err != nil {
				b.Fatal(err)
			}
			val := make([]byte, 200)
			b.SetBytes(int64(len(val)))
			b.ResetTimer()
			for i := range b.N {
				if _, err := p.Send(ctx, client.Record{Key: fmt.Appendf(nil, "k%d", i%1000), Value: val}); err != nil {
					b.Fatal(err)
				}
			}
			if err := p.Close(ctx); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			s := p.Stats()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(float64(s.RecordsSent)/float64(max(s.Requests, 1)), "records/request")
		})
	}
}
