package e2e_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/httpapi"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/wire"
)

// serveB is serve for a benchmark.
func serveB(b *testing.B) string { return serve(b, nil) }

// serve runs the real handler over the embedded backend and returns its URL.
func serve(t testing.TB, tweak func(*httpapi.Config)) string {
	t.Helper()
	s := backendtest.Local(context.Background(), t)
	l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta})
	if err != nil {
		t.Fatal(err)
	}
	cfg := httpapi.Config{Log: l, Groups: group.New(s.Meta, l, nil)}
	if tweak != nil {
		tweak(&cfg)
	}
	srv := httptest.NewServer(httpapi.New(cfg))
	t.Cleanup(srv.Close)
	return srv.URL
}

func newClient(t *testing.T, url string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustIs(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: err = %v, want %v", what, err, want)
	}
}

// TestTopicsAndAppend: topic routes, append placement, idempotent replay and the
// idempotency conflict, against the real handler.
func TestTopicsAndAppend(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, serve(t, nil))
	if err := c.Health(ctx); err != nil {
		t.Fatal(err)
	}
	top, err := c.CreateTopic(ctx, "orders", client.TopicConfig{Partitions: 4, Retention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if top.Name != "orders" || top.Partitions != 4 || top.Retention != time.Hour {
		t.Fatalf("created %+v", top)
	}
	_, err = c.CreateTopic(ctx, "orders", client.TopicConfig{Partitions: 4})
	mustIs(t, "create twice", err, client.ErrTopicExists)
	_, err = c.CreateTopic(ctx, "..", client.TopicConfig{Partitions: 1})
	mustIs(t, "create '..'", err, client.ErrInvalid)
	_, err = c.DescribeTopic(ctx, "nope")
	mustIs(t, "describe unknown", err, client.ErrNotFound)
	names, err := c.ListTopics(ctx)
	if err != nil || len(names) != 1 || names[0] != "orders" {
		t.Fatalf("list: %v %v", names, err)
	}

	recs := []client.Record{
		{Key: []byte("alice"), Value: []byte("1"), Headers: map[string][]byte{"h": {0, 1}}, Timestamp: time.UnixMilli(1732870000000)},
		{Key: []byte("bob"), Value: []byte("2")},
		{Value: []byte("3"), Partition: func() *int32 { p := int32(3); return &p }()},
	}
	res, err := c.Append(ctx, "orders", recs, client.AppendOptions{IdempotencyKey: "k-1"})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Partition != log.PartitionForKey([]byte("alice"), 4) || res[1].Partition != log.PartitionForKey([]byte("bob"), 4) || res[2].Partition != 3 {
		t.Fatalf("placement %+v", res)
	}
	again, err := c.Append(ctx, "orders", recs, client.AppendOptions{IdempotencyKey: "k-1"})
	if err != nil || fmt.Sprint(again) != fmt.Sprint(res) {
		t.Fatalf("replay: %+v, %v; first %+v", again, err, res)
	}
	_, err = c.Append(ctx, "orders", recs[:1], client.AppendOptions{IdempotencyKey: "k-1"})
	mustIs(t, "same key, other body", err, client.ErrIdempotencyKeyReused)
	_, err = c.Append(ctx, "orders", []client.Record{{Value: make([]byte, log.MaxRecordBytes+1)}}, client.AppendOptions{})
	mustIs(t, "oversized record", err, client.ErrPayloadTooLarge)

	desc, err := c.DescribeTopic(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, pi := range desc.PartitionInfo {
		total += pi.HighWatermark - pi.LogStartOffset
	}
	if len(desc.PartitionInfo) != 4 || total != 3 {
		t.Fatalf("describe after a replayed append: %+v (want 3 records in all)", desc)
	}

	got, err := c.Poll(ctx, "orders", res[0].Partition, res[0].Offset, client.PollOptions{MaxRecords: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Records) != 1 {
		t.Fatalf("poll: %+v", got)
	}
	r := got.Records[0]
	if string(r.Key) != "alice" || string(r.Value) != "1" || !bytes.Equal(r.Headers["h"], []byte{0, 1}) ||
		!r.Timestamp.Equal(time.UnixMilli(1732870000000)) || r.Offset != res[0].Offset {
		t.Fatalf("read back %+v", r)
	}
}

// TestPollErrors: waiting at the high watermark, out-of-range offsets with their
// bounds, and a bad partition.
func TestPollErrors(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, serve(t, nil))
	if _, err := c.CreateTopic(ctx, "t", client.TopicConfig{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Append(ctx, "t", []client.Record{{Value: []byte("a"), Partition: ptr(int32(0))}}, client.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := c.Poll(ctx, "t", 0, 1, client.PollOptions{Wait: 150 * time.Millisecond})
	if err != nil || len(res.Records) != 0 || res.HighWatermark != 1 || res.NextOffset != 1 {
		t.Fatalf("poll at HW: %+v, %v", res, err)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("poll at HW returned after %v, wait 150ms", d)
	}
	_, err = c.Poll(ctx, "t", 0, 5, client.PollOptions{})
	mustIs(t, "beyond HW", err, client.ErrOffsetOutOfRange)
	var e *client.APIError
	errors.As(err, &e)
	if ls, ok := e.LogStartOffset(); !ok || ls != 0 {
		t.Fatalf("log start %d %v", ls, ok)
	}
	if hw, ok := e.HighWatermark(); !ok || hw != 1 {
		t.Fatalf("high watermark %d %v", hw, ok)
	}
	_, err = c.Poll(ctx, "t", 2, 0, client.PollOptions{})
	mustIs(t, "partition 2 of 2", err, client.ErrInvalid)
	_, err = c.Poll(ctx, "nope", 0, 0, client.PollOptions{})
	mustIs(t, "unknown topic", err, client.ErrNotFound)
}

func ptr[T any](v T) *T { return &v }

// TestGroups: lease, lease_held, renew, commit (stale, beyond HW, fenced), describe,
// reset while active and after release.
func TestGroups(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, serve(t, nil))
	if _, err := c.CreateTopic(ctx, "t", client.TopicConfig{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	var recs []client.Record
	for i := range 10 {
		recs = append(recs, client.Record{Value: fmt.Appendf(nil, "%d", i), Partition: ptr(int32(0))})
	}
	if _, err := c.Append(ctx, "t", recs, client.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := c.DescribeGroup(ctx, "g")
	mustIs(t, "describe unknown group", err, client.ErrNotFound)

	l, err := c.Lease(ctx, "g", "t", 0, "m1", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if l.Generation < 1 || l.CommittedOffset != nil || time.Until(l.ExpiresAt) < 5*time.Second {
		t.Fatalf("lease %+v", l)
	}
	_, err = c.Lease(ctx, "g", "t", 0, "m2", 0)
	mustIs(t, "lease held", err, client.ErrLeaseHeld)
	var e *client.APIError
	errors.As(err, &e)
	if o, ok := e.Owner(); !ok || o != "m1" {
		t.Fatalf("lease_held owner %q %v (details %v)", o, ok, e.Details)
	}
	if at, ok := e.LeaseExpiresAt(); !ok || !at.Equal(l.ExpiresAt) {
		t.Fatalf("lease_held expiry %v %v, lease says %v", at, ok, l.ExpiresAt)
	}
	r, err := c.RenewLease(ctx, "g", "t", 0, "m1", l.Generation, 20*time.Second)
	if err != nil || r.Generation != l.Generation || !r.ExpiresAt.After(l.ExpiresAt) {
		t.Fatalf("renew: %+v, %v", r, err)
	}
	_, err = c.RenewLease(ctx, "g", "t", 0, "m1", l.Generation+1, 0)
	mustIs(t, "renew a wrong generation", err, client.ErrFenced)

	if off, err := c.Commit(ctx, "g", "t", 0, "m1", l.Generation, 6); err != nil || off != 6 {
		t.Fatalf("commit: %d, %v", off, err)
	}
	if _, err := c.Commit(ctx, "g", "t", 0, "m1", l.Generation, 6); err != nil {
		t.Fatalf("commit the same offset again: %v", err)
	}
	_, err = c.Commit(ctx, "g", "t", 0, "m1", l.Generation, 3)
	mustIs(t, "commit backwards", err, client.ErrStaleCommit)
	_, err = c.Commit(ctx, "g", "t", 0, "m1", l.Generation, 11)
	mustIs(t, "commit beyond HW", err, client.ErrBeyondHighWatermark)
	_, err = c.Commit(ctx, "g", "t", 0, "m2", l.Generation, 7)
	mustIs(t, "commit by a non-owner", err, client.ErrFenced)

	g, err := c.DescribeGroup(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Partitions) != 1 {
		t.Fatalf("describe group: %+v", g)
	}
	gp := g.Partitions[0]
	if g.Name != "g" || gp.Topic != "t" || gp.Partition != 0 || gp.CommittedOffset == nil || *gp.CommittedOffset != 6 ||
		gp.HighWatermark != 10 || gp.LagRecords != 4 || gp.Owner != "m1" || gp.Generation != l.Generation || gp.LeaseExpiresAt.IsZero() {
		t.Fatalf("group partition %+v", gp)
	}

	_, err = c.ResetGroup(ctx, "g", "t", client.ResetEarliest())
	mustIs(t, "reset while leased", err, client.ErrGroupActive)
	if err := c.Release(ctx, "g", "t", 0, "m1", l.Generation); err != nil {
		t.Fatal(err)
	}
	_, err = c.Commit(ctx, "g", "t", 0, "m1", l.Generation, 7)
	mustIs(t, "commit after release", err, client.ErrFenced)

	_, err = c.ResetGroup(ctx, "g", "t", client.ResetToOffset(11))
	mustIs(t, "reset beyond HW", err, client.ErrOffsetOutOfRange)
	for _, tc := range []struct {
		to   client.ResetTarget
		want map[int32]int64
	}{
		{client.ResetEarliest(), map[int32]int64{0: 0, 1: 0}},
		{client.ResetLatest(), map[int32]int64{0: 10, 1: 0}},
		{client.ResetToTime(time.Now().Add(time.Hour)), map[int32]int64{0: 10, 1: 0}},
		{client.ResetToTime(time.UnixMilli(0)), map[int32]int64{0: 0, 1: 0}},
	} {
		got, err := c.ResetGroup(ctx, "g", "t", tc.to)
		if err != nil {
			t.Fatal(err)
		}
		m := map[int32]int64{}
		for _, p := range got {
			m[p.Partition] = p.CommittedOffset
		}
		if fmt.Sprint(m) != fmt.Sprint(tc.want) {
			t.Fatalf("reset %+v: %v, want %v", tc.to, m, tc.want)
		}
	}
	l2, err := c.Lease(ctx, "g", "t", 0, "m2", 0)
	// Each of the four resets fenced a generation, then the lease takes the next one.
	if err != nil || l2.Generation != l.Generation+5 || l2.CommittedOffset == nil || *l2.CommittedOffset != 0 {
		t.Fatalf("take over after release: %+v, %v", l2, err)
	}
}

// TestProducerEndToEnd: 2,000 keyed records through the producer land exactly once,
// each key in Send order, where the futures say.
func TestProducerEndToEnd(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, serve(t, nil))
	if _, err := c.CreateTopic(ctx, "orders", client.TopicConfig{Partitions: 4}); err != nil {
		t.Fatal(err)
	}
	p, err := client.NewProducer(ctx, c, "orders", client.ProducerConfig{Linger: 5 * time.Millisecond, BatchRecords: 200})
	if err != nil {
		t.Fatal(err)
	}
	const n = 2000
	futs := make([]*client.Future, n)
	for i := range n {
		key := fmt.Appendf(nil, "key-%d", i%50)
		if futs[i], err = p.Send(ctx, client.Record{Key: key, Value: fmt.Appendf(nil, "%s#%d", key, i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	byPart := map[int32][]client.PolledRecord{}
	for part := range int32(4) {
		var off int64
		for {
			res, err := c.Poll(ctx, "orders", part, off, client.PollOptions{MaxRecords: 1000})
			if err != nil {
				t.Fatal(err)
			}
			byPart[part] = append(byPart[part], res.Records...)
			if res.NextOffset == res.HighWatermark {
				break
			}
			off = res.NextOffset
		}
	}
	total := 0
	for _, rs := range byPart {
		total += len(rs)
	}
	if total != n {
		t.Fatalf("%d records in the log, %d sent", total, n)
	}
	lastSeq := map[string]int{}
	for part, rs := range byPart {
		for _, r := range rs {
			var key string
			var seq int
			if _, err := fmt.Sscanf(string(bytes.ReplaceAll(r.Value, []byte("#"), []byte(" "))), "%s %d", &key, &seq); err != nil {
				t.Fatal(err)
			}
			if want := log.PartitionForKey([]byte(key), 4); want != part {
				t.Fatalf("%s on partition %d, want %d", key, part, want)
			}
			if prev, ok := lastSeq[key]; ok && seq <= prev {
				t.Fatalf("%s: record %d after %d", key, seq, prev)
			}
			lastSeq[key] = seq
		}
	}
	for i, f := range futs {
		res, err := f.Result()
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		r := byPart[res.Partition][res.Offset]
		if want := fmt.Sprintf("key-%d#%d", i%50, i); string(r.Value) != want {
			t.Fatalf("future %d points at %q, want %q", i, r.Value, want)
		}
	}
	s := p.Stats()
	t.Logf("producer stats: %+v", s)
	if s.Batches >= n/4 {
		t.Fatalf("%d batches for %d records: no batching", s.Batches, n)
	}
}

// TestProducerUnderQuota: with a tight produce quota the server answers 429 with
// Retry-After; the producer waits and retries, and delivers everything exactly once.
// 24 records in batches of 2 over 2 partitions make at least 6 requests (each carries
// both partitions' batches): well over the burst of 2 and the rate of 4 a second.
func TestProducerUnderQuota(t *testing.T) {
	ctx := context.Background()
	url := serve(t, func(cfg *httpapi.Config) {
		cfg.Quota = httpapi.Quota{RequestsPerSecond: 4, RequestBurst: 2}
	})
	c := newClient(t, url)
	if _, err := c.CreateTopic(ctx, "q", client.TopicConfig{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	p, err := client.NewProducer(ctx, c, "q", client.ProducerConfig{Partitions: 2, BatchRecords: 2, Backoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var futs []*client.Future
	for i := range 24 {
		f, err := p.Send(ctx, client.Record{Value: fmt.Appendf(nil, "%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		futs = append(futs, f)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for i, f := range futs {
		if _, err := f.Result(); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	var total int64
	desc, err := c.DescribeTopic(ctx, "q")
	if err != nil {
		t.Fatal(err)
	}
	for _, pi := range desc.PartitionInfo {
		total += pi.HighWatermark
	}
	s := p.Stats()
	t.Logf("producer stats under quota: %+v", s)
	if total != 24 || s.Retries == 0 {
		t.Fatalf("%d records in the log (want 24), %d retries (want some 429s)", total, s.Retries)
	}
}

// TestAuth: without a token 401, with a token lacking the grant 403, with the grant OK.
func TestAuth(t *testing.T) {
	ctx := context.Background()
	auth, err := httpapi.ParseAuth([]byte(`{"principals": {
		"admin-0123456789abcdefgh": {"name": "admin", "allow": [{"resource": "topic:*", "ops": ["create", "describe", "append", "read"]}]},
		"reader-0123456789abcdefg": {"name": "reader", "allow": [{"resource": "topic:orders", "ops": ["describe"]}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	url := serve(t, func(cfg *httpapi.Config) { cfg.Auth = auth })
	if err := newClient(t, url).Health(ctx); err != nil {
		t.Fatalf("health needs no token: %v", err)
	}
	_, err = newClient(t, url).ListTopics(ctx)
	mustIs(t, "no token", err, client.ErrUnauthorized)
	_, err = newClient(t, url, client.WithToken("stranger")).ListTopics(ctx)
	mustIs(t, "unknown token", err, client.ErrUnauthorized)
	admin := newClient(t, url, client.WithToken("admin-0123456789abcdefgh"))
	if _, err := admin.CreateTopic(ctx, "orders", client.TopicConfig{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	reader := newClient(t, url, client.WithToken("reader-0123456789abcdefg"))
	if _, err := reader.DescribeTopic(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	_, err = reader.Append(ctx, "orders", []client.Record{{Value: []byte("x")}}, client.AppendOptions{})
	mustIs(t, "append without the grant", err, client.ErrForbidden)
}

// contentTypes is a transport that records the Content-Type of each append request and
// of each poll answer.
type contentTypes struct {
	mu            sync.Mutex
	appends, poll []string
}

func (ct *contentTypes) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	ct.mu.Lock()
	defer ct.mu.Unlock()
	switch {
	case req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/records"):
		ct.appends = append(ct.appends, req.Header.Get("Content-Type"))
	case req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/records"):
		ct.poll = append(ct.poll, resp.Header.Get("Content-Type"))
	}
	return resp, nil
}

// TestBinaryEndToEnd: against the real handler the Producer appends binary blocks and
// Poll reads binary answers: records keep their keys, headers and timestamps (stamped at
// Send when missing), a poll from inside a stored commit starts at its offset, and
// records appended as JSON read back the same way.
func TestBinaryEndToEnd(t *testing.T) {
	ctx := context.Background()
	ct := &contentTypes{}
	c := newClient(t, serve(t, nil), client.WithHTTPClient(&http.Client{Transport: ct}))
	if _, err := c.CreateTopic(ctx, "b", client.TopicConfig{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Append(ctx, "b", []client.Record{{Value: []byte("json"), Partition: ptr(int32(1)),
		Timestamp: time.UnixMilli(42)}}, client.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := client.NewProducer(ctx, c, "b", client.ProducerConfig{Linger: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().Truncate(time.Millisecond)
	var futs []*client.Future
	for i := range 10 {
		rec := client.Record{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "v%d", i), Partition: ptr(int32(1)),
			Headers: map[string][]byte{"i": fmt.Appendf(nil, "%d", i), "z": nil}}
		if i%2 == 1 {
			rec.Timestamp = time.UnixMilli(int64(1732870000000 + i))
		}
		f, err := p.Send(ctx, rec)
		if err != nil {
			t.Fatal(err)
		}
		futs = append(futs, f)
		if i == 4 {
			if err := p.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	for i, f := range futs {
		if res, err := f.Result(); err != nil || res.Partition != 1 || res.Offset != int64(1+i) {
			t.Fatalf("record %d: %+v, %v", i, res, err)
		}
	}
	// Offset 3 lies inside the first batch's commit (offsets 1-5).
	res, err := c.Poll(ctx, "b", 1, 3, client.PollOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != 8 || res.NextOffset != 11 || res.HighWatermark != 11 {
		t.Fatalf("poll @3: %d records, next %d, hw %d", len(res.Records), res.NextOffset, res.HighWatermark)
	}
	for j, r := range res.Records {
		i := j + 2
		ts := r.Timestamp
		stamped := i%2 == 0 && !ts.Before(before) && !ts.After(after)
		if r.Offset != int64(3+j) || string(r.Key) != fmt.Sprintf("k%d", i) || string(r.Value) != fmt.Sprintf("v%d", i) ||
			string(r.Headers["i"]) != fmt.Sprint(i) || len(r.Headers) != 2 ||
			!stamped && ts.UnixMilli() != int64(1732870000000+i) {
			t.Fatalf("record %d: %+v", i, r)
		}
	}
	res, err = c.Poll(ctx, "b", 1, 0, client.PollOptions{MaxRecords: 1})
	if err != nil || len(res.Records) != 1 || string(res.Records[0].Value) != "json" || res.Records[0].Timestamp.UnixMilli() != 42 ||
		res.NextOffset != 1 {
		t.Fatalf("poll @0: %+v, %v", res, err)
	}
	ct.mu.Lock()
	defer ct.mu.Unlock()
	want := []string{"application/json", wire.ContentTypeBlocks, wire.ContentTypeBlocks}
	if fmt.Sprint(ct.appends) != fmt.Sprint(want) {
		t.Fatalf("append Content-Types %q, want %q", ct.appends, want)
	}
	for _, got := range ct.poll {
		if got != wire.ContentTypeBlocks {
			t.Fatalf("poll answers %q, want binary ones", ct.poll)
		}
	}
}
