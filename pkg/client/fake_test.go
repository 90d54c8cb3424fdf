package client_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/wire"
)

// fault is what the fake does to one append request.
type fault int

const (
	faultNone       fault = iota
	fault503              // refuse before appending
	fault429              // refuse before appending, with Retry-After
	faultDrop             // append, then close the connection without an answer
	fault400              // refuse as invalid
	faultHang             // block until the request's context ends
	faultPartial          // 503 with results: the request's first partition appended, the others failed
	faultAllFailed        // 503 with results: every partition failed, nothing appended
	faultSuperseded       // 409 superseded: another delivery of the attempt fenced it, nothing appended
	faultUndecided        // 409 retry_undecided: the server cannot tell whether an earlier attempt was appended
)

func (f fault) String() string {
	return [...]string{"none", "503", "429", "drop", "400", "hang", "partial", "all-failed", "superseded", "undecided"}[f]
}

// blocksMode is how the fake treats the binary format (wire.ContentTypeBlocks).
type blocksMode int

const (
	blocksOn     blocksMode = iota // binary appends, and binary polls when asked for
	blocks415                      // 415 to a binary append; JSON polls
	blocksLegacy                   // a server predating the format: every append body is JSON; JSON polls
)

// fakeRecord is a record as the fake stores it (decoded from the contract's JSON, with
// wire types of its own so that an encoding bug of the client does not cancel out).
type fakeRecord struct {
	Key     []byte
	Value   []byte
	Headers map[string][]byte
	TsMs    int64
}

// appendCall is one append request the fake received. A refused one (415, or a
// binary body a blocksLegacy fake cannot parse) is listed with Refused and nothing else
// of it counted.
type appendCall struct {
	Key string
	// Idempotency, Attempt and Elapsed are the request's Strata-Idempotency,
	// Strata-Attempt and Strata-Retry-Elapsed-Ms headers ("" when absent).
	Idempotency, Attempt, Elapsed string
	// Floor is its Strata-Batch-Floor header, Mark the Strata-Topic-Batch its answer
	// carried (lost with a dropped answer).
	Floor, Mark string
	Body        []byte
	Binary      bool
	Refused     bool
	Partitions  []int32
	Records     int
	Fault       fault
	At          time.Time
}

