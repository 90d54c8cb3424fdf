package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"time"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
)

// exampleServer starts a Strata node in-process on a temporary directory, as `strata
// dev` would, with topic orders (one partition), and returns its URL and how to stop
// it. Only these examples import the server, so the SDK itself still imports none of
// it (TestStandsAlone).
func exampleServer() (string, func()) {
	dir, err := os.MkdirTemp("", "strata-example-")
	if err != nil {
		panic(err)
	}
	rt, err := runtime.New(context.Background(), runtime.Config{Node: node.Config{DataDir: dir}, RetentionInterval: -1})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(rt.Handler())
	c, err := client.New(srv.URL)
	if err != nil {
		panic(err)
	}
	if _, err := c.CreateTopic(context.Background(), "orders", client.TopicConfig{Partitions: 1}); err != nil {
		panic(err)
	}
	return srv.URL, func() {
		srv.Close()
		_ = rt.Close(context.Background())
		_ = os.RemoveAll(dir)
	}
}

// A producer batches records per partition (waiting up to Linger for more), keeps each
// key's records in order and retries idempotently; a Future gives each record's offset.
// A consumer group member is httpconsumer.NewGroupConsumer.
func ExampleProducer() {
	url, stop := exampleServer() // in your code: the URL of `strata dev` or a deployment
	defer stop()
	ctx := context.Background()
	c, err := client.New(url)
	if err != nil {
		panic(err)
	}
	p, err := client.NewProducer(ctx, c, "orders", client.ProducerConfig{Linger: 5 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	defer p.Close(ctx)
	for _, v := range []string{`{"total": 42}`, `{"total": 7}`} {
		fut, err := p.Send(ctx, client.Record{Key: []byte("order-1"), Value: []byte(v)})
		if err != nil {
			panic(err)
		}
		res, err := fut.Wait(ctx)
		if err != nil {
			panic(err)
		}
		fmt.Println("partition", res.Partition, "offset", res.Offset)
	}
	// Output:
	// partition 0 offset 0
	// partition 0 offset 1
}

// Reading a partition by offset, without a group (nothing is committed): each Poll
// returns the next offset to ask for; one below the log start (retention removed it)
// is refused with the log start, to skip ahead to.
func ExampleClient_Poll() {
	url, stop := exampleServer()
	defer stop()
	ctx := context.Background()
	c, _ := client.New(url)
	for _, v := range []string{"a", "b", "c"} {
		if _, err := c.Append(ctx, "orders", []client.Record{{Value: []byte(v)}}, client.AppendOptions{}); err != nil {
			panic(err)
		}
	}
	offset := int64(1) // start at offset 1
	for {
		res, err := c.Poll(ctx, "orders", 0, offset, client.PollOptions{MaxRecords: 2, Wait: time.Second})
		var apiErr *client.APIError
		if errors.As(err, &apiErr) && errors.Is(err, client.ErrOffsetOutOfRange) {
			if start, ok := apiErr.LogStartOffset(); ok && start > offset {
				offset = start // fell behind retention: skip ahead
				continue
			}
		}
		if err != nil {
			panic(err)
		}
		for _, r := range res.Records {
			fmt.Printf("%d %s\n", r.Offset, r.Value)
		}
		offset = res.NextOffset
		if offset == res.HighWatermark {
			break // caught up; a follower would poll on (Wait long-polls)
		}
	}
	// Output:
	// 1 b
	// 2 c
}
