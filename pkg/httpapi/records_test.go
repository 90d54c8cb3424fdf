package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/httpapi"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

func TestHealth(t *testing.T) {
	e := newEnv(t)
	r := e.call("GET", "/v1/health", nil).want(t, 200)
	if r.body["status"] != "ok" {
		t.Fatalf("health body %s", r.raw)
	}
}

func TestCreateTopic(t *testing.T) {
	e := newEnv(t)
	r := e.call("POST", "/v1/topics", map[string]any{"name": "orders", "partitions": 8}).want(t, 201)
	if r.body["name"] != "orders" || r.num("partitions") != 8 || r.num("retention_ms") != 86400000 {
		t.Fatalf("created %s, want orders/8 with the default retention of 24 h", r.raw)
	}
	r = e.call("POST", "/v1/topics", map[string]any{"name": "short", "partitions": 1, "retention_ms": 1000}).want(t, 201)
	if r.num("retention_ms") != 1000 {
		t.Fatalf("retention %s, want 1000", r.raw)
	}
	e.call("POST", "/v1/topics", map[string]any{"name": "orders", "partitions": 2}).want(t, 409, "topic_exists")

	bad := []string{
		`{"partitions": 1}`,
		`{"name": "", "partitions": 1}`,
		`{"name": ".", "partitions": 1}`,
		`{"name": "..", "partitions": 1}`,
		`{"name": "..", "partitions": 1}`,
		`{"name": "a/b", "partitions": 1}`,
		`{"name": "` + strings.Repeat("a", 250) + `", "partitions": 1}`,
		`{"name": "x", "partitions": 0}`,
		`{"name": "x", "partitions": 1025}`,
		`{"name": "x", "partitions": -1}`,
		`{"name": "x", "partitions": 1.5}`,
		`{"name": "x", "partitions": 4294967297}`,
		`{"name": "x", "partitions": "2"}`,
		`{"name": "x", "partitions": 1, "retention_ms": 999}`,
		`{"name": "x", "partitions": 1, "retention_ms": 0}`,
		`{"name": "x", "partitions": 1, "retention_ms": 9223372036854775807}`,
		`{"name": "x", "partitions": 1, "replication": 3}`,
		`{"name": "x", "partitions": 1} {}`,
		`{"name": "x", "partitions": 1`,
		`[]`,
		``,
		`null`,
	}
	for _, b := range bad {
		e.call("POST", "/v1/topics", b).want(t, 400, "invalid_request")
	}
	e.call("POST", "/v1/topics", `{"name": "x", "partitions": 1, "pad": "`+strings.Repeat("a", httpapi.MaxSmallBody)+`"}`).want(t, 413, "payload_too_large")
	names, err := e.log.ListTopics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, []string{"orders", "short"}) {
		t.Fatalf("topics after rejected creates: %v, want [orders short]", names)
	}
	// Partitions and retention left out take the node's defaults.
	r = e.call("POST", "/v1/topics", map[string]any{"name": "defaults"}).want(t, 201)
	if r.num("partitions") != 4 || r.num("retention_ms") != 86400000 {
		t.Fatalf("created %s, want the default 4 partitions and 24 h", r.raw)
	}
	// Longest valid name and the partition bounds are accepted.
	e.call("POST", "/v1/topics", map[string]any{"name": "A" + strings.Repeat("z._-", 49) + "zzz", "partitions": 1024}).want(t, 201)
}

func TestListAndDescribeTopics(t *testing.T) {
	e := newEnv(t)
	r := e.call("GET", "/v1/topics", nil).want(t, 200)
	if got, ok := r.body["topics"].([]any); !ok || len(got) != 0 {
		t.Fatalf("empty list: %s, want {\"topics\": []}", r.raw)
	}
	e.createTopic("b", 1)
	e.createTopic("a", 3)
	r = e.call("GET", "/v1/topics", nil).want(t, 200)
	if fmt.Sprint(r.body["topics"]) != "[a b]" {
		t.Fatalf("list %s, want [a b]", r.raw)
	}
	e.call("POST", "/v1/topics/a/records", appendBody(rec{value: "x", partition: ptr(2)}, rec{value: "y", partition: ptr(2)})).want(t, 200)
	r = e.call("GET", "/v1/topics/a", nil).want(t, 200)
	pi := r.body["partition_info"].([]any)
	if r.body["name"] != "a" || r.num("partitions") != 3 || len(pi) != 3 {
		t.Fatalf("describe %s", r.raw)
	}
	p2 := pi[2].(map[string]any)
	if p2["partition"].(float64) != 2 || p2["high_watermark"].(float64) != 2 || p2["log_start_offset"].(float64) != 0 {
		t.Fatalf("partition 2: %v, want hw 2 start 0", p2)
	}
	e.call("GET", "/v1/topics/nope", nil).want(t, 404, "not_found")
	e.call("GET", "/v1/topics/..x", nil).want(t, 404, "not_found")
}

