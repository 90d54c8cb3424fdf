package peers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisPipeline is how many XADDs a producer sends per round trip.
const redisPipeline = 128

func startRedis(ctx context.Context, cfg Config, dir string) (*server, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(addr)
	return launch(ctx, dir, addr, cfg.RedisBin, "--bind", "127.0.0.1", "--port", port, "--dir", dir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", "", "--daemonize", "no")
}

// driveRedis: P clients pipelining XADD (redisPipeline per round trip); C consumers in
// one consumer group reading with XREADGROUP … NOACK.
func driveRedis(ctx context.Context, cfg Config, srv *server, producers int) (driven, error) {
	rc := redis.NewClient(&redis.Options{Addr: srv.addr, PoolSize: producers + cfg.Consumers + 2})
	defer rc.Close()
	if err := rc.XGroupCreateMkStream(ctx, "bench", "g", "$").Err(); err != nil {
		return driven{}, fmt.Errorf("create group: %w", err)
	}
	value := payload(cfg.ValueBytes)
	got := newTally(cfg.Records)
	cctx, stopConsumers := context.WithCancel(ctx)
	defer stopConsumers()
	var cwg sync.WaitGroup
	for i := range cfg.Consumers {
		cwg.Go(func() {
			for cctx.Err() == nil {
				res, err := rc.XReadGroup(cctx, &redis.XReadGroupArgs{Group: "g", Consumer: fmt.Sprintf("c%d", i),
					Streams: []string{"bench", ">"}, Count: 1000, Block: 200 * time.Millisecond, NoAck: true}).Result()
				if err != nil && !errors.Is(err, redis.Nil) {
					continue
				}
				n := 0
				for _, s := range res {
					n += len(s.Messages)
				}
				got.add(n)
			}
		})
	}

	acks := &ackLog{}
	start := time.Now()
	var pwg sync.WaitGroup
	perr := make(chan error, producers)
	for i := range producers {
		pwg.Go(func() {
			n := split(cfg.Records, producers, i)
			local := make([]time.Duration, 0, n)
			at := make([]time.Time, 0, redisPipeline)
			for sent := 0; sent < n; {
				pipe := rc.Pipeline()
				at = at[:0]
				for k := 0; k < redisPipeline && sent < n; k++ {
					at = append(at, time.Now())
					pipe.XAdd(ctx, &redis.XAddArgs{Stream: "bench", Values: []any{"v", value}})
					sent++
				}
				if _, err := pipe.Exec(ctx); err != nil {
					report(perr, err)
					return
				}
				now := time.Now()
				for _, t := range at {
					local = append(local, now.Sub(t))
				}
			}
			acks.add(local...)
		})
	}
	pwg.Wait()
	if err := firstErr(perr); err != nil {
		return driven{}, fmt.Errorf("xadd: %w", err)
	}
	if err := got.wait(ctx, nil); err != nil {
		return driven{}, err
	}
	elapsed := time.Since(start)
	stopConsumers()
	cwg.Wait()
	return driven{elapsed: elapsed, acks: acks.acks}, nil
}
