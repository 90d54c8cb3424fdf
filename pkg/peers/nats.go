package peers

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsStarter starts nats-server with JetStream on file storage; syncAlways adds
// `sync_interval: always` (fsync before every ack).
func natsStarter(syncAlways bool) func(ctx context.Context, cfg Config, dir string) (*server, error) {
	return func(ctx context.Context, cfg Config, dir string) (*server, error) {
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		host, port, _ := net.SplitHostPort(addr)
		conf := fmt.Sprintf("listen: %q\nhttp_port: 0\njetstream {\n  store_dir: %q\n", net.JoinHostPort(host, port), dir+"/js")
		if syncAlways {
			conf += "  sync_interval: always\n"
		}
		conf += "}\n"
		if err := os.WriteFile(dir+"/nats.conf", []byte(conf), 0o644); err != nil {
			return nil, err
		}
		return launch(ctx, dir, addr, cfg.NATSBin, "-c", dir+"/nats.conf")
	}
}

// driveNATS: P connections publishing asynchronously (PublishAsync, bounded pending
// acks) to one file-storage stream; one ordered consumer, or C members of a durable pull
// consumer without acks.
func driveNATS(ctx context.Context, cfg Config, srv *server, producers int) (driven, error) {
	admin, err := nats.Connect("nats://" + srv.addr)
	if err != nil {
		return driven{}, err
	}
	defer admin.Close()
	js, err := jetstream.New(admin)
	if err != nil {
		return driven{}, err
	}
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "BENCH", Subjects: []string{"bench"},
		Storage: jetstream.FileStorage, Replicas: 1})
	if err != nil {
		return driven{}, fmt.Errorf("create stream: %w", err)
	}
	// One consumer reads through an ordered consumer, which detects and repairs gaps;
	// several share a durable pull consumer without acks.
	var cons jetstream.Consumer
	if cfg.Consumers == 1 {
		cons, err = stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	} else {
		cons, err = stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "bench", AckPolicy: jetstream.AckNonePolicy})
	}
	if err != nil {
		return driven{}, fmt.Errorf("create consumer: %w", err)
	}
	value := payload(cfg.ValueBytes)
	got := newTally(cfg.Records)
	cctx, stopConsumers := context.WithCancel(ctx)
	defer stopConsumers()
	var cwg sync.WaitGroup
	for range cfg.Consumers {
		cwg.Go(func() {
			it, err := cons.Messages(jetstream.PullMaxMessages(1000))
			if err != nil {
				return
			}
			go func() { <-cctx.Done(); it.Stop() }()
			for {
				if _, err := it.Next(); err != nil {
					return
				}
				got.add(1)
			}
		})
	}

	acks := &ackLog{}
	start := time.Now()
	var pwg sync.WaitGroup
	perr := make(chan error, producers+1)
	for i := range producers {
		pwg.Go(func() {
			nc, err := nats.Connect("nats://" + srv.addr)
			if err != nil {
				report(perr, err)
				return
			}
			defer nc.Close()
			pjs, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
			if err != nil {
				report(perr, err)
				return
			}
			type sent struct {
				f  jetstream.PubAckFuture
				at time.Time
			}
			q := make(chan sent, 8192)
			var local []time.Duration
			done := make(chan struct{})
			go func() {
				defer close(done)
				for s := range q {
					select {
					case <-s.f.Ok():
						local = append(local, time.Since(s.at))
					case err := <-s.f.Err():
						report(perr, err)
					case <-ctx.Done():
						return
					}
				}
			}()
			for range split(cfg.Records, producers, i) {
				at := time.Now()
				f, err := pjs.PublishAsync("bench", value, jetstream.WithStallWait(30*time.Second))
				if err != nil {
					report(perr, err)
					break
				}
				q <- sent{f, at}
			}
			close(q)
			<-done
			acks.add(local...)
		})
	}
	pwg.Wait()
	if err := firstErr(perr); err != nil {
		return driven{}, fmt.Errorf("publish: %w", err)
	}
	if err := got.wait(ctx, nil); err != nil {
		return driven{}, err
	}
	elapsed := time.Since(start)
	stopConsumers()
	cwg.Wait()
	return driven{elapsed: elapsed, acks: acks.acks}, nil
}
