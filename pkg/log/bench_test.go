package log_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/awscount"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
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
// instances (as N API hosts, each its own process in AWS), each with A concurrent
// appenders, append single-record batches to one partition, on each backend, with group
// commit off and on (a 5 ms window). It reports appends/s, the segment objects and
// sequencer commits per acknowledged append (counted by wrappers of the stores) and, on
// the AWS backend, the DynamoDB write requests per acknowledged append (every attempt
// counted by an SDK middleware; a lost race would show as more than 2).
//
//	go test -run='^$' -bench=AppendContention -benchtime=200x ./pkg/log
func BenchmarkAppendContention(b *testing.B) {
	shapes := []struct{ hosts, perHost int }{{1, 1}, {4, 1}, {16, 1}, {64, 1}, {1, 16}, {1, 64}, {4, 16}}
	for _, backend := range []string{"local", "aws"} {
		for _, window := range []time.Duration{0, 5 * time.Millisecond} {
			for _, sh := range shapes {
				if window > 0 && sh.perHost == 1 {
					continue // nothing to coalesce with one appender per Log
				}
				group := "off"
				if window > 0 {
					group = window.String()
				}
				b.Run(fmt.Sprintf("%s/group=%s/hosts=%d/appenders=%d", backend, group, sh.hosts, sh.perHost), func(b *testing.B) {
					ctx := context.Background()
					counter := awscount.New()
					var s backendtest.Stores
					if backend == "local" {
						s = backendtest.Local(ctx, b)
					} else {
						s = backendtest.AWSWith(ctx, b, func(c *aws.Config) { c.APIOptions = append(c.APIOptions, counter.Middleware) })
					}
					logs := make([]*log.Log, sh.hosts)
					var puts, commits []func() int64
					for i := range logs {
						l, objs, meta := groupLog(b, s, window, 0, nil)
						logs[i] = l
						puts = append(puts, objs.puts.Load)
						commits = append(commits, meta.commits.Load)
					}
					mustTopic(b, logs[0], "c", 1)
					for _, l := range logs {
						warm(b, l, "c")
					}
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
						for range sh.perHost {
							wg.Go(func() {
								for range next {
									if _, err := l.Append(ctx, "c", recs, log.AppendOptions{}); err != nil {
										b.Error(err)
										return
									}
								}
							})
						}
					}
					wg.Wait()
					b.StopTimer()
					sum := func(fs []func() int64) (n int64) {
						for _, f := range fs {
							n += f()
						}
						return n
					}
					b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
					b.ReportMetric(float64(sum(puts))/float64(b.N), "objects/append")
					b.ReportMetric(float64(sum(commits))/float64(b.N), "commits/append")
					if backend == "aws" {
						b.ReportMetric(float64(counter.Requests(awscount.DynamoDBWrites...))/float64(b.N), "ddb-writes/append")
					}
				})
			}
		}
	}
}

