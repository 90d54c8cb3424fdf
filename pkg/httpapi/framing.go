package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
)

// StrictListener wraps ln so that its connections refuse the HTTP/1.1 a strict
// reader refuses and Go's net/http server accepts: a header (or trailer) line folded
// onto the previous one (obs-fold: a line starting with a space or a tab, which Go
// joins into the previous value), a line ending in a bare LF instead of CRLF, and a CR
// not followed by LF. Two readers that split such a request differently (a proxy in
// front, a log, a signature check) would see different headers; refusing it keeps
// them equal. It follows each connection's requests as net/http frames them (request
// line, header, a Content-Length or chunked body, trailer) and, at the first such
// line, fails the connection's read: net/http answers its plain-text 400 Bad Request
// and closes the connection. Bytes before that line reach the server as they came,
// so a well-formed request earlier on a kept-alive connection is answered (one still
// being handled when the refused one arrives pipelined behind it is cut short, as when
// its client goes away).
func StrictListener(ln net.Listener) net.Listener { return strictListener{ln} }

type strictListener struct{ net.Listener }

func (l strictListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &strictConn{Conn: c}, nil
}

// strictConn checks what it reads with its framer.
type strictConn struct {
	net.Conn
	mu  sync.Mutex
	f   framer
	err error // the refusal, returned from the read after the bytes before it
}

func (c *strictConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.Conn.Read(p)
	if n > 0 {
		if ok, ferr := c.f.scan(p[:n]); ferr != nil {
			c.err = ferr
			if ok == 0 {
				return 0, ferr
			}
			return ok, nil
		}
	}
	return n, err
}

