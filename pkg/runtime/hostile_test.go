package runtime_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
)

// hostileCase is one request of the hostile table, written byte for byte on its own
// connection to the real server.
type hostileCase struct {
	name string
	// raw is the whole request; body, when set, is streamed after raw by a goroutine
	// (for bodies the server may stop reading).
	raw  string
	body func(w io.Writer)
	// halfClose closes the write side after raw, as a client that sent less than its
	// Content-Length and gave up.
	halfClose bool
	status    int
	// codes are the acceptable error codes; none means net/http's own plain answer
	// (not HTTP/1.1 at all), which docs/API.md lists as outside the contract.
	codes []string
}

func req(method, target, body string, headers ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n", method, target)
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	if body != "" || method == "POST" || method == "DELETE" {
		fmt.Fprintf(&b, "Content-Type: application/json\r\nContent-Length: %d\r\n", len(body))
	}
	b.WriteString("\r\n")
	b.WriteString(body)
	return b.String()
}

func hostileTable() []hostileCase {
	const (
		gp       = "/v1/groups/g/topics/t/partitions/0"
		invalid  = "invalid_request"
		tooLarge = "payload_too_large"
		notFound = "not_found"
	)
	v := `"dg=="`
	appendPath := "/v1/topics/t/records"
	rec := func(fields string) string { return `{"records": [{"value": ` + v + fields + `}]}` }
	big := strings.Repeat("A", (1<<20+2)/3*4+4) // 1 MiB + 5 bytes decoded
	many := `{"records": [` + strings.Repeat(`{"value": ""},`, 10_000) + `{"value": ""}]}`
	return []hostileCase{
		// Oversized.
		{name: "append Content-Length 10 MiB, body never sent", raw: "POST " + appendPath + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 10485760\r\n\r\n", status: 413, codes: []string{tooLarge}},
		{name: "append chunked body of 9.5 MiB", raw: "POST " + appendPath + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
			body: func(w io.Writer) {
				chunk := strings.Repeat(" ", 64<<10)
				for range 152 {
					if _, err := fmt.Fprintf(w, "%x\r\n%s\r\n", len(chunk), chunk); err != nil {
						return
					}
				}
				_, _ = io.WriteString(w, "0\r\n\r\n")
			}, status: 413, codes: []string{tooLarge}},
		{name: "create topic body over 64 KiB", raw: req("POST", "/v1/topics", `{"name": "x", "partitions": 1}`+strings.Repeat(" ", 64<<10)), status: 413, codes: []string{tooLarge}},
		{name: "lease body over 64 KiB", raw: req("POST", gp+"/lease", `{"member": "`+strings.Repeat("m", 70_000)+`"}`), status: 413, codes: []string{tooLarge}},
		{name: "record over 1 MiB", raw: req("POST", appendPath, `{"records": [{"value": "`+big+`"}]}`), status: 413, codes: []string{tooLarge}},
		{name: "10,001 records", raw: req("POST", appendPath, many), status: 413, codes: []string{tooLarge}},
		{name: "Expect: 100-continue with 1 GiB", raw: "POST " + appendPath + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: 1073741824\r\n\r\n", status: 413, codes: []string{tooLarge}},
		// Truncated.
		{name: "truncated JSON", raw: req("POST", appendPath, `{"records": [{"value": "dg=="`), status: 400, codes: []string{invalid}},
		{name: "body shorter than Content-Length", raw: "POST " + appendPath + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"records\": [", halfClose: true, status: 400, codes: []string{invalid}},
		{name: "empty body", raw: req("POST", appendPath, ""), status: 400, codes: []string{invalid}},
		{name: "bad chunked encoding", raw: "POST " + appendPath + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", status: 400, codes: []string{invalid}},
		// Wrong types.
		{name: "name a number", raw: req("POST", "/v1/topics", `{"name": 5, "partitions": 1}`), status: 400, codes: []string{invalid}},
		{name: "partitions a string", raw: req("POST", "/v1/topics", `{"name": "x", "partitions": "1"}`), status: 400, codes: []string{invalid}},
		{name: "records an object", raw: req("POST", appendPath, `{"records": {"value": "dg=="}}`), status: 400, codes: []string{invalid}},
		{name: "body an array", raw: req("POST", "/v1/topics", `[]`), status: 400, codes: []string{invalid}},
		{name: "null field", raw: req("POST", "/v1/topics", `{"name": "x", "partitions": 1, "retention_ms": null}`), status: 400, codes: []string{invalid}},
		{name: "field name in capitals", raw: req("POST", "/v1/topics", `{"NAME": "x", "partitions": 1}`), status: 400, codes: []string{invalid}},
		{name: "member twice", raw: req("POST", "/v1/topics", `{"name": "x", "name": "y", "partitions": 1}`), status: 400, codes: []string{invalid}},
		{name: "value not base64", raw: req("POST", appendPath, `{"records": [{"value": "not base64!"}]}`), status: 400, codes: []string{invalid}},
		{name: "value URL-safe base64", raw: req("POST", appendPath, `{"records": [{"value": "-_8="}]}`), status: 400, codes: []string{invalid}},
		{name: "value unpadded base64", raw: req("POST", appendPath, `{"records": [{"value": "dg"}]}`), status: 400, codes: []string{invalid}},
		{name: "empty header name", raw: req("POST", appendPath, rec(`, "headers": {"": "dg=="}`)), status: 400, codes: []string{invalid}},
		{name: "byte-order mark", raw: req("POST", "/v1/topics", "\ufeff"+`{"name": "x", "partitions": 1}`), status: 400, codes: []string{invalid}},
		{name: "nested 1M deep", raw: req("POST", appendPath, `{"records": `+strings.Repeat("[", 1<<20)), status: 400, codes: []string{invalid}},
		{name: "trailing data", raw: req("POST", "/v1/topics", `{"name": "x", "partitions": 1} {}`), status: 400, codes: []string{invalid}},
		// Huge numbers.
		{name: "partitions 1e400", raw: req("POST", "/v1/topics", `{"name": "x", "partitions": 1e400}`), status: 400, codes: []string{invalid}},
		{name: "partitions 2^64", raw: req("POST", "/v1/topics", `{"name": "x", "partitions": 18446744073709551616}`), status: 400, codes: []string{invalid}},
		{name: "retention_ms beyond int64", raw: req("POST", "/v1/topics", `{"name": "x", "partitions": 1, "retention_ms": 9223372036854775808}`), status: 400, codes: []string{invalid}},
		{name: "retention_ms beyond its maximum", raw: req("POST", "/v1/topics", `{"name": "x", "partitions": 1, "retention_ms": 9223372036855}`), status: 400, codes: []string{invalid}},
		{name: "timestamp_ms 1e20", raw: req("POST", appendPath, rec(`, "timestamp_ms": 1e20`)), status: 400, codes: []string{invalid}},
		{name: "timestamp_ms -1", raw: req("POST", appendPath, rec(`, "timestamp_ms": -1`)), status: 400, codes: []string{invalid}},
		{name: "record partition 2^31", raw: req("POST", appendPath, rec(`, "partition": 2147483648`)), status: 400, codes: []string{invalid}},
		{name: "record partition beyond the topic", raw: req("POST", appendPath, rec(`, "partition": 2147483647`)), status: 400, codes: []string{invalid}},
		{name: "poll offset 2^64", raw: req("GET", "/v1/topics/t/partitions/0/records?offset=18446744073709551616", ""), status: 400, codes: []string{invalid}},
		{name: "poll partition 2^40", raw: req("GET", "/v1/topics/t/partitions/1099511627776/records?offset=0", ""), status: 400, codes: []string{invalid}},
		{name: "poll offset -1", raw: req("GET", "/v1/topics/t/partitions/0/records?offset=-1", ""), status: 400, codes: []string{invalid}},
		{name: "poll offset beyond the high watermark", raw: req("GET", "/v1/topics/t/partitions/0/records?offset=9223372036854775807", ""), status: 416, codes: []string{"offset_out_of_range"}},
		{name: "poll wait_ms 20001", raw: req("GET", "/v1/topics/t/partitions/0/records?offset=0&wait_ms=20001", ""), status: 400, codes: []string{invalid}},
		{name: "poll offset twice", raw: req("GET", "/v1/topics/t/partitions/0/records?offset=0&offset=1", ""), status: 400, codes: []string{invalid}},
		{name: "poll bad escape in query", raw: req("GET", "/v1/topics/t/partitions/0/records?offset=%zz", ""), status: 400, codes: []string{invalid}},
		{name: "lease ttl_ms below int64", raw: req("POST", gp+"/lease", `{"member": "m", "ttl_ms": -9223372036854775809}`), status: 400, codes: []string{invalid}},
		{name: "commit next_offset 1e19", raw: req("POST", gp+"/commit", `{"member": "m", "generation": 1, "next_offset": 10000000000000000000}`), status: 400, codes: []string{invalid}},
		{name: "reset timestamp_ms -1", raw: req("POST", "/v1/groups/g/topics/t/reset", `{"to": {"timestamp_ms": -1}}`), status: 400, codes: []string{invalid}},
		// Unicode and traversal in names and paths.
		{name: "topic ../../etc", raw: req("POST", "/v1/topics", `{"name": "../../etc", "partitions": 1}`), status: 400, codes: []string{invalid}},
		{name: "topic ..", raw: req("POST", "/v1/topics", `{"name": "..", "partitions": 1}`), status: 400, codes: []string{invalid}},
		{name: "topic with a slash", raw: req("POST", "/v1/topics", `{"name": "a/b", "partitions": 1}`), status: 400, codes: []string{invalid}},
		{name: "topic with NUL", raw: req("POST", "/v1/topics", `{"name": "t\u0000", "partitions": 1}`), status: 400, codes: []string{invalid}},
		{name: "topic ørders", raw: req("POST", "/v1/topics", `{"name": "ørders", "partitions": 1}`), status: 400, codes: []string{invalid}},
		{name: "topic with invalid UTF-8", raw: req("POST", "/v1/topics", "{\"name\": \"t\xff\xfe\", \"partitions\": 1}"), status: 400, codes: []string{invalid}},
		{name: "topic with RTL override", raw: req("POST", "/v1/topics", `{"name": "t\u202egpj", "partitions": 1}`), status: 400, codes: []string{invalid}},
		{name: "topic of 250 characters", raw: req("POST", "/v1/topics", `{"name": "`+strings.Repeat("n", 250)+`", "partitions": 1}`), status: 400, codes: []string{invalid}},
		{name: "member with é", raw: req("POST", gp+"/lease", `{"member": "mé"}`), status: 400, codes: []string{invalid}},
		{name: "member with a newline", raw: req("POST", gp+"/lease", `{"member": "m\n"}`), status: 400, codes: []string{invalid}},
		{name: "path topic %2e%2e%2fetc", raw: req("POST", "/v1/topics/%2e%2e%2fetc/records", rec("")), status: 404, codes: []string{notFound}},
		{name: "path topic ..%2F..%2Fetc", raw: req("GET", "/v1/topics/..%2F..%2Fetc", ""), status: 404, codes: []string{notFound}},
		{name: "path topic %00", raw: req("GET", "/v1/topics/%00", ""), status: 404, codes: []string{notFound}},
		{name: "path topic %C3%B8", raw: req("GET", "/v1/topics/%C3%B8/partitions/0/records?offset=0", ""), status: 404, codes: []string{notFound}},
		{name: "path topic %FF", raw: req("GET", "/v1/topics/%FF", ""), status: 404, codes: []string{notFound}},
		{name: "path group a%2Fb (the group \"a/b\", unknown)", raw: req("GET", "/v1/groups/a%2Fb", ""), status: 404, codes: []string{notFound}},
		{name: "path group %00", raw: req("GET", "/v1/groups/a%00", ""), status: 400, codes: []string{invalid}},
		{name: "path with ..", raw: req("POST", "/v1/topics/x/../t/records", rec("")), status: 404, codes: []string{notFound}},
		{name: "path with //", raw: req("GET", "//v1/topics", ""), status: 404, codes: []string{notFound}},
		{name: "path with backslash", raw: req("GET", "/v1/topics/..\\..\\etc", ""), status: 404, codes: []string{notFound}},
		{name: "absolute-form target", raw: req("GET", "http://localhost/v1/topics/t", ""), status: 200},
		{name: "absolute-form target naming another host", raw: req("GET", "http://other/v1/topics/t", ""), status: 403, codes: []string{"forbidden"}},
		{name: "unknown route", raw: req("GET", "/v2/topics", ""), status: 404, codes: []string{notFound}},
		{name: "OPTIONS *", raw: req("OPTIONS", "*", ""), status: 404, codes: []string{notFound}},
		{name: "PUT on topics", raw: req("PUT", "/v1/topics", "{}"), status: 405, codes: []string{"method_not_allowed"}},
		// Headers.
		{name: "Idempotency-Key of 129", raw: req("POST", appendPath, rec(""), "Idempotency-Key: "+strings.Repeat("k", 129)), status: 400, codes: []string{invalid}},
		{name: "Idempotency-Key twice", raw: req("POST", appendPath, rec(""), "Idempotency-Key: a", "Idempotency-Key: b"), status: 400, codes: []string{invalid}},
		// Not HTTP/1.1 at all: answered by net/http, documented as outside the contract.
		{name: "garbage request line", raw: "HELLO\r\n\r\n", status: 400},
		{name: "header section over 64 KiB", raw: "GET /v1/health HTTP/1.1\r\nHost: localhost\r\nX-Big: " + strings.Repeat("b", 80<<10) + "\r\n\r\n", status: 431},
		{name: "Content-Length not a number", raw: "POST " + appendPath + " HTTP/1.1\r\nHost: localhost\r\nContent-Length: abc\r\n\r\n", status: 400},
		{name: "two different Content-Lengths", raw: "POST " + appendPath + " HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n{}", status: 400},
	}
}

// sendRaw writes c on a new connection and reads the one answer.
func sendRaw(t *testing.T, addr string, c hostileCase) (int, http.Header, []byte) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := io.WriteString(conn, c.raw); err != nil {
			return
		}
		if c.body != nil {
			c.body(conn)
		}
		if c.halfClose {
			_ = conn.(*net.TCPConn).CloseWrite()
		}
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s: no answer: %v", c.name, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	_ = conn.Close()
	<-done
	return resp.StatusCode, resp.Header, b
}

// memStats returns the live heap after a collection, the goroutine count and the
// resident set of the process (client and server both: this test runs them in one).
func memStats() (heap uint64, goroutines int, rss uint64) {
	goruntime.GC()
	goruntime.GC() // the second frees what the first's finalizers released
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.ParseUint(f[1], 10, 64)
				rss = kb << 10
			}
		}
	}
	return m.HeapAlloc, goruntime.NumGoroutine(), rss
}

