package httpapi

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// scanAll feeds data to a new framer a byte at a time and returns the bytes it
// accepted, its refusal, and the offsets where a request ended.
func scanAll(data []byte) (int, error, []int) {
	var f framer
	var ends []int
	accepted := 0
	for i := range data {
		n, err := f.scan(data[i : i+1])
		accepted += n
		if err != nil {
			return accepted, err, ends
		}
		if f.state == inHead && f.lineNo == 0 && len(f.line) == 0 && !f.cr {
			ends = append(ends, i+1)
		}
	}
	return accepted, nil, ends
}

// scanCut feeds data in the pieces cut at the offsets and returns the bytes accepted
// and the refusal.
func scanCut(data []byte, cuts []int) (int, error) {
	var f framer
	accepted, from := 0, 0
	for _, c := range append(cuts, len(data)) {
		c = min(max(c, from), len(data))
		n, err := f.scan(data[from:c])
		accepted += n
		if err != nil {
			return accepted, err
		}
		from = c
	}
	return accepted, nil
}

// TestFramer: the framer passes what net/http frames (Content-Length and chunked
// bodies, chunk extensions, trailers, HTTP/1.0 ignoring Transfer-Encoding, requests
// one after another on a connection) and refuses, at the first bad byte, a folded
// header or trailer line, a bare LF or CR, and framing it cannot follow as net/http
// would.
func TestFramer(t *testing.T) {
	const get = "GET /v1/topics HTTP/1.1\r\nHost: x\r\n\r\n"
	for _, tc := range []struct {
		name, data string
		bad        string // the first refused byte's prefix of data ("" when all pass)
		why        string
	}{
		{"get", get, "", ""},
		{"two gets", get + get, "", ""},
		{"content-length", "POST /a HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello" + get, "", ""},
		{"body holds what looks like a fold", "POST /a HTTP/1.1\r\nContent-Length: 6\r\n\r\n\n a\rb\n" + get, "", ""},
		{"repeated equal lengths", "POST /a HTTP/1.1\r\ncontent-length: 2\r\nContent-Length:  2 \r\n\r\nab" + get, "", ""},
		{"chunked", "POST /a HTTP/1.1\r\nTransfer-Encoding: Chunked\r\nContent-Length: 99\r\n\r\n3;ext=1\r\nabc\r\nA \r\n0123456789\r\n0\r\nX-T: v\r\n\r\n" + get, "", ""},
		{"http/1.0 ignores transfer-encoding", "POST /a HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc" + get, "", ""},
		{"folded header", get[:25] + "X: a\r\n b\r\n\r\n", get[:25] + "X: a\r\n", "folded"},
		{"folded with a tab", get[:25] + "X: a\r\n\tb\r\n\r\n", get[:25] + "X: a\r\n", "folded"},
		{"bare LF in the request line", "GET / HTTP/1.1\nHost: x\r\n\r\n", "GET / HTTP/1.1", "bare LF"},
		{"bare LF ending the head", "GET / HTTP/1.1\r\nHost: x\r\n\n", "GET / HTTP/1.1\r\nHost: x\r\n", "bare LF"},
		{"bare CR", "GET / HTTP/1.1\r\nHost: x\ry\r\n\r\n", "GET / HTTP/1.1\r\nHost: x\r", "CR not followed"},
		{"fold in the second request", get + get[:25] + "X: a\r\n b\r\n\r\n", get + get[:25] + "X: a\r\n", "folded"},
		{"folded trailer", "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\nX: a\r\n b\r\n\r\n", "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\nX: a\r\n", "folded"},
		{"bare LF in a chunk line", "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\na\r\n0\r\n\r\n", "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1", "bare LF"},
		{"chunk data without CRLF", "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n", "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na", "CRLF"},
		{"bad chunk size", "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1 ;x\r\n", "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1 ;x\r", "chunk-size"},
		{"gzip transfer-encoding", "POST /a HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", "POST /a HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r", "Transfer-Encoding"},
		{"two transfer-encodings", "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r", "Transfer-Encoding"},
		{"different lengths", "POST /a HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", "POST /a HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r", "twice"},
		{"signed length", "POST /a HTTP/1.1\r\nContent-Length: +1\r\n\r\n", "POST /a HTTP/1.1\r\nContent-Length: +1\r\n\r", "Content-Length"},
		{"empty request line", "\r\nGET / HTTP/1.1\r\n\r\n", "\r", "request line"},
		{"no version", "GET /\r\n\r\n", "GET /\r", "request line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(tc.data)
			for _, cuts := range [][]int{nil, {1}, {len(data) / 2}, {3, 7, 11, 40, 41}} {
				n, err := scanCut(data, cuts)
				if tc.bad == "" {
					if err != nil || n != len(data) {
						t.Fatalf("cut at %v: accepted %d of %d: %v", cuts, n, len(data), err)
					}
					continue
				}
				if !errors.Is(err, ErrMalformedHTTP) || !strings.Contains(err.Error(), tc.why) || n != len(tc.bad) {
					t.Fatalf("cut at %v: accepted %d (want %d) with %v, want a refusal saying %q", cuts, n, len(tc.bad), err, tc.why)
				}
			}
		})
	}
}

