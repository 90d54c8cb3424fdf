package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"mime"
	"net/http"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/wire"
)

// MaxIdempotencyKey is the longest Idempotency-Key header value.
const MaxIdempotencyKey = wire.MaxIdempotencyKey

// MaxTimestampMs is the largest timestamp_ms an append accepts; the smallest is 0.
const MaxTimestampMs = wire.MaxTimestampMs

type appendRecord struct {
	Key         *string       `json:"key"`
	Value       nullString    `json:"value"`
	Headers     *headersField `json:"headers"`
	Partition   *int32        `json:"partition"`
	TimestampMs *int64        `json:"timestamp_ms"`
}

// nullString is a required member that may be null: a record's value (null: a
// tombstone) or a header's value in the list form.
type nullString struct {
	set, null bool
	s         string
}

func (n *nullString) UnmarshalJSON(b []byte) error {
	n.set = true
	if string(b) == "null" {
		n.null = true
		return nil
	}
	return json.Unmarshal(b, &n.s)
}

func (nullString) strictNullable() {}

// decode returns the base64 value, nil for null.
func (n nullString) decode(field string) ([]byte, *apiError) {
	if n.null {
		return nil, nil
	}
	return decodeBase64(field, n.s)
}

// headerEntry is one header of the list form of a record's headers.
type headerEntry struct {
	Key   *string    `json:"key"`
	Value nullString `json:"value"`
}

// headersField is a record's headers: an object of names to base64 values (stored
// sorted by name), or an array of {key, value} entries kept in order, repeated names
// and null values included.
type headersField struct {
	object map[string]string
	list   []headerEntry
	isList bool
}

func (h *headersField) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if len(b) > 0 && b[0] == '[' {
		h.isList = true
		return dec.Decode(&h.list)
	}
	return dec.Decode(&h.object)
}

func (headersField) strictShape(kind jsontext.Kind) reflect.Type {
	if kind == '[' {
		return reflect.TypeFor[[]headerEntry]()
	}
	return reflect.TypeFor[map[string]string]()
}

