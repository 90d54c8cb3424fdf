package stackrun

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"sort"
	"strings"
)

// Statement is one IAM policy statement of a role in the template, its references
// resolved to local names. Conditions are kept to be listed, not evaluated.
type Statement struct {
	Sid        string
	Effect     string
	Actions    []string
	Resources  []string
	Conditions map[string]any
	// Policy is the logical id of the policy resource (or role) holding it.
	Policy string
}

// RoleStatements returns every statement granted to the role with logical id role: the
// AWS::IAM::Policy resources attached to it and the role's inline policies. A managed
// policy, a NotAction or NotResource statement or a statement the harness cannot resolve
// is an error: the check would otherwise be wrong.
func (t *Template) RoleStatements(role string) ([]Statement, error) {
	r, ok := t.Resources[role]
	if !ok || r.Type != "AWS::IAM::Role" {
		return nil, fmt.Errorf("stackrun: %s is not a role", role)
	}
	if m, ok := r.Properties["ManagedPolicyArns"]; ok {
		return nil, fmt.Errorf("stackrun: role %s has managed policies %v: not checked by the harness", role, m)
	}
	var out []Statement
	add := func(holder string, doc any) error {
		d, _ := doc.(map[string]any)
		list, ok := d["Statement"].([]any)
		if !ok {
			return fmt.Errorf("stackrun: policy %s: no statements", holder)
		}
		for i, raw := range list {
			m, _ := raw.(map[string]any)
			for _, k := range []string{"NotAction", "NotResource", "NotPrincipal"} {
				if _, ok := m[k]; ok {
					return fmt.Errorf("stackrun: policy %s statement %d: %s not supported", holder, i, k)
				}
			}
			s := Statement{Policy: holder}
			s.Sid, _ = m["Sid"].(string)
			s.Effect, _ = m["Effect"].(string)
			s.Conditions, _ = m["Condition"].(map[string]any)
			var err error
			if s.Actions, err = t.ResolveList(m["Action"]); err != nil {
				return fmt.Errorf("stackrun: policy %s statement %d: %w", holder, i, err)
			}
			if s.Resources, err = t.ResolveList(m["Resource"]); err != nil {
				return fmt.Errorf("stackrun: policy %s statement %d: %w", holder, i, err)
			}
			out = append(out, s)
		}
		return nil
	}
	if inline, ok := r.Properties["Policies"].([]any); ok {
		for _, p := range inline {
			m, _ := p.(map[string]any)
			if err := add(role, m["PolicyDocument"]); err != nil {
				return nil, err
			}
		}
	}
	for _, id := range t.OfType("AWS::IAM::Policy") {
		p := t.Resources[id].Properties
		roles, _ := p["Roles"].([]any)
		for _, ref := range roles {
			if rid, ok := idFromRef(ref); ok && rid == role {
				if err := add(id, p["PolicyDocument"]); err != nil {
					return nil, err
				}
			}
		}
	}
	return out, nil
}

// Access is one IAM authorization a request needs: an action on a resource ARN.
type Access struct {
	Action   string
	Resource string
}

func (a Access) String() string { return a.Action + " on " + a.Resource }

// Decision is the outcome of checking one Access against a role's statements.
type Decision struct {
	Access  Access
	Allowed bool
	// By is the statement that decided (the allowing or denying one); nil when no
	// statement matched (an implicit deny).
	By *Statement
}

// Decide checks a against stmts as IAM does for one identity policy set: an explicit
// Deny wins, then any Allow, else an implicit deny. Conditions are not evaluated (they
// only narrow an Allow, so the check is at most as strict as IAM's); the deciding
// statement is returned so that its conditions can be listed.
func Decide(stmts []Statement, a Access) Decision {
	d := Decision{Access: a}
	for i := range stmts {
		s := &stmts[i]
		if !matchesAny(s.Actions, a.Action, true) || !matchesAny(s.Resources, a.Resource, false) {
			continue
		}
		if s.Effect == "Deny" {
			return Decision{Access: a, Allowed: false, By: s}
		}
		if s.Effect == "Allow" && !d.Allowed {
			d.Allowed, d.By = true, s
		}
	}
	return d
}