// rec is one record of an append body.
type rec struct {
	key, value string
	noKey      bool
	headers    map[string]string
	partition  *int
	ts         *int64
}

func ptr[T any](v T) *T { return &v }

func appendBody(recs ...rec) map[string]any {
	out := make([]map[string]any, len(recs))
	for i, r := range recs {
		m := map[string]any{"value": b64(r.value)}
		if r.key != "" {
			m["key"] = b64(r.key)
		}
		if r.headers != nil {
			h := map[string]string{}
			for k, v := range r.headers {
				h[k] = b64(v)
			}
			m["headers"] = h
		}
		if r.partition != nil {
			m["partition"] = *r.partition
		}
		if r.ts != nil {
			m["timestamp_ms"] = *r.ts
		}
		out[i] = m
	}
	return map[string]any{"records": out}
}

type offsetResult struct{ partition, offset int64 }

func results(t testing.TB, r *resp) []offsetResult {
	t.Helper()
	rs := r.body["results"].([]any)
	out := make([]offsetResult, len(rs))
	for i, x := range rs {
		m := x.(map[string]any)
		out[i] = offsetResult{int64(m["partition"].(float64)), -1}
		if o, ok := m["offset"].(float64); ok {
			out[i].offset = int64(o)
		}
	}
	return out
}

func TestAppendAndPoll(t *testing.T) {
	e := newEnv(t)
	e.createTopic("orders", 4)
	r := e.call("POST", "/v1/topics/orders/records", appendBody(
		rec{key: "order-1", value: `{"total": 42}`, headers: map[string]string{"h": "v", "a": ""}},
		rec{value: "explicit", partition: ptr(3), ts: ptr(int64(1732870000000))},
		rec{key: "order-1", value: "second"},
		rec{value: "", partition: ptr(3)},
	)).want(t, 200)
	res := results(t, r)
	kp := int64(log.PartitionForKey([]byte("order-1"), 4))
	want := []offsetResult{{kp, 0}, {3, 0}, {kp, 1}, {3, 1}}
	if kp == 3 {
		want = []offsetResult{{3, 0}, {3, 1}, {3, 2}, {3, 3}}
	}
	if !slices.Equal(res, want) {
		t.Fatalf("results %v, want %v (keyed records go to murmur2 partition %d)", res, want, kp)
	}

	r = e.call("GET", fmt.Sprintf("/v1/topics/orders/partitions/%d/records?offset=0", kp), nil).want(t, 200)
	recs := r.body["records"].([]any)
	first := recs[0].(map[string]any)
	if first["key"] != b64("order-1") || first["value"] != b64(`{"total": 42}`) || first["offset"].(float64) != 0 {
		t.Fatalf("first record %v", first)
	}
	h := first["headers"].(map[string]any)
	if h["h"] != b64("v") || h["a"] != "" || len(h) != 2 {
		t.Fatalf("headers %v, want h=v a=''", h)
	}
	if ts := first["timestamp_ms"].(float64); time.Since(time.UnixMilli(int64(ts))) > time.Minute {
		t.Fatalf("timestamp %v is not the append time", ts)
	}
	r = e.call("GET", "/v1/topics/orders/partitions/3/records?offset=0&max_records=10", nil).want(t, 200)
	var explicit map[string]any
	for _, x := range r.body["records"].([]any) {
		if m := x.(map[string]any); m["value"] == b64("explicit") {
			explicit = m
		}
	}
	if explicit == nil || explicit["timestamp_ms"].(float64) != 1732870000000 || explicit["key"] != nil {
		t.Fatalf("explicit record %v: want timestamp as given and a null key", explicit)
	}
	if hwm := r.num("high_watermark"); r.num("next_offset") != hwm || r.num("log_start_offset") != 0 {
		t.Fatalf("bounds %s", r.raw)
	}

	// At the high watermark: no records, nothing waited for.
	hw := e.hw("orders", 3)
	r = e.call("GET", fmt.Sprintf("/v1/topics/orders/partitions/3/records?offset=%d", hw), nil).want(t, 200)
	if len(r.body["records"].([]any)) != 0 || r.num("next_offset") != hw {
		t.Fatalf("poll at hw: %s", r.raw)
	}
}

