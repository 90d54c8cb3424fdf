package log_test

import (
	"github.com/aws/aws-sdk-go-v2/aws"

	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stratalog/strata/pkg/store/awstest"

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

// BenchmarkAppendContention measures the sequencer under contention: N independent Log
// instances (as N API hosts, each its own process in AWS) append single-record batches
// to one partition, on each backend. It reports appends/s and, on the AWS backend, the
// DynamoDB write requests per acknowledged append (every attempt counted by an SDK
// middleware; a lost race would show as more than 2).
//
//	go test -run='^$' -bench=AppendContention -benchtime=200x ./pkg/log
func BenchmarkAppendContention(b *testing.B) {
	for _, backend := range []string{"local", "aws"} {
		for _, hosts := range []int{1, 4, 16, 64} {
			b.Run(fmt.Sprintf("%s/hosts=%d", backend, hosts), func(b *testing.B) {
				ctx := context.Background()
				counter := awstest.NewCounter()
				var s backendtest.Stores
				if backend == "local" {
					s = backendtest.Local(ctx, b)
				} else {
					s = backendtest.AWSWith(ctx, b, func(c *aws.Config) { c.APIOptions = append(c.APIOptions, counter.Middleware) })
				}
				logs := make([]*log.Log, hosts)
				for i := range logs {
					logs[i] = newLog(b, s)
				}
				mustTopic(b, logs[0], "c", 1)
				recs := []log.Record{{Value: make([]byte, 100), Partition: i32(0)}}
				next := make(chan struct{}, b.N)
				for i := 0; i < b.N; i++ {
					next <- struct{}{}
				}
				close(next)
				counter.Reset()
				b.ResetTimer()
				var wg sync.WaitGroup
				for _, l := range logs {
					wg.Go(func() {
						for range next {
							if _, err := l.Append(ctx, "c", recs, log.AppendOptions{}); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
				if backend == "aws" {
					b.ReportMetric(float64(counter.Sum(awstest.DynamoDBWrites...))/float64(b.N), "ddb-writes/append")
				}
			})
		}
	}
}