// toHeaders decodes record i's headers.
func (h *headersField) toHeaders(i int) ([]segment.Header, *apiError) {
	if h == nil {
		return nil, nil
	}
	if h.isList {
		if len(h.list) == 0 {
			return nil, nil
		}
		out := make([]segment.Header, len(h.list))
		for j, e := range h.list {
			if e.Key == nil {
				return nil, invalid(fmt.Sprintf("record %d: header %d: \"key\" is required", i, j))
			}
			if !e.Value.set {
				return nil, invalid(fmt.Sprintf("record %d: header %d: \"value\" is required (null for a null value)", i, j))
			}
			v, err := e.Value.decode(fmt.Sprintf("record %d: header %d (%q)", i, j, *e.Key))
			if err != nil {
				return nil, err
			}
			out[j] = segment.Header{Key: *e.Key, Value: v}
		}
		return out, nil
	}
	if len(h.object) == 0 {
		return nil, nil
	}
	// JSON objects are unordered: store headers sorted by name, so a retry of the same
	// body is the same request for idempotency.
	names := make([]string, 0, len(h.object))
	for k := range h.object {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make([]segment.Header, len(names))
	for j, k := range names {
		v, e := decodeBase64(fmt.Sprintf("record %d: header %q", i, k), h.object[k])
		if e != nil {
			return nil, e
		}
		out[j] = segment.Header{Key: k, Value: v}
	}
	return out, nil
}

type appendRequest struct {
	Records []appendRecord `json:"records"`
}

// appendResult is one record's outcome: an offset, or (in a partial failure) an error.
type appendResult = wire.Result

func (s *server) appendRecords(w http.ResponseWriter, r *http.Request) {
	topic := r.PathValue("topic")
	p, ok := s.allow(w, r, onTopic(OpAppend, topic))
	if !ok {
		return
	}
	opt, e := appendOptions(r.Header)
	if e != nil {
		writeError(w, e)
		return
	}
	opt.Principal = keyPrincipal(r, p)
	// The body's bytes are held against the in-flight bounds as they arrive.
	hold := s.inflight.hold(p.Name)
	defer hold.release()
	countBody(r, hold)
	if isBlocks(r.Header.Get("Content-Type")) {
		s.appendBlocks(w, r, topic, p, opt)
		return
	}
	var req appendRequest
	if e := decodeBody(w, r, MaxAppendBody, &req); e != nil {
		writeError(w, e)
		return
	}
	recs, size, e := toRecords(req.Records)
	if e != nil {
		writeError(w, e)
		return
	}
	if e := s.quota.take(p.Name, size, s.now()); e != nil {
		writeError(w, e)
		return
	}
	results, err := s.log.Append(r.Context(), topic, recs, opt)
	s.answerAppend(w, r, topic, err, "results", func(e *log.AppendError) any { return encodeResults(e.Results) },
		func() any { return map[string]any{"results": encodeResults(results)} })
}

// appendOptions reads an append's idempotency headers (docs/API.md, "Append"; the
// key is then scoped by the caller, keyPrincipal): Idempotency-Key, Strata-Attempt and, for a producer session's request
// (Strata-Idempotency: producer), Strata-Retry-Elapsed-Ms. A producer request must carry
// the key and the attempt, and on a retry (attempt above 0) the elapsed time; a header
// out of its bounds, or one missing, is a 400 before anything is read or written.
func appendOptions(h http.Header) (log.AppendOptions, *apiError) {
	var opt log.AppendOptions
	if keys := h.Values("Idempotency-Key"); len(keys) > 0 {
		if len(keys) > 1 || len(keys[0]) < 1 || len(keys[0]) > MaxIdempotencyKey {
			return opt, invalid(fmt.Sprintf("Idempotency-Key must be one header of 1–%d characters", MaxIdempotencyKey))
		}
		opt.IdempotencyKey = keys[0]
	}
	attempt, present, err := wire.ParseAttempt(h.Values(wire.HeaderAttempt))
	if err != nil {
		return opt, invalid(fmt.Sprintf("%s must be one decimal number in [0, %d]", wire.HeaderAttempt, wire.MaxAttempt))
	}
	opt.FirstAttempt = present && attempt == 0
	producer, err := wire.ParseIdempotency(h.Values(wire.HeaderIdempotency))
	if err != nil {
		return opt, invalid(fmt.Sprintf("%s must be one header %q, or absent", wire.HeaderIdempotency, wire.IdempotencyProducer))
	}
	elapsed, hasElapsed, err := wire.ParseRetryElapsed(h.Values(wire.HeaderRetryElapsed))
	if err != nil {
		return opt, invalid(fmt.Sprintf("%s must be one decimal number of milliseconds in [0, %d]",
			wire.HeaderRetryElapsed, wire.MaxRetryElapsed.Milliseconds()))
	}
	floor, hasFloor, err := wire.ParseBatchFloor(h.Values(wire.HeaderBatchFloor))
	if err != nil {
		return opt, invalid(fmt.Sprintf("%s must be one batch mark, \"<batch>@<incarnation>\" as %s gave it, or \"0\"",
			wire.HeaderBatchFloor, wire.HeaderTopicBatch))
	}
	if !producer {
		return opt, nil
	}
	switch {
	case opt.IdempotencyKey == "":
		return opt, invalid(fmt.Sprintf("%s: %s needs an Idempotency-Key", wire.HeaderIdempotency, wire.IdempotencyProducer))
	case !present:
		return opt, invalid(fmt.Sprintf("%s: %s needs %s", wire.HeaderIdempotency, wire.IdempotencyProducer, wire.HeaderAttempt))
	case attempt > 0 && !hasElapsed:
		return opt, invalid(fmt.Sprintf("%s: %s with %s above 0 (a retry) needs %s", wire.HeaderIdempotency,
			wire.IdempotencyProducer, wire.HeaderAttempt, wire.HeaderRetryElapsed))
	case attempt > 0 && !hasFloor:
		return opt, invalid(fmt.Sprintf("%s: %s with %s above 0 (a retry) needs %s (the %s mark the client had when it first sent the request, or \"0\"); nothing was appended",
			wire.HeaderIdempotency, wire.IdempotencyProducer, wire.HeaderAttempt, wire.HeaderBatchFloor, wire.HeaderTopicBatch))
	}
	opt.Producer = true
	opt.Attempt = int32(attempt)
	opt.RetryElapsed = elapsed
	if hasFloor {
		opt.BatchFloor = &floor
	}
	return opt, nil
}

// setTopicBatch sets the topic's batch mark (wire.HeaderTopicBatch) on an answer about
// it, when the log knows one: read from the store before the answer is sent, so every
// batch committed after the answer is numbered above it.
func (s *server) setTopicBatch(w http.ResponseWriter, topic string) {
	if m, ok := s.log.BatchMark(topic); ok {
		w.Header().Set(wire.HeaderTopicBatch, m.String())
	}
}

// setPartitions sets the topic's partition count as the log has it cached
// (wire.HeaderPartitions) on an append's answer, so its producer follows a raised
// count without describing the topic.
func (s *server) setPartitions(w http.ResponseWriter, topic string) {
	if n, ok := s.log.CachedPartitions(topic); ok && n > 0 {
		w.Header().Set(wire.HeaderPartitions, strconv.Itoa(int(n)))
	}
}

// answerAppend writes an append's answer: ok() on success; on a partial failure the
// error with, under name, the outcome of each record or block (partial); else the error.
// A superseded attempt is answered 409 without partial outcomes: the attempt that
// fenced it decides the whole request, so nothing of this one is acknowledged.
func (s *server) answerAppend(w http.ResponseWriter, r *http.Request, topic string, err error, name string,
	partial func(*log.AppendError) any, ok func() any) {
	s.setTopicBatch(w, topic)
	s.setPartitions(w, topic)
	var pe *log.AppendError
	switch {
	case superseded(err):
		writeError(w, mapError(err))
	case errors.As(err, &pe):
		s.logger.ErrorContext(r.Context(), "append partly failed", "topic", topic, "error", err)
		ae := mapError(pe.Err)
		ae.extra = map[string]any{name: partial(pe)}
		writeError(w, ae)
	case err != nil:
		s.fail(w, r, err)
	default:
		writeJSON(w, http.StatusOK, ok())
	}
}

// toRecords decodes the records' base64 fields and returns them with their total size
// (key + value + header bytes). Limits and placement are the log's to check.
func toRecords(in []appendRecord) ([]log.Record, int, *apiError) {
	if len(in) == 0 {
		return nil, 0, invalid(`"records" must hold at least one record`)
	}
	out := make([]log.Record, len(in))
	size := 0
	for i, ar := range in {
		if !ar.Value.set {
			return nil, 0, invalid(fmt.Sprintf("record %d: \"value\" is required (null for a tombstone)", i))
		}
		var rec log.Record
		var e *apiError
		if rec.Value, e = ar.Value.decode(fmt.Sprintf("record %d: value", i)); e != nil {
			return nil, 0, e
		}
		if ar.Key != nil {
			if rec.Key, e = decodeBase64(fmt.Sprintf("record %d: key", i), *ar.Key); e != nil {
				return nil, 0, e
			}
		}
		if rec.Headers, e = ar.Headers.toHeaders(i); e != nil {
			return nil, 0, e
		}
		if ts := ar.TimestampMs; ts != nil && (*ts < 0 || *ts > MaxTimestampMs) {
			return nil, 0, invalid(fmt.Sprintf("record %d: timestamp_ms must be 0–%d, got %d", i, int64(MaxTimestampMs), *ts))
		}
		rec.Partition = ar.Partition
		rec.Timestamp = ar.TimestampMs
		out[i] = rec
		size += segment.RecordSize(segment.Record{Key: rec.Key, Value: rec.Value, Headers: rec.Headers})
	}
	return out, size, nil
}

func encodeResults(rs []log.Result) []appendResult {
	out := make([]appendResult, len(rs))
	for i, r := range rs {
		out[i].Partition = r.Partition
		if r.Err != nil {
			out[i].Error = errorObject(mapError(r.Err))
			continue
		}
		o := r.Offset
		out[i].Offset = &o
	}
	return out
}

type pollRecord struct {
	Offset      int64             `json:"offset"`
	TimestampMs int64             `json:"timestamp_ms"`
	Key         []byte            `json:"key"`
	Value       []byte            `json:"value"`
	Headers     map[string][]byte `json:"headers"`
	HeaderList  []pollHeader      `json:"header_list,omitempty"`
}

// pollHeader is one header of a polled record's header_list; Value nil is null.
type pollHeader struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

// pollHeaders renders a record's headers: the object form, and the list form too when
// the object would lose something (a repeated name, a null value, an order other than
// by name). The object holds every non-null header, a repeated name its last value.
func pollHeaders(hs []segment.Header) (map[string][]byte, []pollHeader) {
	obj := make(map[string][]byte, len(hs))
	lossy := false
	for i, hd := range hs {
		if hd.Value == nil || (i > 0 && hs[i-1].Key >= hd.Key) {
			lossy = true
		}
		if hd.Value != nil {
			obj[hd.Key] = hd.Value
		}
	}
	if !lossy {
		return obj, nil
	}
	list := make([]pollHeader, len(hs))
	for i, hd := range hs {
		list[i] = pollHeader{Key: hd.Key, Value: hd.Value}
	}
	return obj, list
}

type pollResponse struct {
	Records        []pollRecord `json:"records"`
	NextOffset     int64        `json:"next_offset"`
	HighWatermark  int64        `json:"high_watermark"`
	LogStartOffset int64        `json:"log_start_offset"`
}

func (s *server) poll(w http.ResponseWriter, r *http.Request) {
	topic := r.PathValue("topic")
	if _, ok := s.allow(w, r, onTopic(OpRead, topic)); !ok {
		return
	}
	partition, e := partitionParam(r)
	if e != nil {
		writeError(w, e)
		return
	}
	q, e := parseQuery(r.URL.RawQuery, "offset", "max_records", "max_bytes", "wait_ms", "incarnation")
	if e != nil {
		writeError(w, e)
		return
	}
	if topic, e = pollTopic(topic, q); e != nil {
		writeError(w, e)
		return
	}
	if !q.has("offset") {
		writeError(w, invalid(`query parameter "offset" is required`))
		return
	}
	offset, e1 := q.int64In("offset", 0, 0, math.MaxInt64)
	records, e2 := q.int64In("max_records", log.DefaultPollRecords, 1, log.MaxPollRecords)
	bytes, e3 := q.int64In("max_bytes", log.DefaultPollBytes, 1, MaxPollBytes)
	waitMs, e4 := q.int64In("wait_ms", 0, 0, MaxWait.Milliseconds())
	if e := firstError(e1, e2, e3, e4); e != nil {
		writeError(w, e)
		return
	}
	opt := log.PollOptions{MaxRecords: int(records), MaxBytes: int(bytes), Wait: time.Duration(waitMs) * time.Millisecond}
	w.Header().Add("Vary", "Accept")
	if acceptsBlocks(r.Header.Values("Accept")) {
		s.pollRanges(w, r, topic, partition, offset, opt)
		return
	}
	res, err := s.log.Poll(r.Context(), topic, partition, offset, opt)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	resp := pollResponse{
		Records:        make([]pollRecord, len(res.Records)),
		NextOffset:     res.NextOffset,
		HighWatermark:  res.HighWatermark,
		LogStartOffset: res.LogStartOffset,
	}
	for i, rec := range res.Records {
		h, list := pollHeaders(rec.Headers)
		resp.Records[i] = pollRecord{Offset: rec.Offset, TimestampMs: rec.Timestamp, Key: rec.Key, Value: rec.Value, Headers: h, HeaderList: list}
	}
	writeJSON(w, http.StatusOK, resp)
}

// appendBlocks is the append handler for a binary body (wire.ContentTypeBlocks): its
// blocks go to the log as they are, checked but not decoded.
func (s *server) appendBlocks(w http.ResponseWriter, r *http.Request, topic string, p *Principal, opt log.AppendOptions) {
	if r.ContentLength > MaxAppendBody {
		writeError(w, tooLarge(MaxAppendBody))
		return
	}
	body, err := readBody(w, r, MaxAppendBody)
	var mbe *http.MaxBytesError
	var ae *apiError
	switch {
	case errors.As(err, &mbe):
		writeError(w, tooLarge(MaxAppendBody))
		return
	case errors.As(err, &ae):
		writeError(w, ae)
		return
	case err != nil:
		writeError(w, invalid("reading the body: "+err.Error()))
		return
	}
	frames, err := wire.DecodeRequest(body)
	if err != nil {
		writeError(w, invalid(err.Error()))
		return
	}
	blocks := make([]log.Block, len(frames))
	size := 0
	for i, f := range frames {
		blocks[i] = log.Block{Partition: f.Partition, Data: f.Block}
		size += len(f.Block) - segment.HeaderSize
	}
	// The quota counts payload bytes (record bytes plus a few bytes of framing each):
	// counting record bytes exactly would mean walking the blocks twice.
	if e := s.quota.take(p.Name, size, s.now()); e != nil {
		writeError(w, e)
		return
	}
	results, err := s.log.AppendBlocks(r.Context(), topic, blocks, opt)
	s.answerAppend(w, r, topic, err, "blocks", func(e *log.AppendError) any { return encodeBlockResults(e.Blocks) },
		func() any { return wire.AppendBlocksResponse{Blocks: encodeBlockResults(results)} })
}

func encodeBlockResults(rs []log.BlockResult) []wire.BlockResult {
	out := make([]wire.BlockResult, len(rs))
	for i, r := range rs {
		out[i] = wire.BlockResult{Partition: r.Partition, Count: int64(r.Count)}
		if r.Err != nil {
			out[i].Error = errorObject(mapError(r.Err))
			continue
		}
		base := r.BaseOffset
		out[i].BaseOffset = &base
	}
	return out
}

// pollRanges is the poll handler's binary answer: the stored ranges as they are.
func (s *server) pollRanges(w http.ResponseWriter, r *http.Request, topic string, partition int32, offset int64, opt log.PollOptions) {
	res, err := s.log.PollRanges(r.Context(), topic, partition, offset, opt)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p := wire.PollBlocks{NextOffset: res.NextOffset, HighWatermark: res.HighWatermark, LogStartOffset: res.LogStartOffset,
		Ranges: make([]wire.Range, len(res.Ranges))}
	lens := make([]int, len(res.Ranges))
	for i, rg := range res.Ranges {
		p.Ranges[i] = wire.Range{BaseOffset: rg.BaseOffset, Data: rg.Data}
		lens[i] = len(rg.Data)
	}
	body := wire.AppendPoll(make([]byte, 0, wire.PollSize(lens...)), p)
	w.Header().Set("Content-Type", wire.ContentTypeBlocks)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// isBlocks says whether a Content-Type names the binary format.
func isBlocks(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == wire.ContentTypeBlocks
}

// acceptsBlocks says whether Accept headers prefer the binary format: it is listed with
// a q-value above zero and no JSON type has a higher one. Without the binary type the
// answer is JSON, as for any client that does not ask.
func acceptsBlocks(accept []string) bool {
	blocksQ, jsonQ := -1.0, -1.0
	for _, h := range accept {
		for part := range strings.SplitSeq(h, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			q := 1.0
			if v, ok := params["q"]; ok {
				if q, err = strconv.ParseFloat(v, 64); err != nil || q < 0 || q > 1 {
					continue
				}
			}
			switch mt {
			case wire.ContentTypeBlocks:
				blocksQ = max(blocksQ, q)
			case "application/json", "application/*", "*/*":
				jsonQ = max(jsonQ, q)
			}
		}
	}
	return blocksQ > 0 && blocksQ >= jsonQ
}
