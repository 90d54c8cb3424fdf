package httpconsumer_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/httpconsumer"
	stratanode "github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
	"github.com/stratalog/strata/pkg/store/awstest"
	"github.com/stratalog/strata/pkg/store/dynamo"
	s3store "github.com/stratalog/strata/pkg/store/s3"
	"github.com/stratalog/strata/pkg/wire"
)

// assembledServer serves the whole node (runtime.Handler(): the API as strata dev and
// the api function serve it) on backend, local or the emulated aws one, and returns a
// client of it.
func assembledServer(t *testing.T, backend string) *client.Client {
	t.Helper()
	ctx := context.Background()
	cfg := stratanode.Config{Backend: backend}
	switch backend {
	case stratanode.BackendLocal:
		cfg.DataDir = t.TempDir()
	case stratanode.BackendAWS:
		sdk := awstest.Config(ctx, t)
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		id := hex.EncodeToString(b)
		dcfg := dynamo.Config{TablePrefix: "hp-" + id + "-", Bucket: "hp-" + id}
		t.Cleanup(func() {
			_ = dynamo.Teardown(ctx, awstest.DynamoDBClient(ctx, t), dcfg)
			_ = s3store.DeleteBucket(ctx, awstest.S3Client(ctx, t), dcfg.Bucket)
		})
		cfg.AWS = stratanode.AWSConfig{SDK: &sdk, Bucket: dcfg.Bucket, TablePrefix: dcfg.TablePrefix, Bootstrap: true}
	}
	rt, err := runtime.New(ctx, runtime.Config{Node: cfg, RetentionInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rt.Handler())
	t.Cleanup(func() {
		srv.Close()
		_ = rt.Close(context.Background())
	})
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// syncBuffer is a log sink several goroutines write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// eventuallyLogged waits for cond, failing with what (and the member's log) when it does not
// hold within a deadline meant only to end a hung test, not to measure anything.
func eventuallyLogged(t *testing.T, logs *syncBuffer, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			tail := logs.String()
			if len(tail) > 3000 {
				tail = tail[len(tail)-3000:]
			}
			t.Fatalf("%s: not reached; member log:\n%s", what, tail)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// keySeen records, per key, the offsets a handler succeeded on, in order.
type keySeen struct {
	mu   sync.Mutex
	seen map[string][]int64
}

func (k *keySeen) add(key []byte, off int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.seen == nil {
		k.seen = map[string][]int64{}
	}
	k.seen[string(key)] = append(k.seen[string(key)], off)
}

func (k *keySeen) get(key string) []int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.seen[key])
}

func (k *keySeen) others(bad string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for key, offs := range k.seen {
		if key != bad {
			n += len(offs)
		}
	}
	return n
}

// appendKeys appends one record per key to partition 0 and returns their offsets.
func appendKeys(t *testing.T, c *client.Client, topic string, keys []string) []int64 {
	t.Helper()
	p := int32(0)
	recs := make([]client.Record, len(keys))
	for i, k := range keys {
		recs[i] = client.Record{Key: []byte(k), Value: fmt.Appendf(nil, "v-%d", i), Partition: &p}
	}
	res, err := c.Append(context.Background(), topic, recs, client.AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int64, len(res))
	for i, r := range res {
		out[i] = r.Offset
	}
	return out
}

// committed is the group's committed offset on orders/0 (-1 before the first commit)
// and the partition's generation.
func committed(t *testing.T, c *client.Client, grp string) (int64, int64) {
	t.Helper()
	g, err := c.DescribeGroup(context.Background(), grp)
	if err != nil {
		return -1, 0
	}
	for _, p := range g.Partitions {
		if p.Topic == "orders" && p.Partition == 0 && p.CommittedOffset != nil {
			return *p.CommittedOffset, p.Generation
		}
	}
	return -1, 0
}

// parkingOrigins reads the group's parking topic over HTTP and returns the origin
// offsets of key's records there, in order.
func parkingOrigins(t *testing.T, c *client.Client, grp, key string) []int64 {
	t.Helper()
	ctx := context.Background()
	topic, err := c.DescribeTopic(ctx, wire.ParkingTopic(grp))
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for p := range topic.Partitions {
		res, err := c.Poll(ctx, wire.ParkingTopic(grp), p, 0, client.PollOptions{MaxRecords: wire.MaxPollRecords})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Records {
			if string(r.Key) != key {
				continue
			}
			if string(r.Headers[wire.HeaderOriginTopic]) != "orders" || string(r.Headers[wire.HeaderError]) == "" {
				t.Fatalf("parked record at %d lacks its origin headers: %v", r.Offset, r.Headers)
			}
			o, err := strconv.ParseInt(string(r.Headers[wire.HeaderOriginOffset]), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, o)
		}
	}
	return out
}

// runMember runs a GroupConsumer of grp on orders until the returned stop is called;
// stop returns its stats.
func runMember(t *testing.T, c *client.Client, grp, member string, h httpconsumer.Handler, logs *syncBuffer) func() httpconsumer.GroupStats {
	t.Helper()
	gc, err := httpconsumer.NewGroupConsumer(c, grp, "orders", h, httpconsumer.WithMember(member), httpconsumer.WithWorkers(4),
		httpconsumer.WithOrderedKeys(), httpconsumer.WithLeaseTTL(3*time.Second),
		httpconsumer.WithLogger(slog.New(slog.NewTextHandler(logs, nil))),
		httpconsumer.WithConsumerConfig(func(cfg *consumer.Config) {
			cfg.CommitInterval, cfg.PollWait = 20*time.Millisecond, 100*time.Millisecond
			cfg.Backoff = func(int) time.Duration { return time.Millisecond }
		}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- gc.Run(ctx) }()
	stopped := false
	stop := func() httpconsumer.GroupStats {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Errorf("member %s: Run = %v", member, err)
			}
		}
		return gc.Stats()
	}
	t.Cleanup(func() { stop() })
	return stop
}

