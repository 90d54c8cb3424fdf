package stackrun

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"github.com/stratalog/strata/internal/lambdarun"
	"math"
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
	// WriteUnits are the write units DynamoDB bills for the write requests, sized
	// from their bodies by DynamoDB's item-size rules (dynamoWriteUnits); 0 for every
	// other request.
	WriteUnits float64
	// EventualReads counts the DynamoDB read requests that were eventually consistent
	// (billed half a strongly consistent read's units).
	EventualReads int64
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
	t.WriteUnits += r.WriteUnits
	t.EventualReads += r.EventualReads
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
		if !strings.HasPrefix(api, "DynamoDBStreams_") {
			out.WriteUnits = dynamoWriteUnits(op, body, out.Items)
			if eventualRead(op, body) {
				out.EventualReads = 1
			}
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

// dynamoWrite is one DynamoDB write as its request states it: a PutItem, UpdateItem or
// DeleteItem body, a transaction's element, a batch's put or delete.
type dynamoWrite struct {
	Item, Key                 map[string]any
	UpdateExpression          string
	ExpressionAttributeNames  map[string]string
	ExpressionAttributeValues map[string]any
}

// dynamoWriteUnits is the write units DynamoDB bills for a write request of operation
// op (0 for any other operation): a put by its item, an update by its estimated new
// item (updatedItemBytes), a delete or a condition check by its key, each item at
// least one 1 KB unit, a transaction's twice. What of the body does not parse counts
// one unit per item (items, the request's count).
func dynamoWriteUnits(op string, body []byte, items int64) float64 {
	var b struct {
		dynamoWrite
		RequestItems map[string][]struct {
			PutRequest    *struct{ Item map[string]any }
			DeleteRequest *struct{ Key map[string]any }
		}
		TransactItems []struct{ Put, Update, Delete, ConditionCheck *dynamoWrite }
	}
	switch op {
	case "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems":
	default:
		return 0
	}
	_ = json.Unmarshal(body, &b)
	var units float64
	switch op {
	case "PutItem":
		return itemUnits(itemBytes(b.Item))
	case "UpdateItem":
		return itemUnits(updatedItemBytes(b.dynamoWrite))
	case "DeleteItem":
		return itemUnits(itemBytes(b.Key))
	case "BatchWriteItem":
		n := 0
		for _, reqs := range b.RequestItems {
			for _, r := range reqs {
				n++
				switch {
				case r.PutRequest != nil:
					units += itemUnits(itemBytes(r.PutRequest.Item))
				case r.DeleteRequest != nil:
					units += itemUnits(itemBytes(r.DeleteRequest.Key))
				default:
					units++
				}
			}
		}
		if n == 0 {
			return float64(items)
		}
	case "TransactWriteItems":
		for _, it := range b.TransactItems {
			switch {
			case it.Put != nil:
				units += itemUnits(itemBytes(it.Put.Item))
			case it.Update != nil:
				units += itemUnits(updatedItemBytes(*it.Update))
			case it.Delete != nil:
				units += itemUnits(itemBytes(it.Delete.Key))
			case it.ConditionCheck != nil:
				units += itemUnits(itemBytes(it.ConditionCheck.Key))
			default:
				units++
			}
		}
		if len(b.TransactItems) == 0 {
			units = float64(items)
		}
		units *= 2
	}
	return units
}

// itemUnits is the write units of an item of n bytes: one per 1 KB started, at least one.
func itemUnits(n int) float64 { return math.Max(1, math.Ceil(float64(n)/1024)) }

// updatedItemBytes estimates the size of the item an UpdateItem leaves: its key plus
// each top-level attribute its UpdateExpression's SET and ADD clauses assign, named
// through ExpressionAttributeNames and sized by the ExpressionAttributeValues the
// assignment uses (a nested path's value counted under its top attribute, an ADD's
// increment as the value). It is an estimate of the new item only: DynamoDB bills the
// larger of the old and the new item, so an item holding attributes the update does
// not name is underestimated.
func updatedItemBytes(w dynamoWrite) int {
	n := itemBytes(w.Key)
	assigned := map[string]int{}
	for _, a := range updateAssignments(w.UpdateExpression) {
		name := a.path
		if i := strings.IndexAny(name, ".["); i >= 0 {
			name = name[:i]
		}
		if r, ok := w.ExpressionAttributeNames[name]; ok {
			name = r
		}
		if _, ok := w.Key[name]; ok || name == "" {
			continue
		}
		size := assigned[name]
		for _, v := range a.values {
			size += attributeBytes(w.ExpressionAttributeValues[v])
		}
		assigned[name] = size
	}
	for name, size := range assigned {
		n += len(name) + size
	}
	return n
}

// updateAssignment is one SET or ADD action of an update expression: the path it
// assigns and the value placeholders (":v") it uses.
type updateAssignment struct {
	path   string
	values []string
}

// updateAssignments are the SET and ADD actions of an update expression, in order;
// REMOVE and DELETE clauses assign nothing.
func updateAssignments(expr string) []updateAssignment {
	var out []updateAssignment
	clause, start, depth := "", 0, 0
	action := func(end int) {
		a := strings.TrimSpace(expr[start:end])
		if a == "" {
			return
		}
		var path, rest string
		switch clause {
		case "SET":
			path, rest, _ = strings.Cut(a, "=")
		case "ADD":
			path, rest = a, ""
			if i := strings.IndexAny(a, " \t\r\n"); i >= 0 {
				path, rest = a[:i], a[i:]
			}
		default:
			return
		}
		out = append(out, updateAssignment{path: strings.TrimSpace(path), values: placeholders(rest)})
	}
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '(':
			depth++
		case c == ')':
			depth = max(depth-1, 0)
		case c == ',' && depth == 0:
			action(i)
			start = i + 1
		case isPathByte(c) && (i == 0 || !isPathByte(expr[i-1])):
			j := i
			for j < len(expr) && isPathByte(expr[j]) {
				j++
			}
			if w := strings.ToUpper(expr[i:j]); depth == 0 && (w == "SET" || w == "ADD" || w == "REMOVE" || w == "DELETE") {
				action(i)
				clause, start = w, j
			}
			i = j
			continue
		}
		i++
	}
	action(len(expr))
	return out
}

