package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// BodyReadLimit bounds how long a request body may take to arrive, so a client that
// sends a request's head and then its body slowly, or never, cannot hold a
// connection's handler (or, for an append, its share of the in-flight bound) for long:
// a body that stops arriving for Idle, or is not whole after Total from the start of
// the request's handling, is answered 408 (code unavailable: nothing was read into the
// log, the request may be sent again) and the connection is closed. A body held in
// memory (the api function on Lambda, tests) is not bound. Zero takes the default;
// negative is no bound.
type BodyReadLimit struct {
	Idle  time.Duration
	Total time.Duration
}

// Defaults of BodyReadLimit: a body may pause 10 s between bytes, and take 30 s in
// all (as long as NewServer's ReadTimeout gives a whole request).
const (
	DefaultBodyIdle  = 10 * time.Second
	DefaultBodyTotal = 30 * time.Second
)

func (l BodyReadLimit) withDefaults() BodyReadLimit {
	if l.Idle == 0 {
		l.Idle = DefaultBodyIdle
	}
	if l.Total == 0 {
		l.Total = DefaultBodyTotal
	}
	return l
}

// bodyReader is a request body that sets the connection's read deadline before each
// read (Idle from now, at most Total from start), answers a missed deadline with a
// 408, and, once an append counts it (countBody), holds each chunk against the
// in-flight bounds as it arrives. Its errors are sticky; those it makes are *apiError.
type bodyReader struct {
	body    io.ReadCloser
	rc      *http.ResponseController
	limit   BodyReadLimit
	start   time.Time
	timed   bool // the writer supports read deadlines
	hold    *inflightHold
	read    int64
	length  int64 // the declared Content-Length, -1 when none
	err     error
	cleared bool
}

// timeBody returns r with its body wrapped in a bodyReader when it has one. The
// wrapper goes on a shallow copy: net/http checks its own request's body type after the
// handler to close a connection whose body was cut short gracefully (FIN, then a
// pause), so a refusal sent before the whole body arrived reaches the client.
func timeBody(w http.ResponseWriter, r *http.Request, limit BodyReadLimit, now time.Time) *http.Request {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return r
	}
	r2 := r.WithContext(r.Context())
	r2.Body = &bodyReader{body: r.Body, rc: http.NewResponseController(w), limit: limit, start: now, timed: true, length: r.ContentLength}
	return r2
}

// countBody makes the append's body hold what arrives of it against h.
func countBody(r *http.Request, h *inflightHold) {
	if b, ok := r.Body.(*bodyReader); ok {
		b.hold = h
	}
}

func (b *bodyReader) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.timed {
		if err := b.rc.SetReadDeadline(b.deadline(time.Now())); errors.Is(err, http.ErrNotSupported) {
			b.timed = false
		}
	}
	n, err := b.body.Read(p)
	b.read += int64(n)
	if n > 0 && b.hold != nil {
		if e := b.hold.grow(int64(n)); e != nil {
			// The rest of the body is not read: the connection closes after the answer
			// (net/http would otherwise wait for a short rest before answering).
			e.header["Connection"] = "close"
			b.err = e
			return 0, e
		}
	}
	switch {
	case err == io.EOF && b.timed && !b.cleared:
		// The whole body is in: the connection waits for the next request without a
		// deadline of this one's (which, passing while the handler works, would read as
		// the client gone and cancel the request).
		b.cleared = true
		_ = b.rc.SetReadDeadline(time.Time{})
	case err != nil && err != io.EOF && errors.Is(err, os.ErrDeadlineExceeded):
		b.err = b.timeout()
		return n, b.err
	}
	return n, err
}

// deadline is the read deadline of a read at now: Idle from now, at most Total from
// start; zero (none) for a bound that is off.
func (b *bodyReader) deadline(now time.Time) time.Time {
	var d time.Time
	if b.limit.Idle > 0 {
		d = now.Add(b.limit.Idle)
	}
	if b.limit.Total > 0 {
		if end := b.start.Add(b.limit.Total); d.IsZero() || end.Before(d) {
			d = end
		}
	}
	return d
}

func (b *bodyReader) timeout() *apiError {
	of := ""
	if b.length >= 0 {
		of = fmt.Sprintf(" of %d", b.length)
	}
	return &apiError{status: http.StatusRequestTimeout, code: codeUnavailable,
		message: fmt.Sprintf("the request body did not arrive in time (%d bytes%s received; a body may pause at most %s and take at most %s); nothing was done, send it again",
			b.read, of, b.limit.Idle, b.limit.Total),
		header: map[string]string{"Connection": "close"}}
}

func (b *bodyReader) Close() error { return b.body.Close() }
