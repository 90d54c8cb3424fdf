package httpapi

import (
	"fmt"
	"net/http"
	"sync"
)

// InflightLimit bounds the append body bytes a server handles at once, in total and
// per principal. Each append holds its Content-Length (MaxAppendBody when the length
// is not declared) from before its body is read until its answer; one that would go
// beyond a bound is answered at once, its body unread: 503 when the server is full,
// 429 when its principal is, both with Retry-After. An append costs about five times
// its body in memory while it is handled (decoding, records, the segment), so the
// defaults keep a node well under 1 GiB. Zero takes the default; negative is no bound.
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

// acquire holds n bytes for principal, or holds nothing and returns the refusal. A
// request larger than a bound on its own is still admitted when nothing else holds
// bytes there, so every valid request can run.
func (f *inflight) acquire(principal string, n int64) (release func(), e *apiError) {
	f.mu.Lock()
	defer f.mu.Unlock()
	held := f.by[principal]
	switch {
	case f.server > 0 && f.total > 0 && f.total+n > f.server:
		return nil, &apiError{status: http.StatusServiceUnavailable, code: codeUnavailable,
			message: fmt.Sprintf("the server is handling %d bytes of appends, at most %d; retry", f.total, f.server),
			header:  map[string]string{"Retry-After": inflightRetryAfter}}
	case f.principal > 0 && held > 0 && held+n > f.principal:
		return nil, &apiError{status: http.StatusTooManyRequests, code: codeRateLimited,
			message: fmt.Sprintf("this principal has %d bytes of appends in flight, at most %d; retry", held, f.principal),
			details: map[string]any{"retry_after_ms": 1000},
			header:  map[string]string{"Retry-After": inflightRetryAfter}}
	}
	f.total += n
	f.by[principal] = held + n
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.total -= n
			if f.by[principal] -= n; f.by[principal] == 0 {
				delete(f.by, principal)
			}
		})
	}, nil
}