// isPathByte reports whether c can be part of a word of an update expression: an
// attribute name or path, a "#name" or a ":value" placeholder, or a keyword.
func isPathByte(c byte) bool {
	return isNameByte(c) || c == '#' || c == ':' || c == '.' || c == '[' || c == ']' || c == '-'
}

// isNameByte reports whether c can be part of a placeholder's name.
func isNameByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// placeholders are the ":value" placeholders in s.
func placeholders(s string) []string {
	var out []string
	for i := 0; i < len(s); i++ {
		if s[i] != ':' {
			continue
		}
		j := i + 1
		for j < len(s) && isNameByte(s[j]) {
			j++
		}
		if j > i+1 {
			out = append(out, s[i:j])
		}
		i = j - 1
	}
	return out
}

// itemBytes is the size DynamoDB counts for an item in its JSON wire form: the sum of
// its attribute names' UTF-8 lengths and their values' sizes (attributeBytes).
func itemBytes(item map[string]any) int {
	n := 0
	for name, v := range item {
		n += len(name) + attributeBytes(v)
	}
	return n
}

// attributeBytes is the size DynamoDB counts for an attribute value in its JSON wire
// form ({"S": "..."}, {"N": "..."}, ...): a string its UTF-8 length, a number one byte
// per two significant digits plus one, a binary its decoded length, a boolean or null
// one byte, a set its elements' sizes, a list or map 3 bytes plus one per element plus
// its elements' sizes (a map's names included). What is not an attribute value is 0.
func attributeBytes(v any) int {
	m, _ := v.(map[string]any)
	n := 0
	for typ, x := range m {
		switch typ {
		case "S":
			s, _ := x.(string)
			n += len(s)
		case "N":
			s, _ := x.(string)
			n += numberBytes(s)
		case "B":
			n += binaryBytes(x)
		case "BOOL", "NULL":
			n++
		case "SS", "NS", "BS":
			l, _ := x.([]any)
			for _, e := range l {
				n += attributeBytes(map[string]any{typ[:1]: e}) // an element sized as its scalar
			}
		case "L":
			l, _ := x.([]any)
			n += 3 + len(l)
			for _, e := range l {
				n += attributeBytes(e)
			}
		case "M":
			mm, _ := x.(map[string]any)
			n += 3 + len(mm) + itemBytes(mm)
		}
	}
	return n
}

// numberBytes is the size of a DynamoDB number: one byte per two significant digits
// (leading and trailing zeroes trimmed, the sign and any exponent left out) plus one.
func numberBytes(s string) int {
	s = strings.TrimLeft(s, "+-")
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	s = strings.Trim(strings.ReplaceAll(s, ".", ""), "0")
	digits := 0
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			digits++
		}
	}
	return (digits+1)/2 + 1
}

// binaryBytes is the decoded length of a base64 binary value (three quarters of its
// length when it does not decode).
func binaryBytes(x any) int {
	s, _ := x.(string)
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return len(b)
	}
	return len(s) * 3 / 4
}

// eventualRead reports whether a DynamoDB read request of operation op is eventually
// consistent: a GetItem, Query or Scan without ConsistentRead, a BatchGetItem none of
// whose tables asks for it. A transaction's reads are transactional, and a body that
// does not parse counts as strongly consistent.
func eventualRead(op string, body []byte) bool {
	var b struct {
		ConsistentRead bool
		RequestItems   map[string]struct{ ConsistentRead bool }
	}
	switch op {
	case "GetItem", "Query", "Scan", "BatchGetItem":
	default:
		return false
	}
	if json.Unmarshal(body, &b) != nil && !json.Valid(body) {
		return false
	}
	if b.ConsistentRead {
		return false
	}
	for _, t := range b.RequestItems {
		if t.ConsistentRead {
			return false
		}
	}
	return true
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
