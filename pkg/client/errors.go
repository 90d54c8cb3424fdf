package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/stratalog/strata/pkg/wire"
)

// Error codes of the HTTP contract (docs/API.md, "Errors"), as pkg/wire defines them.
const (
	CodeInvalidRequest       = wire.CodeInvalidRequest
	CodeUnauthorized         = wire.CodeUnauthorized
	CodeForbidden            = wire.CodeForbidden
	CodeNotFound             = wire.CodeNotFound
	CodeTopicExists          = wire.CodeTopicExists
	CodeLeaseHeld            = wire.CodeLeaseHeld
	CodeFenced               = wire.CodeFenced
	CodeSuperseded           = wire.CodeSuperseded
	CodeRetryUndecided       = wire.CodeRetryUndecided
	CodeStaleCommit          = wire.CodeStaleCommit
	CodeGroupActive          = wire.CodeGroupActive
	CodePayloadTooLarge      = wire.CodePayloadTooLarge
	CodeOffsetOutOfRange     = wire.CodeOffsetOutOfRange
	CodeIdempotencyKeyReused = wire.CodeIdempotencyKeyReused
	CodeBeyondHighWatermark  = wire.CodeBeyondHighWatermark
	CodeRateLimited          = wire.CodeRateLimited
	CodeUnavailable          = wire.CodeUnavailable
	CodeMethodNotAllowed     = wire.CodeMethodNotAllowed
	CodeInternal             = wire.CodeInternal
	CodeKeyDeleted           = wire.CodeKeyDeleted
)

// Sentinel errors, one per error code, so callers branch with errors.Is on an *APIError
// (or on a client-side check that would have drawn the same answer from the server).
var (
	ErrInvalid      = errors.New("strata: invalid request")
	ErrUnauthorized = errors.New("strata: unauthorized")
	ErrForbidden    = errors.New("strata: forbidden")
	ErrNotFound     = errors.New("strata: not found")
	ErrTopicExists  = errors.New("strata: topic exists")
	ErrLeaseHeld    = errors.New("strata: lease held by another member")
	ErrFenced       = errors.New("strata: fenced (obsolete generation or not the owner)")
	// ErrSuperseded answers an attempt of a Producer's request that another delivery of
	// the same request fenced (a copy a proxy sent twice, say): nothing of that answer is
	// acknowledged, and the Producer retries with the next attempt, which decides.
	ErrSuperseded = errors.New("strata: superseded by another attempt of the request")
	// ErrRetryUndecided refuses a retry of a Producer's request whose earlier attempts
	// the server cannot find or rule out (retention removed the records they would be
	// in, say): the retry appended nothing, the request may or may not be in the log,
	// and it is never appended twice. The Producer does not retry it.
	ErrRetryUndecided       = errors.New("strata: cannot tell whether an earlier attempt of the request was appended")
	ErrStaleCommit          = errors.New("strata: stale commit")
	ErrGroupActive          = errors.New("strata: group has a live lease")
	ErrPayloadTooLarge      = errors.New("strata: payload too large")
	ErrOffsetOutOfRange     = errors.New("strata: offset out of range")
	ErrIdempotencyKeyReused = errors.New("strata: idempotency key reused with a different body")
	ErrBeyondHighWatermark  = errors.New("strata: commit beyond the high watermark")
	ErrRateLimited          = errors.New("strata: rate limited")
	ErrUnavailable          = errors.New("strata: unavailable")
	ErrMethodNotAllowed     = errors.New("strata: method not allowed")
	// ErrInternal is a server-side failure a retry will not fix (e.g. corrupt data).
	ErrInternal = errors.New("strata: internal server error")
	// ErrKeyDeleted answers Latest of a key whose latest record is a tombstone (its
	// *APIError's Details hold the tombstone's partition, offset and deleted_at_ms);
	// errors.Is(err, ErrNotFound) holds too.
	ErrKeyDeleted = errors.New("strata: key deleted")
)

