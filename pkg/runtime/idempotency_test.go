package runtime_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/wire"
)

// TestProducerIdempotencyHeadersContract (issue 20): on the assembled server
// (runtime.Handler()), a producer request (Strata-Idempotency: producer) without its
// Idempotency-Key, without Strata-Attempt, or retried (attempt above 0) without
// Strata-Retry-Elapsed-Ms, and any Strata-Idempotency or Strata-Retry-Elapsed-Ms out of
// its bounds, is a 400 naming the header, for a JSON and a binary body alike, and
// appends nothing (the partition's high watermark stays); a well-formed first attempt is
// appended, and its retry answers the same offsets, adding no readable record.
func TestProducerIdempotencyHeadersContract(t *testing.T) {
	ctx := context.Background()
	rt, err := runtime.New(ctx, runtime.Config{Node: node.Config{DataDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	if _, err := rt.Log().CreateTopic(ctx, "t", 1, time.Hour); err != nil {
		t.Fatal(err)
	}
	h := rt.Handler()
	blocks := wire.AppendRequest(nil, []wire.Frame{{Partition: 0, Block: block(t, "B")}})
	bodies := []struct {
		contentType string
		body        []byte
	}{
		{"application/json", []byte(`{"records": [{"value": "QQ==", "partition": 0}]}`)},
		{wire.ContentTypeBlocks, blocks},
	}
	post := func(contentType string, body []byte, hdr map[string][]string) (int, string) {
		t.Helper()
		req := httptest.NewRequest(http.MethodPost, "/v1/topics/t/records", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", contentType)
		for k, vs := range hdr {
			for _, v := range vs {
				req.Header.Add(k, v)
			}
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code, w.Body.String()
	}
	hw := func() int64 {
		t.Helper()
		info, err := rt.Log().DescribeTopic(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		return info.Partitions[0].HighWatermark
	}
	readable := func() int {
		t.Helper()
		n := 0
		for off := int64(0); ; {
			res, err := rt.Log().Poll(ctx, "t", 0, off, log.PollOptions{MaxRecords: wire.MaxPollRecords})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Records) == 0 {
				return n
			}
			n += len(res.Records)
			off = res.NextOffset
		}
	}
	const (
		key     = "Idempotency-Key"
		attempt = wire.HeaderAttempt
		idem    = wire.HeaderIdempotency
		elapsed = wire.HeaderRetryElapsed
		floor   = wire.HeaderBatchFloor
	)
	for _, tc := range []struct {
		name   string
		hdr    map[string][]string
		naming string // the header the message must name
	}{
		{"producer without a key", map[string][]string{idem: {"producer"}, attempt: {"0"}}, key},
		{"producer without an attempt", map[string][]string{idem: {"producer"}, key: {"p.1"}}, attempt},
		{"producer retry without elapsed", map[string][]string{idem: {"producer"}, key: {"p.1"}, attempt: {"1"}}, elapsed},
		{"another idempotency mode", map[string][]string{idem: {"claim"}, key: {"p.1"}, attempt: {"0"}}, idem},
		{"idempotency in another case", map[string][]string{idem: {"Producer"}, key: {"p.1"}, attempt: {"0"}}, idem},
		{"idempotency twice", map[string][]string{idem: {"producer", "producer"}, key: {"p.1"}, attempt: {"0"}}, idem},
		{"elapsed beyond the bound", map[string][]string{idem: {"producer"}, key: {"p.1"}, attempt: {"1"}, elapsed: {"300001"}}, elapsed},
		{"elapsed with a leading zero", map[string][]string{idem: {"producer"}, key: {"p.1"}, attempt: {"1"}, elapsed: {"0100"}}, elapsed},
		{"elapsed negative", map[string][]string{idem: {"producer"}, key: {"p.1"}, attempt: {"1"}, elapsed: {"-1"}}, elapsed},
		{"elapsed not a number", map[string][]string{idem: {"producer"}, key: {"p.1"}, attempt: {"1"}, elapsed: {"1.5"}}, elapsed},
		{"elapsed twice", map[string][]string{idem: {"producer"}, key: {"p.1"}, attempt: {"1"}, elapsed: {"1", "2"}}, elapsed},
		{"bad elapsed without producer mode", map[string][]string{key: {"k.1"}, elapsed: {"x"}}, elapsed},
		{"producer retry without a floor", map[string][]string{idem: {"producer"}, key: {"p.1"}, attempt: {"1"}, elapsed: {"1"}}, floor},
		{"floor without an incarnation", map[string][]string{idem: {"producer"}, key: {"p.1"}, attempt: {"1"}, elapsed: {"1"}, floor: {"3"}}, floor},
		{"floor twice", map[string][]string{idem: {"producer"}, key: {"p.1"}, attempt: {"1"}, elapsed: {"1"}, floor: {"0", "0"}}, floor},
	} {
		for _, b := range bodies {
			before := hw()
			code, got := post(b.contentType, b.body, tc.hdr)
			if code != http.StatusBadRequest || !strings.Contains(got, wire.CodeInvalidRequest) || !strings.Contains(got, tc.naming) {
				t.Errorf("%s (%s): %d %s, want 400 naming %s", tc.name, b.contentType, code, got, tc.naming)
			}
			if after := hw(); after != before {
				t.Errorf("%s (%s): the refused append moved the high watermark %d -> %d", tc.name, b.contentType, before, after)
			}
		}
	}
	for i, b := range bodies {
		k := []string{"p." + string(rune('a'+i))}
		mark := wire.BatchMark{}
		if m, ok := rt.Log().BatchMark("t"); ok {
			mark = m // the mark of the answer before this request's first send
		}
		code, first := post(b.contentType, b.body, map[string][]string{idem: {"producer"}, key: k, attempt: {"0"}, floor: {mark.String()}})
		if code != http.StatusOK {
			t.Fatalf("first attempt (%s): %d %s", b.contentType, code, first)
		}
		before := readable()
		code, retry := post(b.contentType, b.body, map[string][]string{idem: {"producer"}, key: k, attempt: {"1"}, elapsed: {"250"}, floor: {mark.String()}})
		if code != http.StatusOK || !json.Valid([]byte(retry)) || retry != first {
			t.Fatalf("retry (%s): %d %s, want 200 with the first attempt's offsets %s", b.contentType, code, retry, first)
		}
		if after := readable(); after != before {
			t.Fatalf("retry (%s) of an appended request left %d records readable, were %d", b.contentType, after, before)
		}
	}
}

// block encodes one segment block of records with the given values.
func block(t *testing.T, values ...string) []byte {
	t.Helper()
	recs := make([]segment.Record, len(values))
	for i, v := range values {
		recs[i] = segment.Record{Timestamp: 1732870000000, Value: []byte(v)}
	}
	b, err := segment.EncodeBlock(recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
