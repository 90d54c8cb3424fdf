package scalebench

import (
	"context"
	"testing"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
)

// BenchmarkDevAppendJSON appends 1 KB records through pkg/client's producer (SDK
// defaults, 8 partitions) to the node `strata dev` assembles (pkg/runtime, embedded
// backend, 127.0.0.1:0), over the JSON wire format. Its CPU profile splits the server's
// time between JSON decoding, base64, the log's append and fsync:
//
//	go test -run='^$' -bench=DevAppendJSON -benchtime=100000x -cpuprofile=/tmp/dev.prof ./internal/scalebench
//	go tool pprof -top -focus=httpapi /tmp/dev.prof
func BenchmarkDevAppendJSON(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rt, err := runtime.Open(ctx, runtime.Config{Node: node.Config{DataDir: b.TempDir()}, Addr: "127.0.0.1:0", RetentionInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- rt.Serve(ctx) }()
	defer func() {
		cancel()
		<-served
		_ = rt.Close(context.Background())
	}()
	c, err := client.New(rt.URL())
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, "json", client.TopicConfig{Partitions: 8}); err != nil {
		b.Fatal(err)
	}
	prod, err := client.NewProducer(ctx, c, "json", client.ProducerConfig{Partitions: 8})
	if err != nil {
		b.Fatal(err)
	}
	value := make([]byte, 1024)
	b.SetBytes(int64(len(value)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := prod.Send(ctx, client.Record{Value: value}); err != nil {
			b.Fatal(err)
		}
	}
	if err := prod.Close(ctx); err != nil {
		b.Fatal(err)
	}
}
