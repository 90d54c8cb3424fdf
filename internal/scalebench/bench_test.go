package scalebench

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/awscount"
	"github.com/stratalog/strata/pkg/log"
)

func newLog(b *testing.B, s backendtest.Stores, topic string, partitions int32) *log.Log {
	b.Helper()
	l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := l.CreateTopic(context.Background(), topic, partitions, 0); err != nil {
		b.Fatal(err)
	}
	return l
}

// BenchmarkPollTail polls the newest 100 records of one partition holding 1k, 100k and
// 1M records (appended 100 at a time, 1,000-byte values) on the embedded backend, as
// pkg/log's BenchmarkPollTail does for 1k and 100k. The target: 1M within 1.5× of 1k.
//
//	go test -run='^$' -bench=PollTail -benchtime=2000x ./internal/scalebench
func BenchmarkPollTail(b *testing.B) {
	for _, n := range []int{1_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			ctx := context.Background()
			l := newLog(b, backendtest.Local(ctx, b), "bench", 1)
			const batch = 100
			value := make([]byte, 1000)
			p := int32(0)
			recs := make([]log.Record, batch)
			for i := range recs {
				recs[i] = log.Record{Key: []byte("k"), Value: value, Partition: &p}
			}
			for i := 0; i < n; i += batch {
				if _, err := l.Append(ctx, "bench", recs, log.AppendOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			from := int64(n - batch)
			b.SetBytes(int64(batch * len(value)))
			b.ResetTimer()
			for b.Loop() {
				res, err := l.Poll(ctx, "bench", 0, from, log.PollOptions{MaxRecords: batch})
				if err != nil || len(res.Records) != batch {
					b.Fatalf("poll: %d records, %v", len(res.Records), err)
				}
			}
		})
	}
}

// BenchmarkAppendPartitions appends batches of 256 unkeyed 1 KB records spread
// round-robin over a topic of 1, 16 and 256 partitions, so each append touches
// min(256, partitions) partitions: ns/record on both backends, and on the emulator the
// AWS requests per record (what the cost model multiplies by prices).
//
//	go test -run='^$' -bench=AppendPartitions/local -benchtime=200x ./internal/scalebench
//	STRATA_AWS_ENDPOINT=http://127.0.0.1:4576 go test -run='^$' -bench=AppendPartitions/aws -benchtime=3x ./internal/scalebench
func BenchmarkAppendPartitions(b *testing.B) {
	const batch = 256
	for _, backend := range []string{"local", "aws"} {
		for _, parts := range []int32{1, 16, 256} {
			b.Run(fmt.Sprintf("%s/partitions=%d", backend, parts), func(b *testing.B) {
				ctx := context.Background()
				counter := awscount.New()
				var s backendtest.Stores
				if backend == "local" {
					s = backendtest.Local(ctx, b)
				} else {
					s = backendtest.AWSWith(ctx, b, func(c *aws.Config) { c.APIOptions = append(c.APIOptions, counter.Middleware) })
				}
				l := newLog(b, s, "p", parts)
				if _, err := l.Topic(ctx, "p"); err != nil {
					b.Fatal(err)
				}
				value := make([]byte, 1024)
				recs := make([]log.Record, batch)
				for i := range recs {
					recs[i] = log.Record{Value: value}
				}
				counter.Reset()
				b.SetBytes(int64(batch * len(value)))
				b.ResetTimer()
				for b.Loop() {
					if _, err := l.Append(ctx, "p", recs, log.AppendOptions{}); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/record")
				if backend == "aws" {
					ops, _ := counter.Snapshot()
					var reqs int64
					for _, op := range ops {
						reqs += op.Requests
					}
					b.ReportMetric(float64(reqs)/float64(b.N*batch), "requests/record")
					b.ReportMetric(float64(ops["S3.PutObject"].Requests)/float64(b.N), "PUT/append")
					b.ReportMetric(float64(ops["DynamoDB.UpdateItem"].Requests+ops["DynamoDB.PutItem"].Requests)/float64(b.N), "ddbwrites/append")
				}
			})
		}
	}
}