// fakeServer implements the topic, append, poll and health routes of docs/API.md in
// memory, in JSON and in the binary format (as blocks says), counts append calls and
// in-flight requests per partition, and injects faults. It keeps each partition's
// appends as blocks too, one per append, which a binary poll answers whole.
type fakeServer struct {
	*httptest.Server
	partitions atomic.Int32  // the topic's count; a test may raise it
	delay      time.Duration // an append holds its partitions this long
	// slow holds an append this much longer per partition it carries (the most of
	// them); guarded by mu.
	slow       map[int32]time.Duration
	retryAfter string        // Retry-After of fault429
	hold       chan struct{} // when set, an append waits until it is closed
	blocks     blocksMode
	// noCount leaves wire.HeaderPartitions off the append answers (a server before it).
	noCount   bool
	describes atomic.Int64 // GET /v1/topics/orders answered

	mu          sync.Mutex
	marks       int64 // the batch marks answered
	logs        map[int32][]fakeRecord
	commits     map[int32][]fakeCommit
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

// fakeCommit is one append's records of a partition as a block at its base offset.
type fakeCommit struct {
	base  int64
	block []byte
}

func newFake(t interface{ Cleanup(func()) }, partitions int32) *fakeServer {
	f := &fakeServer{retryAfter: "0", logs: map[int32][]fakeRecord{},
		commits: map[int32][]fakeCommit{}, idem: map[string]idemEntry{}, inflight: map[int32]int{},
		maxInflight: map[int32]int{}}
	f.partitions.Store(partitions)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"status": "ok"})
	})
	mux.HandleFunc("GET /v1/topics/{topic}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("topic") != "orders" {
			writeErr(w, 404, "not_found", "no such topic", nil)
			return
		}
		f.describes.Add(1)
		writeJSON(w, 200, map[string]any{"name": "orders", "partitions": f.partitions.Load(), "retention_ms": 86400000,
			"partition_info": []any{}})
	})
	mux.HandleFunc("POST /v1/topics/{topic}/records", f.handleAppend)
	mux.HandleFunc("GET /v1/topics/{topic}/partitions/{p}/records", f.handlePoll)
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
	// Every answer carries the topic's batch mark, one higher per append call.
	f.mu.Lock()
	f.marks++
	mark := fmt.Sprintf("%d@tcfake", f.marks)
	f.mu.Unlock()
	w.Header().Set(wire.HeaderTopicBatch, mark)
	if !f.noCount {
		w.Header().Set(wire.HeaderPartitions, strconv.Itoa(int(f.partitions.Load())))
	}
	binary := r.Header.Get("Content-Type") == wire.ContentTypeBlocks
	if binary && f.blocks != blocksOn {
		f.mu.Lock()
		f.calls = append(f.calls, appendCall{Key: r.Header.Get("Idempotency-Key"), Idempotency: r.Header.Get(wire.HeaderIdempotency),
			Attempt: r.Header.Get(wire.HeaderAttempt), Elapsed: r.Header.Get(wire.HeaderRetryElapsed), Body: body, Binary: true,
			Floor: r.Header.Get(wire.HeaderBatchFloor), Mark: mark, Refused: true, At: time.Now()})
		f.mu.Unlock()
		binary = false // blocksLegacy parses it as JSON, and fails
		if f.blocks == blocks415 {
			writeErr(w, 415, "unsupported_media_type", "no binary append here", nil)
			return
		}
	}
	var recs []fakeRecord
	var parts []int32
	if binary {
		recs, parts, err = f.decodeBlocks(body)
	} else {
		recs, parts, err = f.decodeJSON(body)
	}
	if err != nil {
		writeErr(w, 400, "invalid_request", err.Error(), nil)
		return
	}
	distinct := distinctParts(parts)
	call := appendCall{Key: r.Header.Get("Idempotency-Key"), Idempotency: r.Header.Get(wire.HeaderIdempotency),
		Attempt: r.Header.Get(wire.HeaderAttempt), Elapsed: r.Header.Get(wire.HeaderRetryElapsed), Body: body, Binary: binary,
		Floor: r.Header.Get(wire.HeaderBatchFloor), Mark: mark, Partitions: distinct, Records: len(recs), At: time.Now()}

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
	var slow time.Duration
	for _, p := range distinct {
		slow = max(slow, f.slow[p])
	}
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
	if d := f.delay + slow; d > 0 {
		time.Sleep(d)
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
	case faultSuperseded:
		writeErr(w, 409, "superseded", "injected", nil)
		return
	case faultUndecided:
		writeErr(w, 409, wire.CodeRetryUndecided, "injected", nil)
		return
	case faultHang:
		<-r.Context().Done()
		return
	}

	results, status := f.apply(call.Key, body, recs, parts, call.Fault)
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
	extra := "results"
	var answer any = results
	if binary {
		extra, answer = "blocks", blockResults(results, parts)
	}
	if status == 503 {
		writeJSON(w, 503, map[string]any{"error": map[string]any{"code": "unavailable", "message": "partial"},
			extra: answer})
		return
	}
	writeJSON(w, 200, map[string]any{extra: answer})
}

