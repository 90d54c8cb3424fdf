package kafka_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkFetchThroughput measures consume throughput through the gateway on the
// embedded local backend: a topic of 3 partitions holding 30,000 records of 1 KB,
// read from the start by a franz-go client consuming by assignment (no group), as
// scripts/bench-kafka.sh's franz-go consumer does. Each iteration reads the whole topic
// with a fresh client; MB/s counts record values.
func BenchmarkFetchThroughput(b *testing.B) {
	const (
		partitions = 3
		records    = 30000
		size       = 1024
	)
	g, pcl, value := benchTopic(b, partitions, size)
	ctx := context.Background()
	for i := 0; i < records; i += 1000 {
		var rs []*kgo.Record
		for range 1000 {
			rs = append(rs, &kgo.Record{Value: value})
		}
		if err := pcl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			b.Fatalf("produce: %v", err)
		}
	}
	offsets := map[int32]kgo.Offset{}
	for p := range int32(partitions) {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	b.SetBytes(records * size)
	b.ResetTimer()
	for range b.N {
		cl, err := kgo.NewClient(kgo.SeedBrokers(g.addr), kgo.FetchMaxWait(500*time.Millisecond),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"bench": offsets}))
		if err != nil {
			b.Fatal(err)
		}
		rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		n := 0
		for n < records {
			fs := cl.PollFetches(rctx)
			if rctx.Err() != nil {
				b.Fatalf("read %d of %d records: %v", n, records, rctx.Err())
			}
			fs.EachError(func(topic string, p int32, err error) { b.Fatal(fmt.Errorf("fetch %s/%d: %w", topic, p, err)) })
			n += fs.NumRecords()
		}
		cancel()
		cl.Close()
	}
}

// benchTopic starts a gateway on the embedded local backend with topic "bench" of the
// given partitions, and returns it, a client producing round-robin into that topic (with
// opts) and a record value of size bytes.
func benchTopic(b *testing.B, partitions int32, size int, opts ...kgo.Opt) (*gateway, *kgo.Client, []byte) {
	g := localGateway(b)
	cl := g.client(b, append([]kgo.Opt{kgo.DefaultProduceTopic("bench"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner())}, opts...)...)
	createTopic(b, kadm.NewClient(cl), "bench", partitions)
	value := make([]byte, size)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	return g, cl, value
}
