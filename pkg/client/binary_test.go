package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/wire"
)

// TestProducerBinaryRoundTrip: records of every shape (keyed, unkeyed, empty key,
// headers, explicit and missing timestamps) go as one block per batch, reach the fake
// byte for byte with a missing timestamp stamped at Send, and a binary Poll reads them
// back the same.
func TestProducerBinaryRoundTrip(t *testing.T) {
	f := newFake(t, 2)
	p := newProducer(t, f, client.ProducerConfig{Partitions: 2, Linger: 20 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	recs := []client.Record{
		{Key: []byte("k"), Value: []byte("v0"), Headers: map[string][]byte{"b": []byte("2"), "a": nil, "é": {0xff}}},
		{Value: []byte{}, Timestamp: time.UnixMilli(1732870000000)},
		{Key: []byte{}, Value: bytes.Repeat([]byte{0}, 300), Timestamp: time.UnixMilli(0)},
		{Key: []byte("k"), Value: []byte("v3"), Timestamp: time.UnixMilli(client.MaxTimestampMs)},
	}
	before := time.Now().UnixMilli()
	var futs []*client.Future
	for _, r := range recs {
		r.Partition = i32(1)
		fut, err := p.Send(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		futs = append(futs, fut)
	}
	after := time.Now().UnixMilli()
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for i, fut := range futs {
		if res, err := fut.Result(); err != nil || res.Partition != 1 || res.Offset != int64(i) {
			t.Fatalf("record %d: %+v, %v", i, res, err)
		}
	}
	calls, logs, _, _ := f.snapshot()
	if len(calls) != 1 || !calls[0].Binary || calls[0].Records != len(recs) {
		t.Fatalf("want one binary request of %d records:\n%s", len(recs), callsSummary(calls))
	}
	if s := p.Stats(); s.Requests != 1 || s.Batches != 1 || s.RecordsSent != int64(len(recs)) {
		t.Fatalf("stats %+v", s)
	}
	for i, r := range recs {
		g := logs[1][i]
		if !bytes.Equal(g.Key, r.Key) || (g.Key == nil) != (r.Key == nil) || !bytes.Equal(g.Value, r.Value) ||
			!maps.EqualFunc(g.Headers, r.Headers, bytes.Equal) {
			t.Fatalf("record %d: sent %+v, fake holds %+v", i, r, g)
		}
		if r.Timestamp.IsZero() {
			if g.TsMs < before || g.TsMs > after {
				t.Fatalf("record %d stamped %d, Send ran in [%d, %d]", i, g.TsMs, before, after)
			}
			recs[i].Timestamp = time.UnixMilli(g.TsMs)
		} else if g.TsMs != r.Timestamp.UnixMilli() {
			t.Fatalf("record %d: timestamp %d, sent %d", i, g.TsMs, r.Timestamp.UnixMilli())
		}
	}

	c, _ := client.New(f.URL)
	res, err := c.Poll(ctx, "orders", 1, 0, client.PollOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != len(recs) || res.NextOffset != int64(len(recs)) || res.HighWatermark != int64(len(recs)) {
		t.Fatalf("poll: %d records, next %d, hw %d", len(res.Records), res.NextOffset, res.HighWatermark)
	}
	for i, r := range recs {
		g := res.Records[i]
		if g.Offset != int64(i) || !g.Timestamp.Equal(r.Timestamp) || !bytes.Equal(g.Key, r.Key) ||
			(g.Key == nil) != (r.Key == nil) || !bytes.Equal(g.Value, r.Value) || !maps.EqualFunc(g.Headers, r.Headers, bytes.Equal) {
			t.Fatalf("polled record %d: %+v, sent %+v", i, g, r)
		}
	}
}

// TestProducerBinaryPartialFailure: a 503 whose "blocks" extra fails the batch's frame is
// retried with the same key and bytes and then appended once; when the retries run out,
// the records fail with ErrUnavailable.
func TestProducerBinaryPartialFailure(t *testing.T) {
	f := newFake(t, 2)
	f.inject = func(n int, _ appendCall) fault {
		if n < 2 {
			return faultAllFailed
		}
		return faultNone
	}
	p := newProducer(t, f, client.ProducerConfig{Partitions: 2, Backoff: time.Millisecond, Linger: 10 * time.Millisecond})
	ctx := context.Background()
	var all []sent
	for i := range 5 {
		rec := client.Record{Value: fmt.Appendf(nil, "v%d", i), Partition: i32(1)}
		fut, err := p.Send(ctx, rec)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, sent{rec: rec, want: 1, fut: fut})
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	checkDelivery(t, f, all)
	calls, _, _, _ := f.snapshot()
	if len(calls) != 3 || calls[0].Fault != faultAllFailed || !calls[2].Binary {
		t.Fatalf("want two failed binary calls, then one that succeeds:\n%s", callsSummary(calls))
	}

	g := newFake(t, 1)
	g.inject = func(int, appendCall) fault { return faultAllFailed }
	q := newProducer(t, g, client.ProducerConfig{Partitions: 1, Backoff: time.Millisecond, MaxRetries: 1})
	if _, err := q.SendSync(ctx, client.Record{Value: []byte("x")}); !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if s := q.Stats(); s.Requests != 2 || s.RecordsFailed != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// TestProducerFallsBackToJSON: a server that refuses the binary format, with a 415 or
// (predating it) a 400, gets the refused batch again as JSON, and JSON only from then
// on, from every Producer of the Client; delivery stays exactly once and in order.
func TestProducerFallsBackToJSON(t *testing.T) {
	for _, mode := range []blocksMode{blocks415, blocksLegacy} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			f := newFake(t, 3)
			f.blocks = mode
			c, _ := client.New(f.URL)
			ctx := context.Background()
			var all []sent
			for round := range 2 {
				p, err := client.NewProducer(ctx, c, "orders", client.ProducerConfig{Partitions: 3, BatchRecords: 4})
				if err != nil {
					t.Fatal(err)
				}
				for i := range 30 {
					rec := client.Record{Key: fmt.Appendf(nil, "k%d", i%7), Value: fmt.Appendf(nil, "%d/%d", round, i)}
					fut, err := p.Send(ctx, rec)
					if err != nil {
						t.Fatal(err)
					}
					all = append(all, sent{rec: rec, want: wire.PartitionForKey(rec.Key, 3), fut: fut})
				}
				if err := p.Close(ctx); err != nil {
					t.Fatal(err)
				}
			}
			calls, _, _, _ := f.snapshot()
			refused := 0
			for i, call := range calls {
				switch {
				case call.Refused:
					refused++
				case call.Binary:
					t.Fatalf("call %d: the fake took a binary append", i)
				}
			}
			// Partitions send their first batches at once: each may meet the refusal
			// before any answer tells the Client.
			if refused == 0 || refused > 3 {
				t.Fatalf("%d refused binary calls, want 1 to 3 (one per partition at most):\n%s", refused, callsSummary(calls))
			}
			f.mu.Lock()
			f.calls = withoutRefused(f.calls)
			f.mu.Unlock()
			checkDelivery(t, f, all)
		})
	}
}

func (m blocksMode) String() string { return [...]string{"binary", "415", "legacy"}[m] }

// withoutRefused drops the refused calls, which the fake did not parse (no partitions),
// so that checkDelivery checks the calls that appended.
func withoutRefused(calls []appendCall) []appendCall {
	var out []appendCall
	for _, c := range calls {
		if !c.Refused {
			out = append(out, c)
		}
	}
	return out
}

// TestProducerFallbackSplitsBatch: a full batch of MaxBatchBytes in block bytes is more
// than MaxBatchBytes as JSON; falling back, it goes as two JSON requests, in order.
func TestProducerFallbackSplitsBatch(t *testing.T) {
	f := newFake(t, 1)
	f.blocks = blocks415
	p := newProducer(t, f, client.ProducerConfig{Partitions: 1, BatchBytes: client.MaxBatchBytes,
		BufferBytes: 2 * client.MaxBatchBytes, Linger: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var all []sent
	for i := range 5 {
		rec := client.Record{Value: bytes.Repeat([]byte{byte('a' + i)}, 1000000)}
		fut, err := p.Send(ctx, rec)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, sent{rec: rec, fut: fut})
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	calls, _, _, _ := f.snapshot()
	if len(calls) != 3 || !calls[0].Refused || calls[1].Records != 3 || calls[2].Records != 2 || calls[1].Binary || calls[2].Binary {
		t.Fatalf("want a refused binary call of 5, then JSON calls of 3 and 2:\n%s", callsSummary(calls))
	}
	for _, c := range calls[1:] {
		if len(c.Body) > client.MaxBatchBytes {
			t.Fatalf("JSON body of %d bytes, over MaxBatchBytes", len(c.Body))
		}
	}
	f.mu.Lock()
	f.calls = withoutRefused(f.calls)
	f.mu.Unlock()
	checkDelivery(t, f, all)
}

// TestPollBinaryFirstRangeBelowOffset: the fake answers whole commits, so a poll from
// inside one gets records below its offset, which the client skips; NextOffset is the
// answer's, after every record returned, and max_records is not trimmed to.
func TestPollBinaryFirstRangeBelowOffset(t *testing.T) {
	f := newFake(t, 1)
	c, _ := client.New(f.URL)
	ctx := context.Background()
	n := 0
	for _, size := range []int{3, 4, 2, 5} {
		var recs []client.Record
		for range size {
			recs = append(recs, client.Record{Value: fmt.Appendf(nil, "%d", n), Timestamp: time.UnixMilli(int64(1000 + n))})
			n++
		}
		if _, err := c.Append(ctx, "orders", recs, client.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		offset     int64
		maxRecords int
		want       int64 // next offset: the end of the last whole commit
	}{
		{0, 0, 14}, {4, 0, 14}, {4, 1, 7}, {5, 3, 9}, {13, 1, 14}, {14, 0, 14},
	} {
		res, err := c.Poll(ctx, "orders", 0, tc.offset, client.PollOptions{MaxRecords: tc.maxRecords})
		if err != nil {
			t.Fatal(err)
		}
		if res.NextOffset != tc.want || res.HighWatermark != 14 || len(res.Records) != int(tc.want-tc.offset) {
			t.Fatalf("poll @%d max %d: %d records, next %d, hw %d; want next %d", tc.offset, tc.maxRecords,
				len(res.Records), res.NextOffset, res.HighWatermark, tc.want)
		}
		for i, r := range res.Records {
			o := tc.offset + int64(i)
			if r.Offset != o || string(r.Value) != fmt.Sprint(o) || r.Timestamp.UnixMilli() != 1000+o {
				t.Fatalf("poll @%d: record %d is %+v", tc.offset, i, r)
			}
		}
	}
}

// TestPollJSONServer: a server that answers polls in JSON only, whatever the Accept
// header, is read as before.
func TestPollJSONServer(t *testing.T) {
	for _, mode := range []blocksMode{blocks415, blocksLegacy} {
		f := newFake(t, 1)
		f.blocks = mode
		c, _ := client.New(f.URL)
		ctx := context.Background()
		if _, err := c.Append(ctx, "orders", []client.Record{{Value: []byte("a")}, {Key: []byte("k"), Value: []byte("b"),
			Headers: map[string][]byte{"h": []byte("v")}, Timestamp: time.UnixMilli(7)}}, client.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		res, err := c.Poll(ctx, "orders", 0, 1, client.PollOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Records) != 1 || res.NextOffset != 2 || string(res.Records[0].Value) != "b" ||
			string(res.Records[0].Headers["h"]) != "v" || res.Records[0].Timestamp.UnixMilli() != 7 {
			t.Fatalf("%v: %+v", mode, res)
		}
	}
}

// servePoll answers every poll with body as the given Content-Type and checks the
// request's Accept header.
func servePoll(t *testing.T, contentType string, body []byte) *client.Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := r.Header.Get("Accept"); a != wire.ContentTypeBlocks+", application/json;q=0.5" {
			t.Errorf("Accept %q", a)
		}
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// block encodes n records whose values are their offsets from base.
func block(t *testing.T, base int64, n int) []byte {
	t.Helper()
	var recs []segment.Record
	for i := range n {
		recs = append(recs, segment.Record{Timestamp: 5, Value: fmt.Appendf(nil, "%d", base+int64(i))})
	}
	b, err := segment.EncodeBlock(recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPollBinaryRanges: ranges of several blocks, gaps between ranges (skipped
// duplicate commits), records past the answer's next offset (left for the next poll),
// and a Content-Type with parameters; overlapping ranges, a corrupt block and a bad
// frame are ErrBadResponse (with the segment or wire error).
func TestPollBinaryRanges(t *testing.T) {
	ctx := context.Background()
	two := append(block(t, 10, 2), block(t, 12, 3)...)
	body := wire.AppendPoll(nil, wire.PollBlocks{NextOffset: 22, HighWatermark: 30, LogStartOffset: 4, Ranges: []wire.Range{
		{BaseOffset: 10, Data: two}, {BaseOffset: 20, Data: block(t, 20, 4)}}})
	c := servePoll(t, wire.ContentTypeBlocks+"; charset=binary", body)
	res, err := c.Poll(ctx, "t", 0, 11, client.PollOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for _, r := range res.Records {
		if string(r.Value) != fmt.Sprint(r.Offset) || r.Key != nil || r.Headers != nil {
			t.Fatalf("record %+v", r)
		}
		offs = append(offs, r.Offset)
	}
	if fmt.Sprint(offs) != "[11 12 13 14 20 21]" || res.NextOffset != 22 || res.HighWatermark != 30 || res.LogStartOffset != 4 {
		t.Fatalf("offsets %v, %+v", offs, res)
	}

	empty := wire.AppendPoll(nil, wire.PollBlocks{NextOffset: 30, HighWatermark: 30})
	if res, err := servePoll(t, wire.ContentTypeBlocks, empty).Poll(ctx, "t", 0, 30, client.PollOptions{}); err != nil ||
		res.Records == nil || len(res.Records) != 0 || res.NextOffset != 30 {
		t.Fatalf("empty answer: %+v, %v", res, err)
	}

	overlap := wire.AppendPoll(nil, wire.PollBlocks{NextOffset: 14, HighWatermark: 14, Ranges: []wire.Range{
		{BaseOffset: 10, Data: block(t, 10, 2)}, {BaseOffset: 11, Data: block(t, 11, 3)}}})
	corrupt := wire.AppendPoll(nil, wire.PollBlocks{NextOffset: 2, HighWatermark: 2, Ranges: []wire.Range{
		{BaseOffset: 0, Data: block(t, 0, 2)}}})
	corrupt[len(corrupt)-1] ^= 1
	for name, tc := range map[string]struct {
		body []byte
		want error
	}{
		"overlap":   {overlap, nil},
		"corrupt":   {corrupt, segment.ErrCorrupt},
		"truncated": {body[:len(body)-3], wire.ErrMalformed},
		"json body": {[]byte(`{"records":[]}`), wire.ErrMalformed},
	} {
		_, err := servePoll(t, wire.ContentTypeBlocks, tc.body).Poll(ctx, "t", 0, 0, client.PollOptions{})
		if !errors.Is(err, client.ErrBadResponse) || !client.IsRetryable(err) || tc.want != nil && !errors.Is(err, tc.want) {
			t.Fatalf("%s: err = %v, want ErrBadResponse wrapping %v", name, err, tc.want)
		}
	}
}
