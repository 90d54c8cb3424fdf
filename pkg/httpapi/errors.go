package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// Error codes of the contract (docs/API.md, "Errors"), as pkg/wire defines them.
const (
	codeInvalid             = wire.CodeInvalidRequest
	codeUnauthorized        = wire.CodeUnauthorized
	codeForbidden           = wire.CodeForbidden
	codeNotFound            = wire.CodeNotFound
	codeMethodNotAllowed    = wire.CodeMethodNotAllowed
	codeTopicExists         = wire.CodeTopicExists
	codeLeaseHeld           = wire.CodeLeaseHeld
	codeFenced              = wire.CodeFenced
	codeSuperseded          = wire.CodeSuperseded
	codeStaleCommit         = wire.CodeStaleCommit
	codeGroupActive         = wire.CodeGroupActive
	codeKafkaGroup          = wire.CodeKafkaGroup
	codeTooLarge            = wire.CodePayloadTooLarge
	codeUnsupportedMedia    = wire.CodeUnsupportedMediaType
	codeOffsetOutOfRange    = wire.CodeOffsetOutOfRange
	codeIdempotencyReused   = wire.CodeIdempotencyKeyReused
	codeBeyondHighWatermark = wire.CodeBeyondHighWatermark
	codeRateLimited         = wire.CodeRateLimited
	codeUnavailable         = wire.CodeUnavailable
	codeInternal            = wire.CodeInternal
)

// statusClientClosed is what Metrics sees when the client went away before an answer.
const statusClientClosed = 499

