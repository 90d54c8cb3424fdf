package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/client"
)

// spreadTransport sends each HTTP exchange to the next of several hosts in turn, so the
// attempts of one producer request reach different hosts, as behind a load balancer or
// Lambda; every loseEvery-th append's answer (0: none) is lost on the way back after the
// server answered it, the request done.
type spreadTransport struct {
	hosts     []*url.URL
	loseEvery uint64
	next      atomic.Uint64
	lost      atomic.Int64
}

func (s *spreadTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	n := s.next.Add(1)
	u := s.hosts[n%uint64(len(s.hosts))]
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host, r.Host = u.Scheme, u.Host, u.Host
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && s.loseEvery > 0 && n%s.loseEvery == 0 && r.Method == http.MethodPost {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		s.lost.Add(1)
		return nil, errors.New("fault run: the answer was lost on the way back")
	}
	return resp, err
}

// TestFaultRunProducerRetries is the fault run of docs/RELIABILITY.md with producer
// retries on ("Producer retries under injected faults"): 4 `strata dev --backend aws`
// hosts on one set of tables, every host injecting faults into 10% of its AWS request
// attempts (5% before the request, nothing applied; 5% after it, applied and the answer
// lost). 8 SDK Producers (client.Producer, default retries and delivery timeout) each
// send records one request at a time, every HTTP exchange going to the next host in
// turn, so a request's retries reach other hosts than its first attempt, and every 25th
// exchange's answer is lost on its way back (the request done), which the producer
// retries on another host. It counts
// acknowledged and failed records, then reads every partition back: every acknowledged
// record must be readable at its offset and no record at two offsets. It runs only when
// STRATA_FAULT_RUN gives the number of records (e.g. 400).
func TestFaultRunProducerRetries(t *testing.T) {
	total, _ := strconv.Atoi(os.Getenv("STRATA_FAULT_RUN"))
	if total <= 0 {
		t.Skip("set STRATA_FAULT_RUN to the number of records to run the fault run")
	}
	const hosts, producers, partitions = 4, 8, 2
	ctx := context.Background()
	cfg, base := emulatedDev(t, "prun")
	faults := append(append([]string{}, base...), "STRATA_FAULT_RATE=0.1",
		"STRATA_FAULT_KINDS=before/500,before/timeout,after/500,after/timeout")
	args := []string{"dev", "--backend", "aws", "--addr", "127.0.0.1:0", "--bucket", cfg.Bucket,
		"--table-prefix", cfg.TablePrefix, "--retention-interval", "1h"}
	setup := startDevWith(t, base, append(args, "--bootstrap")...)
	sc, _ := client.New(setup.url)
	const topic = "prun"
	if _, err := sc.CreateTopic(ctx, topic, client.TopicConfig{Partitions: partitions}); err != nil {
		t.Fatal(err)
	}
	spread := &spreadTransport{loseEvery: 25}
	for range hosts {
		p := startDevWith(t, faults, args...)
		u, err := url.Parse(p.url)
		if err != nil {
			t.Fatal(err)
		}
		spread.hosts = append(spread.hosts, u)
	}
	type ack struct {
		partition int32
		offset    int64
		value     string
	}
	var (
		mu      sync.Mutex
		acks    []ack
		failed  int
		retries int64
		wg      sync.WaitGroup
		next    = make(chan int)
	)
	start := time.Now()
	for range producers {
		c, _ := client.New(spread.hosts[0].String(), client.WithHTTPClient(&http.Client{Transport: spread}))
		p, err := client.NewProducer(ctx, c, topic, client.ProducerConfig{})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			defer func() {
				_ = p.Close(ctx)
				mu.Lock()
				retries += p.Stats().Retries
				mu.Unlock()
			}()
			for n := range next {
				v := fmt.Sprintf("record-%d", n)
				res, err := p.SendSync(ctx, client.Record{Value: []byte(v)})
				mu.Lock()
				if err == nil {
					acks = append(acks, ack{res.Partition, res.Offset, v})
				} else {
					failed++
					if failed <= 10 {
						t.Logf("record %d failed: %v", n, err)
					}
				}
				mu.Unlock()
			}
		})
	}
	for n := range total {
		next <- n
	}
	close(next)
	wg.Wait()
	took := time.Since(start)

	// Read back through the host without faults, waiting for the materialiser.
	stored := map[int32]map[int64]string{}
	at := map[string]int{} // offsets each value is stored at
	deadline := time.Now().Add(2 * time.Minute)
	for p := range int32(partitions) {
		stored[p] = map[int64]string{}
		for off := int64(0); ; {
			res, err := sc.Poll(ctx, topic, p, off, client.PollOptions{MaxRecords: 1000, Wait: time.Second})
			if err != nil {
				t.Fatalf("read %d@%d: %v", p, off, err)
			}
			for _, r := range res.Records {
				stored[p][r.Offset] = string(r.Value)
				at[string(r.Value)]++
			}
			off = res.NextOffset
			if off >= res.HighWatermark || time.Now().After(deadline) {
				break
			}
		}
	}
	lost, dups := 0, 0
	for _, a := range acks {
		if stored[a.partition][a.offset] != a.value {
			lost++
		}
	}
	for _, n := range at {
		if n > 1 {
			dups += n - 1
		}
	}
	t.Logf("producer fault run: %d hosts, %d producers (retries on, each exchange to the next host), %d partitions, %d records in %s: "+
		"%d acknowledged, %d failed (%.2f%%), %d retries, %d answers lost on the way back, %d acknowledged lost, %d duplicate offsets; %d records stored",
		hosts, producers, partitions, total, took.Round(time.Second), len(acks), failed, 100*float64(failed)/float64(total), retries,
		spread.lost.Load(), lost, dups, len(at))
	if lost > 0 || dups > 0 {
		t.Errorf("%d acknowledged records not readable at their offsets, %d duplicate offsets", lost, dups)
	}
	if float64(failed) > 0.005*float64(total) {
		t.Errorf("%d of %d records failed, more than 0.5%%", failed, total)
	}
}