// TestPoisonKeyParkedOverHTTP is issue 22.1's must-show for a member over HTTP
// (httpconsumer.NewGroupConsumer, what `strata consume --group` runs), through the
// assembled server on both backends: a poisoned key is parked while 1,000 records of
// other keys pass; a zombie member's parked-row writes at its old generation are
// refused as its commit is; released through POST /v1/groups/{group}/parked/release
// while a member runs, the key's parked records are replayed in order before its newer
// records, and the key is unparked. Before the member-side parked routes, every run of
// the member failed with consumer.ErrParkingUnsupported.
func TestPoisonKeyParkedOverHTTP(t *testing.T) {
	for _, backend := range []string{stratanode.BackendLocal, stratanode.BackendAWS} {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			c := assembledServer(t, backend)
			const grp = "billing"
			if _, err := c.CreateTopic(ctx, "orders", client.TopicConfig{Partitions: 1}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.SetGroupSettings(ctx, grp, client.GroupSettings{ResetPolicy: "earliest", MaxAttempts: 2, OnFailure: "park"}); err != nil {
				t.Fatal(err)
			}
			var keys []string
			for i := range 1000 {
				keys = append(keys, fmt.Sprintf("order-%d", i%7))
				if i%200 == 100 {
					keys = append(keys, "order-bad")
				}
			}
			offsets := appendKeys(t, c, "orders", keys)
			var bad []int64
			for i, k := range keys {
				if k == "order-bad" {
					bad = append(bad, offsets[i])
				}
			}
			var poisoned atomic.Bool
			poisoned.Store(true)
			var seen keySeen
			h := func(_ context.Context, r httpconsumer.Record) error {
				if string(r.Key) == "order-bad" && poisoned.Load() {
					return errors.New("payment declined: card expired")
				}
				seen.add(r.Key, r.Offset)
				return nil
			}
			logs := &syncBuffer{}
			stopA := runMember(t, c, grp, "m-1", h, logs)
			end := int64(len(keys))
			eventuallyLogged(t, logs, "the first member committing past every record", func() bool {
				off, _ := committed(t, c, grp)
				return off == end
			})
			_, genA := committed(t, c, grp)
			stA := stopA()
			if n := seen.others("order-bad"); n != 1000 || stA.Parked != int64(len(bad)) || len(seen.get("order-bad")) != 0 {
				t.Fatalf("handled %d others, stats %+v, order-bad handled %v; want 1000, %d parked, none", n, stA, seen.get("order-bad"), len(bad))
			}
			for k := range 7 {
				if got := seen.get(fmt.Sprintf("order-%d", k)); len(got) == 0 || !slices.IsSorted(got) {
					t.Fatalf("key order-%d handled out of order or not at all: %v", k, got)
				}
			}
			if got := parkingOrigins(t, c, grp, "order-bad"); !slices.Equal(got, bad) {
				t.Fatalf("the parking topic holds %v of the key, want %v in order", got, bad)
			}
			parked, err := c.ParkedKeys(ctx, grp)
			if err != nil || len(parked) != 1 || string(parked[0].Key) != "order-bad" || parked[0].FirstOffset != bad[0] ||
				parked[0].Records != int64(len(bad)) || parked[0].Error != "payment declined: card expired" {
				t.Fatalf("parked keys %+v, %v; want order-bad from %d with %d records", parked, err, bad[0], len(bad))
			}

			if g, err := c.DescribeGroup(ctx, grp); err != nil || len(g.Partitions) != 1 || g.Partitions[0].ParkedKeys != 1 {
				t.Fatalf("GET /v1/groups/%s: %+v, %v; want one parked key on orders/0", grp, g, err)
			}

			// A zombie: m-1 at its old generation after another member took the
			// partition. Its parked-row writes are refused as its commit is.
			l, err := c.Lease(ctx, grp, "orders", 0, "m-x", 0)
			if err != nil || l.Generation <= genA {
				t.Fatalf("lease by m-x: %+v, %v; want a generation above %d", l, err, genA)
			}
			rows, err := c.PartitionParked(ctx, grp, "orders", 0)
			if err != nil || len(rows) != 1 {
				t.Fatalf("partition parked rows %+v, %v", rows, err)
			}
			zombie := rows[0]
			zombie.Records, zombie.LastOffset = zombie.Records+1, zombie.LastOffset+1
			_, commitErr := c.Commit(ctx, grp, "orders", 0, "m-1", genA, end)
			putErr := c.PutParked(ctx, grp, "orders", 0, "m-1", genA, zombie)
			unparkErr := c.Unpark(ctx, grp, "orders", 0, "m-1", genA, zombie.Key)
			for name, err := range map[string]error{"commit": commitErr, "put parked": putErr, "unpark": unparkErr} {
				if !errors.Is(err, client.ErrFenced) {
					t.Errorf("zombie %s: %v, want the commit's fenced error", name, err)
				}
			}
			ad := httpconsumer.NewConsumerAdapter(c)
			if err := ad.PutParked(ctx, group.Parked{Group: grp, Topic: "orders", Partition: 0, Key: zombie.Key, FirstOffset: zombie.FirstOffset,
				LastOffset: zombie.LastOffset, Records: zombie.Records, ParkedAt: zombie.ParkedAt, ParkOffset: -1}, "m-1", genA); !errors.Is(err, group.ErrFenced) {
				t.Errorf("zombie PutParked through the adapter: %v, want group.ErrFenced", err)
			}
			if after, err := c.PartitionParked(ctx, grp, "orders", 0); err != nil || !slices.EqualFunc(after, rows, func(a, b client.ParkedRow) bool {
				return bytes.Equal(a.Key, b.Key) && a.Records == b.Records && a.LastOffset == b.LastOffset
			}) {
				t.Fatalf("after the zombie's writes: %+v, %v; want %+v unchanged", after, err, rows)
			}
			if err := c.Release(ctx, grp, "orders", 0, "m-x", l.Generation); err != nil {
				t.Fatal(err)
			}

			// A member runs; newer records of the key arrive (forwarded: still parked);
			// the cause is fixed and the key released while the member runs.
			stopB := runMember(t, c, grp, "m-2", h, logs)
			newer := appendKeys(t, c, "orders", []string{"order-bad", "order-1", "order-bad"})
			end = newer[2] + 1
			eventuallyLogged(t, logs, "the second member committing past the newer records", func() bool {
				off, _ := committed(t, c, grp)
				return off == end
			})
			poisoned.Store(false)
			if _, err := c.ReleaseParkedKey(ctx, grp, "orders", []byte("order-bad")); err != nil {
				t.Fatal(err)
			}
			eventuallyLogged(t, logs, "the released key replayed and unparked", func() bool {
				left, err := c.ParkedKeys(ctx, grp)
				return err == nil && len(left) == 0
			})
			stB := stopB()
			if g, err := c.DescribeGroup(ctx, grp); err != nil || len(g.Partitions) != 1 || g.Partitions[0].ParkedKeys != 0 {
				t.Fatalf("GET /v1/groups/%s after the release: %+v, %v; want no parked key", grp, g, err)
			}
			want := append(slices.Clone(bad), newer[0], newer[2])
			if got := seen.get("order-bad"); !slices.Equal(got, want) {
				t.Fatalf("the released key was handled as %v, want its parked records then the newer ones: %v", got, want)
			}
			if stB.Replayed != int64(len(want)) || stB.Parked != 2 {
				t.Fatalf("second member's stats %+v, want %d replayed, 2 forwarded", stB, len(want))
			}
		})
	}
}
