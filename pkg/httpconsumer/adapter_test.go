package httpconsumer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/httpapi"
	"github.com/stratalog/strata/pkg/httpconsumer"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/store"
)

// The adapter satisfies both interfaces pkg/consumer runs on.
var (
	_ consumer.Log         = (*httpconsumer.ConsumerAdapter)(nil)
	_ consumer.Coordinator = (*httpconsumer.ConsumerAdapter)(nil)
)

// node is the real HTTP handler over the embedded backend, with in-process handles on
// the layers beneath it so tests can check what the adapter did.
type node struct {
	url   string
	meta  store.MetaStore
	log   *log.Log
	coord *group.Coordinator
	ad    *httpconsumer.ConsumerAdapter
}

func newNode(t *testing.T) *node {
	t.Helper()
	s := backendtest.Local(context.Background(), t)
	l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta})
	if err != nil {
		t.Fatal(err)
	}
	coord := group.New(s.Meta, l, nil)
	srv := httptest.NewServer(httpapi.New(httpapi.Config{Log: l, Groups: coord}))
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return &node{url: srv.URL, meta: s.Meta, log: l, coord: coord, ad: httpconsumer.NewConsumerAdapter(c)}
}

func appendN(t *testing.T, l *log.Log, topic string, partition int32, n int) {
	t.Helper()
	recs := make([]log.Record, n)
	for i := range recs {
		recs[i] = log.Record{Key: fmt.Appendf(nil, "k%d", i%7), Value: fmt.Appendf(nil, "v%d", i), Partition: &partition}
	}
	if _, err := l.Append(context.Background(), topic, recs, log.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestAdapterLogErrors: the log calls map the contract's errors to pkg/log's sentinels,
// out-of-range carrying both bounds, while the client's own sentinels stay visible.
func TestAdapterLogErrors(t *testing.T) {
	ctx := context.Background()
	n := newNode(t)
	if _, err := n.log.CreateTopic(ctx, "t", 2, time.Hour); err != nil {
		t.Fatal(err)
	}
	appendN(t, n.log, "t", 1, 10)
	if err := n.meta.AdvanceLogStart(ctx, topicID(t, n.log, "t"), 1, 4); err != nil {
		t.Fatal(err)
	}

	for _, off := range []int64{2, 11} {
		_, err := n.ad.Poll(ctx, "t", 1, off, log.PollOptions{})
		var oor *log.OffsetOutOfRangeError
		if !errors.As(err, &oor) || !errors.Is(err, log.ErrOffsetOutOfRange) || !errors.Is(err, client.ErrOffsetOutOfRange) {
			t.Fatalf("poll @%d: %v, want a *log.OffsetOutOfRangeError", off, err)
		}
		if oor.Offset != off || oor.LogStartOffset != 4 || oor.HighWatermark != 10 {
			t.Fatalf("poll @%d: %+v, want bounds [4, 10]", off, oor)
		}
	}
	start, hw, err := n.ad.Bounds(ctx, "t", 1)
	if err != nil || start != 4 || hw != 10 {
		t.Fatalf("bounds: %d %d %v, want 4 10", start, hw, err)
	}
	if _, _, err := n.ad.Bounds(ctx, "t", 2); !errors.Is(err, log.ErrInvalid) {
		t.Fatalf("bounds of partition 2 of 2: %v, want log.ErrInvalid", err)
	}
	if _, err := n.ad.Poll(ctx, "nope", 0, 0, log.PollOptions{}); !errors.Is(err, log.ErrTopicNotFound) || !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("poll of an unknown topic: %v", err)
	}
	if _, err := n.ad.Poll(ctx, "t", 5, 0, log.PollOptions{}); !errors.Is(err, log.ErrInvalid) {
		t.Fatalf("poll of partition 5: %v", err)
	}
	_, err = n.ad.Append(ctx, "t", []log.Record{{Value: make([]byte, log.MaxRecordBytes+1)}}, log.AppendOptions{})
	if !errors.Is(err, log.ErrTooLarge) {
		t.Fatalf("oversized append: %v", err)
	}
	p := int32(0)
	if _, err := n.ad.Append(ctx, "t", []log.Record{{Value: []byte("a"), Partition: &p}}, log.AppendOptions{IdempotencyKey: "k"}); err != nil {
		t.Fatal(err)
	}
	_, err = n.ad.Append(ctx, "t", []log.Record{{Value: []byte("b"), Partition: &p}}, log.AppendOptions{IdempotencyKey: "k"})
	if !errors.Is(err, log.ErrIdempotencyKeyReused) {
		t.Fatalf("reused idempotency key: %v", err)
	}
}

// TestAdapterRoundTrip: a record appended through the adapter (key, headers, timestamp,
// explicit partition) polls back identical, and a long wait is cut to the contract's.
func TestAdapterRoundTrip(t *testing.T) {
	ctx := context.Background()
	n := newNode(t)
	if _, err := n.log.CreateTopic(ctx, "t", 3, time.Hour); err != nil {
		t.Fatal(err)
	}
	p, ts := int32(2), int64(1732870000123)
	in := []log.Record{
		{Key: []byte("k"), Value: []byte{0, 1, 2}, Partition: &p, Timestamp: &ts,
			Headers: []segment.Header{{Key: "z", Value: []byte("last")}, {Key: "a", Value: []byte{0xff}}}},
		{Key: []byte{}, Value: []byte{}, Partition: &p},
		{Value: []byte("unkeyed"), Partition: &p},
	}
	res, err := n.ad.Append(ctx, "t", in, log.AppendOptions{})
	if err != nil || len(res) != 3 || res[0].Partition != 2 || res[0].Offset != 0 || res[2].Offset != 2 {
		t.Fatalf("append: %+v, %v", res, err)
	}
	got, err := n.ad.Poll(ctx, "t", 2, 0, log.PollOptions{Wait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Records) != 3 || got.NextOffset != 3 || got.HighWatermark != 3 || got.LogStartOffset != 0 {
		t.Fatalf("poll: %+v", got)
	}
	r := got.Records[0]
	if r.Offset != 0 || r.Timestamp != ts || string(r.Key) != "k" || !bytes.Equal(r.Value, []byte{0, 1, 2}) ||
		len(r.Headers) != 2 || r.Headers[1].Key != "a" || !bytes.Equal(r.Headers[1].Value, []byte{0xff}) ||
		r.Headers[0].Key != "z" || string(r.Headers[0].Value) != "last" {
		t.Fatalf("record 0: %+v", r)
	}
	if k := got.Records[1].Key; k == nil || len(k) != 0 || got.Records[1].Value == nil {
		t.Fatalf("record 1 (empty key and value): %+v", got.Records[1])
	}
	if got.Records[2].Key != nil {
		t.Fatalf("record 2 (unkeyed) has key %q", got.Records[2].Key)
	}
	start := time.Now()
	empty, err := n.ad.Poll(ctx, "t", 2, 3, log.PollOptions{Wait: 100 * time.Millisecond})
	if err != nil || len(empty.Records) != 0 || time.Since(start) < 80*time.Millisecond {
		t.Fatalf("poll at HW: %+v, %v after %v", empty, err, time.Since(start))
	}
}

// TestAdapterGroupErrors: lease_held with owner and expiry, fenced, stale and beyond-HW
// commits map to pkg/group's sentinels.
func TestAdapterGroupErrors(t *testing.T) {
	ctx := context.Background()
	n := newNode(t)
	if _, err := n.log.CreateTopic(ctx, "t", 1, time.Hour); err != nil {
		t.Fatal(err)
	}
	appendN(t, n.log, "t", 0, 5)
	l, err := n.ad.Acquire(ctx, "g", "t", 0, "m1", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if l.Group != "g" || l.Topic != "t" || l.Member != "m1" || l.Generation != 1 || l.Committed != nil || time.Until(l.ExpiresAt) < 5*time.Second {
		t.Fatalf("lease %+v", l)
	}
	_, err = n.ad.Acquire(ctx, "g", "t", 0, "m2", time.Second)
	owner, exp, ok := group.LeaseHolder(err)
	if !errors.Is(err, group.ErrLeaseHeld) || !ok || owner != "m1" {
		t.Fatalf("acquire of a held lease: %v (holder %q %v %v), want m1", err, owner, exp, ok)
	}
	// The adapter's expiry is the local deadline (sent + TTL): never after the server's
	// (kept to the millisecond), and before it by no more than the request's transit.
	if early := exp.Sub(l.ExpiresAt); early <= -time.Millisecond || early > time.Second {
		t.Fatalf("local deadline %v vs the server's expiry %v: %v early", l.ExpiresAt, exp, early)
	}
	if err := n.ad.Commit(ctx, "g", "t", 0, "m1", l.Generation, 3); err != nil {
		t.Fatal(err)
	}
	if err := n.ad.Commit(ctx, "g", "t", 0, "m1", l.Generation, 2); !errors.Is(err, group.ErrStaleCommit) {
		t.Fatalf("stale commit: %v", err)
	}
	err = n.ad.Commit(ctx, "g", "t", 0, "m1", l.Generation, 6)
	var beyond *group.BeyondHighWatermarkError
	if !errors.As(err, &beyond) || beyond.HighWatermark != 5 || beyond.Offset != 6 || beyond.Topic != "t" {
		t.Fatalf("commit beyond HW: %v (%+v)", err, beyond)
	}
	if err := n.ad.Commit(ctx, "g", "t", 0, "m1", l.Generation+1, 4); !errors.Is(err, group.ErrFenced) || !errors.Is(err, client.ErrFenced) {
		t.Fatalf("commit at a wrong generation: %v", err)
	}
	if _, err := n.ad.Renew(ctx, "g", "t", 0, "m2", l.Generation, time.Second); !errors.Is(err, group.ErrFenced) {
		t.Fatalf("renew by a non-owner: %v", err)
	}
	r, err := n.ad.Renew(ctx, "g", "t", 0, "m1", l.Generation, 20*time.Second)
	if err != nil || r.Generation != l.Generation || !r.ExpiresAt.After(l.ExpiresAt) || r.Committed == nil || *r.Committed != 3 {
		t.Fatalf("renew: %+v, %v", r, err)
	}
	if err := n.ad.Release(ctx, "g", "t", 0, "m1", l.Generation+1); !errors.Is(err, group.ErrFenced) {
		t.Fatalf("release at a wrong generation: %v", err)
	}
	if err := n.ad.Release(ctx, "g", "t", 0, "m1", l.Generation); err != nil {
		t.Fatal(err)
	}
	if _, err := n.ad.Acquire(ctx, "bad\x00group", "t", 0, "m1", time.Second); !errors.Is(err, group.ErrInvalid) {
		t.Fatalf("bad group name: %v", err)
	}
}

// TestAdapterUnavailable: 503s, transport failures and partial append failures are
// retryable sentinels; a partial failure keeps every record's outcome.
func TestAdapterUnavailable(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		if r.Method == http.MethodPost && r.URL.Path == "/v1/topics/t/records" {
			fmt.Fprint(w, `{"error":{"code":"unavailable","message":"p1 failed"},"results":[{"partition":0,"offset":5},{"partition":1,"error":{"code":"unavailable","message":"x"}}]}`)
			return
		}
		fmt.Fprint(w, `{"error":{"code":"unavailable","message":"try later"}}`)
	}))
	defer srv.Close()
	c, _ := client.New(srv.URL)
	ad := httpconsumer.NewConsumerAdapter(c)
	if _, err := ad.Poll(ctx, "t", 0, 0, log.PollOptions{}); !errors.Is(err, log.ErrUnavailable) {
		t.Fatalf("poll on 503: %v", err)
	}
	if _, _, err := ad.Bounds(ctx, "t", 0); !errors.Is(err, log.ErrUnavailable) {
		t.Fatalf("bounds on 503: %v", err)
	}
	if _, err := ad.Acquire(ctx, "g", "t", 0, "m", time.Second); !errors.Is(err, group.ErrUnavailable) {
		t.Fatalf("acquire on 503: %v", err)
	}
	if err := ad.Commit(ctx, "g", "t", 0, "m", 1, 1); !errors.Is(err, group.ErrUnavailable) {
		t.Fatalf("commit on 503: %v", err)
	}
	p0, p1 := int32(0), int32(1)
	res, err := ad.Append(ctx, "t", []log.Record{{Value: []byte("a"), Partition: &p0}, {Value: []byte("b"), Partition: &p1}}, log.AppendOptions{})
	var ae *log.AppendError
	if res != nil || !errors.As(err, &ae) || !errors.Is(err, log.ErrUnavailable) {
		t.Fatalf("partial append: %v, %v", res, err)
	}
	if len(ae.Results) != 2 || ae.Results[0].Err != nil || ae.Results[0].Offset != 5 ||
		ae.Results[1].Partition != 1 || !errors.Is(ae.Results[1].Err, log.ErrUnavailable) {
		t.Fatalf("partial append results: %+v", ae.Results)
	}

	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	c2, _ := client.New(deadURL)
	ad2 := httpconsumer.NewConsumerAdapter(c2)
	if _, err := ad2.Poll(ctx, "t", 0, 0, log.PollOptions{}); !errors.Is(err, log.ErrUnavailable) {
		t.Fatalf("poll with nothing listening: %v", err)
	}
	if err := ad2.Release(ctx, "g", "t", 0, "m", 1); !errors.Is(err, group.ErrUnavailable) {
		t.Fatalf("release with nothing listening: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := ad2.Poll(cctx, "t", 0, 0, log.PollOptions{}); errors.Is(err, log.ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("poll with a cancelled context: %v, want context.Canceled only", err)
	}
}

// TestConsumerOverHTTP runs pkg/consumer end to end through the adapter: parallel
// handling with retries and a dead letter, commits up to the high watermark, a reset
// after retention passed the committed offset, and fencing by a newer generation.
func TestConsumerOverHTTP(t *testing.T) {
	ctx := context.Background()
	n := newNode(t)
	if _, err := n.log.CreateTopic(ctx, "orders", 3, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := n.log.CreateTopic(ctx, "dlq", 1, time.Hour); err != nil {
		t.Fatal(err)
	}
	const perPartition = 120
	for p := range int32(3) {
		appendN(t, n.log, "orders", p, perPartition)
	}
	var (
		mu       sync.Mutex
		seen     = map[string]int{}
		failures = map[string]int{}
	)
	handler := func(_ context.Context, r consumer.Record) error {
		id := fmt.Sprintf("%d/%d", r.Partition, r.Offset)
		mu.Lock()
		defer mu.Unlock()
		if r.Partition == 1 && (r.Offset == 7 || r.Offset == 50) {
			failures[id]++
			if r.Offset == 50 || failures[id] < 2 {
				return errors.New("poison")
			}
		}
		seen[id]++
		return nil
	}
	cons, err := consumer.New(n.ad, n.ad, consumer.Config{
		Group: "billing", Topic: "orders", Member: "m1", Handler: handler, Workers: 4,
		MaxAttempts: 3, Backoff: func(int) time.Duration { return time.Millisecond }, DeadLetterTopic: "dlq",
		PollRecords: 25, PollWait: 50 * time.Millisecond, CommitInterval: 10 * time.Millisecond, LeaseTTL: 3 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	var total consumer.Stats
	for p := range int32(3) {
		st, err := cons.Run(ctx, p, consumer.RunOptions{UntilCaughtUp: true})
		if err != nil {
			t.Fatalf("partition %d: %v", p, err)
		}
		if st.Committed != perPartition {
			t.Fatalf("partition %d committed %d, want %d", p, st.Committed, perPartition)
		}
		total.Handled += st.Handled
		total.Retries += st.Retries
		total.DeadLettered += st.DeadLettered
	}
	if total.Handled != 3*perPartition-1 || total.DeadLettered != 1 || total.Retries != 3 {
		t.Fatalf("stats %+v: want %d handled, 1 dead letter, 3 retries", total, 3*perPartition-1)
	}
	for p := range 3 {
		for o := range perPartition {
			id := fmt.Sprintf("%d/%d", p, o)
			if want := 1; seen[id] != want && id != "1/50" {
				t.Fatalf("record %s handled %d times", id, seen[id])
			}
		}
	}
	for p := range int32(3) {
		c, err := n.coord.Committed(ctx, "billing", "orders", p)
		if err != nil || c == nil || *c != perPartition {
			t.Fatalf("committed offset of %d: %v, %v", p, c, err)
		}
	}
	dl, err := n.log.Poll(ctx, "dlq", 0, 0, log.PollOptions{})
	if err != nil || len(dl.Records) != 1 {
		t.Fatalf("dead letters: %+v, %v", dl, err)
	}
	hdr := map[string]string{}
	for _, h := range dl.Records[0].Headers {
		hdr[h.Key] = string(h.Value)
	}
	if hdr[consumer.HeaderOriginTopic] != "orders" || hdr[consumer.HeaderOriginPartition] != "1" ||
		hdr[consumer.HeaderOriginOffset] != "50" || hdr[consumer.HeaderAttempts] == "" || string(dl.Records[0].Value) != "v50" {
		t.Fatalf("dead letter %+v (headers %v)", dl.Records[0], hdr)
	}

	// Retention moved partition 0's log start past the committed offset: the reset policy
	// (earliest) skips to the log start and counts the records lost.
	appendN(t, n.log, "orders", 0, 10)
	if err := n.meta.AdvanceLogStart(ctx, topicID(t, n.log, "orders"), 0, perPartition+4); err != nil {
		t.Fatal(err)
	}
	st, err := cons.Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true})
	if err != nil || st.RecordsLost != 4 || st.Handled != 6 || st.Committed != perPartition+10 {
		t.Fatalf("run after retention: %+v, %v; want 4 lost, 6 handled", st, err)
	}

	// Another member takes partition 2 over after m1's lease lapsed: m1's run is fenced
	// and commits nothing.
	appendN(t, n.log, "orders", 2, 5)
	stale, err := n.ad.Acquire(ctx, "billing", "orders", 2, "m1", group.MinTTL)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * group.MinTTL)
	if _, err := n.ad.Acquire(ctx, "billing", "orders", 2, "m2", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	st, err = cons.RunLease(ctx, stale, consumer.RunOptions{UntilCaughtUp: true})
	if !errors.Is(err, group.ErrFenced) || !st.Fenced {
		t.Fatalf("stale run: %+v, %v; want fenced", st, err)
	}
	if c, _ := n.coord.Committed(ctx, "billing", "orders", 2); c == nil || *c != perPartition {
		t.Fatalf("fenced run moved the committed offset to %v", c)
	}
}

// topicID is the store key (store.TopicID) of the live incarnation of topic name.
func topicID(t *testing.T, l *log.Log, name string) string {
	t.Helper()
	id, err := l.TopicID(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestAdapterKeepsNullsAndHeaderOrder: a tombstone and null header values appended
// through the adapter poll back nil, apart from empty ones, headers in order with a
// repeated name.
func TestAdapterKeepsNullsAndHeaderOrder(t *testing.T) {
	ctx := context.Background()
	n := newNode(t)
	if _, err := n.log.CreateTopic(ctx, "t", 1, time.Hour); err != nil {
		t.Fatal(err)
	}
	p := int32(0)
	in := []log.Record{
		{Key: []byte("k"), Value: nil, Partition: &p},
		{Key: []byte("k"), Value: []byte{}, Partition: &p,
			Headers: []segment.Header{{Key: "z", Value: nil}, {Key: "a", Value: []byte{}}, {Key: "z", Value: []byte("2")}}},
	}
	if _, err := n.ad.Append(ctx, "t", in, log.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := n.ad.Poll(ctx, "t", 0, 0, log.PollOptions{})
	if err != nil || len(got.Records) != 2 {
		t.Fatalf("poll: %+v, %v", got, err)
	}
	if got.Records[0].Value != nil || got.Records[1].Value == nil {
		t.Fatalf("values %q (nil %v), %q (nil %v): want nil, then empty", got.Records[0].Value, got.Records[0].Value == nil,
			got.Records[1].Value, got.Records[1].Value == nil)
	}
	hs := got.Records[1].Headers
	if len(hs) != 3 || hs[0].Key != "z" || hs[0].Value != nil || hs[1].Key != "a" || hs[1].Value == nil || hs[2].Key != "z" || string(hs[2].Value) != "2" {
		t.Fatalf("headers %+v", hs)
	}
}
