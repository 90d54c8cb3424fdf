package peers

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/stratalog/strata/pkg/client"
)

const strataTopic = "bench"

func startStrata(ctx context.Context, cfg Config, dir string) (*server, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	return launch(ctx, dir, addr, cfg.StrataBin, "dev", "--addr", addr, "--data-dir", dir+"/data")
}

// driveStrata: P producers with the SDK's defaults (pkg/client.Producer, binary
// blocks; the buffer replaced by Config.StrataBufferBytes when set), records spread
// round-robin over the partitions; C consumers polling their share of the partitions
// from offset 0 with long polls (binary answers).
func driveStrata(ctx context.Context, cfg Config, srv *server, producers int) (driven, error) {
	c, err := client.New("http://" + srv.addr)
	if err != nil {
		return driven{}, err
	}
	if _, err := c.CreateTopic(ctx, strataTopic, client.TopicConfig{Partitions: int32(cfg.Partitions)}); err != nil {
		return driven{}, fmt.Errorf("create topic: %w", err)
	}
	value := payload(cfg.ValueBytes)
	got := newTally(cfg.Records)
	cctx, stopConsumers := context.WithCancel(ctx)
	defer stopConsumers()
	var cwg sync.WaitGroup
	cerr := make(chan error, cfg.Partitions)
	for p := range cfg.Partitions {
		cwg.Go(func() {
			// C consumers share the partitions; each partition is read by one of them.
			off := int64(0)
			for cctx.Err() == nil {
				r, err := c.Poll(cctx, strataTopic, int32(p), off, client.PollOptions{MaxRecords: 10000, MaxBytes: 3 << 20, Wait: 200 * time.Millisecond})
				if err != nil {
					if cctx.Err() == nil {
						report(cerr, err)
					}
					return
				}
				off = r.NextOffset
				got.add(len(r.Records))
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
			prod, err := client.NewProducer(ctx, c, strataTopic, client.ProducerConfig{Partitions: int32(cfg.Partitions), BufferBytes: cfg.StrataBufferBytes})
			if err != nil {
				report(perr, err)
				return
			}
			// One collector per partition: a partition's futures complete in order.
			type sent struct {
				f  *client.Future
				at time.Time
			}
			queues := make([]chan sent, cfg.Partitions)
			var qwg sync.WaitGroup
			for q := range queues {
				queues[q] = make(chan sent, 1<<16)
				qwg.Go(func() {
					var local []time.Duration
					for s := range queues[q] {
						<-s.f.Done()
						local = append(local, time.Since(s.at))
						if _, err := s.f.Result(); err != nil {
							report(perr, err)
						}
					}
					acks.add(local...)
				})
			}
			for j := range n {
				part := int32((i + j) % cfg.Partitions)
				at := time.Now()
				f, err := prod.Send(ctx, client.Record{Value: value, Partition: &part})
				if err != nil {
					report(perr, err)
					break
				}
				queues[part] <- sent{f, at}
			}
			for _, q := range queues {
				close(q)
			}
			if err := prod.Close(ctx); err != nil {
				report(perr, err)
			}
			qwg.Wait()
		})
	}
	pwg.Wait()
	if err := firstErr(perr); err != nil {
		return driven{}, fmt.Errorf("produce: %w", err)
	}
	if err := got.wait(ctx, cerr); err != nil {
		return driven{}, err
	}
	elapsed := time.Since(start)
	stopConsumers()
	cwg.Wait()
	return driven{elapsed: elapsed, acks: acks.acks}, nil
}