// apiError is a non-2xx answer: status, code, message and the code's details.
type apiError struct {
	status  int
	code    string
	message string
	details map[string]any
	// extra holds top-level members beside "error" (a partial append's "results").
	extra map[string]any
	// header holds response headers to set (Retry-After, WWW-Authenticate).
	header map[string]string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func invalid(msg string) *apiError {
	return &apiError{status: http.StatusBadRequest, code: codeInvalid, message: msg}
}

// writeError writes e as {"error": {"code", "message", ...details}, ...extra}.
func writeError(w http.ResponseWriter, e *apiError) {
	body := make(map[string]any, 1+len(e.extra))
	for k, v := range e.extra {
		body[k] = v
	}
	body["error"] = errorObject(e)
	for k, v := range e.header {
		w.Header().Set(k, v)
	}
	writeJSON(w, e.status, body)
}

func errorObject(e *apiError) map[string]any {
	obj := make(map[string]any, 2+len(e.details))
	for k, v := range e.details {
		obj[k] = v
	}
	obj["code"] = e.code
	obj["message"] = e.message
	return obj
}

// writeJSON writes v with the status; encoding cannot fail for the handlers' types.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// mapError translates an error of pkg/log or pkg/group (or of the store beneath them)
// into the contract's status, code and details.
func mapError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	msg := err.Error()
	var (
		logRange   *log.OffsetOutOfRangeError
		groupRange *group.OffsetOutOfRangeError
		held       *store.LeaseHeldError
		beyond     *group.BeyondHighWatermarkError
	)
	switch {
	case errors.As(err, &logRange):
		return &apiError{status: http.StatusRequestedRangeNotSatisfiable, code: codeOffsetOutOfRange, message: msg,
			details: map[string]any{"log_start_offset": logRange.LogStartOffset, "high_watermark": logRange.HighWatermark}}
	case errors.As(err, &groupRange):
		return &apiError{status: http.StatusRequestedRangeNotSatisfiable, code: codeOffsetOutOfRange, message: msg,
			details: map[string]any{"partition": groupRange.Partition, "log_start_offset": groupRange.LogStartOffset, "high_watermark": groupRange.HighWatermark}}
	case errors.As(err, &held):
		return &apiError{status: http.StatusConflict, code: codeLeaseHeld, message: msg,
			details: map[string]any{"owner": held.Owner, "lease_expires_at_ms": held.ExpiresAt.UnixMilli()}}
	case errors.As(err, &beyond):
		return &apiError{status: http.StatusUnprocessableEntity, code: codeBeyondHighWatermark, message: msg,
			details: map[string]any{"high_watermark": beyond.HighWatermark}}
	case errors.Is(err, log.ErrCorrupt):
		// Checked first: a corrupt-data error may also wrap the store's ErrNotFound.
		return &apiError{status: http.StatusInternalServerError, code: codeInternal, message: "internal error"}
	case errors.Is(err, log.ErrInvalid), errors.Is(err, group.ErrInvalid):
		return &apiError{status: http.StatusBadRequest, code: codeInvalid, message: msg}
	case errors.Is(err, store.ErrFenced) && errors.Is(err, log.ErrTopicNotFound):
		// A lease holder's call on an incarnation deleted since (the name maybe live
		// again): fenced, so the member stops its run rather than look for the topic.
		return &apiError{status: http.StatusConflict, code: codeFenced, message: msg}
	case errors.Is(err, log.ErrTopicNotFound), errors.Is(err, store.ErrNotFound):
		return &apiError{status: http.StatusNotFound, code: codeNotFound, message: msg}
	case errors.Is(err, log.ErrTopicExists):
		return &apiError{status: http.StatusConflict, code: codeTopicExists, message: msg}
	case superseded(err):
		// Another delivery of the producer request fenced this attempt: the client's
		// next attempt decides the request's outcome.
		return &apiError{status: http.StatusConflict, code: codeSuperseded, message: msg}
	case errors.Is(err, log.ErrRetryUndecided):
		// The store cannot tell whether an earlier attempt was appended: this one
		// appended nothing, and a further attempt would be refused alike.
		return &apiError{status: http.StatusConflict, code: wire.CodeRetryUndecided, message: msg}
	case errors.Is(err, store.ErrFenced):
		return &apiError{status: http.StatusConflict, code: codeFenced, message: msg}
	case errors.Is(err, store.ErrStaleCommit):
		return &apiError{status: http.StatusConflict, code: codeStaleCommit, message: msg}
	case errors.Is(err, group.ErrKafkaGroup):
		return &apiError{status: http.StatusConflict, code: codeKafkaGroup, message: msg}
	case errors.Is(err, store.ErrGroupActive):
		return &apiError{status: http.StatusConflict, code: codeGroupActive, message: msg}
	case errors.Is(err, log.ErrTooLarge):
		return &apiError{status: http.StatusRequestEntityTooLarge, code: codeTooLarge, message: msg}
	case errors.Is(err, log.ErrRetryLimit):
		// The principal's fenced retries on the topic expire within store.FenceHorizon.
		return &apiError{status: http.StatusTooManyRequests, code: codeRateLimited, message: msg,
			header: map[string]string{"Retry-After": retryLimitAfter}}
	case errors.Is(err, log.ErrIdempotencyKeyReused):
		return &apiError{status: http.StatusUnprocessableEntity, code: codeIdempotencyReused, message: msg}
	case errors.Is(err, log.ErrUnavailable), errors.Is(err, store.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		// The cause (a backend's message) is logged, not shown.
		return &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable, message: "temporarily unavailable, nothing was acknowledged; retry"}
	case errors.Is(err, context.Canceled):
		return &apiError{status: statusClientClosed, code: codeUnavailable, message: msg}
	}
	return &apiError{status: http.StatusInternalServerError, code: codeInternal, message: "internal error"}
}

// retryLimitAfter is the Retry-After of a producer retry refused at its principal's
// fence limit, in seconds: the principal's oldest fences expire within minutes.
const retryLimitAfter = "30"

// superseded says err is a producer request's attempt that another delivery of the
// request fenced, as the log or the store beneath it says.
func superseded(err error) bool {
	return errors.Is(err, log.ErrSuperseded) || errors.Is(err, store.ErrSuperseded)
}

// fail writes the answer for err, logging server-side failures.
func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	e := mapError(err)
	if r.Context().Err() != nil {
		e.status = statusClientClosed
	}
	if e.status == statusClientClosed {
		// Nobody is listening; record the status for Metrics only.
		w.WriteHeader(statusClientClosed)
		return
	}
	if e.status >= 500 {
		s.logger.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path,
			"status", e.status, "error", err)
	}
	writeError(w, e)
}

// retryAfter formats a wait as whole seconds, at least 1.
func retryAfter(seconds float64) string {
	n := int64(seconds)
	if float64(n) < seconds {
		n++
	}
	return strconv.FormatInt(max(n, 1), 10)
}
