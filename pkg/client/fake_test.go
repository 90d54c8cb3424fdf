package client_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/stratalog/strata/pkg/wire"
)

// fault is what the fake does to one append request.
type fault int

const (
	faultNone    fault = iota
	fault503           // refuse before appending
	fault429           // refuse before appending, with Retry-After
	faultDrop          // append, then close the connection without an answer
	fault400           // refuse as invalid
	faultHang          // block until the request's context ends
	faultPartial       // 503 with results: the request's first partition appended, the others failed
)

func (f fault) String() string {
	return [...]string{"none", "503", "429", "drop", "400", "hang", "partial"}[f]
}

// fakeRecord is a record as the fake stores it (decoded from the contract's JSON, with
// wire types of its own so that an encoding bug of the client does not cancel out).
type fakeRecord struct {
	Key     []byte
	Value   []byte
	Headers map[string][]byte
	TsMs    int64
}

// appendCall is one append request the fake received.
type appendCall struct {
	Key        string
	Body       []byte
	Partitions []int32
	Records    int
	Fault      fault
	At         time.Time
}

// fakeServer implements the topic, append and health routes of docs/API.md in memory,
// counts append calls and in-flight requests per partition, and injects faults.
type fakeServer struct {
	*httptest.Server
	partitions int32
	delay      time.Duration // an append holds its partitions this long
	retryAfter string        // Retry-After of fault429
	hold       chan struct{} // when set, an append waits until it is closed

	mu          sync.Mutex
	logs        map[int32][]fakeRecord
	idem        map[string]idemEntry
	calls       []appendCall
	inflight    map[int32]int
	maxInflight map[int32]int
	totalIn     int
	maxTotalIn  int
	// inject picks the fault of the n-th (0-based) append request.
	inject func(n int, c appendCall) fault
}

type idemEntry struct {
	hash [32]byte
	base int64
}

func newFake(t interface{ Cleanup(func()) }, partitions int32) *fakeServer {
	f := &fakeServer{partitions: partitions, retryAfter: "0", logs: map[int32][]fakeRecord{},
		idem: map[string]idemEntry{}, inflight: map[int32]int{}, maxInflight: map[int32]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"status": "ok"})
	})
	mux.HandleFunc("GET /v1/topics/{topic}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("topic") != "orders" {
			writeErr(w, 404, "not_found", "no such topic", nil)
			return
		}
		writeJSON(w, 200, map[string]any{"name": "orders", "partitions": f.partitions, "retention_ms": 86400000,
			"partition_info": []any{}})
	})
	mux.HandleFunc("POST /v1/topics/{topic}/records", f.handleAppend)
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, status int, code, msg string, details map[string]any) {
	e := map[string]any{"code": code, "message": msg}
	for k, v := range details {
		e[k] = v
	}
	writeJSON(w, status, map[string]any{"error": e})
}

type fakeWireRecord struct {
	Key         *string           `json:"key"`
	Value       *string           `json:"value"`
	Headers     map[string]string `json:"headers"`
	Partition   *int32            `json:"partition"`
	TimestampMs *int64            `json:"timestamp_ms"`
}