func matchesAny(patterns []string, v string, fold bool) bool {
	for _, p := range patterns {
		if wildcardMatch(p, v, fold) {
			return true
		}
	}
	return false
}

// wildcardMatch matches IAM's * (any run) and ? (one character); actions compare
// case-insensitively, resources exactly.
func wildcardMatch(pattern, v string, fold bool) bool {
	if fold {
		pattern, v = strings.ToLower(pattern), strings.ToLower(v)
	}
	// The usual greedy glob match with backtracking to the last star.
	p, s := []rune(pattern), []rune(v)
	pi, si, star, mark := 0, 0, -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == s[si]):
			pi++
			si++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// Service is the AWS service a signed request is for, from the credential scope of its
// SigV4 Authorization header (".../<date>/<region>/<service>/aws4_request"), or "" when
// it is not signed.
func Service(h http.Header) string {
	auth := h.Get("Authorization")
	_, cred, ok := strings.Cut(auth, "Credential=")
	if !ok {
		return ""
	}
	cred, _, _ = strings.Cut(cred, ",")
	parts := strings.Split(cred, "/")
	if len(parts) != 5 {
		return ""
	}
	return parts[3]
}

// Classify derives the IAM authorizations a request to DynamoDB, DynamoDB Streams, S3
// or Lambda needs (the action from the X-Amz-Target header or the S3 method and path,
// the resource ARN from the body or the path), as IAM would evaluate it. streams maps
// shard iterators already handed out to their stream's ARN (GetRecords names only the
// iterator). A request it cannot classify is an error: the proxy refuses it.
func Classify(method string, u *url.URL, h http.Header, body []byte, streams func(iterator string) string) ([]Access, error) {
	switch svc := Service(h); svc {
	case "dynamodb":
		target := h.Get("X-Amz-Target")
		if api, op, ok := strings.Cut(target, "."); ok && strings.HasPrefix(api, "DynamoDBStreams_") {
			return classifyStreams(op, body, streams)
		} else if ok && strings.HasPrefix(api, "DynamoDB_") {
			return classifyDynamo(op, body)
		}
		return nil, fmt.Errorf("dynamodb request without a known X-Amz-Target %q", target)
	case "s3":
		return classifyS3(method, u, h, body)
	case "lambda":
		return classifyLambda(method, u)
	case "ssm":
		return classifySSM(h.Get("X-Amz-Target"), body)
	case "":
		return nil, fmt.Errorf("unsigned request %s %s", method, u.Path)
	default:
		return nil, fmt.Errorf("service %q not served by the harness (%s %s)", svc, method, u.Path)
	}
}

func tableARN(name string) string {
	return "arn:aws:dynamodb:" + Region + ":" + Account + ":table/" + name
}

// dynamoBody is the part of a DynamoDB request body that names resources.
type dynamoBody struct {
	TableName     string                     `json:"TableName"`
	IndexName     string                     `json:"IndexName"`
	TransactItems []map[string]dynamoBody    `json:"TransactItems"`
	RequestItems  map[string]json.RawMessage `json:"RequestItems"`
}

func classifyDynamo(op string, body []byte) ([]Access, error) {
	var b dynamoBody
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, fmt.Errorf("dynamodb %s: body: %w", op, err)
	}
	switch op {
	case "TransactWriteItems", "TransactGetItems":
		// IAM authorizes each item's own action on its table.
		perItem := map[string]string{"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem",
			"ConditionCheck": "ConditionCheckItem", "Get": "GetItem"}
		var out []Access
		for _, it := range b.TransactItems {
			for kind, inner := range it {
				a, ok := perItem[kind]
				if !ok || inner.TableName == "" {
					return nil, fmt.Errorf("dynamodb %s: item %q not understood", op, kind)
				}
				out = append(out, Access{"dynamodb:" + a, tableARN(inner.TableName)})
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("dynamodb %s: no items", op)
		}
		return out, nil
	case "BatchWriteItem", "BatchGetItem":
		var out []Access
		names := make([]string, 0, len(b.RequestItems))
		for name := range b.RequestItems {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			out = append(out, Access{"dynamodb:" + op, tableARN(name)})
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("dynamodb %s: no tables", op)
		}
		return out, nil
	case "ListTables":
		return []Access{{"dynamodb:ListTables", "*"}}, nil
	}
	if b.TableName == "" {
		return nil, fmt.Errorf("dynamodb %s: no TableName", op)
	}
	res := tableARN(b.TableName)
	if b.IndexName != "" {
		res += "/index/" + b.IndexName
	}
	return []Access{{"dynamodb:" + op, res}}, nil
}

