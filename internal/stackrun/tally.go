package stackrun

import (
	"bufio"
	"bytes"
	"encoding/json"
	"github.com/stratalog/strata/internal/lambdarun"
	"net/http"
	"net/url"
	"sort"
	"strings"
)

// Request is the tally of one AWS API on one resource as a function's proxy saw it:
// what the cost run prices (every request a function makes reaches AWS through it).
type Request struct {
	// API is "<Service>.<Operation>" as pkg/awscount names it (DynamoDB.UpdateItem,
	// S3.PutObject, S3.ListObjectsV2, Lambda.Invoke).
	API string
	// Resource is the table, bucket or function name the request is for ("" when
	// it names none, e.g. a transaction over several tables).
	Resource string
	Requests int64
	// Items counts the items a DynamoDB request writes (a transaction's or batch's
	// each, one otherwise) and the keys of an S3 DeleteObjects.
	Items         int64
	BytesSent     int64
	BytesReceived int64
}

type requestKey struct{ api, resource string }

// Requests returns the proxy's request tallies, sorted by API then resource.
func (p *Proxy) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Request, 0, len(p.requests))
	for _, r := range p.requests {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].API != out[j].API {
			return out[i].API < out[j].API
		}
		return out[i].Resource < out[j].Resource
	})
	return out
}

// ResetRequests forgets the request tallies (the cost run counts from its start, not
// from the stack's setup).
func (p *Proxy) ResetRequests() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests = map[requestKey]*Request{}
}

func (p *Proxy) tally(r Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := requestKey{r.API, r.Resource}
	t, ok := p.requests[k]
	if !ok {
		t = &Request{API: r.API, Resource: r.Resource}
		p.requests[k] = t
	}
	t.Requests += r.Requests
	t.Items += r.Items
	t.BytesSent += r.BytesSent
	t.BytesReceived += r.BytesReceived
}

// requestOf names an allowed request's API and resource from its service, its
// classified authorizations and its body.
func requestOf(svc string, r *http.Request, needs []Access, body []byte) Request {
	out := Request{Requests: 1, Items: 1, BytesSent: int64(len(body))}
	switch svc {
	case "dynamodb":
		target := r.Header.Get("X-Amz-Target")
		api, op, _ := strings.Cut(target, ".")
		out.API = "DynamoDB." + op
		if strings.HasPrefix(api, "DynamoDBStreams_") {
			out.API = "DynamoDBStreams." + op
		}
		var b struct {
			TableName     string                       `json:"TableName"`
			TransactItems []json.RawMessage            `json:"TransactItems"`
			RequestItems  map[string][]json.RawMessage `json:"RequestItems"`
		}
		_ = json.Unmarshal(body, &b)
		out.Resource = b.TableName
		if len(b.TransactItems) > 0 {
			out.Items = int64(len(b.TransactItems))
			out.Resource = transactTables(b.TransactItems)
		}
		if len(b.RequestItems) > 0 {
			out.Items = 0
			for t, items := range b.RequestItems {
				out.Items += int64(len(items))
				out.Resource = t
			}
		}
		if out.Resource == "" && len(needs) > 0 {
			out.Resource = resourceName(needs[0].Resource)
		}
	case "s3":
		out.API = "S3." + s3Operation(r.Method, r.URL)
		if len(needs) > 0 {
			out.Resource = resourceName(needs[0].Resource)
			if out.API == "S3.DeleteObjects" {
				out.Items = int64(len(needs))
			}
		}
	case "lambda":
		out.API = "Lambda.Invoke"
		if m := lambdaInvokePath.FindStringSubmatch(r.URL.EscapedPath()); m != nil {
			out.Resource = FunctionName(m[1])
		}
	default:
		out.API = svc
		if len(needs) > 0 {
			out.API = needs[0].Action
			out.Resource = resourceName(needs[0].Resource)
		}
	}
	return out
}

// transactTables names the tables a transaction's items are on, sorted, joined by "+".
func transactTables(items []json.RawMessage) string {
	seen := map[string]bool{}
	var names []string
	for _, raw := range items {
		var it map[string]struct{ TableName string }
		_ = json.Unmarshal(raw, &it)
		for _, op := range it {
			if op.TableName != "" && !seen[op.TableName] {
				seen[op.TableName] = true
				names = append(names, op.TableName)
			}
		}
	}
	sort.Strings(names)
	return strings.Join(names, "+")
}

// s3Operation is the S3 operation of a path-style request.
func s3Operation(method string, u *url.URL) string {
	p := strings.TrimPrefix(u.EscapedPath(), "/")
	_, key, _ := strings.Cut(p, "/")
	q := u.Query()
	if key == "" {
		switch {
		case method == http.MethodPost && q.Has("delete"):
			return "DeleteObjects"
		case method == http.MethodGet && q.Get("list-type") == "2":
			return "ListObjectsV2"
		case method == http.MethodGet:
			return "ListObjects"
		case method == http.MethodHead:
			return "HeadBucket"
		}
		return method + "Bucket"
	}
	switch method {
	case http.MethodGet:
		return "GetObject"
	case http.MethodHead:
		return "HeadObject"
	case http.MethodDelete:
		return "DeleteObject"
	}
	if u.Query().Has("uploadId") || u.Query().Has("uploads") {
		return "MultipartUpload"
	}
	return "PutObject"
}

