package consumer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
)

// TestMembersShareATopic: two long-running members of one group split 4 partitions
// between them, consume every record exactly once between them, and the first
// member's partitions move to the second when it leaves.
func TestMembersShareATopic(t *testing.T) {
	s := backendtest.Local(context.Background(), t)
	ctx := context.Background()
	l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.CreateTopic(ctx, "orders", 4, 0); err != nil {
		t.Fatal(err)
	}
	coord := group.New(s.Meta, l, nil)
	var mu sync.Mutex
	seen := map[string]int{}
	byMember := map[string]map[int32]bool{}
	start := func(name string) (context.CancelFunc, chan error) {
		h := func(_ context.Context, r consumer.Record) error {
			mu.Lock()
			defer mu.Unlock()
			seen[fmt.Sprintf("%d/%d", r.Partition, r.Offset)]++
			if byMember[name] == nil {
				byMember[name] = map[int32]bool{}
			}
			byMember[name][r.Partition] = true
			return nil
		}
		c, err := consumer.New(l, coord, consumer.Config{Group: "billing", Topic: "orders", Member: name, Handler: h,
			LeaseTTL: time.Second, PollWait: 20 * time.Millisecond, CommitInterval: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		bal, err := group.NewBalancer(group.BalancerConfig{Store: group.ByIncarnation(s.Meta, l), Group: "billing", Topic: "orders", Member: name,
			Partitions: 4, TTL: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- c.RunMember(runCtx, bal, 100*time.Millisecond) }()
		return cancel, done
	}
	produce := func(n int) {
		recs := make([]log.Record, n)
		for i := range recs {
			recs[i] = log.Record{Key: fmt.Appendf(nil, "k%d", i), Value: []byte("v")}
		}
		if _, err := l.Append(ctx, "orders", recs, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	total := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(seen)
	}
	waitFor := func(n int) {
		deadline := time.Now().Add(20 * time.Second)
		for total() < n {
			if time.Now().After(deadline) {
				t.Fatalf("consumed %d of %d records", total(), n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	stopA, doneA := start("a")
	stopB, doneB := start("b")
	time.Sleep(500 * time.Millisecond) // a few balancer steps
	produce(200)
	waitFor(200)
	mu.Lock()
	if len(byMember["a"]) == 0 || len(byMember["b"]) == 0 {
		t.Errorf("partitions by member %v: both members must get a share", byMember)
	}
	mu.Unlock()

	stopA()
	if err := <-doneA; err != nil {
		t.Fatal(err)
	}
	produce(200)
	waitFor(400)
	stopB()
	if err := <-doneB; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for k, n := range seen {
		if n != 1 {
			t.Errorf("record %s handled %d times", k, n)
		}
	}
	info, err := coord.Describe(ctx, "billing")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range info.Partitions {
		if p.Committed == nil || *p.Committed != p.HighWatermark {
			t.Errorf("partition %d committed %v of %d", p.Partition, p.Committed, p.HighWatermark)
		}
	}
}
