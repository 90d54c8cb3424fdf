package log_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
)

// fakeClock is a settable clock safe for concurrent use.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestIncreasePartitions: the count only grows; existing partitions keep their offsets,
// new ones start at 0; another node sees a new partition at once when asked for it by
// number, and spreads keys over the new count once its cache expires.
func TestIncreasePartitions(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		clock := &fakeClock{now: time.Now()}
		mk := func() *log.Log {
			l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta, Clock: clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
		a, b := mk(), mk()
		mustTopic(t, a, "grow", 2)
		p1 := int32(1)
		if _, err := b.Append(ctx, "grow", []log.Record{{Value: []byte("x"), Partition: &p1}, {Value: []byte("y"), Partition: &p1}}, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, n := range []int32{2, 1, 0, 1025} {
			if _, err := a.IncreasePartitions(ctx, "grow", n); !errors.Is(err, log.ErrInvalid) {
				t.Fatalf("IncreasePartitions to %d: %v, want ErrInvalid", n, err)
			}
		}
		if _, err := a.IncreasePartitions(ctx, "nope", 3); !errors.Is(err, log.ErrTopicNotFound) {
			t.Fatalf("IncreasePartitions of an unknown topic: %v", err)
		}
		if _, err := a.IncreasePartitions(ctx, "grow", 4); err != nil {
			t.Fatal(err)
		}
		// b cached 2 partitions: an explicit partition 3 makes it re-read at once.
		p3 := int32(3)
		res, err := b.Append(ctx, "grow", []log.Record{{Value: []byte("z"), Partition: &p3}}, log.AppendOptions{})
		if err != nil || res[0].Partition != 3 || res[0].Offset != 0 {
			t.Fatalf("append to the new partition 3 through a node that cached 2: %+v, %v", res, err)
		}
		res, err = b.Append(ctx, "grow", []log.Record{{Value: []byte("w"), Partition: &p1}}, log.AppendOptions{})
		if err != nil || res[0].Offset != 2 {
			t.Fatalf("partition 1 kept its offsets: %+v, %v", res, err)
		}
		// Keys hash over the new count once the cache expires.
		key := []byte{}
		for i := 0; ; i++ {
			key = []byte{byte(i)}
			if log.PartitionForKey(key, 4) >= 2 {
				break
			}
		}
		clock.Advance(log.TopicCacheTTL)
		res, err = b.Append(ctx, "grow", []log.Record{{Key: key, Value: []byte("k")}}, log.AppendOptions{})
		if err != nil || res[0].Partition != log.PartitionForKey(key, 4) {
			t.Fatalf("keyed append after the cache TTL went to %+v, %v; want partition %d", res, err, log.PartitionForKey(key, 4))
		}
		info, err := b.DescribeTopic(ctx, "grow")
		if err != nil || len(info.Partitions) != 4 || info.Partitions[1].HighWatermark != 3 {
			t.Fatalf("describe after the increase: %+v, %v", info, err)
		}
	})
}