// resourceName is the table, bucket or function an ARN names.
func resourceName(arn string) string {
	switch {
	case strings.HasPrefix(arn, "arn:aws:s3:::"):
		b, _, _ := strings.Cut(strings.TrimPrefix(arn, "arn:aws:s3:::"), "/")
		return b
	case strings.Contains(arn, ":table/"):
		_, t, _ := strings.Cut(arn, ":table/")
		t, _, _ = strings.Cut(t, "/")
		return t
	case strings.Contains(arn, ":function:"):
		return FunctionName(arn)
	case strings.Contains(arn, ":parameter"):
		_, n, _ := strings.Cut(arn, ":parameter")
		return n
	}
	return arn
}

// countingWriter counts the bytes of a response body.
type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (w *countingWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.n += int64(n)
	return n, err
}

func (w *countingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// LogStream is what one function wrote to its log stream over a run, as CloudWatch
// Logs would ingest it.
type LogStream struct {
	// Lines and Bytes are the function's own lines (its slog records and EMF
	// documents), each line's bytes without the newline.
	Lines, Bytes int64
	// EMFLines and EMFBytes are the part of those that are embedded metric format
	// documents (a JSON object with an "_aws" member).
	EMFLines, EMFBytes int64
	// Metrics are the distinct custom metrics the EMF documents define (namespace,
	// name and one dimension set with its values), sorted: CloudWatch bills each.
	Metrics []string
	// Invocations is how many START lines the runtime emulator wrote: Lambda adds its
	// own platform records (start and report) per invocation to the stream.
	Invocations int64
}

// LogStream tallies what f's instances wrote since the last ResetLogs: the runtime
// emulator's own lines (its "(rapid)" diagnostics and the START, END and REPORT
// lines, in the emulator's text form rather than the JSON form the template's log
// format asks Lambda for) are not the function's; START lines are counted as
// invocations.
func (f *Function) LogStream() LogStream {
	var s LogStream
	metrics := map[string]bool{}
	for i, p := range f.instances {
		data := []byte(p.Log.String())
		if i < len(f.logMarks) {
			data = data[min(f.logMarks[i], len(data)):]
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		for sc.Scan() {
			line := sc.Bytes()
			switch {
			case len(line) == 0:
			case bytes.HasPrefix(line, []byte("START RequestId:")):
				s.Invocations++
			case bytes.HasPrefix(line, []byte("END RequestId:")), bytes.HasPrefix(line, []byte("REPORT RequestId:")),
				bytes.Contains(line, []byte("(rapid)")):
			default:
				s.Lines++
				s.Bytes += int64(len(line))
				if bytes.HasPrefix(line, []byte("{")) && bytes.Contains(line, []byte(`"_aws":`)) {
					s.EMFLines++
					s.EMFBytes += int64(len(line))
					for _, m := range emfMetrics(line) {
						metrics[m] = true
					}
				}
			}
		}
	}
	for m := range metrics {
		s.Metrics = append(s.Metrics, m)
	}
	sort.Strings(s.Metrics)
	return s
}

// emfMetrics names the metrics one EMF document defines: "namespace/name{dim=value,...}"
// for each metric and dimension set of its directives.
func emfMetrics(line []byte) []string {
	var doc map[string]json.RawMessage
	if json.Unmarshal(line, &doc) != nil {
		return nil
	}
	var aws struct {
		CloudWatchMetrics []struct {
			Namespace  string
			Dimensions [][]string
			Metrics    []struct{ Name string }
		}
	}
	if json.Unmarshal(doc["_aws"], &aws) != nil {
		return nil
	}
	var out []string
	for _, d := range aws.CloudWatchMetrics {
		sets := d.Dimensions
		if len(sets) == 0 {
			sets = [][]string{nil}
		}
		for _, set := range sets {
			var dims []string
			for _, k := range set {
				var v string
				_ = json.Unmarshal(doc[k], &v)
				dims = append(dims, k+"="+v)
			}
			sort.Strings(dims)
			for _, m := range d.Metrics {
				out = append(out, d.Namespace+"/"+m.Name+"{"+strings.Join(dims, ",")+"}")
			}
		}
	}
	return out
}

// ResetLogs starts f's log tallies (LogStream) and its invocation count from now.
func (f *Function) ResetLogs() {
	f.logMarks = f.logMarks[:0]
	for _, p := range f.instances {
		f.logMarks = append(f.logMarks, len(p.Log.String()))
	}
	f.mu.Lock()
	f.invocations, f.errors, f.busy = 0, 0, 0
	f.used = map[*lambdarun.Process]bool{}
	f.mu.Unlock()
}
