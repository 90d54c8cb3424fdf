package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/wire"
)

// checkFuzzAnswer fails unless the answer is a success or a 4xx with the contract's
// error body, and matches docs/openapi.yaml.
func checkFuzzAnswer(t *testing.T, req *http.Request, w *httptest.ResponseRecorder) {
	t.Helper()
	status, raw := w.Code, w.Body.Bytes()
	if status >= 500 || (status >= 300 && status < 400) {
		t.Fatalf("%s %s: status %d: %s", req.Method, req.URL, status, raw)
	}
	if status >= 400 {
		if msg := errorShape(status, raw); msg != "" {
			t.Fatalf("%s %s: %s", req.Method, req.URL, msg)
		}
	}
	doc, err := loadOpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := doc.find(req.Method, req.URL.Path); !ok && status == http.StatusNotFound {
		return
	}
	var body any
	if len(raw) > 0 && w.Header().Get("Content-Type") != wireContentType {
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Fatalf("non-JSON answer %q", raw)
		}
	}
	if err := doc.checkAnswer(req.Method, req.URL.Path, status, w.Header().Get("Content-Type"), body, len(raw) > 0); err != nil {
		t.Fatalf("%s %s: %v\n%s", req.Method, req.URL, err, truncate(raw))
	}
}

// FuzzAppendRequest: any body, Idempotency-Key, Strata-Attempt, Strata-Idempotency and
// Strata-Retry-Elapsed-Ms get an answer the contract allows, and a refused append
// changes nothing: its high watermarks stay, except for a key reused with another body
// on a first attempt (Strata-Attempt: 0, no claim read before the commit), refused 422
// after its commit with its records skipped, and a producer request's attempt refused
// after its commit (409 superseded, 422), whose records are never readable.
func FuzzAppendRequest(f *testing.F) {
	e := newEnv(f)
	e.createTopic("t", 3)
	for _, seed := range []struct {
		body, key, attempt, idem, elapsed string
	}{
		{`{"records": [{"value": "eA=="}]}`, "", "", "", ""},
		{`{"records": [{"key": "b3JkZXItMQ==", "value": "eyJ0b3RhbCI6IDQyfQ==", "headers": {"h": "dg=="}, "partition": 2, "timestamp_ms": 1732870000000}]}`, "k-1", "", "", ""},
		{`{"records": [{"key": "b3JkZXItMQ==", "value": "eyJ0b3RhbCI6IDQzfQ==", "partition": 2}]}`, "k-1", "0", "", ""},
		{`{"records": [{"value": "eA=="}]}`, "k-2", "1", "", ""},
		{`{"records": [{"value": "eA=="}]}`, "k-3", "01", "", ""},
		{`{"records": [{"value": "eA=="}]}`, "k-3", "-1", "", ""},
		{`{"records": [{"value": "eA==", "partition": 1}]}`, "p.0", "0", "producer", ""},
		{`{"records": [{"value": "eA==", "partition": 1}]}`, "p.0", "1", "producer", "1500"},
		{`{"records": [{"value": "eA==", "partition": 1}]}`, "p.0", "1", "producer", "1500|0"},
		{`{"records": [{"value": "eA==", "partition": 1}]}`, "p.4", "2", "producer", "1500|3@tc01x"},
		{`{"records": [{"value": "eA==", "partition": 1}]}`, "p.5", "1", "producer", "1500|9@Tc"},
		{`{"records": [{"value": "eA==", "partition": 1}]}`, "p.6", "0", "producer", "|7"},
		{`{"records": [{"value": "eA==", "partition": 1}]}`, "p.1", "1", "producer", ""},
		{`{"records": [{"value": "eA=="}]}`, "", "0", "producer", ""},
		{`{"records": [{"value": "eA=="}]}`, "p.2", "", "producer", ""},
		{`{"records": [{"value": "eA=="}]}`, "p.3", "2", "producer", "300001"},
		{`{"records": [{"value": "eA=="}]}`, "p.3", "2", "Producer", "10"},
		{`{"records": [{"value": "eA=="}]}`, "k-4", "", "", "010"},
		{`{"records": [{"value": "eA==", "partition": 3}]}`, "", "", "", ""},
		{`{"records": [{"value": "eA==", "partition": -1}]}`, "", "", "", ""},
		{`{"records": [{"value": "e"}]}`, "", "", "", ""},
		{`{"records": [{"value": "", "headers": {"": ""}}]}`, "", "", "", ""},
		{`{"records": []}`, strings.Repeat("k", 129), "", "", ""},
		{`{"records": [{"value": "eA=="}], "x": 1}`, "", "", "", ""},
		{`{"records": [{"value": "eA=="}]} []`, "", "", "", ""},
		{`{"records": [{"value": "eA==", "timestamp_ms": -9223372036854775808}]}`, "", "", "", ""},
		{`{"records": null}`, "", "", "", ""},
		{`{"records": [{"key": "aw==", "value": null}]}`, "k-5", "", "", ""},
		{`{"records": [{"value": "", "headers": [{"key": "h", "value": null}, {"key": "h", "value": "dg=="}]}]}`, "", "", "", ""},
		{`{"records": [{"value": "", "headers": [{"key": "h"}, {"value": null}, ["x"], null]}]}`, "", "", "", ""},
		{`[`, "", "", "", ""},
	} {
		f.Add([]byte(seed.body), seed.key, seed.attempt, seed.idem, seed.elapsed)
	}
	f.Fuzz(func(t *testing.T, body []byte, key, attempt, idem, elapsed string) {
		before, readable := highWatermarks(t, e, "t"), readableRecords(t, e, "t")
		req := httptest.NewRequest("POST", "/v1/topics/t/records", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		setAppendHeaders(req, key, attempt, idem, elapsed)
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, req)
		checkFuzzAnswer(t, req, w)
		checkRefusedAppend(t, e, w.Code, key, attempt, idem, before, readable)
	})
}

