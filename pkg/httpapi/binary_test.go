package httpapi_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/wire"
)

// binBlock is a block of values with keys "k<i>", stamped 1732870000000+i.
func binBlock(t testing.TB, values ...string) []byte {
	t.Helper()
	recs := make([]segment.Record, len(values))
	for i, v := range values {
		recs[i] = segment.Record{Timestamp: 1732870000000 + int64(i), Key: fmt.Appendf(nil, "k%d", i), Value: []byte(v),
			Headers: []segment.Header{{Key: "trace", Value: []byte("t-" + v)}}}
	}
	b, err := segment.EncodeBlock(recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func binBody(t testing.TB, frames ...wire.Frame) []byte {
	t.Helper()
	return wire.AppendRequest(nil, frames)
}

// TestBinaryAppendAndPoll: a binary append answers each block's first offset and count;
// a binary poll answers the stored block as it was sent, and a JSON poll of the same
// offsets shows the same records with the producer's timestamps, keys and headers.
func TestBinaryAppendAndPoll(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 3)
	b2, b0 := binBlock(t, "a", "b", "c"), binBlock(t, "x")
	r := e.call("POST", "/v1/topics/t/records", binBody(t, wire.Frame{Partition: 2, Block: b2}, wire.Frame{Partition: 0, Block: b0}),
		"Content-Type", wire.ContentTypeBlocks, "Idempotency-Key", "bin-1").want(t, 200)
	if got := string(r.raw); got != `{"blocks":[{"partition":2,"base_offset":0,"count":3},{"partition":0,"base_offset":0,"count":1}]}`+"\n" {
		t.Fatalf("append answered %s", got)
	}
	again := e.call("POST", "/v1/topics/t/records", binBody(t, wire.Frame{Partition: 2, Block: b2}, wire.Frame{Partition: 0, Block: b0}),
		"Content-Type", wire.ContentTypeBlocks+"; charset=binary", "Idempotency-Key", "bin-1").want(t, 200)
	if !bytes.Equal(again.raw, r.raw) {
		t.Fatalf("idempotent retry answered %s, first %s", again.raw, r.raw)
	}

	p := e.call("GET", "/v1/topics/t/partitions/2/records?offset=1", nil, "Accept", wire.ContentTypeBlocks).want(t, 200)
	if ct := p.header.Get("Content-Type"); ct != wire.ContentTypeBlocks || p.header.Get("Vary") != "Accept" {
		t.Fatalf("binary poll: Content-Type %q, Vary %q", ct, p.header.Get("Vary"))
	}
	pb, err := wire.DecodePoll(p.raw)
	if err != nil {
		t.Fatal(err)
	}
	if pb.NextOffset != 3 || pb.HighWatermark != 3 || len(pb.Ranges) != 1 || pb.Ranges[0].BaseOffset != 0 || !bytes.Equal(pb.Ranges[0].Data, b2) {
		t.Fatalf("binary poll: %+v", pb)
	}

	j := e.call("GET", "/v1/topics/t/partitions/2/records?offset=1", nil).want(t, 200)
	recs := j.body["records"].([]any)
	first := recs[0].(map[string]any)
	if len(recs) != 2 || first["offset"] != float64(1) || first["timestamp_ms"] != float64(1732870000001) ||
		first["key"] != "azE=" || first["headers"].(map[string]any)["trace"] != "dC1i" {
		t.Fatalf("JSON poll of binary records: %s", j.raw)
	}
}

// TestBinaryAppendRefused: each bad binary body is a 400 (or 413) in the contract's
// error format and moves no high watermark.
func TestBinaryAppendRefused(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 2)
	good := binBlock(t, "a")
	flipped := bytes.Clone(good)
	flipped[len(flipped)-1] ^= 0x40
	emptyHeader, _ := segment.EncodeBlock([]segment.Record{{Value: []byte("v"), Headers: []segment.Header{{Key: ""}}}})
	cases := []struct {
		name   string
		body   []byte
		status int
		code   string
	}{
		{"empty", nil, 400, "invalid_request"},
		{"JSON sent as binary", []byte(`{"records":[{"value":"eA=="}]}`), 400, "invalid_request"},
		{"no frame", binBody(t), 400, "invalid_request"},
		{"truncated block", binBody(t, wire.Frame{Partition: 0, Block: good})[:20], 400, "invalid_request"},
		{"bad CRC", binBody(t, wire.Frame{Partition: 0, Block: flipped}), 400, "invalid_request"},
		{"partition out of range", binBody(t, wire.Frame{Partition: 2, Block: good}), 400, "invalid_request"},
		{"partition twice", binBody(t, wire.Frame{Partition: 1, Block: good}, wire.Frame{Partition: 1, Block: good}), 400, "invalid_request"},
		{"empty header name", binBody(t, wire.Frame{Partition: 0, Block: emptyHeader}), 400, "invalid_request"},
		{"over 9 MiB", append(binBody(t, wire.Frame{Partition: 0, Block: good}), make([]byte, 9<<20)...), 413, "payload_too_large"},
	}
	for _, c := range cases {
		before := highWatermarks(t, e, "t")
		e.call("POST", "/v1/topics/t/records", c.body, "Content-Type", wire.ContentTypeBlocks).want(t, c.status, c.code)
		if after := highWatermarks(t, e, "t"); !equalInts(before, after) {
			t.Errorf("%s: high watermarks moved %v -> %v", c.name, before, after)
		}
	}
}