func TestAppendRejectionsChangeNothing(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 2)
	e.call("POST", "/v1/topics/t/records", appendBody(rec{value: "seed", partition: ptr(0)})).want(t, 200)
	before := e.hws("t")
	big := strings.Repeat("a", 1<<20)
	manyRecs := make([]rec, 10001)
	for i := range manyRecs {
		manyRecs[i] = rec{value: "v"}
	}
	sixRecs := make([]rec, 7)
	for i := range sixRecs {
		sixRecs[i] = rec{value: big[:1<<20-10]}
	}
	cases := []struct {
		name   string
		body   any
		header []string
		status int
		code   string
	}{
		{"bad base64 value", `{"records": [{"value": "!!!"}]}`, nil, 400, "invalid_request"},
		{"bad base64 key", `{"records": [{"key": "a", "value": ""}]}`, nil, 400, "invalid_request"},
		{"url-safe base64", `{"records": [{"value": "-_-_"}]}`, nil, 400, "invalid_request"},
		{"unpadded base64", `{"records": [{"value": "YQ"}]}`, nil, 400, "invalid_request"},
		{"bad base64 header", `{"records": [{"value": "", "headers": {"h": "*"}}]}`, nil, 400, "invalid_request"},
		{"empty header name", `{"records": [{"value": "", "headers": {"": "dg=="}}]}`, nil, 400, "invalid_request"},
		{"missing value", `{"records": [{"key": "YQ=="}]}`, nil, 400, "invalid_request"},
		{"null key", `{"records": [{"key": null, "value": null}]}`, nil, 400, "invalid_request"},
		{"null header value in the object form", `{"records": [{"value": "", "headers": {"h": null}}]}`, nil, 400, "invalid_request"},
		{"null headers", `{"records": [{"value": "", "headers": null}]}`, nil, 400, "invalid_request"},
		{"headers a string", `{"records": [{"value": "", "headers": "h"}]}`, nil, 400, "invalid_request"},
		{"header entry without key", `{"records": [{"value": "", "headers": [{"value": "dg=="}]}]}`, nil, 400, "invalid_request"},
		{"header entry without value", `{"records": [{"value": "", "headers": [{"key": "h"}]}]}`, nil, 400, "invalid_request"},
		{"header entry null key", `{"records": [{"value": "", "headers": [{"key": null, "value": null}]}]}`, nil, 400, "invalid_request"},
		{"header entry unknown field", `{"records": [{"value": "", "headers": [{"key": "h", "value": null, "x": 1}]}]}`, nil, 400, "invalid_request"},
		{"header entry empty name", `{"records": [{"value": "", "headers": [{"key": "", "value": "dg=="}]}]}`, nil, 400, "invalid_request"},
		{"header entry bad base64", `{"records": [{"value": "", "headers": [{"key": "h", "value": "*"}]}]}`, nil, 400, "invalid_request"},
		{"header entry a string", `{"records": [{"value": "", "headers": ["h"]}]}`, nil, 400, "invalid_request"},
		{"header entry twice the key", `{"records": [{"value": "", "headers": [{"key": "h", "key": "g", "value": null}]}]}`, nil, 400, "invalid_request"},
		{"partition out of range", appendBody(rec{value: "x", partition: ptr(2)}), nil, 400, "invalid_request"},
		{"negative partition", appendBody(rec{value: "x", partition: ptr(-1)}), nil, 400, "invalid_request"},
		{"partition not int32", `{"records": [{"value": "", "partition": 2147483648}]}`, nil, 400, "invalid_request"},
		{"negative timestamp", `{"records": [{"value": "", "timestamp_ms": -1}]}`, nil, 400, "invalid_request"},
		{"timestamp after year 9999", `{"records": [{"value": "", "timestamp_ms": 253402300800000}]}`, nil, 400, "invalid_request"},
		{"string timestamp", `{"records": [{"value": "", "timestamp_ms": "1"}]}`, nil, 400, "invalid_request"},
		{"empty records", `{"records": []}`, nil, 400, "invalid_request"},
		{"no records", `{}`, nil, 400, "invalid_request"},
		{"unknown field", `{"records": [{"value": "", "offset": 3}]}`, nil, 400, "invalid_request"},
		{"unknown top-level field", `{"records": [{"value": ""}], "acks": 1}`, nil, 400, "invalid_request"},
		{"trailing data", `{"records": [{"value": ""}]}x`, nil, 400, "invalid_request"},
		{"not JSON", `records`, nil, 400, "invalid_request"},
		{"empty idempotency key", appendBody(rec{value: "x"}), []string{"Idempotency-Key", ""}, 400, "invalid_request"},
		{"long idempotency key", appendBody(rec{value: "x"}), []string{"Idempotency-Key", strings.Repeat("k", 129)}, 400, "invalid_request"},
		{"two idempotency keys", appendBody(rec{value: "x"}), []string{"Idempotency-Key", "a", "Idempotency-Key", "b"}, 400, "invalid_request"},
		{"record over 1 MiB", appendBody(rec{key: "k", value: big}), nil, 413, "payload_too_large"},
		{"header bytes count", appendBody(rec{value: big[:1<<20-1], headers: map[string]string{"h": "v"}}), nil, 413, "payload_too_large"},
		{"over 10,000 records", appendBody(manyRecs...), nil, 413, "payload_too_large"},
		{"over 6 MiB decoded", appendBody(sixRecs...), nil, 413, "payload_too_large"},
		{"body over the limit", `{"records": [{"value": "` + strings.Repeat("A", httpapi.MaxAppendBody) + `"}]}`, nil, 413, "payload_too_large"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e.call("POST", "/v1/topics/t/records", c.body, c.header...).want(t, c.status, c.code)
			if got := e.hws("t"); !slices.Equal(got, before) {
				t.Fatalf("high watermarks %v after a rejected append, want %v", got, before)
			}
		})
	}
	e.call("POST", "/v1/topics/nope/records", appendBody(rec{value: "x"})).want(t, 404, "not_found")

	// The limits themselves are accepted: a record of exactly 1 MiB, 128-character key.
	r := e.call("POST", "/v1/topics/t/records", appendBody(rec{key: "k", value: big[:1<<20-1], partition: ptr(1)}),
		"Idempotency-Key", strings.Repeat("k", 128)).want(t, 200)
	if got := results(t, r); !slices.Equal(got, []offsetResult{{1, 0}}) {
		t.Fatalf("results %v", got)
	}
}