// BenchmarkGroupCommitLatency: 64 concurrent single-record appenders through one Log,
// against the group-commit window (off, 1–20 ms), on each backend. It reports the p50 and
// p99 acknowledgement latency, appends/s, and the segment objects and sequencer commits
// per acknowledged append. A batch's members share its latency, so the p99 is close to
// the slowest batch's.
//
//	go test -run='^$' -bench=GroupCommitLatency -benchtime=3200x ./pkg/log
func BenchmarkGroupCommitLatency(b *testing.B) {
	const appenders = 64
	for _, backend := range []string{"local", "aws"} {
		for _, window := range []time.Duration{0, time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond} {
			group := "off"
			if window > 0 {
				group = window.String()
			}
			b.Run(fmt.Sprintf("%s/window=%s", backend, group), func(b *testing.B) {
				ctx := context.Background()
				var s backendtest.Stores
				if backend == "local" {
					s = backendtest.Local(ctx, b)
				} else {
					s = backendtest.AWS(ctx, b)
				}
				l, objs, meta := groupLog(b, s, window, 0, nil)
				mustTopic(b, l, "lat", 1)
				warm(b, l, "lat")
				recs := []log.Record{{Value: make([]byte, 100), Partition: i32(0)}}
				next := make(chan struct{}, b.N)
				for i := 0; i < b.N; i++ {
					next <- struct{}{}
				}
				close(next)
				// Warm up (connections, the partition's counter) with one round of
				// appends, not measured.
				var warmup sync.WaitGroup
				for range appenders {
					warmup.Go(func() {
						if _, err := l.Append(ctx, "lat", recs, log.AppendOptions{}); err != nil {
							b.Error(err)
						}
					})
				}
				warmup.Wait()
				objs.puts.Store(0)
				meta.commits.Store(0)
				lat := make([][]time.Duration, appenders)
				b.ResetTimer()
				var wg sync.WaitGroup
				for a := range appenders {
					wg.Go(func() {
						for range next {
							start := time.Now()
							if _, err := l.Append(ctx, "lat", recs, log.AppendOptions{}); err != nil {
								b.Error(err)
								return
							}
							lat[a] = append(lat[a], time.Since(start))
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				all := slices.Concat(lat...)
				slices.Sort(all)
				if len(all) == 0 {
					b.Fatal("no acknowledged append")
				}
				pct := func(q float64) float64 {
					return float64(all[min(len(all)-1, int(q*float64(len(all))))].Microseconds()) / 1000
				}
				b.ReportMetric(pct(0.50), "p50-ms")
				b.ReportMetric(pct(0.99), "p99-ms")
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
				b.ReportMetric(float64(objs.puts.Load())/float64(b.N), "objects/append")
				b.ReportMetric(float64(meta.commits.Load())/float64(b.N), "commits/append")
			})
		}
	}
}

// BenchmarkTopicCommit measures the topic commit against per-partition counters: one
// Log (group commit off) with 4 concurrent appenders, each append one record on every
// one of P partitions (a producer round), on each backend and layout. It reports
// batches/s, sequencer writes per batch (a topic commit is one, per-partition counters
// one per partition) and, on the AWS backend, DynamoDB write requests per batch (the
// sequencer writes plus the index entries). On DynamoDB one item takes about 1,000
// writes/s, so a topic's batches/s ceiling is that item's: docs/DESIGN.md.
//
//	go test -run='^$' -bench=TopicCommit -benchtime=100x ./pkg/log
func BenchmarkTopicCommit(b *testing.B) {
	for _, backend := range []string{"local", "aws"} {
		for _, layout := range []string{"partition", "topic"} {
			for _, parts := range []int32{1, 16, 64} {
				b.Run(fmt.Sprintf("%s/counters=%s/partitions=%d", backend, layout, parts), func(b *testing.B) {
					ctx := context.Background()
					s, counter := benchStores(ctx, b, backend)
					l, _, meta := groupLog(b, s, 0, 0, nil)
					if layout == "topic" {
						mustTopic(b, l, "tc", parts)
					} else {
						legacyTopic(b, s, "tc", parts)
					}
					warm(b, l, "tc")
					recs := make([]log.Record, parts)
					for p := range recs {
						recs[p] = log.Record{Value: make([]byte, 100), Partition: i32(int32(p))}
					}
					next := make(chan struct{}, b.N)
					for i := 0; i < b.N; i++ {
						next <- struct{}{}
					}
					close(next)
					counter.Reset()
					b.ResetTimer()
					var wg sync.WaitGroup
					for range 4 {
						wg.Go(func() {
							for range next {
								if _, err := l.Append(ctx, "tc", recs, log.AppendOptions{}); err != nil {
									b.Error(err)
									return
								}
							}
						})
					}
					wg.Wait()
					b.StopTimer()
					b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "batches/s")
					b.ReportMetric(float64(meta.commits.Load())/float64(b.N), "seq-writes/batch")
					if backend == "aws" {
						b.ReportMetric(float64(counter.Requests(awscount.DynamoDBWrites...))/float64(b.N), "ddb-writes/batch")
					}
				})
			}
		}
	}
}

// BenchmarkCompactedAppend measures what the key index costs an append: requests of 10
// keyed records (over 1 or 10 distinct keys) to one partition of a delete topic and of a
// compacted one, one appender, on each backend. It reports appends/s and, on the AWS
// backend, the DynamoDB write requests per append (every attempt counted by an SDK
// middleware): a compacted topic adds one conditional PutItem per distinct key.
//
//	go test -run='^$' -bench=CompactedAppend -benchtime=100x ./pkg/log
func BenchmarkCompactedAppend(b *testing.B) {
	for _, backend := range []string{"local", "aws"} {
		for _, policy := range []store.CleanupPolicy{store.CleanupDelete, store.CleanupCompact} {
			for _, keys := range []int{1, 10} {
				b.Run(fmt.Sprintf("%s/policy=%s/keys=%d", backend, policy, keys), func(b *testing.B) {
					ctx := context.Background()
					s, counter := benchStores(ctx, b, backend)
					l := newLog(b, s)
					if _, err := l.CreateTopicWith(ctx, "kv", log.TopicSpec{Partitions: 1, Cleanup: store.TopicCleanup{Cleanup: policy}}); err != nil {
						b.Fatal(err)
					}
					recs := make([]log.Record, 10)
					for i := range recs {
						recs[i] = log.Record{Key: fmt.Appendf(nil, "order-%d", i%keys), Value: make([]byte, 100)}
					}
					if _, err := l.Append(ctx, "kv", recs, log.AppendOptions{}); err != nil {
						b.Fatal(err)
					}
					counter.Reset()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						if _, err := l.Append(ctx, "kv", recs, log.AppendOptions{}); err != nil {
							b.Fatal(err)
						}
					}
					b.StopTimer()
					b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
					if backend == "aws" {
						b.ReportMetric(float64(counter.Requests(awscount.DynamoDBWrites...))/float64(b.N), "ddb-writes/append")
					}
				})
			}
		}
	}
}

// benchStores are a benchmark's stores of backend ("local" or "aws") and the counter of
// the AWS requests they make (none locally).
func benchStores(ctx context.Context, b *testing.B, backend string) (backendtest.Stores, *awscount.Counter) {
	counter := awscount.New()
	if backend == "local" {
		return backendtest.Local(ctx, b), counter
	}
	return backendtest.AWSWith(ctx, b, func(c *aws.Config) { c.APIOptions = append(c.APIOptions, counter.Middleware) }), counter
}
