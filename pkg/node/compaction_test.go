package node_test

import (
	"context"
	"errors"
	"fmt"
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

// TestCompactionFanout: the compaction function's scheduled pass hands every partition
// of every compacted topic (and no other topic's) to start; each partition's pass
// (RunCompactionPartition) compacts only its partition; a partition of a topic that is
// not compacted, out of range or of no topic is ErrNotCompacted.
func TestCompactionFanout(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	n, err := node.Open(ctx, node.Config{DataDir: t.TempDir(), Clock: func() time.Time { return now }}, node.PartLog|node.PartCompaction)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	l := n.Log()
	if _, err := l.CreateTopicWith(ctx, "config", log.TopicSpec{Partitions: 2, Cleanup: store.TopicCleanup{Cleanup: store.CleanupCompact}}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.CreateTopicWith(ctx, "events", log.TopicSpec{Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []int32{0, 1} {
		for _, v := range []string{"1", "2"} {
			if _, err := l.Append(ctx, "config", []log.Record{{Key: []byte("k"), Value: []byte(v), Partition: &p}}, log.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	now = now.Add(compact.HeadGuard + time.Second)
	var started []string
	if _, err := n.RunCompactionFanout(ctx, func(_ context.Context, topic string, p int32) error {
		started = append(started, fmt.Sprintf("%s/%d", topic, p))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(started) != "[config/0 config/1]" {
		t.Errorf("started %v, want config/0 and config/1 only", started)
	}
	st, err := n.RunCompactionPartition(ctx, "config", 1)
	if err != nil || st.RecordsRemoved != 1 {
		t.Fatalf("pass of config/1: %+v, %v; want 1 record removed", st, err)
	}
	topic, _ := n.Meta().GetTopic(ctx, "config")
	if c, err := n.Meta().(store.DirtyCounterStore).AddOverwrites(ctx, topic.ID(), 1, 0); err != nil || c.Removed != 1 {
		t.Errorf("config/1's dirty counter after its pass: %+v, %v; want 1 removed", c, err)
	}
	for p, want := range map[int32]int{0: 2, 1: 1} {
		res, err := l.Poll(ctx, "config", p, 0, log.PollOptions{})
		if err != nil || len(res.Records) != want {
			t.Errorf("config/%d after the pass of config/1: %d records (%v), want %d", p, len(res.Records), err, want)
		}
	}
	for _, c := range []struct {
		topic string
		p     int32
	}{{"events", 0}, {"config", 2}, {"config", -1}, {"gone", 0}} {
		if _, err := n.RunCompactionPartition(ctx, c.topic, c.p); !errors.Is(err, node.ErrNotCompacted) {
			t.Errorf("%s/%d: %v, want ErrNotCompacted", c.topic, c.p, err)
		}
	}
}

// TestCompactStartOnDirtyAppends: a node opened with CompactStart runs the dirty-ratio
// trigger on its log's appends: a compacted partition overwritten past the ratio is
// asked for once; new keys and a topic that deletes by time ask for nothing.
func TestCompactStartOnDirtyAppends(t *testing.T) {
	ctx := context.Background()
	var asked []string
	n, err := node.Open(ctx, node.Config{DataDir: t.TempDir(), CompactStart: func(_ context.Context, topic string, p int32) error {
		asked = append(asked, fmt.Sprintf("%s/%d", topic, p))
		return nil
	}}, node.PartLog)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	l := n.Log()
	if _, err := l.CreateTopicWith(ctx, "config", log.TopicSpec{Partitions: 1, Cleanup: store.TopicCleanup{Cleanup: store.CleanupCompact}}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.CreateTopicWith(ctx, "events", log.TopicSpec{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	p := int32(0)
	put := func(topic, key string) {
		t.Helper()
		if _, err := l.Append(ctx, topic, []log.Record{{Key: []byte(key), Value: []byte("v"), Partition: &p}}, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"a", "b", "c", "d"} {
		put("config", k)
		put("events", k)
		put("events", k)
	}
	if len(asked) != 0 {
		t.Fatalf("asked for %v after new keys only, want nothing", asked)
	}
	for _, k := range []string{"a", "b", "c", "d"} { // 4 superseded of 8: 0.5
		put("config", k)
	}
	if fmt.Sprint(asked) != "[config/0]" {
		t.Errorf("asked for %v, want config/0 once", asked)
	}
}