// ErrBadResponse is a 2xx answer that does not fit the contract (bad JSON, wrong result
// count or partition, bad base64). It is retryable: a truncated answer looks the same.
var ErrBadResponse = errors.New("strata: unexpected server answer")

// sentinelForCode maps a contract error code to its sentinel.
func sentinelForCode(code string) error {
	switch code {
	case CodeInvalidRequest:
		return ErrInvalid
	case CodeUnauthorized:
		return ErrUnauthorized
	case CodeForbidden:
		return ErrForbidden
	case CodeNotFound:
		return ErrNotFound
	case CodeTopicExists:
		return ErrTopicExists
	case CodeLeaseHeld:
		return ErrLeaseHeld
	case CodeFenced:
		return ErrFenced
	case CodeSuperseded:
		return ErrSuperseded
	case CodeRetryUndecided:
		return ErrRetryUndecided
	case CodeStaleCommit:
		return ErrStaleCommit
	case CodeGroupActive:
		return ErrGroupActive
	case CodePayloadTooLarge:
		return ErrPayloadTooLarge
	case CodeOffsetOutOfRange:
		return ErrOffsetOutOfRange
	case CodeIdempotencyKeyReused:
		return ErrIdempotencyKeyReused
	case CodeBeyondHighWatermark:
		return ErrBeyondHighWatermark
	case CodeRateLimited:
		return ErrRateLimited
	case CodeUnavailable:
		return ErrUnavailable
	case CodeMethodNotAllowed:
		return ErrMethodNotAllowed
	case CodeInternal:
		return ErrInternal
	case CodeKeyDeleted:
		return ErrKeyDeleted
	}
	return nil
}

// sentinelForStatus classifies an answer without a known code (a proxy's error page, a
// newer server's code) by its status alone; 502 and 504 come from a gateway whose
// backend failed or timed out, which a caller treats like 503.
func sentinelForStatus(status int) error {
	switch status {
	case http.StatusBadRequest:
		return ErrInvalid
	case http.StatusUnauthorized:
		return ErrUnauthorized
	case http.StatusForbidden:
		return ErrForbidden
	case http.StatusNotFound:
		return ErrNotFound
	case http.StatusRequestEntityTooLarge:
		return ErrPayloadTooLarge
	case http.StatusRequestedRangeNotSatisfiable:
		return ErrOffsetOutOfRange
	case http.StatusTooManyRequests:
		return ErrRateLimited
	case http.StatusMethodNotAllowed:
		return ErrMethodNotAllowed
	case http.StatusInternalServerError:
		return ErrInternal
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return ErrUnavailable
	}
	return nil
}