// TestFramerFollowsWrittenRequests: requests net/http's client writes (bodies of
// known and unknown length, that is chunked, and trailers) pass whole, and the framer
// finds each request's end where net/http's reader does.
func TestFramerFollowsWrittenRequests(t *testing.T) {
	var buf bytes.Buffer
	for i, body := range []string{"", "x", strings.Repeat("ab\r\n \n", 5000)} {
		for _, chunked := range []bool{false, true} {
			req, _ := http.NewRequest("POST", "http://localhost/v1/topics/t/records?x=1", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			if chunked {
				req.ContentLength = -1
				req.TransferEncoding = []string{"chunked"}
				req.Trailer = http.Header{"X-Sum": {string(rune('a' + i))}}
			}
			if err := req.Write(&buf); err != nil {
				t.Fatal(err)
			}
		}
	}
	data := buf.Bytes()
	n, err, ends := scanAll(data)
	if err != nil || n != len(data) {
		t.Fatalf("accepted %d of %d: %v", n, len(data), err)
	}
	if got, want := ends, goRequestEnds(data); !equalInts(got, want) || len(want) != 6 {
		t.Fatalf("request ends %v, net/http's %v", got, want)
	}
}

// goRequestEnds is where net/http's request reader ends each request of data it reads
// whole (head and body), until the first it cannot.
func goRequestEnds(data []byte) []int {
	r := bytes.NewReader(data)
	br := bufio.NewReader(r)
	var ends []int
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return ends
		}
		_, err = io.Copy(io.Discard, req.Body)
		if err != nil {
			return ends
		}
		ends = append(ends, len(data)-r.Len()-br.Buffered())
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// FuzzFramer: for any stream, however it is cut into reads, the framer accepts the same
// bytes and refuses alike; and every request net/http's reader reads whole from what it
// accepted ends where the framer found a request's end, so the two never disagree on
// where a head starts (a body read as a head, or a head skipped as a body).
func FuzzFramer(f *testing.F) {
	for _, s := range []string{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\n\r\n",
		"POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;e\r\nabc\r\n0\r\nT: v\r\n\r\nGET / HTTP/1.1\r\n\r\n",
		"POST /a HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\nabGET / HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n",
		"GET / HTTP/1.1\nHost: x\n\n",
	} {
		f.Add([]byte(s), uint16(5), uint16(17))
	}
	f.Fuzz(func(t *testing.T, data []byte, c1, c2 uint16) {
		n, err, ends := scanAll(data)
		n2, err2 := scanCut(data, []int{int(c1) % (len(data) + 1), int(c2) % (len(data) + 1)})
		if n != n2 || (err == nil) != (err2 == nil) {
			t.Fatalf("byte by byte: %d %v; cut at %d, %d: %d %v", n, err, c1, c2, n2, err2)
		}
		if err != nil && !errors.Is(err, ErrMalformedHTTP) {
			t.Fatalf("refusal %v is not ErrMalformedHTTP", err)
		}
		if n > len(data) {
			t.Fatalf("accepted %d of %d bytes", n, len(data))
		}
		fr := map[int]bool{}
		for _, e := range ends {
			fr[e] = true
		}
		for _, e := range goRequestEnds(data[:n]) {
			if !fr[e] {
				t.Fatalf("net/http ends a request at %d, the framer at %v:\n%q", e, ends, data[:n])
			}
		}
	})
}

// BenchmarkFramer: the framer's cost on a kept-alive connection's appends (a head of
// the SDK's headers and a 64 KiB body each), per request, read in 4 KiB pieces as
// net/http's buffer reads them.
func BenchmarkFramer(b *testing.B) {
	head := "POST /v1/topics/orders/records HTTP/1.1\r\nHost: 127.0.0.1:4580\r\nUser-Agent: strata-go\r\n" +
		"Content-Type: application/vnd.strata.blocks\r\nAccept: application/vnd.strata.blocks\r\nIdempotency-Key: 01JDQ3Z7W2V8X9Y0A1B2C3D4E5.7\r\n" +
		"Strata-Idempotency: producer\r\nStrata-Attempt: 0\r\nContent-Length: 65536\r\nAccept-Encoding: gzip\r\n\r\n"
	req := append([]byte(head), make([]byte, 64<<10)...)
	var f framer
	b.SetBytes(int64(len(req)))
	for b.Loop() {
		for i := 0; i < len(req); i += 4096 {
			if _, err := f.scan(req[i:min(i+4096, len(req))]); err != nil {
				b.Fatal(err)
			}
		}
	}
}
