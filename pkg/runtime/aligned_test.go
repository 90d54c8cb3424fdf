package runtime_test

import (
	"context"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
	"github.com/stratalog/strata/pkg/wire"
)

// TestAlignedProducersShareBatches runs the SDK's AlignLinger against the assembled
// server's group commit: producers of their own (each its own Client and connections,
// as producers on separate hosts are) send a record a period at random moments of it.
// Aligned, each period's requests reach the server at one tick, and its window puts
// them in one batch; unaligned, each round goes a linger after its record and few
// share. The batches are counted by the topic's batch mark (Strata-Topic-Batch), which
// numbers the topic's committed batches from 1.
func TestAlignedProducersShareBatches(t *testing.T) {
	const (
		producers = 8
		rounds    = 3
		linger    = 300 * time.Millisecond
	)
	batches := func(t *testing.T, align bool) int64 {
		rt, c, _ := start(t, runtime.Config{Node: node.Config{DataDir: t.TempDir(), GroupCommitWindow: 15 * time.Millisecond}})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := c.CreateTopic(ctx, "orders", client.TopicConfig{Partitions: 2}); err != nil {
			t.Fatal(err)
		}
		base := batchMark(t, rt.URL(), "orders")
		// Start early in a period, so that each round's records fall in one.
		if off := time.Duration(time.Now().UnixNano()) % linger; off > linger/10 {
			time.Sleep(linger - off)
		}
		begin := time.Now().Truncate(linger)
		var wg sync.WaitGroup
		for i := range producers {
			pc, err := client.New(rt.URL())
			if err != nil {
				t.Fatal(err)
			}
			p, err := client.NewProducer(ctx, pc, "orders", client.ProducerConfig{Partitions: 2, Linger: linger, AlignLinger: align})
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				defer func() { _ = p.Close(ctx) }()
				for r := range rounds {
					at := begin.Add(time.Duration(r)*linger + linger/10 + rand.N(linger*7/10))
					time.Sleep(time.Until(at))
					fut, err := p.Send(ctx, client.Record{Key: []byte{byte(i)}, Value: []byte{byte(r)}})
					if err != nil {
						t.Error(err)
						return
					}
					if _, err := fut.Wait(ctx); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		return batchMark(t, rt.URL(), "orders") - base
	}
	aligned := batches(t, true)
	independent := batches(t, false)
	t.Logf("%d requests: %d batches aligned, %d independent", producers*rounds, aligned, independent)
	if aligned > 2*rounds {
		t.Errorf("aligned producers' %d requests made %d batches, want at most %d (one a round, some slack)", producers*rounds, aligned, 2*rounds)
	}
	if independent <= aligned {
		t.Errorf("independent producers made %d batches, aligned %d: aligning merged nothing", independent, aligned)
	}
}

// batchMark is the topic's batch number as a describe's answer carries it.
func batchMark(t *testing.T, url, topic string) int64 {
	t.Helper()
	resp, err := http.Get(url + "/v1/topics/" + topic)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	v := resp.Header.Get(wire.HeaderTopicBatch)
	if v == "" {
		return 0
	}
	m, err := wire.ParseBatchMark(v)
	if err != nil {
		t.Fatalf("%s %q: %v", wire.HeaderTopicBatch, v, err)
	}
	return m.Batch
}