func (f *fakeServer) handleAppend(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var req struct {
		Records []fakeWireRecord `json:"records"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || len(req.Records) == 0 {
		writeErr(w, 400, "invalid_request", fmt.Sprintf("bad body: %v", err), nil)
		return
	}
	recs := make([]fakeRecord, len(req.Records))
	parts := make([]int32, len(req.Records))
	rr := int32(0)
	for i, wr := range req.Records {
		var fr fakeRecord
		if wr.Value == nil {
			writeErr(w, 400, "invalid_request", "value missing", nil)
			return
		}
		fr.Value, err = base64.StdEncoding.DecodeString(*wr.Value)
		if err == nil && wr.Key != nil {
			fr.Key, err = base64.StdEncoding.DecodeString(*wr.Key)
		}
		for k, v := range wr.Headers {
			if fr.Headers == nil {
				fr.Headers = map[string][]byte{}
			}
			var hv []byte
			if hv, err = base64.StdEncoding.DecodeString(v); err != nil {
				break
			}
			fr.Headers[k] = hv
		}
		if err != nil {
			writeErr(w, 400, "invalid_request", "bad base64", nil)
			return
		}
		if wr.TimestampMs != nil {
			fr.TsMs = *wr.TimestampMs
		}
		switch {
		case wr.Partition != nil:
			if *wr.Partition < 0 || *wr.Partition >= f.partitions {
				writeErr(w, 400, "invalid_request", "bad partition", nil)
				return
			}
			parts[i] = *wr.Partition
		case fr.Key != nil:
			parts[i] = wire.PartitionForKey(fr.Key, f.partitions)
		default:
			parts[i] = rr % f.partitions
			rr++
		}
		recs[i] = fr
	}
	distinct := distinctParts(parts)
	call := appendCall{Key: r.Header.Get("Idempotency-Key"), Body: body, Partitions: distinct,
		Records: len(recs), At: time.Now()}

	f.mu.Lock()
	n := len(f.calls)
	if f.inject != nil {
		call.Fault = f.inject(n, call)
	}
	f.calls = append(f.calls, call)
	for _, p := range distinct {
		f.inflight[p]++
		f.maxInflight[p] = max(f.maxInflight[p], f.inflight[p])
	}
	f.totalIn++
	f.maxTotalIn = max(f.maxTotalIn, f.totalIn)
	f.mu.Unlock()
	// leave ends the request's in-flight span: when the handler returns (before the
	// answer is flushed), or, for a dropped answer, before the connection closes, so
	// the client cannot observe the end of a request the fake still counts.
	leave := sync.OnceFunc(func() {
		f.mu.Lock()
		for _, p := range distinct {
			f.inflight[p]--
		}
		f.totalIn--
		f.mu.Unlock()
	})
	defer leave()
	if f.delay > 0 {
		time.Sleep(f.delay)
	}
	if f.hold != nil {
		select {
		case <-f.hold:
		case <-r.Context().Done():
			return
		}
	}

	switch call.Fault {
	case fault503:
		writeErr(w, 503, "unavailable", "injected", nil)
		return
	case fault429:
		w.Header().Set("Retry-After", f.retryAfter)
		writeErr(w, 429, "rate_limited", "injected", nil)
		return
	case fault400:
		writeErr(w, 400, "invalid_request", "injected", nil)
		return
	case faultHang:
		<-r.Context().Done()
		return
	}

	results, status := f.apply(call.Key, body, recs, parts, call.Fault == faultPartial)
	if call.Fault == faultDrop {
		leave()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	if status == 422 {
		writeErr(w, 422, "idempotency_key_reused", "different body", nil)
		return
	}
	if status == 503 {
		writeJSON(w, 503, map[string]any{"error": map[string]any{"code": "unavailable", "message": "partial"},
			"results": results})
		return
	}
	writeJSON(w, 200, map[string]any{"results": results})
}

// apply appends recs, replaying per partition what an earlier request with the same
// Idempotency-Key already appended (as the contract's key#partition table does); with
// partial, only the request's first partition is appended and the others get an error.
func (f *fakeServer) apply(key string, body []byte, recs []fakeRecord, parts []int32, partial bool) ([]map[string]any, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := sha256.Sum256(body)
	results := make([]map[string]any, len(recs))
	if key != "" {
		for _, p := range distinctParts(parts) {
			if e, ok := f.idem[fmt.Sprintf("%s#%d", key, p)]; ok && e.hash != h {
				return nil, 422
			}
		}
	}
	next := map[int32]int64{} // per partition: index into a replayed entry
	for i, rec := range recs {
		p := parts[i]
		if partial && p != parts[0] {
			results[i] = map[string]any{"partition": p, "error": map[string]any{"code": "unavailable", "message": "injected"}}
			continue
		}
		ik := fmt.Sprintf("%s#%d", key, p)
		if e, ok := f.idem[ik]; ok && key != "" {
			results[i] = map[string]any{"partition": p, "offset": e.base + next[p]}
			next[p]++
			continue
		}
		results[i] = map[string]any{"partition": p, "offset": int64(len(f.logs[p]))}
		f.logs[p] = append(f.logs[p], rec)
	}
	if key != "" {
		// Record the partitions appended by this request (the first offset of each).
		for i, p := range parts {
			ik := fmt.Sprintf("%s#%d", key, p)
			if _, ok := f.idem[ik]; ok || results[i]["error"] != nil {
				continue
			}
			f.idem[ik] = idemEntry{hash: h, base: results[i]["offset"].(int64)}
		}
	}
	if partial {
		return results, 503
	}
	return results, 200
}

func distinctParts(parts []int32) []int32 {
	seen := map[int32]bool{}
	var out []int32
	for _, p := range parts {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

func (f *fakeServer) snapshot() (calls []appendCall, logs map[int32][]fakeRecord, maxIn map[int32]int, maxTotal int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	logs = map[int32][]fakeRecord{}
	for p, l := range f.logs {
		logs[p] = append([]fakeRecord(nil), l...)
	}
	maxIn = map[int32]int{}
	for p, m := range f.maxInflight {
		maxIn[p] = m
	}
	return append([]appendCall(nil), f.calls...), logs, maxIn, f.maxTotalIn
}

// callsSummary is a readable list of the append calls, for failure messages.
func callsSummary(calls []appendCall) string {
	var b strings.Builder
	for i, c := range calls {
		fmt.Fprintf(&b, "#%d key=%s parts=%v n=%d fault=%v\n", i, c.Key, c.Partitions, c.Records, c.Fault)
	}
	return b.String()
}
