package node_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/compact"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/store"
)

// TestRetentionLoopCompacts: the loop `strata dev` runs (RunRetentionLoop) makes a
// compaction pass after each retention pass on a node opened with PartCompaction: an
// overwritten record older than the head guard goes, the latest stays at its offset.
func TestRetentionLoopCompacts(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	n, err := node.Open(ctx, node.Config{DataDir: t.TempDir(), Clock: clock}, node.PartLog|node.PartRetention|node.PartCompaction)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	l := n.Log()
	if _, err := l.CreateTopicWith(ctx, "config", log.TopicSpec{Partitions: 1, Cleanup: store.TopicCleanup{Cleanup: store.CleanupCompact}}); err != nil {
		t.Fatal(err)
	}
	p := int32(0)
	for _, v := range []string{"1", "2"} {
		if _, err := l.Append(ctx, "config", []log.Record{{Key: []byte("k"), Value: []byte(v), Partition: &p}}, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	now = now.Add(compact.HeadGuard + time.Second)
	mu.Unlock()
	done := make(chan struct{})
	go func() { defer close(done); n.RunRetentionLoop(ctx, 10*time.Millisecond) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := l.Poll(ctx, "config", 0, 0, log.PollOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Records) == 1 && res.Records[0].Offset == 1 && string(res.Records[0].Value) == "2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never compacted: %+v", res.Records)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
}
