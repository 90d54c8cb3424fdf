// Package console serves Strata's web console: one static page (HTML, CSS, an SVG icon
// and a small script, no framework) that reads and acts on the HTTP API from the
// browser. Each refresh is one request, GET /v1/summary, whatever the number of topics
// and groups: topics (a summary row each, opened onto its partitions) with create,
// alter (partitions, retention, pin) and delete (typed confirmation); groups with their
// state, settings, members and what they hold, lag in records and seconds, time to
// data loss, the lag history as an SVG chart, offset resets (earliest, latest, a time,
// an offset, a shift) planned per partition, parked keys with their records and
// errors, release and what became of it, and delete; and the messages of a partition
// from an offset or a time with paging both ways, a key searched server-side, values
// as text, pretty JSON or hex, a copy of a record, and a follow that long-polls. Every
// action shows its plan in a confirm step first and is offered only where the token's
// grants allow it; the server checks each call again. It holds no data and needs no
// credentials: the page calls the API with the token the user gives it, so it works
// with `--auth` the way every other client does.
package console

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed static
var static embed.FS

// Prefix is the path the console is served under.
const Prefix = "/console/"

// Handler serves the console's files under Prefix (GET only). The page reaches the API
// on the same origin.
func Handler() http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.StripPrefix(Prefix, http.FileServer(http.FS(sub)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The page may not be framed (clickjacking): frame-ancestors for current
		// browsers, X-Frame-Options for the rest. Nothing of it is kept (no-store): a
		// shared machine's cache holds no copy of a session.
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		files.ServeHTTP(noStore{w}, r)
	})
}

// noStore sets Cache-Control: no-store as the answer's head is written: the file
// server removes the header from its error answers (a missing file's 404).
type noStore struct{ http.ResponseWriter }

func (w noStore) WriteHeader(code int) {
	w.Header().Set("Cache-Control", "no-store")
	w.ResponseWriter.WriteHeader(code)
}

func (w noStore) Write(b []byte) (int, error) {
	w.Header().Set("Cache-Control", "no-store")
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w noStore) Unwrap() http.ResponseWriter { return w.ResponseWriter }