// CloseWrite half-closes the connection when it can (net/http's graceful close of a
// connection whose request body was not read whole: FIN, a pause, then close, so the
// client reads the answer instead of a reset).
func (c *strictConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// ErrMalformedHTTP is the refusal of a request StrictListener does not pass.
var ErrMalformedHTTP = errors.New("httpapi: malformed HTTP/1.1")

// Framer states: where the next byte falls.
const (
	inHead       = iota // a request line or header line
	inBody              // Content-Length body bytes, remaining of them
	inChunkSize         // a chunk-size line
	inChunkData         // chunk data, remaining of them
	inChunkCR           // the CR after a chunk's data
	inChunkLF           // the LF after it
	inTrailer           // a trailer line
	framerFailed        // refused; nothing more is read
)

// maxFramerLine bounds the line a framer keeps (net/http refuses a header section
// over MaxHeaderBytes + 4 KiB before this is reached).
const maxFramerLine = 256 << 10

// framer follows a connection's stream of HTTP/1.1 requests byte by byte in heads and
// trailers and in bulk in bodies, framing them as net/http does: Transfer-Encoding
// (one, "chunked", from HTTP/1.1 on) before Content-Length (equal values when
// repeated, decimal digits), else no body. Its zero value expects a request line.
type framer struct {
	state     int
	remaining int64  // body or chunk bytes left
	line      []byte // the current line, without its CR
	cr        bool   // the previous byte was a CR
	lineNo    int    // lines of the current head (0: the request line is next)
	proto11   bool   // the request is HTTP/1.1 or later
	length    string // its Content-Length value ("" when none)
	lengths   int    // Content-Length lines
	te        []string
	err       error
}

// scan checks p, the next bytes of the stream: it returns len(p), nil when all are
// well-formed so far, else the count of bytes before the first refused one and the
// refusal (and refuses everything after).
func (f *framer) scan(p []byte) (int, error) {
	i := 0
	for i < len(p) {
		switch f.state {
		case framerFailed:
			return 0, f.err
		case inBody, inChunkData:
			n := int64(len(p) - i)
			if n > f.remaining {
				n = f.remaining
			}
			i += int(n)
			f.remaining -= n
			if f.remaining == 0 {
				if f.state == inBody {
					f.startHead()
				} else {
					f.state = inChunkCR
				}
			}
		case inChunkCR, inChunkLF:
			want := byte('\r')
			if f.state == inChunkLF {
				want = '\n'
			}
			if p[i] != want {
				return i, f.fail("a chunk's data is not followed by CRLF")
			}
			i++
			if f.state == inChunkCR {
				f.state = inChunkLF
			} else {
				f.state = inChunkSize
			}
		default: // a line: inHead, inChunkSize, inTrailer
			b := p[i]
			switch {
			case f.cr && b != '\n':
				return i, f.fail("a CR not followed by LF")
			case b == '\n' && !f.cr:
				return i, f.fail("a line ends with a bare LF, not CRLF")
			case b == '\n':
				f.cr = false
				if err := f.endLine(); err != nil {
					return i, err
				}
			case b == '\r':
				f.cr = true
			default:
				if len(f.line) == 0 && (b == ' ' || b == '\t') && f.state != inChunkSize {
					return i, f.fail("a header line starts with a space or a tab (a folded line, obs-fold)")
				}
				if len(f.line) >= maxFramerLine {
					return i, f.fail("a line longer than %d bytes", maxFramerLine)
				}
				f.line = append(f.line, b)
			}
			i++
		}
	}
	return len(p), nil
}

func (f *framer) fail(format string, args ...any) error {
	f.state = framerFailed
	f.err = fmt.Errorf("%w: %s", ErrMalformedHTTP, fmt.Sprintf(format, args...))
	return f.err
}

// startHead expects the next request's line.
func (f *framer) startHead() {
	*f = framer{line: f.line[:0]}
}

// endLine handles the line just ended (f.line, without its CRLF).
func (f *framer) endLine() error {
	line := f.line
	f.line = f.line[:0]
	switch f.state {
	case inChunkSize:
		size, ok := chunkSize(line)
		if !ok {
			return f.fail("a bad chunk-size line %q", truncate(line))
		}
		if size == 0 {
			f.state = inTrailer
		} else {
			f.state, f.remaining = inChunkData, size
		}
		return nil
	case inTrailer:
		if len(line) == 0 {
			f.startHead()
		}
		return nil
	}
	if f.lineNo == 0 {
		if len(line) == 0 {
			return f.fail("an empty line where a request line belongs")
		}
		// net/http: METHOD SP URI SP PROTO, PROTO "HTTP/" major "." minor.
		_, rest, ok1 := bytes.Cut(line, []byte(" "))
		_, proto, ok2 := bytes.Cut(rest, []byte(" "))
		major, minor, ok3 := httpVersion(proto)
		if !ok1 || !ok2 || !ok3 {
			return f.fail("a bad request line %q", truncate(line))
		}
		f.proto11 = major > 1 || (major == 1 && minor >= 1)
		f.lineNo++
		return nil
	}
	if len(line) > 0 {
		f.lineNo++
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.Trim(value, " \t")
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			v := string(value)
			if f.lengths > 0 && v != f.length {
				return f.fail("Content-Length given twice with different values")
			}
			f.length, f.lengths = v, f.lengths+1
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			f.te = append(f.te, string(value))
		}
		return nil
	}
	// The end of the head: frame the body as net/http does.
	var n int64
	if f.lengths > 0 {
		v, err := strconv.ParseUint(f.length, 10, 63)
		if err != nil {
			return f.fail("a bad Content-Length %q", f.length)
		}
		n = int64(v)
	}
	if f.proto11 && len(f.te) > 0 {
		if len(f.te) != 1 || !bytes.EqualFold([]byte(f.te[0]), []byte("chunked")) {
			return f.fail("a Transfer-Encoding other than one chunked")
		}
		f.state = inChunkSize
		return nil
	}
	if n == 0 {
		f.startHead()
		return nil
	}
	f.state, f.remaining = inBody, n
	return nil
}

// httpVersion parses "HTTP/M.m" (one digit each), as net/http does.
func httpVersion(p []byte) (major, minor int, ok bool) {
	if len(p) != 8 || string(p[:5]) != "HTTP/" || p[6] != '.' || p[5] < '0' || p[5] > '9' || p[7] < '0' || p[7] > '9' {
		return 0, 0, false
	}
	return int(p[5] - '0'), int(p[7] - '0'), true
}

// chunkSize parses a chunk-size line as net/http does: trailing spaces and tabs and an
// extension after ';' dropped, then 1–16 hex digits.
func chunkSize(line []byte) (int64, bool) {
	line = bytes.TrimRight(line, " \t")
	line, _, _ = bytes.Cut(line, []byte(";"))
	if len(line) == 0 || len(line) > 16 {
		return 0, false
	}
	var n uint64
	for _, b := range line {
		var d byte
		switch {
		case b >= '0' && b <= '9':
			d = b - '0'
		case b >= 'a' && b <= 'f':
			d = b - 'a' + 10
		case b >= 'A' && b <= 'F':
			d = b - 'A' + 10
		default:
			return 0, false
		}
		n = n<<4 | uint64(d)
	}
	if n > 1<<62 {
		return 0, false
	}
	return int64(n), true
}

func truncate(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}