func classifyStreams(op string, body []byte, streams func(string) string) ([]Access, error) {
	var b struct {
		StreamArn     string `json:"StreamArn"`
		ShardIterator string `json:"ShardIterator"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, fmt.Errorf("dynamodb streams %s: body: %w", op, err)
	}
	switch op {
	case "ListStreams":
		return []Access{{"dynamodb:ListStreams", "*"}}, nil
	case "GetRecords":
		arn := ""
		if streams != nil {
			arn = streams(b.ShardIterator)
		}
		if arn == "" {
			return nil, fmt.Errorf("dynamodb streams GetRecords: shard iterator not handed out through this proxy")
		}
		return []Access{{"dynamodb:GetRecords", arn}}, nil
	}
	if b.StreamArn == "" {
		return nil, fmt.Errorf("dynamodb streams %s: no StreamArn", op)
	}
	return []Access{{"dynamodb:" + op, b.StreamArn}}, nil
}

func classifyS3(method string, u *url.URL, h http.Header, body []byte) ([]Access, error) {
	// Path-style addressing (the functions use it with an endpoint override):
	// /bucket[/key].
	p := strings.TrimPrefix(u.EscapedPath(), "/")
	bucketPart, keyPart, hasKey := strings.Cut(p, "/")
	bucket, err := url.PathUnescape(bucketPart)
	if err != nil || bucket == "" {
		return nil, fmt.Errorf("s3 %s %s: no bucket", method, u.Path)
	}
	key, err := url.PathUnescape(keyPart)
	if err != nil {
		return nil, fmt.Errorf("s3 %s %s: key: %w", method, u.Path, err)
	}
	q := u.Query()
	bucketARN := "arn:aws:s3:::" + bucket
	objectARN := bucketARN + "/" + key
	if !hasKey || key == "" {
		switch {
		case method == http.MethodGet && (q.Has("list-type") || len(q) == 0 || q.Has("prefix")):
			return []Access{{"s3:ListBucket", bucketARN}}, nil
		case method == http.MethodGet && q.Has("versions"):
			return []Access{{"s3:ListBucketVersions", bucketARN}}, nil
		case method == http.MethodHead:
			return []Access{{"s3:ListBucket", bucketARN}}, nil
		case method == http.MethodPost && q.Has("delete"):
			// DeleteObjects: s3:DeleteObject on each key named in the body.
			var d struct {
				Objects []struct {
					Key string `xml:"Key"`
				} `xml:"Object"`
			}
			if err := xml.Unmarshal(body, &d); err != nil {
				return nil, fmt.Errorf("s3 DeleteObjects: body: %w", err)
			}
			var out []Access
			for _, o := range d.Objects {
				out = append(out, Access{"s3:DeleteObject", bucketARN + "/" + o.Key})
			}
			if len(out) == 0 {
				return nil, fmt.Errorf("s3 DeleteObjects: no keys")
			}
			return out, nil
		case method == http.MethodPut && len(q) == 0:
			return []Access{{"s3:CreateBucket", bucketARN}}, nil
		case method == http.MethodDelete && len(q) == 0:
			return []Access{{"s3:DeleteBucket", bucketARN}}, nil
		}
		return nil, fmt.Errorf("s3 bucket request %s %s?%s not classified", method, u.Path, u.RawQuery)
	}
	if q.Has("tagging") { // the object's tag set: GetObjectTagging, PutObjectTagging, DeleteObjectTagging
		switch method {
		case http.MethodGet:
			return []Access{{"s3:GetObjectTagging", objectARN}}, nil
		case http.MethodPut:
			return []Access{{"s3:PutObjectTagging", objectARN}}, nil
		case http.MethodDelete:
			return []Access{{"s3:DeleteObjectTagging", objectARN}}, nil
		}
		return nil, fmt.Errorf("s3 object tagging request %s %s not classified", method, u.Path)
	}
	switch method {
	case http.MethodGet, http.MethodHead:
		if q.Has("uploadId") {
			return []Access{{"s3:ListMultipartUploadParts", objectARN}}, nil
		}
		return []Access{{"s3:GetObject", objectARN}}, nil
	case http.MethodPut, http.MethodPost:
		out := []Access{{"s3:PutObject", objectARN}}
		if h.Get("X-Amz-Tagging") != "" { // tags set by the write itself need their own action
			out = append(out, Access{"s3:PutObjectTagging", objectARN})
		}
		if src := h.Get("X-Amz-Copy-Source"); src != "" {
			s, _ := url.PathUnescape(strings.TrimPrefix(src, "/"))
			s, _, _ = strings.Cut(s, "?")
			out = append(out, Access{"s3:GetObject", "arn:aws:s3:::" + path.Clean(s)})
		}
		return out, nil
	case http.MethodDelete:
		if q.Has("uploadId") {
			return []Access{{"s3:AbortMultipartUpload", objectARN}}, nil
		}
		return []Access{{"s3:DeleteObject", objectARN}}, nil
	}
	return nil, fmt.Errorf("s3 object request %s %s not classified", method, u.Path)
}

// classifySSM handles the Parameter Store reads: a path or a parameter, by its ARN
// ("arn:aws:ssm:region:account:parameter" + the name, which starts with /).
func classifySSM(target string, body []byte) ([]Access, error) {
	api, op, ok := strings.Cut(target, ".")
	if !ok || api != "AmazonSSM" {
		return nil, fmt.Errorf("ssm request without a known X-Amz-Target %q", target)
	}
	var b struct {
		Path  string   `json:"Path"`
		Name  string   `json:"Name"`
		Names []string `json:"Names"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, fmt.Errorf("ssm %s: body: %w", op, err)
	}
	arn := func(name string) string {
		if !strings.HasPrefix(name, "/") {
			name = "/" + name
		}
		return "arn:aws:ssm:" + Region + ":" + Account + ":parameter" + name
	}
	switch {
	case op == "GetParametersByPath" && b.Path != "":
		return []Access{{"ssm:GetParametersByPath", arn(b.Path)}}, nil
	case op == "GetParameter" && b.Name != "":
		return []Access{{"ssm:GetParameter", arn(b.Name)}}, nil
	case op == "GetParameters" && len(b.Names) > 0:
		var out []Access
		for _, n := range b.Names {
			out = append(out, Access{"ssm:GetParameters", arn(n)})
		}
		return out, nil
	}
	return nil, fmt.Errorf("ssm %s not classified", op)
}