// APIError is a non-2xx answer of the server, decoded from
// {"error": {"code", "message", ...details}}.
type APIError struct {
	Status  int
	Code    string
	Message string
	// Details holds the error object's other fields (numbers as json.Number), e.g.
	// log_start_offset and high_watermark for offset_out_of_range, owner and
	// lease_expires_at_ms for lease_held.
	Details map[string]any
	// RetryAfter is the Retry-After header's delay (429, sometimes 503); 0 when absent.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d", e.Status)
	if e.Code != "" {
		fmt.Fprintf(&b, " %s", e.Code)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	return b.String()
}

// Is matches the sentinel of e's code, or of its status when the code is unknown.
func (e *APIError) Is(target error) bool {
	s := sentinelForCode(e.Code)
	if s == nil {
		s = sentinelForStatus(e.Status)
	}
	return s != nil && (s == target || (s == ErrKeyDeleted && target == ErrNotFound))
}

// Temporary reports whether the same request may succeed later: 429 and 503 (and a
// gateway's 502/504).
func (e *APIError) Temporary() bool {
	return e.Is(ErrUnavailable) || e.Is(ErrRateLimited)
}

// LogStartOffset is the log_start_offset detail of offset_out_of_range.
func (e *APIError) LogStartOffset() (int64, bool) { return e.detailInt("log_start_offset") }

// HighWatermark is the high_watermark detail of offset_out_of_range.
func (e *APIError) HighWatermark() (int64, bool) { return e.detailInt("high_watermark") }

// Owner is the owner detail of lease_held: the member holding the lease.
func (e *APIError) Owner() (string, bool) {
	s, ok := e.Details["owner"].(string)
	return s, ok
}

// LeaseExpiresAt is the lease_expires_at_ms detail of lease_held.
func (e *APIError) LeaseExpiresAt() (time.Time, bool) {
	ms, ok := e.detailInt("lease_expires_at_ms")
	if !ok {
		return time.Time{}, false
	}
	return time.UnixMilli(ms), true
}

func (e *APIError) detailInt(name string) (int64, bool) {
	switch v := e.Details[name].(type) {
	case json.Number:
		n, err := v.Int64()
		return n, err == nil
	case float64:
		return int64(v), v == float64(int64(v))
	case int64:
		return v, true
	}
	return 0, false
}

// wireError is the body of every non-2xx answer (the contract's shape).
type wireError = wire.ErrorBody

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 1 << 20

// decodeAPIError builds the *APIError of a non-2xx answer with the given status,
// headers and body. A body that is not the contract's error object still yields an
// *APIError carrying the status and, as its message, API Gateway's {"message": …} or
// else the start of the body. The second
// result carries the append results of a partial failure, if any.
func decodeAPIError(status int, h http.Header, body []byte) (*APIError, wireError) {
	e := &APIError{Status: status, RetryAfter: parseRetryAfter(h.Get("Retry-After"), time.Now())}
	var w wireError
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&w); err != nil || w.Error == nil {
		var gw struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(body, &gw) == nil && gw.Message != "" {
			// API Gateway's own answer (a refused signature, a throttle, a timeout).
			e.Message = string(truncate([]byte(gw.Message), 500))
			return e, wireError{}
		}
		e.Message = strings.TrimSpace(string(truncate(body, 200)))
		if e.Message == "" {
			e.Message = http.StatusText(status)
		}
		return e, wireError{}
	}
	e.fill(w.Error)
	if e.Message == "" {
		e.Message = http.StatusText(status)
	}
	return e, w
}

// fill sets Code, Message and Details from a contract error object.
func (e *APIError) fill(obj map[string]any) {
	if c, ok := obj["code"].(string); ok {
		e.Code = c
	}
	if m, ok := obj["message"].(string); ok {
		e.Message = m
	}
	for k, v := range obj {
		if k == "code" || k == "message" {
			continue
		}
		if e.Details == nil {
			e.Details = make(map[string]any)
		}
		e.Details[k] = v
	}
}

// statusForCode is the status the contract gives a code; it lets a per-record error
// inside a partial append failure (which carries no status) be an *APIError too.
func statusForCode(code string) int {
	switch code {
	case CodeInvalidRequest:
		return http.StatusBadRequest
	case CodeUnauthorized:
		return http.StatusUnauthorized
	case CodeForbidden:
		return http.StatusForbidden
	case CodeNotFound, CodeKeyDeleted:
		return http.StatusNotFound
	case CodeTopicExists, CodeLeaseHeld, CodeFenced, CodeSuperseded, CodeRetryUndecided, CodeStaleCommit, CodeGroupActive:
		return http.StatusConflict
	case CodePayloadTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeOffsetOutOfRange:
		return http.StatusRequestedRangeNotSatisfiable
	case CodeIdempotencyKeyReused, CodeBeyondHighWatermark:
		return http.StatusUnprocessableEntity
	case CodeRateLimited:
		return http.StatusTooManyRequests
	case CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case CodeInternal:
		return http.StatusInternalServerError
	}
	return http.StatusServiceUnavailable
}

// maxRetryAfter caps a Retry-After delay, so a bogus header cannot park a producer.
const maxRetryAfter = 24 * time.Hour

// parseRetryAfter reads a Retry-After value: delay seconds or an HTTP date; 0 when
// absent, malformed or in the past.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(min(secs, int64(maxRetryAfter/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), maxRetryAfter)
	}
	return 0
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
