package runtime

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// accessLog writes one line per request to w: time, method, path, status, response
// bytes and duration. It logs the path alone — no query, no header — so no token or
// other secret reaches the log.
func accessLog(next http.Handler, w io.Writer, now func() time.Time) http.Handler {
	var mu sync.Mutex
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		start := now()
		cw := &countingWriter{ResponseWriter: rw}
		defer func() {
			status := cw.status
			if status == 0 {
				status = http.StatusOK
			}
			line := fmt.Sprintf("%s %s %s %d %dB %s\n", start.UTC().Format(time.RFC3339), r.Method, r.URL.EscapedPath(),
				status, cw.bytes, now().Sub(start).Round(time.Microsecond))
			mu.Lock()
			defer mu.Unlock()
			_, _ = io.WriteString(w, line)
		}()
		next.ServeHTTP(cw, r)
	})
}

// countingWriter remembers the status and counts the body bytes written.
type countingWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *countingWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *countingWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer (long polls flush).
func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
