package httpapi

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Quota is the per-principal produce quota: token buckets on append requests and on
// appended record bytes (key + value + headers, decoded). A zero rate imposes no limit
// on that dimension. When auth is off every caller is the same (anonymous) principal.
type Quota struct {
	// RequestsPerSecond refills the request bucket, which holds RequestBurst (at least 1).
	RequestsPerSecond float64
	RequestBurst      int
	// BytesPerSecond refills the byte bucket, which holds BytesBurst (at least the
	// largest request, 6 MiB, when smaller; a request never needs more than the bucket).
	BytesPerSecond float64
	BytesBurst     int
}

// quotas holds each principal's buckets, created on first use.
type quotas struct {
	cfg Quota
	mu  sync.Mutex
	by  map[string]*buckets
}

type buckets struct {
	requests *rate.Limiter // nil when unlimited
	bytes    *rate.Limiter
}

func newQuotas(cfg Quota) *quotas {
	if cfg.RequestsPerSecond > 0 && cfg.RequestBurst < 1 {
		cfg.RequestBurst = 1
	}
	if cfg.BytesPerSecond > 0 && cfg.BytesBurst < 1 {
		cfg.BytesBurst = 6 << 20
	}
	return &quotas{cfg: cfg, by: map[string]*buckets{}}
}

func (q *quotas) enabled() bool { return q.cfg.RequestsPerSecond > 0 || q.cfg.BytesPerSecond > 0 }

func (q *quotas) get(principal string) *buckets {
	q.mu.Lock()
	defer q.mu.Unlock()
	b, ok := q.by[principal]
	if !ok {
		b = &buckets{}
		if q.cfg.RequestsPerSecond > 0 {
			b.requests = rate.NewLimiter(rate.Limit(q.cfg.RequestsPerSecond), q.cfg.RequestBurst)
		}
		if q.cfg.BytesPerSecond > 0 {
			b.bytes = rate.NewLimiter(rate.Limit(q.cfg.BytesPerSecond), q.cfg.BytesBurst)
		}
		q.by[principal] = b
	}
	return b
}

// take spends one request and n bytes of principal's quota at now, or spends nothing
// and returns a 429 saying when to retry.
func (q *quotas) take(principal string, n int, now time.Time) *apiError {
	if !q.enabled() {
		return nil
	}
	b := q.get(principal)
	var wait time.Duration
	var held []*rate.Reservation
	reserve := func(l *rate.Limiter, n int) {
		if l == nil {
			return
		}
		r := l.ReserveN(now, min(n, l.Burst()))
		held = append(held, r)
		if d := r.DelayFrom(now); d > wait {
			wait = d
		}
	}
	reserve(b.requests, 1)
	reserve(b.bytes, n)
	if wait == 0 {
		return nil
	}
	for _, r := range held {
		r.CancelAt(now)
	}
	return &apiError{status: http.StatusTooManyRequests, code: codeRateLimited,
		message: fmt.Sprintf("produce quota exceeded; retry in %s", wait.Round(time.Millisecond)),
		details: map[string]any{"retry_after_ms": wait.Milliseconds()},
		header:  map[string]string{"Retry-After": retryAfter(wait.Seconds())}}
}
