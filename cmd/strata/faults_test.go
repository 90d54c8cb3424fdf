package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/soak"
	"github.com/stratalog/strata/pkg/client"
)

// TestDevInjectedFaults: STRATA_FAULT_RATE is refused with the embedded backend, and
// with --backend aws it makes the real process inject AWS faults (announced on stderr)
// while idempotent producers that retry still get every batch acknowledged exactly
// once, readable at its offsets (soak.Audit).
func TestDevInjectedFaults(t *testing.T) {
	t.Run("local refuses", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, strataBin, "dev", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir())
		cmd.Env = append(os.Environ(), "STRATA_FAULT_RATE=0.1")
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "STRATA_FAULT_RATE") {
			t.Fatalf("strata dev --backend local with STRATA_FAULT_RATE: %v, output %q; want a refusal naming the variable", err, out)
		}
	})
	t.Run("aws", func(t *testing.T) {
		ctx := context.Background()
		cfg, env := emulatedDev(t, "fault")
		env = append(env, "STRATA_FAULT_RATE=0.1")
		p := startDevWith(t, env, "dev", "--backend", "aws", "--bootstrap", "--addr", "127.0.0.1:0",
			"--bucket", cfg.Bucket, "--table-prefix", cfg.TablePrefix, "--retention-interval", "1h")
		c, _ := client.New(p.url)
		const topic = "faults"
		var err error
		for try := 0; try < 10; try++ { // the topic's own writes meet faults too
			if _, err = c.CreateTopic(ctx, topic, client.TopicConfig{Partitions: 2}); err == nil || !client.IsRetryable(err) {
				break
			}
		}
		if err != nil {
			t.Fatalf("create topic: %v", err)
		}
		in := soak.Input{Failed: map[string]int{}, IdempotentIDs: map[string]bool{}}
		var (
			mu       sync.Mutex
			wg       sync.WaitGroup
			failures int
		)
		for a := range 4 {
			wg.Go(func() {
				for b := range 25 {
					key := fmt.Sprintf("a%d-b%d", a, b)
					recs := make([]client.Record, 3)
					ids := make([]string, len(recs))
					for j := range recs {
						ids[j] = fmt.Sprintf("%s-%d", key, j)
						recs[j] = client.Record{Key: fmt.Appendf(nil, "k%d", j), Value: []byte(ids[j] + "|v")}
					}
					mu.Lock()
					for _, id := range ids {
						in.IdempotentIDs[id] = true
					}
					mu.Unlock()
					for try := 1; ; try++ {
						res, err := c.Append(ctx, topic, recs, client.AppendOptions{IdempotencyKey: key})
						mu.Lock()
						if err == nil {
							for j, r := range res {
								in.Acks = append(in.Acks, soak.Ack{ID: ids[j], Partition: r.Partition, Offset: r.Offset,
									Key: recs[j].Key, Value: recs[j].Value, Idempotent: true})
							}
						} else {
							failures++
						}
						mu.Unlock()
						if err == nil {
							break
						}
						if !client.IsRetryable(err) || try == 20 {
							t.Errorf("batch %s: %v after %d tries", key, err, try)
							break
						}
						time.Sleep(20 * time.Millisecond)
					}
				}
			})
		}
		wg.Wait()
		top, err := c.DescribeTopic(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		for _, pi := range top.PartitionInfo {
			for next := int64(0); next < pi.HighWatermark; {
				res, err := c.Poll(ctx, topic, pi.Partition, next, client.PollOptions{MaxRecords: 1000, Wait: time.Second})
				if err != nil {
					if client.IsRetryable(err) {
						continue
					}
					t.Fatalf("read %d@%d: %v", pi.Partition, next, err)
				}
				for _, r := range res.Records {
					in.Log = append(in.Log, soak.Stored{Partition: pi.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value})
				}
				next = res.NextOffset
			}
		}
		rep := soak.Audit(in)
		stderr := p.cmd.Stderr.(*lockedWriter).String()
		if !strings.Contains(stderr, "injecting AWS faults") {
			t.Errorf("stderr does not announce the injected faults: %q", stderr)
		}
		t.Logf("100 idempotent batches at 10%% injected faults: %d append failures retried; %d records acknowledged, %d in the log, %d lost, %d duplicates",
			failures, rep.AckedRecords, rep.StoredRecords, rep.LostAcked, rep.Duplicates)
		for _, v := range rep.Violations {
			t.Errorf("audit: %s", v)
		}
		if rep.AckedRecords != 300 {
			t.Errorf("%d records acknowledged, want 300", rep.AckedRecords)
		}
	})
}
