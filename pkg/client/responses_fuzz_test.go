package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/wire"
)

// cannedServer answers every request with the status and body last set, as
// contentType (JSON when empty).
type cannedServer struct {
	contentType string

	mu     sync.Mutex
	status int
	body   []byte
}

func (s *cannedServer) set(status int, body []byte) {
	s.mu.Lock()
	s.status, s.body = status, body
	s.mu.Unlock()
}

func (s *cannedServer) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	status, body := s.status, s.body
	s.mu.Unlock()
	ct := s.contentType
	if ct == "" {
		ct = "application/json"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// fuzzCalls are the client methods that decode a 2xx body, each returning a check of
// the value against the body (run on success, may be nil) and the call's error.
var fuzzCalls = []func(ctx context.Context, c *Client, body []byte) (func(t *testing.T), error){
	func(ctx context.Context, c *Client, body []byte) (func(*testing.T), error) {
		res, err := c.Poll(ctx, "t", 0, 0, PollOptions{})
		return func(t *testing.T) {
			var w struct{ Records []json.RawMessage }
			if json.Unmarshal(body, &w) == nil && len(w.Records) != len(res.Records) {
				t.Fatalf("poll decoded %d records of %d", len(res.Records), len(w.Records))
			}
		}, err
	},
	func(ctx context.Context, c *Client, body []byte) (func(*testing.T), error) {
		res, err := c.Append(ctx, "t", []Record{{Value: []byte("a")}, {Value: []byte("b")}}, AppendOptions{})
		return func(t *testing.T) {
			var w struct {
				Results []struct{ Offset *int64 }
			}
			if json.Unmarshal(body, &w) != nil || len(w.Results) != len(res) {
				t.Fatalf("append decoded %+v from %q", res, body)
			}
			for i, r := range res {
				if r.Err != nil || w.Results[i].Offset == nil || r.Offset != *w.Results[i].Offset {
					t.Fatalf("append result %d decoded as %+v from %q", i, r, body)
				}
			}
		}, err
	},
	func(ctx context.Context, c *Client, _ []byte) (func(*testing.T), error) {
		_, err := c.CreateTopic(ctx, "t", TopicConfig{Partitions: 1})
		return nil, err
	},
	func(ctx context.Context, c *Client, _ []byte) (func(*testing.T), error) {
		_, err := c.DescribeTopic(ctx, "t")
		return nil, err
	},
	func(ctx context.Context, c *Client, _ []byte) (func(*testing.T), error) {
		_, err := c.ListTopics(ctx)
		return nil, err
	},
	func(ctx context.Context, c *Client, body []byte) (func(*testing.T), error) {
		l, err := c.Lease(ctx, "g", "t", 0, "m", 0)
		return func(t *testing.T) {
			var w struct {
				Generation  int64
				Incarnation string
			}
			if json.Unmarshal(body, &w) == nil && (w.Generation != l.Generation || w.Incarnation != l.Incarnation) {
				t.Fatalf("lease decoded %+v from %q", l, body)
			}
		}, err
	},
	func(ctx context.Context, c *Client, _ []byte) (func(*testing.T), error) {
		_, err := c.RenewLease(ctx, "g", TopicRef("t", "abc"), 0, "m", 1, time.Second)
		return nil, err
	},
	func(ctx context.Context, c *Client, _ []byte) (func(*testing.T), error) {
		_, err := c.Commit(ctx, "g", "t", 0, "m", 1, 5)
		return nil, err
	},
	func(ctx context.Context, c *Client, _ []byte) (func(*testing.T), error) {
		_, err := c.DescribeGroup(ctx, "g")
		return nil, err
	},
	func(ctx context.Context, c *Client, _ []byte) (func(*testing.T), error) {
		_, err := c.ResetGroup(ctx, "g", "t", ResetEarliest())
		return nil, err
	},
	func(ctx context.Context, c *Client, _ []byte) (func(*testing.T), error) {
		return nil, c.Health(ctx)
	},
	func(ctx context.Context, c *Client, body []byte) (func(*testing.T), error) {
		keys, err := c.ParkedKeys(ctx, "g")
		return func(t *testing.T) {
			var w wire.ParkedList
			if json.Unmarshal(body, &w) == nil && len(w.Parked) != len(keys) {
				t.Fatalf("parked keys decoded %d of %d", len(keys), len(w.Parked))
			}
		}, err
	},
	func(ctx context.Context, c *Client, _ []byte) (func(*testing.T), error) {
		_, err := c.ReleaseParkedKey(ctx, "g", "t", []byte("k"))
		return nil, err
	},
	func(ctx context.Context, c *Client, body []byte) (func(*testing.T), error) {
		rows, err := c.PartitionParked(ctx, "g", "t", 0)
		return func(t *testing.T) {
			var w wire.ParkedRows
			if json.Unmarshal(body, &w) == nil && len(w.Parked) != len(rows) {
				t.Fatalf("parked rows decoded %d of %d", len(rows), len(w.Parked))
			}
		}, err
	},
}

// FuzzDecodeResponses answers each client call with a 2xx status and arbitrary bytes:
// the call either fails with ErrBadResponse (retryable) or returns a value true to the
// body, and never panics.
func FuzzDecodeResponses(f *testing.F) {
	srv := &cannedServer{}
	hs := httptest.NewServer(srv)
	f.Cleanup(hs.Close)
	c, err := New(hs.URL)
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []struct {
		call uint8
		body string
	}{
		{0, `{"records": [{"offset": 0, "timestamp_ms": 1, "key": null, "value": "eA==", "headers": {}}], "next_offset": 1, "high_watermark": 1, "log_start_offset": 0}`},
		{0, `{"records": [{"offset": 0, "timestamp_ms": 1, "key": "a2V5", "value": "eA==", "headers": {"h": "dg=="}}], "next_offset": 1, "high_watermark": 1, "log_start_offset": 0}`},
		{0, `{"records": [{"offset": 0, "value": "%%"}]}`},
		{0, `{"records": [{"offset": 0, "value": "eA==", "headers": {"h": "e"}}]}`},
		{0, `{"records": [null, {}], "next_offset": "1"}`},
		{0, `{"records": {}}`},
		{1, `{"results": [{"partition": 0, "offset": 4}, {"partition": 1, "offset": 9}]}`},
		{1, `{"results": [{"partition": 0, "offset": 4}]}`},
		{1, `{"results": [{"partition": 0, "offset": 4}, {"partition": 1, "error": {"code": "unavailable", "message": "m"}}]}`},
		{1, `{"results": [{"partition": 0, "offset": 4}, {"partition": 1}]}`},
		{1, `{"results": null}`},
		{2, `{"name": "t", "partitions": 1, "retention_ms": 86400000}`},
		{3, `{"name": "t", "partitions": 2, "retention_ms": 1000, "partition_info": [{"partition": 0, "log_start_offset": 0, "high_watermark": 3}]}`},
		{3, `{"partitions": 2147483648}`},
		{4, `{"topics": ["a", "b"]}`},
		{4, `{"topics": [1]}`},
		{5, `{"generation": 1, "lease_expires_at_ms": 1767322245123, "committed_offset": null}`},
		{5, `{"generation": 1.5}`},
		{5, `{"generation": 1, "lease_expires_at_ms": 1767322245123, "committed_offset": null, "incarnation": "tc01abc"}`},
		{5, `{"generation": 1, "incarnation": 7}`},
		{6, `{"generation": 1, "lease_expires_at_ms": 9223372036854775807, "committed_offset": 4}`},
		{7, `{"committed_offset": 5}`},
		{8, `{"group": "g", "partitions": [{"topic": "t", "partition": 0, "committed_offset": null, "high_watermark": 3, "lag_records": 3, "lag_seconds": 1.5, "owner": null, "generation": 0, "lease_expires_at_ms": null}]}`},
		{8, `{"group": "g", "partitions": [null]}`},
		{9, `{"partitions": [{"partition": 0, "committed_offset": 0}]}`},
		{10, `{"status": "ok"}`},
		{10, `{"status": "degraded"}`},
		{0, `null`},
		{1, ``},
		{3, `{"name": "t"} trailing`},
		{5, `[`},
		{8, "\xff"},
		{12, `{"parked": [{"key": "a2V5", "first_offset": 0, "last_offset": 2, "records": 2, "error": "e", "attempts": 1, "parked_at_ms": 1, "park_partition": 0, "park_offset": 4, "release_requested_at_ms": 5}]}`},
		{12, `{"parked": [{"key": "%%"}]}`},
		{11, `{"parked": [{"key": "%%"}]}`},
	} {
		f.Add(seed.call, uint8(0), []byte(seed.body))
	}
	f.Add(uint8(0), uint8(3), []byte(`{"records": []}`))
	f.Add(uint8(10), uint8(1), []byte(`{"status": "ok"}`))
	statuses := []int{http.StatusOK, http.StatusCreated, http.StatusAccepted, http.StatusNoContent}
	f.Fuzz(func(t *testing.T, call, status uint8, body []byte) {
		code := statuses[int(status)%len(statuses)]
		srv.set(code, body)
		if code == http.StatusNoContent {
			body = nil // a 204 carries no body
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		check, err := fuzzCalls[int(call)%len(fuzzCalls)](ctx, c, body)
		if err != nil {
			if !errors.Is(err, ErrBadResponse) || !IsRetryable(err) {
				t.Fatalf("status %d body %q: %v, want ErrBadResponse", code, body, err)
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("status %d: a body that is not JSON was accepted: %q", code, body)
		}
		if check != nil {
			check(t)
		}
	})
}

// FuzzDecodePollBlocks answers a poll with arbitrary bytes as a binary poll answer
// (wire.ContentTypeBlocks): the call either fails with ErrBadResponse (retryable) or
// returns the answer's offsets and its records from the offset asked for up to its next
// offset, in ascending order, every one of them; it never panics.
func FuzzDecodePollBlocks(f *testing.F) {
	srv := &cannedServer{contentType: wire.ContentTypeBlocks}
	hs := httptest.NewServer(srv)
	f.Cleanup(hs.Close)
	c, err := New(hs.URL)
	if err != nil {
		f.Fatal(err)
	}
	blk := func(n int, hdrs bool) []byte {
		var recs []segment.Record
		for i := range n {
			r := segment.Record{Timestamp: int64(1000 + i), Value: []byte{byte(i)}}
			if hdrs {
				r.Key = []byte("k")
				r.Headers = []segment.Header{{Key: "h", Value: []byte("v")}}
			}
			recs = append(recs, r)
		}
		b, err := segment.EncodeBlock(recs)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	valid := wire.AppendPoll(nil, wire.PollBlocks{NextOffset: 9, HighWatermark: 12, LogStartOffset: 1, Ranges: []wire.Range{
		{BaseOffset: 2, Data: append(blk(2, false), blk(1, true)...)}, {BaseOffset: 7, Data: blk(3, true)}}})
	corrupt := append([]byte(nil), valid...)
	corrupt[len(corrupt)-2] ^= 0x40
	for _, seed := range []struct {
		offset uint32
		body   []byte
	}{
		{3, valid},
		{0, valid},
		{9, valid},
		{3, valid[:len(valid)-5]},
		{3, corrupt},
		{0, wire.AppendPoll(nil, wire.PollBlocks{NextOffset: 4, HighWatermark: 4})},
		{0, wire.AppendPoll(nil, wire.PollBlocks{NextOffset: 4, HighWatermark: 4, Ranges: []wire.Range{
			{BaseOffset: 2, Data: blk(2, false)}, {BaseOffset: 3, Data: blk(1, false)}}})},
		{0, []byte("STRP\x01")},
		{0, []byte(`{"records": []}`)},
	} {
		f.Add(seed.offset, seed.body)
	}
	f.Fuzz(func(t *testing.T, offset uint32, body []byte) {
		srv.set(http.StatusOK, body)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		res, err := c.Poll(ctx, "t", 0, int64(offset), PollOptions{})
		if err != nil {
			if !errors.Is(err, ErrBadResponse) || !IsRetryable(err) {
				t.Fatalf("body %q: %v, want ErrBadResponse", body, err)
			}
			return
		}
		pb, err := wire.DecodePoll(body)
		if err != nil {
			t.Fatalf("accepted a malformed answer %q: %v", body, err)
		}
		if res.NextOffset != pb.NextOffset || res.HighWatermark != pb.HighWatermark || res.LogStartOffset != pb.LogStartOffset {
			t.Fatalf("decoded %+v from the header %+v", res, pb)
		}
		want := 0
		for _, r := range pb.Ranges {
			n, err := segment.CountBlocks(r.Data)
			if err != nil {
				t.Fatalf("accepted a range whose blocks do not parse: %v", err)
			}
			for o := r.BaseOffset; o < r.BaseOffset+int64(n); o++ {
				if o >= int64(offset) && o < pb.NextOffset {
					want++
				}
			}
		}
		if len(res.Records) != want {
			t.Fatalf("%d records, the answer holds %d in [%d, %d)", len(res.Records), want, offset, pb.NextOffset)
		}
		for i, r := range res.Records {
			if r.Offset < int64(offset) || r.Offset >= res.NextOffset || i > 0 && r.Offset <= res.Records[i-1].Offset {
				t.Fatalf("record %d at offset %d (polled at %d, next %d)", i, r.Offset, offset, res.NextOffset)
			}
		}
	})
}
