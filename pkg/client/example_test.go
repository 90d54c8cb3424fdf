package client_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stratalog/strata/pkg/client"
)

func ExampleProducer() {
	ctx := context.Background()
	c, err := client.New("http://127.0.0.1:4580")
	if err != nil {
		panic(err)
	}
	p, err := client.NewProducer(ctx, c, "orders", client.ProducerConfig{Linger: 5 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	defer p.Close(ctx)
	fut, err := p.Send(ctx, client.Record{Key: []byte("order-1"), Value: []byte(`{"total": 42}`)})
	if err != nil {
		panic(err)
	}
	res, err := fut.Wait(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Partition, res.Offset)
}

func ExampleClient_Poll() {
	ctx := context.Background()
	c, _ := client.New("http://127.0.0.1:4580")
	offset := int64(0)
	for {
		res, err := c.Poll(ctx, "orders", 0, offset, client.PollOptions{Wait: 5 * time.Second})
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
	}
}
