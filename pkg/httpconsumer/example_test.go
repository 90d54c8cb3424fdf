package httpconsumer_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"sync"
	"time"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/httpconsumer"
	stratanode "github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
)

// exampleServer starts a Strata node in-process on a temporary directory, as
// `strata dev` would, and returns its URL and how to stop it.
func exampleServer() (string, func()) {
	dir, err := os.MkdirTemp("", "strata-example-")
	if err != nil {
		panic(err)
	}
	rt, err := runtime.New(context.Background(), runtime.Config{Node: stratanode.Config{DataDir: dir}, RetentionInterval: -1})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(rt.Handler())
	return srv.URL, func() {
		srv.Close()
		_ = rt.Close(context.Background())
		_ = os.RemoveAll(dir)
	}
}

// A member of group "billing" on topic "orders", in one call: it shares the topic's
// partitions with the group's other members, commits what it handled, and on Ctrl-C
// (ctx ending) commits, releases and leaves.
func ExampleNewGroupConsumer() {
	url, stop := exampleServer()
	defer stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := client.New(url)
	if err != nil {
		panic(err)
	}
	if _, err := c.CreateTopic(ctx, "orders", client.TopicConfig{Partitions: 1}); err != nil {
		panic(err)
	}
	for _, v := range []string{"order-1", "order-2", "order-3"} {
		if _, err := c.Append(ctx, "orders", []client.Record{{Key: []byte("customer-7"), Value: []byte(v + " paid")}}, client.AppendOptions{}); err != nil {
			panic(err)
		}
	}

	var mu sync.Mutex // the handler runs on several workers
	gc, err := httpconsumer.NewGroupConsumer(c, "billing", "orders",
		func(ctx context.Context, r httpconsumer.Record) error {
			mu.Lock()
			defer mu.Unlock()
			fmt.Printf("partition %d offset %d: %s\n", r.Partition, r.Offset, r.Value)
			return nil
		},
		httpconsumer.WithWorkers(4), httpconsumer.WithOrderedKeys(), // one key: in order
		httpconsumer.WithOnAssigned(func(_ context.Context, ps []int32) { fmt.Println("assigned", ps) }),
		httpconsumer.WithOnRevoked(func(_ context.Context, ps []int32) { fmt.Println("revoked", ps) }),
	)
	if err != nil {
		panic(err)
	}
	go func() {
		// Stop (as Ctrl-C would) once the three records are committed.
		for committedNext(c) < 3 {
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
	}()
	if err := gc.Run(ctx); err != nil { // returns when ctx ends, after committing and leaving
		panic(err)
	}
	fmt.Println("handled", gc.Stats().Handled, "committed next offset", committedNext(c))
	// Output:
	// assigned [0]
	// partition 0 offset 0: order-1 paid
	// partition 0 offset 1: order-2 paid
	// partition 0 offset 2: order-3 paid
	// revoked [0]
	// handled 3 committed next offset 3
}

// committedNext is group billing's committed next offset on orders/0 (0 before any).
func committedNext(c *client.Client) int64 {
	g, err := c.DescribeGroup(context.Background(), "billing")
	if err != nil {
		return 0
	}
	for _, p := range g.Partitions {
		if p.Topic == "orders" && p.Partition == 0 && p.CommittedOffset != nil {
			return *p.CommittedOffset
		}
	}
	return 0
}
