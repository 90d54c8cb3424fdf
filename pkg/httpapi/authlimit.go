package httpapi

import (
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// AuthFailureLimit slows down wrong credentials: each credential presented (keyed by
// its SHA-256) and each client address may fail FailuresBurst times at once, refilled
// at FailuresPerSecond; beyond that a wrong credential is 429 instead of 401 until the
// bucket refills. Only failures are limited: a valid token is looked up first and
// always answered, whatever its address's failures, so a guesser or a misconfigured
// client on the same host never locks valid callers out. (Tokens carry at least 128
// bits, MinTokenLength, so guessing one is hopeless at any rate; the limit keeps a
// client that repeats a wrong credential from hammering the server.) The zero value
// takes the defaults; a negative FailuresPerSecond turns the limit off.
type AuthFailureLimit struct {
	FailuresPerSecond float64
	FailuresBurst     int
	// MaxClients bounds the credentials and addresses remembered (memory); when full,
	// those whose bucket has refilled are forgotten first.
	MaxClients int
}

// Defaults of AuthFailureLimit.
const (
	DefaultAuthFailuresPerSecond = 1
	DefaultAuthFailuresBurst     = 20
	DefaultAuthFailureClients    = 4096
)

// failLimiter holds the failure bucket of each key (a client address, or a
// credential's hash) that failed recently.
type failLimiter struct {
	cfg AuthFailureLimit
	mu  sync.Mutex
	by  map[string]*rate.Limiter
}

func newFailLimiter(cfg AuthFailureLimit) *failLimiter {
	if cfg.FailuresPerSecond < 0 {
		return nil
	}
	if cfg.FailuresPerSecond == 0 {
		cfg.FailuresPerSecond = DefaultAuthFailuresPerSecond
	}
	if cfg.FailuresBurst <= 0 {
		cfg.FailuresBurst = DefaultAuthFailuresBurst
	}
	if cfg.MaxClients <= 0 {
		cfg.MaxClients = DefaultAuthFailureClients
	}
	return &failLimiter{cfg: cfg, by: map[string]*rate.Limiter{}}
}

// clientOf is the key of a request's client: its remote IP address.
func clientOf(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}

// blocked returns a 429 when client has no failures left at now; what names the key
// in the message ("this address", "this credential").
func (f *failLimiter) blocked(client, what string, now time.Time) *apiError {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	l := f.by[client]
	var tokens float64
	if l != nil {
		tokens = l.TokensAt(now)
	}
	f.mu.Unlock()
	if l == nil || tokens >= 1 {
		return nil
	}
	wait := time.Duration((1 - tokens) / f.cfg.FailuresPerSecond * float64(time.Second))
	return &apiError{status: http.StatusTooManyRequests, code: codeRateLimited,
		message: fmt.Sprintf("too many failed authentications with %s; retry in %s", what, wait.Round(time.Millisecond)),
		details: map[string]any{"retry_after_ms": wait.Milliseconds()},
		header:  map[string]string{"Retry-After": retryAfter(wait.Seconds())}}
}

// fail spends one failure of client at now.
func (f *failLimiter) fail(client string, now time.Time) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.by[client]
	if !ok {
		if len(f.by) >= f.cfg.MaxClients {
			f.evict(now)
		}
		l = rate.NewLimiter(rate.Limit(f.cfg.FailuresPerSecond), f.cfg.FailuresBurst)
		f.by[client] = l
	}
	l.AllowN(now, 1)
}

// evict forgets the clients whose bucket has refilled, or one client if none has, so
// the map never grows past MaxClients. f.mu is held.
func (f *failLimiter) evict(now time.Time) {
	for k, l := range f.by {
		if l.TokensAt(now) >= float64(f.cfg.FailuresBurst) {
			delete(f.by, k)
		}
	}
	for k := range f.by {
		if len(f.by) < f.cfg.MaxClients {
			return
		}
		delete(f.by, k)
	}
}

// size is the number of clients remembered (tests).
func (f *failLimiter) size() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.by)
}
