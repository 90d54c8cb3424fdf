package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/client"
)

// TestFaultRunPlainAppends is the fault run of docs/RELIABILITY.md ("Plain appends under
// injected faults"): 4 `strata dev --backend aws` hosts on one set of
// tables, 8 appenders each on one partition, every host injecting faults into 10% of its
// AWS request attempts (half before the request: 500 or timeout, nothing applied; half
// after it: applied, the answer lost). Each appender sends plain appends (no
// Idempotency-Key), one HTTP exchange each, never retried. It counts acknowledged and
// failed appends and checks that every acknowledged record is readable at its offset.
// It runs only when STRATA_FAULT_RUN gives the number of appends (e.g. 400);
// STRATA_FAULT_RUN_BIN runs another strata binary (a build of an earlier commit, for the
// "before" figure).
func TestFaultRunPlainAppends(t *testing.T) {
	total, _ := strconv.Atoi(os.Getenv("STRATA_FAULT_RUN"))
	if total <= 0 {
		t.Skip("set STRATA_FAULT_RUN to the number of appends to run the fault run")
	}
	bin := strataBin
	if b := os.Getenv("STRATA_FAULT_RUN_BIN"); b != "" {
		bin = b
	}
	const hosts, perHost = 4, 8
	ctx := context.Background()
	cfg, base := emulatedDev(t, "frun")
	faults := append(append([]string{}, base...), "STRATA_FAULT_RATE=0.1",
		"STRATA_FAULT_KINDS=before/500,before/timeout,after/500,after/timeout")
	args := []string{"dev", "--backend", "aws", "--addr", "127.0.0.1:0", "--bucket", cfg.Bucket,
		"--table-prefix", cfg.TablePrefix, "--retention-interval", "1h"}
	saved := strataBin
	strataBin = bin
	defer func() { strataBin = saved }()
	// The first host bootstraps the tables without faults and creates the topic; then
	// the hosts that append start with faults on.
	setup := startDevWith(t, base, append(args, "--bootstrap")...)
	sc, _ := client.New(setup.url)
	const topic = "frun"
	if _, err := sc.CreateTopic(ctx, topic, client.TopicConfig{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	var urls []string
	var procs []*devProc
	for range hosts {
		p := startDevWith(t, faults, args...)
		procs = append(procs, p)
		urls = append(urls, p.url)
	}
	type ack struct {
		offset int64
		value  string
	}
	var (
		mu     sync.Mutex
		acks   []ack
		failed int
		wg     sync.WaitGroup
		next   = make(chan int)
	)
	for h := range hosts {
		c, _ := client.New(urls[h])
		for range perHost {
			wg.Go(func() {
				for n := range next {
					v := fmt.Sprintf("append-%d", n)
					actx, cancel := context.WithTimeout(ctx, 60*time.Second)
					res, err := c.Append(actx, topic, []client.Record{{Value: []byte(v)}}, client.AppendOptions{})
					cancel()
					mu.Lock()
					if err == nil && len(res) == 1 {
						acks = append(acks, ack{res[0].Offset, v})
					} else {
						failed++
						if failed <= 10 {
							t.Logf("append %d failed: %v", n, err)
						}
					}
					mu.Unlock()
				}
			})
		}
	}
	for n := range total {
		next <- n
	}
	close(next)
	wg.Wait()

	// Read back through the host without faults, waiting for the materialiser.
	stored := map[int64]string{}
	deadline := time.Now().Add(2 * time.Minute)
	for off := int64(0); ; {
		res, err := sc.Poll(ctx, topic, 0, off, client.PollOptions{MaxRecords: 1000, Wait: time.Second})
		if err != nil {
			t.Fatalf("read @%d: %v", off, err)
		}
		for _, r := range res.Records {
			stored[r.Offset] = string(r.Value)
		}
		off = res.NextOffset
		if off >= res.HighWatermark || time.Now().After(deadline) {
			break
		}
	}
	lost := 0
	for _, a := range acks {
		if stored[a.offset] != a.value {
			lost++
		}
	}
	t.Logf("fault run: %d hosts x %d appenders, 1 partition, %d plain appends: %d acknowledged, %d failed (%.1f%%), %d acknowledged lost; %d records stored",
		hosts, perHost, total, len(acks), failed, 100*float64(failed)/float64(total), lost, len(stored))
	if testing.Verbose() {
		for i, p := range procs {
			for _, l := range strings.Split(p.cmd.Stderr.(*lockedWriter).String(), "\n") {
				if strings.Contains(l, "unavailable") || strings.Contains(l, "unknown") {
					t.Logf("host %d: %.400s", i, l)
				}
			}
		}
	}
	if lost > 0 {
		t.Errorf("%d acknowledged records not readable at their offsets", lost)
	}
}