// setAppendHeaders sets an append's idempotency headers, each unless empty; elapsed is
// "<Strata-Retry-Elapsed-Ms>" or "<Strata-Retry-Elapsed-Ms>|<Strata-Batch-Floor>".
func setAppendHeaders(req *http.Request, key, attempt, idem, elapsed string) {
	elapsed, floor, _ := strings.Cut(elapsed, "|")
	for name, v := range map[string]string{"Idempotency-Key": key, wire.HeaderAttempt: attempt,
		wire.HeaderIdempotency: idem, wire.HeaderRetryElapsed: elapsed, wire.HeaderBatchFloor: floor} {
		if v != "" {
			req.Header.Set(name, v)
		}
	}
}

// checkRefusedAppend fails if an append refused with status changed what it must not:
// the high watermarks (before) for a refusal before the commit, the readable records
// (readable) for one after it (a first attempt's 422, a producer request's 409 or 422).
func checkRefusedAppend(t *testing.T, e *env, status int, key, attempt, idem string, before []int64, readable int) {
	t.Helper()
	afterCommit := key != "" && (status == http.StatusUnprocessableEntity && attempt == "0" ||
		idem == wire.IdempotencyProducer && (status == http.StatusConflict || status == http.StatusUnprocessableEntity))
	switch {
	case status < 400:
	case afterCommit:
		if after := readableRecords(t, e, "t"); after != readable {
			t.Fatalf("an append refused %d after its commit left %d records readable, were %d", status, after, readable)
		}
	default:
		if after := highWatermarks(t, e, "t"); !equalInts(after, before) {
			t.Fatalf("rejected append (%d) moved the high watermarks %v -> %v", status, before, after)
		}
	}
}

// readableRecords counts the records a poll of every partition of topic returns.
func readableRecords(t *testing.T, e *env, topic string) int {
	t.Helper()
	ctx := context.Background()
	info, err := e.log.DescribeTopic(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for p := range info.Partitions {
		for off := int64(0); ; {
			res, err := e.log.Poll(ctx, topic, int32(p), off, log.PollOptions{MaxRecords: wire.MaxPollRecords})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Records) == 0 {
				break
			}
			n += len(res.Records)
			off = res.NextOffset
		}
	}
	return n
}