// decodeJSON decodes a JSON append body and places its records as the server does.
func (f *fakeServer) decodeJSON(body []byte) ([]fakeRecord, []int32, error) {
	var req struct {
		Records []fakeWireRecord `json:"records"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || len(req.Records) == 0 {
		return nil, nil, fmt.Errorf("bad body: %v", err)
	}
	recs := make([]fakeRecord, len(req.Records))
	parts := make([]int32, len(req.Records))
	rr := int32(0)
	for i, wr := range req.Records {
		var fr fakeRecord
		if wr.Value == nil {
			return nil, nil, errors.New("value missing")
		}
		var err error
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
			return nil, nil, errors.New("bad base64")
		}
		if wr.TimestampMs != nil {
			fr.TsMs = *wr.TimestampMs
		}
		switch {
		case wr.Partition != nil:
			if *wr.Partition < 0 || *wr.Partition >= f.partitions.Load() {
				return nil, nil, errors.New("bad partition")
			}
			parts[i] = *wr.Partition
		case fr.Key != nil:
			parts[i] = wire.PartitionForKey(fr.Key, f.partitions.Load())
		default:
			parts[i] = rr % f.partitions.Load()
			rr++
		}
		recs[i] = fr
	}
	return recs, parts, nil
}

// decodeBlocks decodes a binary append body as the contract says the server checks it:
// framing, each partition once and in range, each block valid, timestamps in range,
// header names non-empty UTF-8.
func (f *fakeServer) decodeBlocks(body []byte) ([]fakeRecord, []int32, error) {
	frames, err := wire.DecodeRequest(body)
	if err != nil {
		return nil, nil, err
	}
	var recs []fakeRecord
	var parts []int32
	for i, fr := range frames {
		if fr.Partition < 0 || fr.Partition >= f.partitions.Load() || slices.Contains(parts, fr.Partition) {
			return nil, nil, fmt.Errorf("frame %d: bad or repeated partition %d", i, fr.Partition)
		}
		sum, err := segment.Check(fr.Block)
		if err != nil {
			return nil, nil, fmt.Errorf("frame %d: %w", i, err)
		}
		if sum.BadHeaderName >= 0 || sum.MinTimestamp < 0 || sum.MaxTimestamp > wire.MaxTimestampMs {
			return nil, nil, fmt.Errorf("frame %d: bad header name or timestamp", i)
		}
		srecs, err := segment.DecodeBlock(fr.Block, 0)
		if err != nil {
			return nil, nil, fmt.Errorf("frame %d: %w", i, err)
		}
		for _, sr := range srecs {
			rec := fakeRecord{Key: sr.Key, Value: sr.Value, TsMs: sr.Timestamp}
			for _, h := range sr.Headers {
				if rec.Headers == nil {
					rec.Headers = map[string][]byte{}
				}
				rec.Headers[h.Key] = h.Value
			}
			recs = append(recs, rec)
			parts = append(parts, fr.Partition)
		}
	}
	return recs, parts, nil
}

// blockResults turns per-record results into the binary answer's per-frame results:
// a frame is a run of records of one partition.
func blockResults(results []map[string]any, parts []int32) []map[string]any {
	var out []map[string]any
	for i := 0; i < len(parts); {
		j := i
		for j < len(parts) && parts[j] == parts[i] {
			j++
		}
		b := map[string]any{"partition": parts[i], "count": j - i}
		if e := results[i]["error"]; e != nil {
			b["error"] = e
		} else {
			b["base_offset"] = results[i]["offset"]
		}
		out = append(out, b)
		i = j
	}
	return out
}

// apply appends recs, replaying per partition what an earlier request with the same
// Idempotency-Key already appended (as the contract's key#partition table does). With
// faultPartial only the request's first partition is appended and the others get an
// error; with faultAllFailed every partition does. Each partition's new records are
// kept as one block too.
func (f *fakeServer) apply(key string, body []byte, recs []fakeRecord, parts []int32, fault fault) ([]map[string]any, int) {
	partial := fault == faultPartial || fault == faultAllFailed
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
		if fault == faultAllFailed || partial && p != parts[0] {
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
	f.keepCommits(recs, parts, results)
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
		fmt.Fprintf(&b, "#%d key=%s idem=%s attempt=%s elapsed=%s parts=%v n=%d fault=%v\n", i, c.Key, c.Idempotency, c.Attempt,
			c.Elapsed, c.Partitions, c.Records, c.Fault)
	}
	return b.String()
}

// keepCommits stores, per partition, the records apply just appended (those with an
// offset beyond the partition's last commit) as one block.
func (f *fakeServer) keepCommits(recs []fakeRecord, parts []int32, results []map[string]any) {
	for _, p := range distinctParts(parts) {
		cs := f.commits[p]
		next := int64(0)
		if len(cs) > 0 {
			last := cs[len(cs)-1]
			info, _ := segment.Info(last.block)
			next = last.base + int64(info.Count)
		}
		var srecs []segment.Record
		base := int64(-1)
		for i, rec := range recs {
			off, ok := results[i]["offset"].(int64)
			if parts[i] != p || !ok || off < next {
				continue
			}
			if base < 0 {
				base = off
			}
			var hs []segment.Header
			for k, v := range rec.Headers {
				hs = append(hs, segment.Header{Key: k, Value: v})
			}
			srecs = append(srecs, segment.Record{Timestamp: rec.TsMs, Key: rec.Key, Value: rec.Value, Headers: hs})
		}
		if len(srecs) == 0 {
			continue
		}
		block, err := segment.EncodeBlock(srecs)
		if err != nil {
			panic(err)
		}
		f.commits[p] = append(cs, fakeCommit{base: base, block: block})
	}
}

// handlePoll answers a poll from the records the fake holds: in the binary form when
// the fake speaks it and the request accepts it, else JSON. A binary answer starts with
// the whole commit holding the offset asked for and adds whole commits, two blocks to a
// range, until it holds max_records from that offset; its next offset is the end of the
// last range. (No wait: a poll at the high watermark returns at once.)
func (f *fakeServer) handlePoll(w http.ResponseWriter, r *http.Request) {
	p64, err1 := strconv.ParseInt(r.PathValue("p"), 10, 32)
	off, err2 := strconv.ParseInt(r.URL.Query().Get("offset"), 10, 64)
	maxRecs := int64(500)
	if s := r.URL.Query().Get("max_records"); s != "" {
		maxRecs, _ = strconv.ParseInt(s, 10, 64)
	}
	p := int32(p64)
	if err1 != nil || err2 != nil || p < 0 || p >= f.partitions.Load() || maxRecs <= 0 {
		writeErr(w, 400, "invalid_request", "bad partition, offset or max_records", nil)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.logs[p]
	hw := int64(len(l))
	if off < 0 || off > hw {
		writeErr(w, 416, "offset_out_of_range", "offset outside the log",
			map[string]any{"log_start_offset": 0, "high_watermark": hw})
		return
	}
	if f.blocks == blocksOn && strings.Contains(r.Header.Get("Accept"), wire.ContentTypeBlocks) {
		pb := wire.PollBlocks{NextOffset: off, HighWatermark: hw}
		inRange := 0 // blocks in the last range
		for _, c := range f.commits[p] {
			info, _ := segment.Info(c.block)
			end := c.base + int64(info.Count)
			if end <= off || pb.NextOffset-off >= maxRecs {
				continue
			}
			if inRange == 1 {
				last := &pb.Ranges[len(pb.Ranges)-1]
				last.Data = append(slices.Clip(last.Data), c.block...)
				inRange = 2
			} else {
				pb.Ranges = append(pb.Ranges, wire.Range{BaseOffset: c.base, Data: c.block})
				inRange = 1
			}
			pb.NextOffset = end
		}
		w.Header().Set("Content-Type", wire.ContentTypeBlocks)
		_, _ = w.Write(wire.AppendPoll(nil, pb))
		return
	}
	recs := []map[string]any{}
	for o := off; o < hw && int64(len(recs)) < maxRecs; o++ {
		rec := l[o]
		hs := map[string]string{}
		for k, v := range rec.Headers {
			hs[k] = base64.StdEncoding.EncodeToString(v)
		}
		var key *string
		if rec.Key != nil {
			k := base64.StdEncoding.EncodeToString(rec.Key)
			key = &k
		}
		recs = append(recs, map[string]any{"offset": o, "timestamp_ms": rec.TsMs, "key": key,
			"value": base64.StdEncoding.EncodeToString(rec.Value), "headers": hs})
	}
	writeJSON(w, 200, map[string]any{"records": recs, "next_offset": off + int64(len(recs)), "high_watermark": hw,
		"log_start_offset": 0})
}
