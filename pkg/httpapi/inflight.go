package httpapi

import (
	"fmt"
	"net/http"
	"sync"
)

// InflightLimit bounds the append body bytes a server handles at once, in total and
// per principal. An append holds its body's bytes as they arrive, from the first read
// until its answer, so a connection that declares a large body and sends it slowly, or
// never, holds only what it sent (and BodyReadLimit ends it); one whose next bytes
// would go beyond a bound is answered at once, the rest of its body unread: 503 when
// the server is full, 429 when its principal is, both with Retry-After. An append
// costs about five times its body in memory while it is handled (decoding, records,
// the segment), so the defaults keep a node well under 1 GiB. Zero takes the default;
// negative is no bound.
type InflightLimit struct {
	ServerBytes    int64
	PrincipalBytes int64
}

// Defaults of InflightLimit: eight full-size appends at once per server, four per
// principal.
const (
	DefaultInflightServerBytes    = 8 * MaxAppendBody
	DefaultInflightPrincipalBytes = 4 * MaxAppendBody
)

// inflightRetryAfter is the Retry-After of a refused append, in seconds: appends are
// handled in well under a second, so a slot is usually free by then.
const inflightRetryAfter = "1"

type inflight struct {
	server, principal int64
	mu                sync.Mutex
	total             int64
	by                map[string]int64
}

func newInflight(cfg InflightLimit) *inflight {
	if cfg.ServerBytes == 0 {
		cfg.ServerBytes = DefaultInflightServerBytes
	}
	if cfg.PrincipalBytes == 0 {
		cfg.PrincipalBytes = DefaultInflightPrincipalBytes
	}
	return &inflight{server: cfg.ServerBytes, principal: cfg.PrincipalBytes, by: map[string]int64{}}
}

// inflightHold is what one append holds: nothing until its body arrives.
type inflightHold struct {
	f         *inflight
	principal string
	mu        sync.Mutex
	n         int64
	released  bool
}

// hold starts the holding of one append of principal.
func (f *inflight) hold(principal string) *inflightHold {
	return &inflightHold{f: f, principal: principal}
}

// grow holds n more bytes, or holds no more and returns the refusal. An append larger
// than a bound on its own is still admitted when nothing else holds bytes there, so
// every valid request can run.
func (h *inflightHold) grow(n int64) *apiError {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		return nil
	}
	f := h.f
	f.mu.Lock()
	defer f.mu.Unlock()
	held := f.by[h.principal]
	switch {
	case f.server > 0 && f.total > h.n && f.total+n > f.server:
		return &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable,
			message: fmt.Sprintf("the server is handling %d bytes of appends, at most %d; retry", f.total, f.server),
			header:  map[string]string{"Retry-After": inflightRetryAfter}}
	case f.principal > 0 && held > h.n && held+n > f.principal:
		return &apiError{status: http.StatusTooManyRequests, code: codeRateLimited,
			message: fmt.Sprintf("this principal has %d bytes of appends in flight, at most %d; retry", held, f.principal),
			details: map[string]any{"retry_after_ms": 1000},
			header:  map[string]string{"Retry-After": inflightRetryAfter}}
	}
	f.total += n
	f.by[h.principal] = held + n
	h.n += n
	return nil
}

// release gives back what h holds; later grows hold nothing.
func (h *inflightHold) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		return
	}
	h.released = true
	f := h.f
	f.mu.Lock()
	defer f.mu.Unlock()
	f.total -= h.n
	if f.by[h.principal] -= h.n; f.by[h.principal] <= 0 {
		delete(f.by, h.principal)
	}
	h.n = 0
}
