package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/stratalog/strata/pkg/wire"
)

// decodeBody decodes the request body as exactly one JSON value into v (decodeStrict:
// names matched exactly, no null, no member twice, no unknown field, no trailing data).
// The body is cut at limit bytes before anything is decoded: a larger body is a 413.
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any) *apiError {
	if e := requireJSON(r); e != nil {
		return e
	}
	if r.ContentLength > limit {
		return tooLarge(limit)
	}
	b, err := readBody(w, r, limit)
	if err == nil {
		err = decodeStrict(b, v)
	}
	if err != nil {
		return bodyError(err, limit)
	}
	return nil
}

// requireJSON refuses a request whose Content-Type is not application/json with a 415.
// A browser sends a cross-site "simple" POST (text/plain, form types) without a
// preflight; requiring JSON (or the binary records type, which appendRecords checks
// first) keeps such a page from reaching any handler that changes something.
func requireJSON(r *http.Request) *apiError {
	ct := r.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err == nil && mt == "application/json" && len(r.Header.Values("Content-Type")) == 1 {
		return nil
	}
	if ct == "" {
		return unsupportedMedia("missing Content-Type: a request body must be application/json (or " + wire.ContentTypeBlocks + " for an append)")
	}
	return unsupportedMedia(fmt.Sprintf("Content-Type %q: a request body must be application/json (or %s for an append)", ct, wire.ContentTypeBlocks))
}

func unsupportedMedia(msg string) *apiError {
	return &apiError{status: http.StatusUnsupportedMediaType, code: codeUnsupportedMedia, message: msg}
}

// preallocBody is the largest declared body readBody makes room for before it
// arrives: beyond it the buffer grows with what arrives, so a head that declares a
// large body and sends none costs no memory.
const preallocBody = 64 << 10

// readBody reads the whole request body, cut at limit bytes (*http.MaxBytesError).
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	var buf bytes.Buffer
	if r.ContentLength > 0 && r.ContentLength <= min(limit, preallocBody) {
		buf.Grow(int(r.ContentLength))
	}
	_, err := buf.ReadFrom(r.Body)
	return buf.Bytes(), err
}

func bodyError(err error, limit int64) *apiError {
	var mbe *http.MaxBytesError
	var ae *apiError // the body's own refusal: too slow, or past the in-flight bounds
	switch {
	case errors.As(err, &mbe):
		return tooLarge(limit)
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, io.EOF):
		return invalid("malformed JSON: empty body")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return invalid("malformed JSON: unexpected end of body")
	}
	var strict *strictError
	if errors.As(err, &strict) {
		return invalid(strict.msg)
	}
	if errors.Is(err, errTrailing) {
		return invalid("malformed JSON: data after the JSON value")
	}
	var jse *jsontext.SyntacticError
	if errors.As(err, &jse) {
		return invalid(fmt.Sprintf("malformed JSON at byte %d: %v", jse.ByteOffset, jse.Err))
	}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return invalid(fmt.Sprintf("malformed JSON at byte %d: %v", se.Offset, se))
	case errors.As(err, &te):
		if te.Field != "" {
			return invalid(fmt.Sprintf("field %q: expected %s, got JSON %s", te.Field, te.Type, te.Value))
		}
		return invalid(fmt.Sprintf("expected %s, got JSON %s", te.Type, te.Value))
	}
	// Unknown fields and the like: encoding/json's message names the field.
	return invalid("malformed JSON: " + err.Error())
}

func tooLarge(limit int64) *apiError {
	return &apiError{status: http.StatusRequestEntityTooLarge, code: codeTooLarge,
		message: fmt.Sprintf("request body larger than %d bytes", limit)}
}

// decodeBase64 decodes standard, padded base64 (RFC 4648 §4).
func decodeBase64(field, s string) ([]byte, *apiError) {
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return nil, invalid(fmt.Sprintf("%s: bad base64 (standard encoding, padded): %v", field, err))
	}
	return b, nil
}

// query is a parsed query string that refuses unknown and repeated parameters.
type query struct{ v url.Values }

func parseQuery(raw string, known ...string) (query, *apiError) {
	v, err := url.ParseQuery(raw)
	if err != nil {
		return query{}, invalid("malformed query string: " + err.Error())
	}
	allowed := make(map[string]bool, len(known))
	for _, k := range known {
		allowed[k] = true
	}
	for k, vs := range v {
		if !allowed[k] {
			return query{}, invalid(fmt.Sprintf("unknown query parameter %q", k))
		}
		if len(vs) > 1 {
			return query{}, invalid(fmt.Sprintf("query parameter %q given %d times", k, len(vs)))
		}
	}
	return query{v}, nil
}

// int64In returns the parameter's value, def when absent; a value that is not a decimal
// integer in [lo, hi] is a 400.
func (q query) int64In(name string, def, lo, hi int64) (int64, *apiError) {
	s, ok := q.v[name]
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(s[0], 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, invalid(fmt.Sprintf("%s must be an integer in [%d, %d], got %q", name, lo, hi, s[0]))
	}
	return n, nil
}

func (q query) has(name string) bool { _, ok := q.v[name]; return ok }

// partitionParam parses the {p} path segment; a range check against the topic is the
// log's.
func partitionParam(r *http.Request) (int32, *apiError) {
	s := r.PathValue("p")
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 0 {
		return 0, invalid(fmt.Sprintf("partition must be a non-negative integer, got %q", s))
	}
	return int32(n), nil
}

// firstError returns the first non-nil error.
func firstError(errs ...*apiError) *apiError {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
