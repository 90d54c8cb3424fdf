// Command kafkaref serves the Kafka scripts (scripts/bench-kafka.sh) what the tests get
// from package kafkaref:
//
//	kafkaref broker -dir DIR          start a single-node KRaft broker, print
//	                                  "kafka broker listening on ADDR", run until SIGINT/SIGTERM
//	kafkaref apis ADDR                print the API names ADDR's ApiVersions advertises
//	kafkaref consume ADDR TOPIC N     read N records of TOPIC from the start by assignment
//	                                  (franz-go, no group) and print the throughput
//	kafkaref produce ADDR TOPIC N     write N records of 1 KB round-robin into TOPIC with an
//	                                  idempotent franz-go producer (acks=all, its default
//	                                  batching, no compression), wait for every ack and
//	                                  print the throughput
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/kafkaref"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	ctx := context.Background()
	var err error
	switch os.Args[1] {
	case "broker":
		err = broker(ctx, os.Args[2:])
	case "apis":
		if len(os.Args) != 3 {
			usage()
		}
		err = apis(ctx, os.Args[2])
	case "consume", "produce":
		if len(os.Args) != 5 {
			usage()
		}
		n, perr := strconv.Atoi(os.Args[4])
		if perr != nil || n < 1 {
			usage()
		}
		if os.Args[1] == "consume" {
			err = consume(ctx, os.Args[2], os.Args[3], n)
		} else {
			err = produce(ctx, os.Args[2], os.Args[3], n)
		}
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kafkaref:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: kafkaref broker -dir DIR [-heap-mb N] | apis ADDR | consume ADDR TOPIC N | produce ADDR TOPIC N")
	os.Exit(2)
}

func broker(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("broker", flag.ExitOnError)
	dir := fs.String("dir", "", "the broker's config and data directory (fresh)")
	heap := fs.Int("heap-mb", 1024, "the JVM's maximum heap")
	_ = fs.Parse(args)
	b, err := kafkaref.StartBroker(ctx, kafkaref.BrokerOptions{Dir: *dir, HeapMB: *heap})
	if err != nil {
		return err
	}
	fmt.Printf("kafka broker listening on %s\n", b.Addr)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	b.Stop()
	return nil
}

func apis(ctx context.Context, addr string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, k := range resp.ApiKeys {
		fmt.Println(kmsg.NameForKey(k.ApiKey))
	}
	return nil
}

func consume(ctx context.Context, addr, topic string, n int) error {
	adm, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer adm.Close()
	md, err := kadm.NewClient(adm).Metadata(ctx, topic)
	if err != nil {
		return err
	}
	offsets := map[int32]kgo.Offset{}
	for p := range md.Topics[topic].Partitions {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxBytes(16<<20), kgo.FetchMaxPartitionBytes(8<<20))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	start := time.Now()
	var got, bytes int
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("read %d of %d records: %w", got, n, err)
		}
		if err := fs.Err(); err != nil {
			return err
		}
		fs.EachRecord(func(r *kgo.Record) { got++; bytes += len(r.Value) })
	}
	secs := time.Since(start).Seconds()
	fmt.Printf("%d records, %.1f MB in %.2f s: %.0f records/sec, %.2f MB/sec\n", got, float64(bytes)/1e6, secs, float64(got)/secs, float64(bytes)/1e6/secs)
	return nil
}

func produce(ctx context.Context, addr, topic string, n int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.MaxBufferedRecords(n),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	value := make([]byte, 1024)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	var (
		mu    sync.Mutex
		first error
	)
	start := time.Now()
	for range n {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				first = cmp.Or(first, err)
				mu.Unlock()
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if first != nil {
		return first
	}
	secs := time.Since(start).Seconds()
	mb := float64(n*len(value)) / 1e6
	fmt.Printf("%d records, %.1f MB in %.2f s: %.0f records/sec, %.2f MB/sec\n", n, mb, secs, float64(n)/secs, mb/secs)
	return nil
}