func TestIdempotentAppend(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 3)
	body := appendBody(rec{key: "a", value: "1", headers: map[string]string{"x": "1", "y": "2"}}, rec{key: "b", value: "2"}, rec{value: "3", partition: ptr(2)})
	first := results(t, e.call("POST", "/v1/topics/t/records", body, "Idempotency-Key", "req-1").want(t, 200))
	before := e.hws("t")
	again := results(t, e.call("POST", "/v1/topics/t/records", body, "Idempotency-Key", "req-1").want(t, 200))
	if !slices.Equal(first, again) {
		t.Fatalf("retry returned %v, first call %v", again, first)
	}
	if got := e.hws("t"); !slices.Equal(got, before) {
		t.Fatalf("retry appended: hws %v, want %v", got, before)
	}
	// Header order in the JSON text does not make another request.
	r1 := `{"records": [{"value": "eA==", "partition": 0, "headers": {"a": "MQ==", "b": "Mg=="}}]}`
	r2 := `{"records": [{"headers": {"b": "Mg==", "a": "MQ=="}, "partition": 0, "value": "eA=="}]}`
	x1 := results(t, e.call("POST", "/v1/topics/t/records", r1, "Idempotency-Key", "req-2").want(t, 200))
	x2 := results(t, e.call("POST", "/v1/topics/t/records", r2, "Idempotency-Key", "req-2").want(t, 200))
	if !slices.Equal(x1, x2) {
		t.Fatalf("reordered headers: %v then %v", x1, x2)
	}
	before = e.hws("t")
	other := appendBody(rec{key: "a", value: "changed"}, rec{key: "b", value: "2"}, rec{value: "3", partition: ptr(2)})
	e.call("POST", "/v1/topics/t/records", other, "Idempotency-Key", "req-1").want(t, 422, "idempotency_key_reused")
	if got := e.hws("t"); !slices.Equal(got, before) {
		t.Fatalf("reused key appended: hws %v, want %v", got, before)
	}
}

