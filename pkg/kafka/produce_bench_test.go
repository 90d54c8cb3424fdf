package kafka_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkProduceThroughput measures durable produce throughput through the gateway on
// the embedded local backend: an idempotent franz-go producer (acks=all, its default
// batching, no compression) writes 1 KB records round-robin into 3 partitions, as
// scripts/bench-kafka.sh's franz-go producer does; each iteration produces 10,000
// records and waits for every acknowledgement. MB/s counts record values.
func BenchmarkProduceThroughput(b *testing.B) {
	const (
		partitions = 3
		records    = 10000
		size       = 1024
	)
	_, cl, value := benchTopic(b, partitions, size, kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx := context.Background()
	b.SetBytes(records * size)
	b.ResetTimer()
	for range b.N {
		errs := make(chan error, 1)
		for range records {
			cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
				if err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		select {
		case err := <-errs:
			b.Fatal(fmt.Errorf("produce: %w", err))
		default:
		}
	}
}