func FuzzPollRequest(f *testing.F) {
	e := newEnv(f)
	e.createTopic("t", 2)
	e.call("POST", "/v1/topics/t/records", appendBody(rec{value: "a", partition: ptr(0)}, rec{key: "k", value: "b", partition: ptr(0), headers: map[string]string{"h": "v"}})).want(f, 200)
	for _, seed := range []struct{ p, q string }{
		{"0", "offset=0"},
		{"0", "offset=1&max_records=1&max_bytes=1"},
		{"0", "offset=2&wait_ms=20000"},
		{"1", "offset=0&wait_ms=5"},
		{"2", "offset=0"},
		{"-1", "offset=0"},
		{"0", "offset=-1"},
		{"0", "offset=9223372036854775807"},
		{"0", "offset=0&max_records=10001"},
		{"0", "offset=0&max_bytes=0"},
		{"0", "offset=0&wait_ms=20001"},
		{"0", "offset=0&offset=0"},
		{"0", "offset=%zz"},
		{"0", "offset=0;x=1"},
		{"x", ""},
		{"..", "offset=0"},
		{"", "offset=0"},
		{"%2F", "offset=0"},
		{"0%00", "offset=0"},
	} {
		f.Add(seed.p, seed.q)
	}
	_, live, _ := strings.Cut(e.tid("t"), "#")
	for _, inc := range []string{live, "0deleted", "", "UPPER", "a%23b", live + "&incarnation=" + live} {
		f.Add("0", "offset=0&incarnation="+inc)
	}
	f.Fuzz(func(t *testing.T, partition, query string) {
		req := httptest.NewRequest("GET", "/v1/topics/t/partitions/0/records", nil)
		req.URL.Path = "/v1/topics/t/partitions/" + partition + "/records"
		req.URL.RawPath = ""
		req.URL.RawQuery = query
		if p := req.URL.Path; path.Clean(p) != p || strings.Contains(partition, "/") {
			return // the mux redirects to the cleaned path or routes elsewhere; not the handler's input
		}
		// A long poll at the high watermark would stall the fuzzer; cut it short.
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		req = req.WithContext(ctx)
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, req)
		if w.Code == 499 && ctx.Err() != nil {
			return // the client (the deadline) went away during a long poll
		}
		checkFuzzAnswer(t, req, w)
		if w.Code == http.StatusOK {
			if _, err := url.ParseQuery(query); err != nil {
				t.Fatalf("malformed query %q was accepted", query)
			}
		}
	})
}

func FuzzCommitRequest(f *testing.F) {
	e := newEnv(f)
	e.createTopic("t", 1)
	e.call("POST", "/v1/topics/t/records", appendBody(rec{value: "a"}, rec{value: "b"}, rec{value: "c"})).want(f, 200)
	e.call("POST", gp+"0/lease", lease("m", "ttl_ms", 300000)).want(f, 200)
	for _, seed := range []string{
		`{"member": "m", "generation": 1, "next_offset": 2}`,
		`{"member": "m", "generation": 1, "next_offset": 0}`,
		`{"member": "m", "generation": 1, "next_offset": 4}`,
		`{"member": "m", "generation": 2, "next_offset": 1}`,
		`{"member": "x", "generation": 1, "next_offset": 1}`,
		`{"member": "m", "generation": 1}`,
		`{"member": "m", "generation": 1, "next_offset": -1}`,
		`{"member": "m", "generation": 1, "next_offset": 1.5}`,
		`{"member": "m", "generation": 1, "next_offset": 1e3}`,
		`{"member": "", "generation": 0, "next_offset": 0}`,
		`{"member": "m", "generation": 1, "next_offset": 1, "meta": {}}`,
		`{"member": "m", "generation": 1, "next_offset": 99999999999999999999}`,
		`{"member": "m", "generation": 1, "next_offset": 1, "completed": [[2, 3]]}`,
		`{"member": "m", "generation": 1, "next_offset": 0, "completed": [[1, 2], [2, 3]]}`,
		`{"member": "m", "generation": 1, "next_offset": 0, "completed": [[1, 2, 3]]}`,
		`{"member": "m", "generation": 1, "next_offset": 0, "completed": [[2, 9]]}`,
		`{"member": "m", "generation": 1, "next_offset": 0, "completed": [[9223372036854775806, 9223372036854775807]]}`,
		`{"member": "m", "generation": 1, "next_offset": 0, "completed": [null, []]}`,
		`{"member": "m", "generation": 1, "next_offset": 0, "completed": {}}`,
		`{}`,
		``,
		`null`,
	} {
		f.Add([]byte(seed))
	}
	for _, seed := range withIncarnations(e, "t", `{"member": "m", "generation": 1, "next_offset": 2}`) {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest("POST", gp+"0/commit", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, req)
		checkFuzzAnswer(t, req, w)
	})
}

// highWatermarks reads every partition's high watermark, reporting to t (a fuzz
// function must not use the *testing.F the env was built with).
func highWatermarks(t *testing.T, e *env, topic string) []int64 {
	t.Helper()
	info, err := e.log.DescribeTopic(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int64, len(info.Partitions))
	for i, p := range info.Partitions {
		out[i] = p.HighWatermark
	}
	return out
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