// TestAppendTopicCommitAllOrNothing: on a topic of the topic commit layout (every topic
// created now) a request's partitions commit in one write, so a failure of one fails
// them all and nothing is appended: no partial result.
func TestAppendTopicCommitAllOrNothing(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 2)
	e.meta.mu.Lock()
	e.meta.failPartitions[1] = true
	e.meta.mu.Unlock()
	r := e.call("POST", "/v1/topics/t/records", appendBody(
		rec{value: "a", partition: ptr(0)}, rec{value: "b", partition: ptr(1)},
	)).want(t, 503, "unavailable")
	rs, _ := r.body["results"].([]any)
	for i, x := range rs {
		if m := x.(map[string]any); m["error"] == nil || m["offset"] != nil {
			t.Fatalf("result %d: %v, want an error and no offset", i, m)
		}
	}
	if got := e.hws("t"); !slices.Equal(got, []int64{0, 0}) {
		t.Fatalf("hws %v, want [0 0]: nothing appended", got)
	}
}

// TestAppendPartialFailure: on a topic of per-partition counters (created before the
// topic commit) one partition fails alone.
func TestAppendPartialFailure(t *testing.T) {
	e := newEnv(t)
	e.createLegacyTopic("t", 2)
	e.meta.mu.Lock()
	e.meta.failPartitions[1] = true
	e.meta.mu.Unlock()
	r := e.call("POST", "/v1/topics/t/records", appendBody(
		rec{value: "a", partition: ptr(0)}, rec{value: "b", partition: ptr(1)}, rec{value: "c", partition: ptr(0)},
	)).want(t, 503, "unavailable")
	rs := r.body["results"].([]any)
	if len(rs) != 3 {
		t.Fatalf("results %s", r.raw)
	}
	for i, wantOffset := range []float64{0, -1, 1} {
		m := rs[i].(map[string]any)
		if wantOffset < 0 {
			eo, _ := m["error"].(map[string]any)
			if m["partition"].(float64) != 1 || eo["code"] != "unavailable" || m["offset"] != nil {
				t.Fatalf("result %d: %v, want partition 1 with an unavailable error", i, m)
			}
			continue
		}
		if m["partition"].(float64) != 0 || m["offset"].(float64) != wantOffset || m["error"] != nil {
			t.Fatalf("result %d: %v, want partition 0 offset %v", i, m, wantOffset)
		}
	}
	if got := e.hws("t"); !slices.Equal(got, []int64{2, 0}) {
		t.Fatalf("hws %v, want [2 0]", got)
	}
}

func TestQuota(t *testing.T) {
	e := newEnv(t, withQuota(httpapi.Quota{RequestsPerSecond: 0.001, RequestBurst: 2}))
	e.createTopic("t", 1)
	body := appendBody(rec{value: "x"})
	e.call("POST", "/v1/topics/t/records", body).want(t, 200)
	e.call("POST", "/v1/topics/t/records", body).want(t, 200)
	r := e.call("POST", "/v1/topics/t/records", body).want(t, 429, "rate_limited")
	if ra := r.header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Fatalf("Retry-After %q, want a positive number of seconds", ra)
	}
	if hw := e.hw("t", 0); hw != 2 {
		t.Fatalf("hw %d after a rate-limited append, want 2", hw)
	}
	// Other routes are not produce traffic.
	e.call("GET", "/v1/topics/t/partitions/0/records?offset=0", nil).want(t, 200)

	// The byte bucket: 10 bytes per second, bursting to 10; an 8-byte append passes,
	// the next one does not, and a refused one spends nothing.
	e2 := newEnv(t, withQuota(httpapi.Quota{BytesPerSecond: 10, BytesBurst: 10}))
	e2.createTopic("t", 1)
	e2.call("POST", "/v1/topics/t/records", appendBody(rec{value: "12345678"})).want(t, 200)
	e2.call("POST", "/v1/topics/t/records", appendBody(rec{value: "12345678"})).want(t, 429, "rate_limited")
	if hw := e2.hw("t", 0); hw != 1 {
		t.Fatalf("hw %d, want 1", hw)
	}
}

