package log_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/store"
)

func compactSpec(retention time.Duration) log.TopicSpec {
	return log.TopicSpec{Partitions: 2, Cleanup: store.TopicCleanup{Cleanup: store.CleanupCompact, DeleteRetention: retention}}
}

func wantLatest(t *testing.T, l *log.Log, topic, key, value string, offset int64) log.KeyValue {
	t.Helper()
	kv, err := l.Latest(context.Background(), topic, []byte(key), nil)
	if err != nil {
		t.Fatalf("Latest(%s, %q): %v", topic, key, err)
	}
	if string(kv.Record.Value) != value || kv.Record.Offset != offset || string(kv.Record.Key) != key || kv.Partition != log.PartitionForKey([]byte(key), 2) {
		t.Fatalf("Latest(%s, %q) = partition %d offset %d %q, want partition %d offset %d %q", topic, key, kv.Partition, kv.Record.Offset, kv.Record.Value,
			log.PartitionForKey([]byte(key), 2), offset, value)
	}
	return kv
}

// TestLatestAfterOverwritesAndTombstone: on a compacted topic the key lookup answers each
// acknowledged overwrite at once (records and blocks alike), a tombstone as deleted (with
// its offset) until its retention passes by the log's clock and as never written after,
// and as never written once the compaction pass drops the tombstone's entry; a key
// written again is back. Both backends.
func TestLatestAfterOverwritesAndTombstone(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		clock := &fakeClock{now: time.Now()}
		l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta, Clock: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.CreateTopicWith(ctx, "orders", compactSpec(time.Hour)); err != nil {
			t.Fatal(err)
		}
		key := []byte("o-42")
		if _, err := l.Latest(ctx, "orders", key, nil); !errors.Is(err, log.ErrKeyNotFound) {
			t.Fatalf("Latest of a key never written: %v, want ErrKeyNotFound", err)
		}
		for i, v := range []string{"new", "paid"} {
			if _, err := l.Append(ctx, "orders", []log.Record{{Key: key, Value: []byte(v)}, {Key: []byte("o-7"), Value: []byte("x")}}, log.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
			wantLatest(t, l, "orders", "o-42", v, int64(2*i))
		}
		p := log.PartitionForKey(key, 2)
		b, err := segment.EncodeBlock([]segment.Record{
			{Timestamp: 5, Key: key, Value: []byte("packed")},
			{Timestamp: 6, Key: key, Value: []byte("shipped"), Headers: []segment.Header{{Key: "by", Value: []byte("van")}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.AppendBlocks(ctx, "orders", []log.Block{{Partition: p, Data: b}}, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		kv := wantLatest(t, l, "orders", "o-42", "shipped", 5)
		if kv.Record.Timestamp != 6 || len(kv.Record.Headers) != 1 || string(kv.Record.Headers[0].Value) != "van" {
			t.Fatalf("Latest record %+v, want timestamp 6 and header by=van", kv.Record)
		}
		if _, err := l.Append(ctx, "orders", []log.Record{{Key: key, Value: nil}}, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		var del *log.KeyDeletedError
		for _, after := range []time.Duration{0, 59 * time.Minute} {
			clock.Advance(after)
			if _, err := l.Latest(ctx, "orders", key, nil); !errors.As(err, &del) || del.Offset != 6 || del.Partition != p {
				t.Fatalf("Latest after a tombstone (+%s): %v, want KeyDeletedError at %d/6", after, err, p)
			}
		}
		clock.Advance(time.Minute)
		if _, err := l.Latest(ctx, "orders", key, nil); !errors.Is(err, log.ErrKeyNotFound) || errors.As(err, &del) {
			t.Fatalf("Latest after the tombstone's retention: %v, want ErrKeyNotFound (not deleted)", err)
		}
		ks := s.Meta.(store.KeyIndexStore)
		tp, err := l.Topic(ctx, "orders")
		if err != nil {
			t.Fatal(err)
		}
		if gone, err := ks.DeleteKey(ctx, tp.ID(), p, key, 6); err != nil || !gone {
			t.Fatalf("DeleteKey of the expired tombstone = %v, %v; want true", gone, err)
		}
		if _, err := l.Latest(ctx, "orders", key, nil); !errors.Is(err, log.ErrKeyNotFound) {
			t.Fatalf("Latest after the tombstone's entry went: %v, want ErrKeyNotFound", err)
		}
		if _, err := l.Append(ctx, "orders", []log.Record{{Key: key, Value: []byte("reopened")}}, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		wantLatest(t, l, "orders", "o-42", "reopened", 7)
		wantLatest(t, l, "orders", "o-7", "x", 3)
	})
}

// TestCompactedTopicRefusesKeyless: records and blocks without a key are refused on a
// compacted topic with an error naming the policy, and nothing of the request is
// appended; a topic of the delete policy takes them and has no key lookup.
func TestCompactedTopicRefusesKeyless(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l := newLog(t, s)
		if _, err := l.CreateTopicWith(ctx, "kv", compactSpec(0)); err != nil {
			t.Fatal(err)
		}
		_, err := l.Append(ctx, "kv", []log.Record{{Key: []byte("a"), Value: []byte("1")}, {Value: []byte("keyless")}}, log.AppendOptions{})
		if !errors.Is(err, log.ErrInvalid) || !strings.Contains(err.Error(), "cleanup.policy=compact") || !strings.Contains(err.Error(), "record 1") {
			t.Fatalf("keyless record: %v, want ErrInvalid naming record 1 and the policy", err)
		}
		b, err := segment.EncodeBlock([]segment.Record{{Key: []byte("a"), Value: []byte("1")}, {Value: []byte("keyless")}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.AppendBlocks(ctx, "kv", []log.Block{{Partition: 0, Data: b}}, log.AppendOptions{}); !errors.Is(err, log.ErrInvalid) || !strings.Contains(err.Error(), "without key") {
			t.Fatalf("keyless block record: %v, want ErrInvalid", err)
		}
		for p := int32(0); p < 2; p++ {
			if recs := readAll(t, l, "kv", p); len(recs) != 0 {
				t.Fatalf("partition %d holds %d records after refused appends", p, len(recs))
			}
		}
		if _, err := l.Latest(ctx, "kv", []byte("a"), nil); !errors.Is(err, log.ErrKeyNotFound) {
			t.Fatalf("Latest after refused appends: %v, want ErrKeyNotFound", err)
		}
		mustTopic(t, l, "plain", 1)
		if _, err := l.Append(ctx, "plain", []log.Record{{Value: []byte("keyless")}}, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Latest(ctx, "plain", []byte("a"), nil); !errors.Is(err, log.ErrInvalid) {
			t.Fatalf("Latest on a delete topic: %v, want ErrInvalid", err)
		}
	})
}

// TestAlterCleanup: a topic's policy changes as Kafka's may (delete to compact, compact
// to compact,delete and back), never from compacted to delete; settings are validated
// and kept across policy changes; keys appended before compaction was turned on are not
// in the key index, those after are; keyless appends are refused from the change on.
func TestAlterCleanup(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l := newLog(t, s)
		mustTopic(t, l, "t", 2)
		if _, err := l.Append(ctx, "t", []log.Record{{Key: []byte("before"), Value: []byte("1")}, {Value: []byte("keyless")}}, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		pol := func(p store.CleanupPolicy) *store.CleanupPolicy { return &p }
		dur := func(d time.Duration) *time.Duration { return &d }
		for _, bad := range []log.CleanupChange{
			{Cleanup: pol("compacted")},
			{DeleteRetention: dur(-time.Second)},
			{MinCompactionLag: dur(time.Hour), MaxCompactionLag: dur(time.Minute)},
		} {
			if _, err := l.AlterCleanup(ctx, "t", bad); !errors.Is(err, log.ErrInvalid) {
				t.Fatalf("AlterCleanup(%+v): %v, want ErrInvalid", bad, err)
			}
		}
		got, err := l.AlterCleanup(ctx, "t", log.CleanupChange{Cleanup: pol(store.CleanupCompact), DeleteRetention: dur(time.Minute)})
		if err != nil || got.Cleanup != store.CleanupCompact || got.DeleteRetention != time.Minute {
			t.Fatalf("AlterCleanup to compact = %+v, %v", got, err)
		}
		if _, err := l.Append(ctx, "t", []log.Record{{Value: []byte("keyless")}}, log.AppendOptions{}); !errors.Is(err, log.ErrInvalid) {
			t.Fatalf("keyless append after compaction on: %v, want ErrInvalid", err)
		}
		if _, err := l.Latest(ctx, "t", []byte("before"), nil); !errors.Is(err, log.ErrKeyNotFound) {
			t.Fatalf("Latest of a key appended before compaction: %v, want ErrKeyNotFound", err)
		}
		if _, err := l.Append(ctx, "t", []log.Record{{Key: []byte("after"), Value: []byte("2")}}, log.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		if kv, err := l.Latest(ctx, "t", []byte("after"), nil); err != nil || string(kv.Record.Value) != "2" {
			t.Fatalf("Latest after compaction on = %+v, %v", kv, err)
		}
		got, err = l.AlterCleanup(ctx, "t", log.CleanupChange{Cleanup: pol("delete, compact"), MaxCompactionLag: dur(time.Hour)})
		if err != nil || got.Cleanup != store.CleanupCompactDelete || got.DeleteRetention != time.Minute || got.MaxCompactionLag != time.Hour {
			t.Fatalf("AlterCleanup to compact,delete = %+v, %v", got, err)
		}
		if _, err := l.AlterCleanup(ctx, "t", log.CleanupChange{Cleanup: pol(store.CleanupDelete)}); !errors.Is(err, log.ErrInvalid) {
			t.Fatalf("AlterCleanup from compacted to delete: %v, want ErrInvalid", err)
		}
		if tp, err := l.Topic(ctx, "t"); err != nil || tp.Cleanup != store.CleanupCompactDelete {
			t.Fatalf("topic after a refused alter: %+v, %v", tp, err)
		}
		if _, err := l.AlterCleanup(ctx, "missing", log.CleanupChange{Cleanup: pol(store.CleanupCompact)}); !errors.Is(err, log.ErrTopicNotFound) {
			t.Fatalf("AlterCleanup of an unknown topic: %v", err)
		}
	})
}

// TestLatestAcrossHosts: appenders on four hosts (four Logs on one store) overwrite one
// key at once; after every append is acknowledged the key lookup answers the highest
// offset any of them got, whatever order their key index writes landed in.
func TestLatestAcrossHosts(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		hosts := make([]*log.Log, 4)
		for i := range hosts {
			hosts[i] = newLog(t, s)
		}
		if _, err := hosts[0].CreateTopicWith(ctx, "hot", compactSpec(0)); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		top := int64(-1)
		var wg sync.WaitGroup
		for i, h := range hosts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range 3 {
					res, err := h.Append(ctx, "hot", []log.Record{{Key: []byte("k"), Value: fmt.Appendf(nil, "%d-%d", i, j)}}, log.AppendOptions{})
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					top = max(top, res[0].Offset)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		for _, h := range hosts {
			kv, err := h.Latest(ctx, "hot", []byte("k"), nil)
			if err != nil || kv.Record.Offset != top {
				t.Fatalf("Latest = offset %d, %v; want %d, the highest acknowledged", kv.Record.Offset, err, top)
			}
		}
	})
}