// TestPollContentNegotiation: the answer is binary only when Accept prefers the binary
// type; errors stay JSON either way.
func TestPollContentNegotiation(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 1)
	e.call("POST", "/v1/topics/t/records", binBody(t, wire.Frame{Partition: 0, Block: binBlock(t, "a")}),
		"Content-Type", wire.ContentTypeBlocks).want(t, 200)
	cases := []struct {
		accept []string
		binary bool
	}{
		{nil, false},
		{[]string{"application/json"}, false},
		{[]string{"*/*"}, false},
		{[]string{wire.ContentTypeBlocks}, true},
		{[]string{wire.ContentTypeBlocks + ", application/json;q=0.5"}, true},
		{[]string{"application/json", wire.ContentTypeBlocks + ";q=0.9"}, false},
		{[]string{wire.ContentTypeBlocks + ";q=0"}, false},
		{[]string{"text/html", wire.ContentTypeBlocks}, true},
		{[]string{wire.ContentTypeBlocks + ";q=nonsense"}, false},
	}
	for _, c := range cases {
		var hdr []string
		for _, a := range c.accept {
			hdr = append(hdr, "Accept", a)
		}
		r := e.call("GET", "/v1/topics/t/partitions/0/records?offset=0", nil, hdr...).want(t, 200)
		if got := r.header.Get("Content-Type") == wire.ContentTypeBlocks; got != c.binary {
			t.Errorf("Accept %q: binary %v, want %v", c.accept, got, c.binary)
		}
	}
	r := e.call("GET", "/v1/topics/t/partitions/0/records?offset=5", nil, "Accept", wire.ContentTypeBlocks).want(t, 416, "offset_out_of_range")
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("error answered as %q", ct)
	}
}

// FuzzAppendBlocksRequest: arbitrary binary bodies and idempotency headers
// (Idempotency-Key, Strata-Attempt, Strata-Idempotency, Strata-Retry-Elapsed-Ms) never
// get a 5xx or a panic, every answer is documented, and a refused one changes nothing
// (checkRefusedAppend).
func FuzzAppendBlocksRequest(f *testing.F) {
	e := newEnv(f)
	e.createTopic("t", 3)
	good := binBlock(f, "a", "b")
	f.Add(binBody(f, wire.Frame{Partition: 1, Block: good}), "", "", "", "")
	f.Add(binBody(f, wire.Frame{Partition: 0, Block: good}, wire.Frame{Partition: 2, Block: binBlock(f, "c")}), "k", "", "", "")
	f.Add(binBody(f, wire.Frame{Partition: 0, Block: good}), "p.0", "0", "producer", "")
	f.Add(binBody(f, wire.Frame{Partition: 0, Block: good}), "p.0", "1", "producer", "20")
	f.Add(binBody(f, wire.Frame{Partition: 0, Block: good}), "p.1", "3", "producer", "")
	f.Add(binBody(f, wire.Frame{Partition: 0, Block: good}), "", "0", "producer", "")
	f.Add(binBody(f, wire.Frame{Partition: 0, Block: good}), "p.2", "1", "producer", "-5")
	f.Add(binBody(f, wire.Frame{Partition: 3, Block: good}), "", "", "", "")
	f.Add([]byte("STRA\x01"), "", "", "", "")
	f.Add([]byte("STRA\x02\x00\x00\x00\x00STRB"), "", "", "", "")
	f.Fuzz(func(t *testing.T, body []byte, key, attempt, idem, elapsed string) {
		before, readable := highWatermarks(t, e, "t"), readableRecords(t, e, "t")
		req := httptest.NewRequest("POST", "/v1/topics/t/records", bytes.NewReader(body))
		req.Header.Set("Content-Type", wire.ContentTypeBlocks)
		setAppendHeaders(req, key, attempt, idem, elapsed)
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, req)
		checkFuzzAnswer(t, req, w)
		checkRefusedAppend(t, e, w.Code, key, attempt, idem, before, readable)
		if w.Code == http.StatusOK && w.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("append answered %q", w.Header().Get("Content-Type"))
		}
	})
}

// TestBinaryAppendPartialFailure: when one block's partition fails after another's was
// appended, the 503 lists both, in frame order: the appended block's offsets, the failed
// one's error.
func TestBinaryAppendPartialFailure(t *testing.T) {
	e := newEnv(t)
	e.createLegacyTopic("t", 2)
	e.meta.mu.Lock()
	e.meta.failPartitions[1] = true
	e.meta.mu.Unlock()
	r := e.call("POST", "/v1/topics/t/records", binBody(t, wire.Frame{Partition: 1, Block: binBlock(t, "a")},
		wire.Frame{Partition: 0, Block: binBlock(t, "b", "c")}), "Content-Type", wire.ContentTypeBlocks).want(t, 503, "unavailable")
	bs, _ := r.body["blocks"].([]any)
	if len(bs) != 2 {
		t.Fatalf("blocks %s", r.raw)
	}
	failed, ok := bs[0].(map[string]any), bs[1].(map[string]any)
	if fe, _ := failed["error"].(map[string]any); failed["partition"] != float64(1) || fe["code"] != "unavailable" || failed["base_offset"] != nil {
		t.Errorf("failed block: %v", failed)
	}
	if ok["partition"] != float64(0) || ok["base_offset"] != float64(0) || ok["count"] != float64(2) || ok["error"] != nil {
		t.Errorf("appended block: %v", ok)
	}
	if got := highWatermarks(t, e, "t"); !equalInts(got, []int64{2, 0}) {
		t.Fatalf("high watermarks %v, want [2 0]", got)
	}
}