func TestPollValidation(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 2)
	e.call("POST", "/v1/topics/t/records", appendBody(rec{value: "a", partition: ptr(0)}, rec{value: "b", partition: ptr(0)})).want(t, 200)
	for _, q := range []string{
		"",
		"offset=-1",
		"offset=x",
		"offset=1.0",
		"offset=0&offset=1",
		"offset=0&max_records=0",
		"offset=0&max_records=10001",
		"offset=0&max_bytes=0",
		fmt.Sprintf("offset=0&max_bytes=%d", httpapi.MaxPollBytes+1),
		"offset=0&wait_ms=-1",
		"offset=0&wait_ms=20001",
		"offset=0&limit=1",
		"offset=0&%zz",
	} {
		e.call("GET", "/v1/topics/t/partitions/0/records?"+q, nil).want(t, 400, "invalid_request")
	}
	for _, p := range []string{"2", "-1", "x", "99999999999"} {
		e.call("GET", "/v1/topics/t/partitions/"+p+"/records?offset=0", nil).want(t, 400, "invalid_request")
	}
	e.call("GET", "/v1/topics/nope/partitions/0/records?offset=0", nil).want(t, 404, "not_found")

	r := e.call("GET", "/v1/topics/t/partitions/0/records?offset=3", nil).want(t, 416, "offset_out_of_range")
	if r.errField("log_start_offset") != float64(0) || r.errField("high_watermark") != float64(2) {
		t.Fatalf("416 details %s, want log_start_offset 0 and high_watermark 2", r.raw)
	}
	// Below the log start (retention moved it).
	if err := e.meta.AdvanceLogStart(context.Background(), e.tid("t"), 0, 1); err != nil {
		t.Fatal(err)
	}
	r = e.call("GET", "/v1/topics/t/partitions/0/records?offset=0", nil).want(t, 416, "offset_out_of_range")
	if r.errField("log_start_offset") != float64(1) || r.errField("high_watermark") != float64(2) {
		t.Fatalf("416 details %s, want log_start_offset 1 and high_watermark 2", r.raw)
	}
	// Limits at their bounds are accepted.
	e.call("GET", fmt.Sprintf("/v1/topics/t/partitions/0/records?offset=2&max_records=10000&max_bytes=%d&wait_ms=0", httpapi.MaxPollBytes), nil).want(t, 200)
}

func TestPollBudgets(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 1)
	big := strings.Repeat("b", 1000)
	for i := 0; i < 3; i++ {
		e.call("POST", "/v1/topics/t/records", appendBody(rec{value: big}, rec{value: "s"})).want(t, 200)
	}
	// The first record alone exceeds max_bytes and is still returned.
	r := e.call("GET", "/v1/topics/t/partitions/0/records?offset=0&max_bytes=10", nil).want(t, 200)
	if n := len(r.body["records"].([]any)); n != 1 || r.num("next_offset") != 1 {
		t.Fatalf("max_bytes=10: %d records, next %d; want 1 and 1", n, r.num("next_offset"))
	}
	r = e.call("GET", "/v1/topics/t/partitions/0/records?offset=1&max_records=4", nil).want(t, 200)
	if n := len(r.body["records"].([]any)); n != 4 || r.num("next_offset") != 5 || r.num("high_watermark") != 6 {
		t.Fatalf("max_records=4 from 1: %d records, next %d, hw %d", n, r.num("next_offset"), r.num("high_watermark"))
	}
}

func TestLongPoll(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		e.call("POST", "/v1/topics/t/records", appendBody(rec{value: "late"}))
	}()
	start := time.Now()
	r := e.call("GET", "/v1/topics/t/partitions/0/records?offset=0&wait_ms=10000", nil).want(t, 200)
	took := time.Since(start)
	recs := r.body["records"].([]any)
	if len(recs) != 1 || recs[0].(map[string]any)["value"] != b64("late") {
		t.Fatalf("long poll returned %s", r.raw)
	}
	if took < 250*time.Millisecond || took > 3*time.Second {
		t.Fatalf("long poll took %s: want it to return when the record arrives (~300ms), not at the 10 s deadline", took)
	}

	// Nothing arrives: the poll waits out wait_ms and answers with no records.
	start = time.Now()
	r = e.call("GET", "/v1/topics/t/partitions/0/records?offset=1&wait_ms=300", nil).want(t, 200)
	if took := time.Since(start); took < 280*time.Millisecond || len(r.body["records"].([]any)) != 0 {
		t.Fatalf("empty long poll: %s after %s", r.raw, took)
	}

	// A client that goes away ends the wait.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, "GET", "/v1/topics/t/partitions/0/records?offset=1&wait_ms=20000", nil)
	start = time.Now()
	e.h.ServeHTTP(httptest.NewRecorder(), req)
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("cancelled long poll returned after %s", took)
	}
}

