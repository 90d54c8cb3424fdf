package stackrun

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"sync"
)

// Denial is one AWS request a role's statements did not allow (or the harness could not
// classify), answered AccessDenied.
type Denial struct {
	Function string
	Method   string
	Path     string
	// Access is what was needed and not allowed; empty when the request was not
	// classified (Reason says why).
	Access []Access
	Reason string
}

func (d Denial) String() string {
	if len(d.Access) == 0 {
		return fmt.Sprintf("%s: %s %s refused: %s", d.Function, d.Method, d.Path, d.Reason)
	}
	parts := make([]string, len(d.Access))
	for i, a := range d.Access {
		parts[i] = a.String()
	}
	return fmt.Sprintf("%s: %s %s denied: no statement of its role allows %s", d.Function, d.Method, d.Path, strings.Join(parts, ", "))
}

// Proxy is one function's recording reverse proxy in front of the emulator: every
// request the function makes (its AWS_ENDPOINT_URL points here) is classified into the
// IAM authorizations it needs (Classify), checked against the function's role statements
// (Decide), and forwarded when allowed — to the emulator, or for the Lambda Invoke API
// to the harness's Lambda service — or answered AccessDenied in the service's own error
// shape and reported.
type Proxy struct {
	function string
	stmts    []Statement
	upstream *httputil.ReverseProxy
	lambda   http.Handler
	report   func(Denial)
	srv      *httptest.Server

	mu sync.Mutex
	// iterators maps each shard iterator handed out through this proxy to its stream.
	iterators map[string]string
	counts    map[string]int
	requests  map[requestKey]*Request
	// conditions are the statements that allowed a request while carrying conditions
	// the harness does not evaluate, by Sid.
	conditions map[string]Statement
}

type streamKey struct{}

// NewProxy starts a proxy for function on a loopback port.
func NewProxy(function string, stmts []Statement, emulator *url.URL, lambda http.Handler, report func(Denial)) *Proxy {
	p := &Proxy{function: function, stmts: stmts, lambda: lambda, report: report,
		iterators: map[string]string{}, counts: map[string]int{}, requests: map[requestKey]*Request{}, conditions: map[string]Statement{}}
	p.upstream = httputil.NewSingleHostReverseProxy(emulator)
	p.upstream.ModifyResponse = p.rememberIterators
	p.srv = httptest.NewServer(p)
	return p
}

// URL is the proxy's address (the function's AWS_ENDPOINT_URL).
func (p *Proxy) URL() string { return p.srv.URL }

// Close stops the proxy.
func (p *Proxy) Close() { p.srv.Close() }

// Counts returns how many requests were allowed, by IAM action.
func (p *Proxy) Counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.counts))
	for k, v := range p.counts {
		out[k] = v
	}
	return out
}

// Conditions lists the statements that allowed requests with conditions the harness did
// not evaluate ("Sid: {condition}"), sorted.
func (p *Proxy) Conditions() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for sid, s := range p.conditions {
		c, _ := json.Marshal(s.Conditions)
		out = append(out, sid+": "+string(c))
	}
	sort.Strings(out)
	return out
}

func (p *Proxy) iteratorStream(it string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.iterators[it]
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	svc := Service(r.Header)
	needs, err := Classify(r.Method, r.URL, r.Header, body, p.iteratorStream)
	if err != nil {
		d := Denial{Function: p.function, Method: r.Method, Path: r.URL.Path, Reason: err.Error()}
		p.report(d)
		accessDenied(w, svc, d.String())
		return
	}
	var denied []Access
	p.mu.Lock()
	for _, a := range needs {
		dec := Decide(p.stmts, a)
		if !dec.Allowed {
			denied = append(denied, a)
			continue
		}
		p.counts[a.Action]++
		if len(dec.By.Conditions) > 0 {
			p.conditions[dec.By.Sid] = *dec.By
		}
	}
	p.mu.Unlock()
	if len(denied) > 0 {
		d := Denial{Function: p.function, Method: r.Method, Path: r.URL.Path, Access: denied}
		p.report(d)
		accessDenied(w, svc, d.String())
		return
	}
	req := requestOf(svc, r, needs, body)
	cw := &countingWriter{ResponseWriter: w}
	defer func() {
		req.BytesReceived = cw.n
		p.tally(req)
	}()
	if svc == "lambda" {
		p.lambda.ServeHTTP(cw, r)
		return
	}
	if strings.HasPrefix(r.Header.Get("X-Amz-Target"), "DynamoDBStreams_") {
		r = r.WithContext(context.WithValue(r.Context(), streamKey{}, needs[0].Resource))
	}
	p.upstream.ServeHTTP(cw, r)
}

// rememberIterators records the shard iterators a streams answer hands out (from
// GetShardIterator and GetRecords), so that a later GetRecords names its stream.
func (p *Proxy) rememberIterators(resp *http.Response) error {
	stream, _ := resp.Request.Context().Value(streamKey{}).(string)
	if stream == "" || resp.StatusCode != http.StatusOK {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var out struct {
		ShardIterator     string `json:"ShardIterator"`
		NextShardIterator string `json:"NextShardIterator"`
	}
	if json.Unmarshal(body, &out) == nil {
		p.mu.Lock()
		for _, it := range []string{out.ShardIterator, out.NextShardIterator} {
			if it != "" {
				p.iterators[it] = stream
			}
		}
		p.mu.Unlock()
	}
	return nil
}

// accessDenied answers as the service answers a request IAM denies.
func accessDenied(w http.ResponseWriter, svc, msg string) {
	switch svc {
	case "s3":
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		_, _ = fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>%s</Message></Error>`, xmlEscape(msg))
	case "lambda":
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-ErrorType", "AccessDeniedException")
		w.WriteHeader(http.StatusForbidden)
		_ = json.NewEncoder(w).Encode(map[string]string{"Type": "User", "message": msg})
	default: // DynamoDB and its streams
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{
			"__type": "com.amazon.coral.service#AccessDeniedException", "message": msg})
	}
}

func xmlEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