// lambdaInvokePath is the Lambda Invoke API's path.
var lambdaInvokePath = regexp.MustCompile(`^/2015-03-31/functions/([^/]+)/invocations$`)

func classifyLambda(method string, u *url.URL) ([]Access, error) {
	m := lambdaInvokePath.FindStringSubmatch(u.EscapedPath())
	if method != http.MethodPost || m == nil {
		return nil, fmt.Errorf("lambda %s %s: only Invoke is served", method, u.Path)
	}
	name, err := url.PathUnescape(m[1])
	if err != nil {
		return nil, fmt.Errorf("lambda Invoke: function name: %w", err)
	}
	return []Access{{"lambda:InvokeFunction", functionARNOf(name)}}, nil
}

// functionARNOf turns a function name, partial or full ARN (possibly qualified) into the
// unqualified function ARN IAM evaluates (a qualified ARN needs the same grant on
// "…:function:name:*"; the stack grants unqualified ARNs and invokes $LATEST).
func functionARNOf(name string) string {
	if strings.HasPrefix(name, "arn:") {
		parts := strings.Split(name, ":")
		if len(parts) >= 7 {
			return strings.Join(parts[:7], ":")
		}
		return name
	}
	name, _, _ = strings.Cut(name, ":")
	return FunctionARN(name)
}

// FunctionName is the bare name of a function given by name or ARN.
func FunctionName(nameOrARN string) string {
	if strings.HasPrefix(nameOrARN, "arn:") {
		parts := strings.Split(nameOrARN, ":")
		if len(parts) >= 7 {
			return parts[6]
		}
	}
	n, _, _ := strings.Cut(nameOrARN, ":")
	return n
}