func TestUnavailable(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 1)
	e.meta.down.Store(true)
	e.call("POST", "/v1/topics", map[string]any{"name": "u", "partitions": 1}).want(t, 503, "unavailable")
	e.call("GET", "/v1/topics", nil).want(t, 503, "unavailable")
	e.call("GET", "/v1/topics/t", nil).want(t, 503, "unavailable")
	e.call("GET", "/v1/topics/t/partitions/0/records?offset=0", nil).want(t, 503, "unavailable")
	r := e.call("POST", "/v1/topics/t/records", appendBody(rec{value: "x"})).want(t, 503, "unavailable")
	if strings.Contains(string(r.raw), "injected") {
		t.Fatalf("a backend's message leaked to the client: %s", r.raw)
	}
	e.meta.down.Store(false)
	if hw := e.hw("t", 0); hw != 0 {
		t.Fatalf("hw %d after a failed append, want 0", hw)
	}
}

func TestCorruptDataIsInternal(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 1)
	e.call("POST", "/v1/topics/t/records", appendBody(rec{value: "x"})).want(t, 200)
	e.objects.on.Store(true)
	e.call("GET", "/v1/topics/t/partitions/0/records?offset=0", nil).want(t, 500, "internal")
}

func TestUnknownRouteAndMethod(t *testing.T) {
	e := newEnv(t)
	e.call("GET", "/v2/nothing", nil).want(t, 404, "not_found")
	r := e.call("PUT", "/v1/topics", nil).want(t, 405, "method_not_allowed")
	if allow := r.header.Get("Allow"); !strings.Contains(allow, "POST") || !strings.Contains(allow, "GET") {
		t.Fatalf("Allow %q", allow)
	}
}

func TestMetricsSeeRoutes(t *testing.T) {
	rec := &routeRecorder{pairs: map[string]bool{}}
	e := newEnv(t, func(c *httpapi.Config) { c.Metrics = rec })
	e.createTopic("t", 1)
	e.call("GET", "/v1/topics/t/partitions/0/records?offset=9", nil)
	e.call("GET", "/nope", nil)
	for _, want := range []string{"POST /v1/topics 201", "GET /v1/topics/{topic}/partitions/{p}/records 416", "unmatched 404"} {
		if !rec.has(want) {
			t.Errorf("metrics did not see %q: %v", want, rec.pairs)
		}
	}
}

func TestNewServerTimeouts(t *testing.T) {
	s := httpapi.NewServer("127.0.0.1:0", http.NotFoundHandler())
	if s.ReadHeaderTimeout <= 0 || s.ReadTimeout <= 0 || s.IdleTimeout <= 0 {
		t.Fatalf("missing timeouts: %+v", s)
	}
	if s.WriteTimeout <= 20*time.Second+s.ReadTimeout {
		t.Fatalf("write timeout %s must outlast reading the body plus the longest long poll (20 s)", s.WriteTimeout)
	}
}

func TestMissingSegmentIsInternal(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 1)
	e.call("POST", "/v1/topics/t/records", appendBody(rec{value: "x"})).want(t, 200)
	var keys []string
	if err := e.objects.List(context.Background(), "", func(o store.ObjectInfo) error {
		keys = append(keys, o.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if err := e.objects.Delete(context.Background(), k); err != nil {
			t.Fatal(err)
		}
	}
	// A segment object missing above the log start is data loss, not an unknown topic.
	e.call("GET", "/v1/topics/t/partitions/0/records?offset=0", nil).want(t, 500, "internal")
}

// TestAppendSupersededIs409 (issue 20): a producer request's attempt whose commit the
// store refuses as superseded (another delivery of the request fenced it) is answered
// 409 superseded on the served append route, JSON and binary, and nothing is readable.
func TestAppendSupersededIs409(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 1)
	e.meta.supersede.Store(true)
	hdr := []string{"Idempotency-Key", "p.1", wire.HeaderIdempotency, wire.IdempotencyProducer, wire.HeaderAttempt, "1",
		wire.HeaderRetryElapsed, "40", wire.HeaderBatchFloor, "0"}
	e.call("POST", "/v1/topics/t/records", appendBody(rec{value: "a", partition: ptr(0)}), hdr...).want(t, 409, wire.CodeSuperseded)
	e.call("POST", "/v1/topics/t/records", binBody(t, wire.Frame{Partition: 0, Block: binBlock(t, "b")}),
		append([]string{"Content-Type", wire.ContentTypeBlocks}, hdr...)...).want(t, 409, wire.CodeSuperseded)
	e.meta.supersede.Store(false)
	if n := readableRecords(t, e, "t"); n != 0 {
		t.Fatalf("%d records readable after superseded attempts", n)
	}
}