// TestHostileInput drives the assembled server (runtime.Open + Serve on a real port)
// with the hostile table, then with slow headers, slow bodies, idle connections and
// thousands of parked long polls at once. Every request of the contract is answered as
// docs/API.md says with the JSON error body and changes nothing; the server stays
// healthy throughout, its slow and idle connections are cut by the header timeout, the
// parked polls all wake on one append, and the heap and goroutines come back down.
func TestHostileInput(t *testing.T) {
	ctx := context.Background()
	rt, c, _ := start(t, runtime.Config{Node: node.Config{DataDir: t.TempDir()}})
	if _, err := c.CreateTopic(ctx, "t", client.TopicConfig{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	p0 := int32(0)
	if _, err := c.Append(ctx, "t", []client.Record{{Value: []byte("seed"), Partition: &p0}}, client.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	heap0, gor0, rss0 := memStats()

	// The table.
	for _, hc := range hostileTable() {
		status, hdr, body := sendRaw(t, rt.Addr(), hc)
		if status != hc.status {
			t.Errorf("%s: %d, want %d: %.200q", hc.name, status, hc.status, body)
			continue
		}
		if len(hc.codes) == 0 || status < 300 {
			continue
		}
		var eb struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") || json.Unmarshal(body, &eb) != nil ||
			eb.Error.Message == "" || !containsStr(hc.codes, eb.Error.Code) {
			t.Errorf("%s: %d %q %.200q; want the JSON error body with code %v", hc.name, status, hdr.Get("Content-Type"), body, hc.codes)
		}
	}
	// Nothing the table sent changed anything.
	names, err := c.ListTopics(ctx)
	if err != nil || len(names) != 1 || names[0] != "t" {
		t.Fatalf("topics after the hostile table: %v, %v; want only t", names, err)
	}
	info, err := c.DescribeTopic(ctx, "t")
	if err != nil || len(info.PartitionInfo) != 2 || info.PartitionInfo[0].HighWatermark != 1 || info.PartitionInfo[1].HighWatermark != 0 {
		t.Fatalf("topic t after the hostile table: %+v, %v; want high watermarks 1 and 0", info, err)
	}
	if _, err := c.DescribeGroup(ctx, "g"); err == nil {
		t.Fatal("group g exists after the hostile table, which never leased")
	}

	// Slow headers, slow bodies and idle connections, all at once, with parked polls.
	const slowConns, idleConns = 100, 500
	polls := 2000
	if raceEnabled {
		polls = 1000 // about 5 goroutines each, client and server
	}
	var conns []net.Conn
	defer func() {
		for _, cn := range conns {
			_ = cn.Close()
		}
	}()
	dial := func() net.Conn {
		cn, err := net.DialTimeout("tcp", rt.Addr(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, cn)
		return cn
	}
	slowHeaders := make([]net.Conn, 0, slowConns)
	for range slowConns {
		cn := dial()
		_, _ = io.WriteString(cn, "POST /v1/topics/t/records HTTP/1.1\r\nHost: localhost\r\n")
		slowHeaders = append(slowHeaders, cn)
	}
	slowBodies := make([]net.Conn, 0, slowConns)
	for range slowConns {
		cn := dial()
		_, _ = io.WriteString(cn, "POST /v1/topics/t/records HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000\r\n\r\n{")
		slowBodies = append(slowBodies, cn)
	}
	idle := make([]net.Conn, 0, idleConns)
	for range idleConns {
		idle = append(idle, dial())
	}
	stopDrip := make(chan struct{})
	var dripWG sync.WaitGroup
	dripWG.Add(1)
	go func() { // a byte of the slow headers and bodies every 500 ms
		defer dripWG.Done()
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopDrip:
				return
			case <-tick.C:
				for _, cn := range append(slowHeaders[:len(slowHeaders):len(slowHeaders)], slowBodies...) {
					_ = cn.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
					_, _ = cn.Write([]byte(" "))
				}
			}
		}
	}()

	tr := &http.Transport{MaxIdleConnsPerHost: polls, MaxConnsPerHost: 0}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 40 * time.Second}
	type pollAnswer struct {
		status int
		n      int
		err    error
	}
	answers := make(chan pollAnswer, polls)
	var started atomic.Int32
	for range polls {
		go func() {
			started.Add(1)
			resp, err := hc.Get(rt.URL() + "/v1/topics/t/partitions/0/records?offset=1&wait_ms=20000")
			if err != nil {
				answers <- pollAnswer{err: err}
				return
			}
			defer resp.Body.Close()
			var pr struct {
				Records []json.RawMessage `json:"records"`
			}
			err = json.NewDecoder(resp.Body).Decode(&pr)
			answers <- pollAnswer{status: resp.StatusCode, n: len(pr.Records), err: err}
		}()
	}
	// Let the polls park, then check the server answers at once while all of it is open.
	time.Sleep(3 * time.Second)
	heapPeak, gorPeak, rssPeak := memStats()
	t0 := time.Now()
	if err := c.Health(ctx); err != nil {
		t.Fatalf("health with %d parked polls and %d slow or idle connections: %v", polls, 2*slowConns+idleConns, err)
	}
	if took := time.Since(t0); took > 2*time.Second {
		t.Errorf("health took %v under load", took)
	}
	select {
	case a := <-answers:
		t.Fatalf("a parked poll answered before any append: %+v", a)
	default:
	}

	// The header timeout (10 s) cuts slow headers, slow bodies' neighbours and idle
	// connections: wait for every slow-header and idle connection to be closed.
	deadline := time.Now().Add(15 * time.Second)
	closed := 0
	for _, cn := range append(slowHeaders[:len(slowHeaders):len(slowHeaders)], idle...) {
		_ = cn.SetReadDeadline(deadline)
		var b [512]byte
		for {
			_, err := cn.Read(b[:])
			if err != nil {
				if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
					closed++
				}
				break
			}
		}
	}
	if closed != slowConns+idleConns {
		t.Errorf("%d of %d slow-header and idle connections closed by the server within 15 s", closed, slowConns+idleConns)
	}
	close(stopDrip)
	dripWG.Wait()

	// One append wakes every parked poll with the record.
	if _, err := c.Append(ctx, "t", []client.Record{{Value: []byte("wake"), Partition: &p0}}, client.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	woke, bad := 0, 0
	timeout := time.After(30 * time.Second)
	for range polls {
		select {
		case a := <-answers:
			if a.err == nil && a.status == 200 && a.n == 1 {
				woke++
			} else if bad++; bad <= 3 {
				t.Errorf("parked poll: %+v", a)
			}
		case <-timeout:
			t.Fatalf("%d of %d parked polls answered within 30 s of the append", woke+bad, polls)
		}
	}
	if woke != polls {
		t.Errorf("%d of %d parked polls woke with the record", woke, polls)
	}

	// Afterwards: healthy, and the memory and goroutines came back down.
	for _, cn := range conns {
		_ = cn.Close()
	}
	tr.CloseIdleConnections()
	res, err := c.Poll(ctx, "t", 0, 0, client.PollOptions{})
	if err != nil || len(res.Records) != 2 {
		t.Fatalf("poll after the storm: %+v, %v", res, err)
	}
	var heap1, rss1 uint64
	var gor1 int
	for range 50 { // connections wind down asynchronously
		heap1, gor1, rss1 = memStats()
		if gor1 <= gor0+20 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	const mib = 1 << 20
	t.Logf("live heap: %.1f MiB before, %.1f MiB with %d parked polls and %d slow or idle connections, %.1f MiB after; "+
		"goroutines %d, %d, %d; RSS %.0f, %.0f, %.0f MiB (client and server in one process)",
		float64(heap0)/mib, float64(heapPeak)/mib, polls, 2*slowConns+idleConns, float64(heap1)/mib,
		gor0, gorPeak, gor1, float64(rss0)/mib, float64(rssPeak)/mib, float64(rss1)/mib)
	if heapPeak > 512*mib {
		t.Errorf("live heap %.0f MiB under load, want under 512 MiB", float64(heapPeak)/mib)
	}
	if heap1 > heap0+64*mib {
		t.Errorf("live heap %.0f MiB after the storm, %.0f MiB before: more than 64 MiB kept", float64(heap1)/mib, float64(heap0)/mib)
	}
	if gor1 > gor0+20 {
		t.Errorf("%d goroutines after the storm, %d before", gor1, gor0)
	}
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// secPrincipal is one principal of the hostile security pass and its grants, as an
// oracle independent of the server's: resource (a trailing * a prefix) -> ops.
type secPrincipal struct {
	token, name string
	grants      map[string][]string
}

func (p secPrincipal) allowed(op, resource string) bool {
	for res, ops := range p.grants {
		if prefix, wild := strings.CutSuffix(res, "*"); res == resource || wild && strings.HasPrefix(resource, prefix) {
			if containsStr(ops, op) {
				return true
			}
		}
	}
	return false
}

// secRoute is one route of the contract with the permissions it needs for topic T and
// group G, and a valid body.
type secRoute struct {
	method, path, body string
	needs              [][2]string // {op, resource}; "T" and "G" are replaced
}

// fill puts topic and group into a secRoute path's T and G segments.
func fill(path, topic, group string) string {
	p, q, _ := strings.Cut(path, "?")
	segs := strings.Split(p, "/")
	for i, sg := range segs {
		switch sg {
		case "T":
			segs[i] = topic
		case "G":
			segs[i] = group
		}
	}
	if q != "" {
		return strings.Join(segs, "/") + "?" + q
	}
	return strings.Join(segs, "/")
}

func secRoutes() []secRoute {
	const gp = "/v1/groups/G/topics/T/partitions/0"
	return []secRoute{
		{"GET", "/v1/topics/T", "", [][2]string{{"describe", "topic:T"}}},
		{"POST", "/v1/topics/T/records", `{"records": [{"value": "eA=="}]}`, [][2]string{{"append", "topic:T"}}},
		{"GET", "/v1/topics/T/partitions/0/records?offset=0", "", [][2]string{{"read", "topic:T"}}},
		{"POST", gp + "/lease", `{"member": "hostile", "ttl_ms": 1000}`, [][2]string{{"consume", "group:G"}, {"read", "topic:T"}}},
		{"POST", gp + "/commit", `{"member": "hostile", "generation": 1, "next_offset": 0}`, [][2]string{{"consume", "group:G"}, {"read", "topic:T"}}},
		{"DELETE", gp + "/lease", `{"member": "hostile", "generation": 1}`, [][2]string{{"consume", "group:G"}, {"read", "topic:T"}}},
		{"POST", "/v1/groups/G/topics/T/heartbeat", `{"member": "hostile-hb", "ttl_ms": 1000}`, [][2]string{{"consume", "group:G"}, {"read", "topic:T"}}},
		{"DELETE", "/v1/groups/G/members", `{"member": "hostile-hb"}`, [][2]string{{"consume", "group:G"}}},
		{"GET", "/v1/groups/G", "", [][2]string{{"describe", "group:G"}}},
		{"GET", "/v1/groups/G/settings", "", [][2]string{{"describe", "group:G"}}},
		{"PUT", "/v1/groups/G/settings", `{"reset_policy": "earliest", "max_attempts": 5, "dead_letter_topic": "T"}`, [][2]string{{"reset", "group:G"}, {"append", "topic:T"}}},
		{"POST", "/v1/groups/G/topics/T/reset", `{"to": "earliest"}`, [][2]string{{"reset", "group:G"}, {"read", "topic:T"}}},
		{"POST", "/v1/topics", `{"name": "T-new", "partitions": 1}`, [][2]string{{"create", "topic:T-new"}}},
		{"PATCH", "/v1/topics/T", `{"partitions": 9}`, [][2]string{{"alter", "topic:T"}}},
		{"DELETE", "/v1/topics/T", "", [][2]string{{"delete", "topic:T"}}},
	}
}

// TestHostileSecurity (issue 19, "must show"): the security pass on the assembled
// server, counting what it tried and what held — the grant matrix with auth on, name
// and path tricks, token guessing, and, without auth, cross-site and rebinding attempts
// and bodies of the wrong type or size. docs/RELIABILITY.md quotes its counts.
func TestHostileSecurity(t *testing.T) {
	principals := []secPrincipal{
		{"admin-0123456789abcdefghij", "admin", map[string][]string{
			"topic:*": {"create", "describe", "append", "read", "delete", "alter"}, "group:*": {"consume", "describe", "reset"}}},
		{"ci-0123456789abcdefghijklm", "ci", map[string][]string{"topic:orders*": {"create", "describe", "append", "read"}}},
		{"producer-0123456789abcdefg", "producer", map[string][]string{"topic:orders": {"append", "describe"}}},
		{"billing-0123456789abcdefgh", "billing", map[string][]string{
			"topic:orders": {"read", "describe"}, "group:billing": {"consume", "describe", "reset"}}},
		{"dlq-0123456789abcdefghijkl", "dlq", map[string][]string{"group:billing": {"reset"}, "topic:orders.dlq": {"append"}}},
		{"none-0123456789abcdefghijk", "none", map[string][]string{}},
	}
	file := map[string]any{}
	for _, p := range principals {
		var allow []map[string]any
		for res, ops := range p.grants {
			allow = append(allow, map[string]any{"resource": res, "ops": ops})
		}
		if allow == nil {
			allow = []map[string]any{}
		}
		file[p.token] = map[string]any{"name": p.name, "allow": allow}
	}
	raw, _ := json.Marshal(map[string]any{"principals": file})
	authFile := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(authFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	rt, _, _ := start(t, runtime.Config{Node: node.Config{DataDir: t.TempDir()}, AuthFile: authFile})
	admin := "Authorization: Bearer " + principals[0].token
	for _, topic := range []string{"orders", "orders.dlq", "payments"} {
		if s, _, b := do(t, "POST", rt.URL()+"/v1/topics", `{"name": "`+topic+`", "partitions": 1}`, "Content-Type: application/json", admin); s != 201 {
			t.Fatalf("create %s: %d %s", topic, s, b)
		}
	}
	type tally struct{ tried, held int }
	counts := map[string]*tally{}
	count := func(kind string, held bool, format string, args ...any) {
		c := counts[kind]
		if c == nil {
			c = &tally{}
			counts[kind] = c
		}
		c.tried++
		if held {
			c.held++
		} else {
			t.Errorf(kind+": "+format, args...)
		}
	}

	// Name and path tricks: look-alikes, encodings and traversals of a topic the
	// billing principal may read, on the routes it may use; only the exact name passes.
	billing := "Authorization: Bearer " + principals[3].token
	tricks := []string{"ORDERS", "Orders", "orders.", "orders-", "orders.x", "orders%2F..%2Fpayments", "orders%2e", "orders%00", "orders%20",
		"..%2Fpayments", "%2e%2e", "orders%2Fx", "0rders", "ordersx", "payments", "orders.dlq", "%C3%B6rders", "orders%E2%80%8B", "ord%2A", "*"}
	for _, name := range tricks {
		for _, path := range []string{"/v1/topics/" + name, "/v1/topics/" + name + "/partitions/0/records?offset=0",
			"/v1/groups/billing/topics/" + name + "/partitions/0/lease", "/v1/groups/billing/topics/" + name + "/reset"} {
			method, body := "GET", ""
			if strings.HasSuffix(path, "/lease") {
				method, body = "POST", `{"member": "m"}`
			} else if strings.HasSuffix(path, "/reset") {
				method, body = "POST", `{"to": "latest"}`
			}
			status, _, b := do(t, method, rt.URL()+path, body, billing, "Content-Type: application/json")
			count("name and path tricks", status == 403 || status == 404 || status == 400, "%s %s: %d %s, want it refused", method, path, status, b)
		}
	}

	// The grant matrix: every principal, every route, on topics and groups it may and may
	// not touch. A denied request is 403 (never 401 for a known token, never a 2xx); an
	// allowed one is never 401 or 403. Destructive routes come last, topic by topic.
	for _, target := range [][2]string{{"payments", "ledger"}, {"orders", "billing"}} {
		for _, r := range secRoutes() {
			for _, p := range principals {
				repl := strings.NewReplacer("T", target[0], "G", target[1])
				want := true
				for _, n := range r.needs {
					want = want && p.allowed(n[0], repl.Replace(n[1]))
				}
				body := strings.NewReplacer("\"T\"", `"`+target[0]+`"`, "T-new", target[0]+"-new").Replace(r.body)
				if r.method == "PUT" && target[0] == "orders" {
					body = strings.Replace(body, `"orders"`, `"orders.dlq"`, 1)
					want = p.allowed("reset", "group:billing") && p.allowed("append", "topic:orders.dlq")
				}
				path := fill(r.path, target[0], target[1])
				hdr := []string{"Authorization: Bearer " + p.token}
				if body != "" {
					hdr = append(hdr, "Content-Type: application/json")
				}
				status, _, b := do(t, r.method, rt.URL()+path, body, hdr...)
				if want {
					count("grant matrix", status != 401 && status != 403, "%s %s %s: %d %s, want it allowed", p.name, r.method, path, status, b)
				} else {
					count("grant matrix", status == 403, "%s %s %s: %d %s, want 403", p.name, r.method, path, status, b)
				}
			}
		}
	}

	// Token guessing from one address: 20 wrong tokens are 401, then every wrong token
	// from it is 429 with Retry-After; the right token is still answered.
	for i := range 30 {
		status, h, _ := do(t, "GET", rt.URL()+"/v1/topics", "", fmt.Sprintf("Authorization: Bearer guess-%024d", i))
		want := 401
		if i >= 20 {
			want = 429
		}
		count("token guesses", status == want && (want == 401 || h.Get("Retry-After") != ""), "guess %d: %d, want %d", i, status, want)
	}
	status, _, _ := do(t, "GET", rt.URL()+"/v1/topics", "", admin)
	count("token guesses", status == 200, "the right token from a guessing address: %d, want 200", status)

	// Without auth (strata dev's default): cross-site, rebinding, wrong body types and
	// oversize bodies on every route that changes something; nothing may change.
	open, c, _ := start(t, runtime.Config{Node: node.Config{DataDir: t.TempDir()}, Console: true})
	ctx := context.Background()
	if _, err := c.CreateTopic(ctx, "orders", client.TopicConfig{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ResetGroup(ctx, "billing", "orders", client.ResetEarliest()); err != nil {
		t.Fatal(err)
	}
	state := func() string {
		var b strings.Builder
		for _, p := range []string{"/v1/topics", "/v1/topics/orders", "/v1/groups/billing/settings", "/v1/groups"} {
			_, _, body := do(t, "GET", open.URL()+p, "")
			b.WriteString(body)
		}
		return b.String()
	}
	before := state()
	port := open.Addr()[strings.LastIndexByte(open.Addr(), ':')+1:]
	crossSite := [][]string{
		{"Content-Type: application/json", "Origin: http://evil.example"},
		{"Content-Type: application/json", "Origin: null"},
		{"Content-Type: application/json", "Origin: http://127.0.0.1:1"},
		{"Content-Type: application/json", "Origin: http://localhost:" + port + ".evil.example"},
		{"Content-Type: application/json", "Origin: http://evil.example", "Origin: " + open.URL()},
		{"Content-Type: application/json", "Sec-Fetch-Site: cross-site"},
		{"Content-Type: application/json", "Sec-Fetch-Site: same-site"},
		{"Content-Type: application/json", "Sec-Fetch-Site: same-origin", "Sec-Fetch-Site: cross-site"},
		{"Content-Type: application/json", "Host: evil.example"},
		{"Content-Type: application/json", "Host: evil.example:" + port},
		{"Content-Type: application/json", "Host: 127.0.0.1.evil.example"},
		{"Content-Type: application/json", "Host: localhost.evil.example"},
	}
	wrongType := []string{"text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
		"", "application/jsonp", "text/json", "application/json-seq", "application/*", "*/*"}
	for _, r := range secRoutes() {
		if r.method == "GET" {
			continue
		}
		path := fill(r.path, "orders", "billing")
		body := strings.NewReplacer("\"T\"", `"orders"`, "T-new", "evil").Replace(r.body)
		for _, hdr := range crossSite {
			status, _, b := do(t, r.method, open.URL()+path, body, hdr...)
			count("cross-site and rebinding", status == 403, "%s %s %v: %d %s, want 403", r.method, path, hdr, status, b)
		}
		if body == "" {
			continue
		}
		for _, ct := range wrongType {
			status, _, b := do(t, r.method, open.URL()+path, body, "Content-Type: "+ct)
			count("wrong body types", status == 415, "%s %s as %q: %d %s, want 415", r.method, path, ct, status, b)
		}
		limit := 64 << 10
		if strings.HasSuffix(path, "/records") {
			limit = 9 << 20
		}
		big := body[:len(body)-1] + strings.Repeat(" ", limit) + "}"
		status, _, b := do(t, r.method, open.URL()+path, big, "Content-Type: application/json")
		count("oversize bodies", status == 413, "%s %s with %d bytes: %d %.200s, want 413", r.method, path, len(big), status, b)
	}
	if after := state(); after != before {
		t.Errorf("refused requests changed the log:\n%s\n->\n%s", before, after)
	}
	kinds := make([]string, 0, len(counts))
	for k := range counts {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	total, held := 0, 0
	for _, k := range kinds {
		t.Logf("%-26s %4d tried, %4d held", k, counts[k].tried, counts[k].held)
		total, held = total+counts[k].tried, held+counts[k].held
	}
	t.Logf("%-26s %4d tried, %4d held", "total", total, held)
}