// TestTopicBatchMarkOnAnswers: the answers to appends (JSON and binary) and to a
// describe of a topic commit topic carry its batch mark (Strata-Topic-Batch), a mark of
// the topic's incarnation whose number grows with the batches; a producer retry with a
// floor above every batch the topic has is a 400 with nothing appended.
func TestTopicBatchMarkOnAnswers(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 1)
	mark := func(r *resp) wire.BatchMark {
		t.Helper()
		m, err := wire.ParseBatchMark(r.header.Get(wire.HeaderTopicBatch))
		if err != nil || m.Incarnation == "" {
			t.Fatalf("%s %q: %v", wire.HeaderTopicBatch, r.header.Get(wire.HeaderTopicBatch), err)
		}
		return m
	}
	a := mark(e.call("POST", "/v1/topics/t/records", appendBody(rec{value: "a", partition: ptr(0)})).want(t, 200))
	b := mark(e.call("POST", "/v1/topics/t/records", binBody(t, wire.Frame{Partition: 0, Block: binBlock(t, "b")}),
		"Content-Type", wire.ContentTypeBlocks).want(t, 200))
	d := mark(e.call("GET", "/v1/topics/t", nil).want(t, 200))
	if a.Batch < 1 || b.Batch <= a.Batch || d.Batch < b.Batch || a.Incarnation != b.Incarnation || d.Incarnation != a.Incarnation {
		t.Fatalf("marks %v, %v (appends), %v (describe): want one incarnation, growing numbers", a, b, d)
	}
	high := wire.BatchMark{Batch: d.Batch + 5, Incarnation: d.Incarnation}
	e.call("POST", "/v1/topics/t/records", appendBody(rec{value: "c", partition: ptr(0)}), "Idempotency-Key", "p.9",
		wire.HeaderIdempotency, wire.IdempotencyProducer, wire.HeaderAttempt, "1", wire.HeaderRetryElapsed, "10",
		wire.HeaderBatchFloor, high.String()).want(t, 400, wire.CodeInvalidRequest)
	if n := readableRecords(t, e, "t"); n != 2 {
		t.Fatalf("%d records readable, want the 2 appended", n)
	}
}

// TestPartitionCountOnAppendAnswers: the answers to appends (JSON and binary) carry the
// topic's partition count (Strata-Partitions), raised once the topic is, so a producer
// follows it without describing the topic; a describe's answer does not need it.
func TestPartitionCountOnAppendAnswers(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 2)
	count := func(r *resp) int32 {
		t.Helper()
		n := wire.ParsePartitions(r.header.Get(wire.HeaderPartitions))
		if n == 0 {
			t.Fatalf("%s %q on an append answer", wire.HeaderPartitions, r.header.Get(wire.HeaderPartitions))
		}
		return n
	}
	if n := count(e.call("POST", "/v1/topics/t/records", appendBody(rec{value: "a", partition: ptr(0)})).want(t, 200)); n != 2 {
		t.Fatalf("JSON append: %d partitions, want 2", n)
	}
	if n := count(e.call("POST", "/v1/topics/t/records", binBody(t, wire.Frame{Partition: 1, Block: binBlock(t, "b")}),
		"Content-Type", wire.ContentTypeBlocks).want(t, 200)); n != 2 {
		t.Fatalf("binary append: %d partitions, want 2", n)
	}
	e.call("PATCH", "/v1/topics/t", map[string]any{"partitions": 4}).want(t, 200)
	if n := count(e.call("POST", "/v1/topics/t/records", appendBody(rec{value: "c", partition: ptr(3)})).want(t, 200)); n != 4 {
		t.Fatalf("after raising the count to 4: %d partitions", n)
	}
}
