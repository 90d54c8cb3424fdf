package stackrun

import (
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

const tinyTemplate = `{"Resources": {
  "Tbl": {"Type": "AWS::DynamoDB::Table", "Properties": {"TableName": "St-topics"}},
  "Biz": {"Type": "AWS::DynamoDB::Table", "Properties": {}},
  "Bkt": {"Type": "AWS::S3::Bucket", "Properties": {}},
  "Fn": {"Type": "AWS::Lambda::Function", "Properties": {}},
  "Role": {"Type": "AWS::IAM::Role", "Properties": {}},
  "Pol": {"Type": "AWS::IAM::Policy", "Properties": {"Roles": [{"Ref": "Role"}], "PolicyDocument": {"Statement": [
    {"Effect": "Allow", "Action": ["dynamodb:GetItem", "dynamodb:Put*"], "Resource": {"Fn::GetAtt": ["Tbl", "Arn"]}},
    {"Effect": "Allow", "Action": "s3:GetObject", "Resource": {"Fn::Join": ["", [{"Fn::GetAtt": ["Bkt", "Arn"]}, "/v1/*"]]},
     "Condition": {"StringLike": {"s3:prefix": ["v1/*"]}}, "Sid": "Objects"},
    {"Effect": "Deny", "Action": "s3:GetObject", "Resource": {"Fn::Sub": "arn:${AWS::Partition}:s3:::${Bkt}/v1/secret/*"}}
  ]}}}
}}`

func tiny(t *testing.T) *Template {
	t.Helper()
	tp, err := ParseTemplate([]byte(tinyTemplate), "St")
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func TestResolve(t *testing.T) {
	tp := tiny(t)
	tp.SetAttr("Tbl", "StreamArn", "arn:stream")
	for _, tc := range []struct {
		name string
		in   any
		want string
		err  bool
	}{
		{"literal", "x", "x", false},
		{"named table keeps its name", map[string]any{"Ref": "Tbl"}, "St-topics", false},
		{"unnamed table gets stack-logical id", map[string]any{"Ref": "Biz"}, "St-Biz", false},
		{"bucket names are lower case", map[string]any{"Ref": "Bkt"}, "st-bkt", false},
		{"pseudo parameter", map[string]any{"Ref": "AWS::AccountId"}, Account, false},
		{"table arn", map[string]any{"Fn::GetAtt": []any{"Tbl", "Arn"}}, "arn:aws:dynamodb:us-east-1:123456789012:table/St-topics", false},
		{"attribute known once created", map[string]any{"Fn::GetAtt": []any{"Tbl", "StreamArn"}}, "arn:stream", false},
		{"join", map[string]any{"Fn::Join": []any{"/", []any{"a", map[string]any{"Ref": "Fn"}}}}, "a/St-Fn", false},
		{"sub", map[string]any{"Fn::Sub": "${AWS::Region}:${Tbl.Arn}"}, "us-east-1:arn:aws:dynamodb:us-east-1:123456789012:table/St-topics", false},
		{"unknown ref", map[string]any{"Ref": "Nope"}, "", true},
		{"unsupported intrinsic", map[string]any{"Fn::Select": []any{0, []any{"a"}}}, "", true},
		{"unsupported attribute", map[string]any{"Fn::GetAtt": []any{"Fn", "SnapStartResponse"}}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tp.Resolve(tc.in)
			if (err != nil) != tc.err || got != tc.want {
				t.Errorf("Resolve(%v) = %q, %v; want %q (error %v)", tc.in, got, err, tc.want, tc.err)
			}
		})
	}
}

func TestRoleStatementsAndDecide(t *testing.T) {
	tp := tiny(t)
	stmts, err := tp.RoleStatements("Role")
	if err != nil {
		t.Fatal(err)
	}
	if len(stmts) != 3 {
		t.Fatalf("statements %+v", stmts)
	}
	for _, tc := range []struct {
		access Access
		want   bool
	}{
		{Access{"dynamodb:GetItem", "arn:aws:dynamodb:us-east-1:123456789012:table/St-topics"}, true},
		{Access{"DynamoDB:getitem", "arn:aws:dynamodb:us-east-1:123456789012:table/St-topics"}, true}, // actions fold case
		{Access{"dynamodb:PutItem", "arn:aws:dynamodb:us-east-1:123456789012:table/St-topics"}, true}, // Put* wildcard
		{Access{"dynamodb:DeleteItem", "arn:aws:dynamodb:us-east-1:123456789012:table/St-topics"}, false},
		{Access{"dynamodb:GetItem", "arn:aws:dynamodb:us-east-1:123456789012:table/St-topicsX"}, false},
		{Access{"dynamodb:GetItem", "arn:aws:dynamodb:us-east-1:123456789012:table/St-Biz"}, false},
		{Access{"s3:GetObject", "arn:aws:s3:::st-bkt/v1/orders/0/1"}, true},
		{Access{"s3:GetObject", "arn:aws:s3:::st-bkt/v2/x"}, false},
		{Access{"s3:GetObject", "arn:aws:s3:::st-bkt/v1/secret/x"}, false}, // an explicit Deny wins
	} {
		d := Decide(stmts, tc.access)
		if d.Allowed != tc.want {
			t.Errorf("Decide(%v) = %v (by %+v), want %v", tc.access, d.Allowed, d.By, tc.want)
		}
	}
	if d := Decide(stmts, Access{"s3:GetObject", "arn:aws:s3:::st-bkt/v1/a"}); d.By == nil || d.By.Sid != "Objects" || d.By.Conditions == nil {
		t.Errorf("the deciding statement and its conditions are not reported: %+v", d.By)
	}
}

func signed(svc string) http.Header {
	h := http.Header{}
	h.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKID/20261201/us-east-1/"+svc+"/aws4_request, SignedHeaders=host, Signature=00")
	return h
}

func TestClassify(t *testing.T) {
	tbl := "arn:aws:dynamodb:us-east-1:123456789012:table/"
	streams := func(it string) string {
		if it == "known" {
			return "arn:stream"
		}
		return ""
	}
	for _, tc := range []struct {
		name         string
		svc, target  string
		method, path string
		header       map[string]string
		body         string
		want         []Access
		err          bool
	}{
		{name: "put item", svc: "dynamodb", target: "DynamoDB_20120810.PutItem", method: "POST", path: "/",
			body: `{"TableName":"t1"}`, want: []Access{{"dynamodb:PutItem", tbl + "t1"}}},
		{name: "query an index", svc: "dynamodb", target: "DynamoDB_20120810.Query", method: "POST", path: "/",
			body: `{"TableName":"t1","IndexName":"by-x"}`, want: []Access{{"dynamodb:Query", tbl + "t1/index/by-x"}}},
		{name: "transaction: each item's action", svc: "dynamodb", target: "DynamoDB_20120810.TransactWriteItems", method: "POST", path: "/",
			body: `{"TransactItems":[{"Put":{"TableName":"a"}},{"ConditionCheck":{"TableName":"b"}},{"Update":{"TableName":"a"}}]}`,
			want: []Access{{"dynamodb:PutItem", tbl + "a"}, {"dynamodb:ConditionCheckItem", tbl + "b"}, {"dynamodb:UpdateItem", tbl + "a"}}},
		{name: "batch write: every table", svc: "dynamodb", target: "DynamoDB_20120810.BatchWriteItem", method: "POST", path: "/",
			body: `{"RequestItems":{"b":[],"a":[]}}`, want: []Access{{"dynamodb:BatchWriteItem", tbl + "a"}, {"dynamodb:BatchWriteItem", tbl + "b"}}},
		{name: "no table", svc: "dynamodb", target: "DynamoDB_20120810.GetItem", method: "POST", path: "/", body: `{}`, err: true},
		{name: "not json", svc: "dynamodb", target: "DynamoDB_20120810.GetItem", method: "POST", path: "/", body: `{`, err: true},
		{name: "stream records by a known iterator", svc: "dynamodb", target: "DynamoDBStreams_20120810.GetRecords", method: "POST", path: "/",
			body: `{"ShardIterator":"known"}`, want: []Access{{"dynamodb:GetRecords", "arn:stream"}}},
		{name: "stream records by an iterator from elsewhere", svc: "dynamodb", target: "DynamoDBStreams_20120810.GetRecords", method: "POST", path: "/",
			body: `{"ShardIterator":"forged"}`, err: true},
		{name: "describe stream", svc: "dynamodb", target: "DynamoDBStreams_20120810.DescribeStream", method: "POST", path: "/",
			body: `{"StreamArn":"arn:s"}`, want: []Access{{"dynamodb:DescribeStream", "arn:s"}}},
		{name: "get object", svc: "s3", method: "GET", path: "/bkt/v1/orders/0/00000000000000000000",
			want: []Access{{"s3:GetObject", "arn:aws:s3:::bkt/v1/orders/0/00000000000000000000"}}},
		{name: "escaped key", svc: "s3", method: "PUT", path: "/bkt/v1/a%3Ab",
			want: []Access{{"s3:PutObject", "arn:aws:s3:::bkt/v1/a:b"}}},
		{name: "list", svc: "s3", method: "GET", path: "/bkt?list-type=2&prefix=v1%2F", want: []Access{{"s3:ListBucket", "arn:aws:s3:::bkt"}}},
		{name: "delete objects: each key", svc: "s3", method: "POST", path: "/bkt?delete",
			body: `<Delete><Object><Key>v1/a</Key></Object><Object><Key>v1/b</Key></Object></Delete>`,
			want: []Access{{"s3:DeleteObject", "arn:aws:s3:::bkt/v1/a"}, {"s3:DeleteObject", "arn:aws:s3:::bkt/v1/b"}}},
		{name: "copy reads its source", svc: "s3", method: "PUT", path: "/bkt/v1/new", header: map[string]string{"X-Amz-Copy-Source": "/bkt/v1/old"},
			want: []Access{{"s3:PutObject", "arn:aws:s3:::bkt/v1/new"}, {"s3:GetObject", "arn:aws:s3:::bkt/v1/old"}}},
		{name: "a tagged put needs the tagging action too", svc: "s3", method: "PUT", path: "/bkt/v1/t",
			header: map[string]string{"X-Amz-Tagging": "strata-expiry=retention"},
			want:   []Access{{"s3:PutObject", "arn:aws:s3:::bkt/v1/t"}, {"s3:PutObjectTagging", "arn:aws:s3:::bkt/v1/t"}}},
		{name: "put tags", svc: "s3", method: "PUT", path: "/bkt/v1/t?tagging", want: []Access{{"s3:PutObjectTagging", "arn:aws:s3:::bkt/v1/t"}}},
		{name: "get tags", svc: "s3", method: "GET", path: "/bkt/v1/t?tagging", want: []Access{{"s3:GetObjectTagging", "arn:aws:s3:::bkt/v1/t"}}},
		{name: "delete tags", svc: "s3", method: "DELETE", path: "/bkt/v1/t?tagging", want: []Access{{"s3:DeleteObjectTagging", "arn:aws:s3:::bkt/v1/t"}}},
		{name: "invoke by name", svc: "lambda", method: "POST", path: "/2015-03-31/functions/fn-a/invocations",
			want: []Access{{"lambda:InvokeFunction", "arn:aws:lambda:us-east-1:123456789012:function:fn-a"}}},
		{name: "invoke by qualified arn", svc: "lambda", method: "POST", path: "/2015-03-31/functions/arn%3Aaws%3Alambda%3Aus-east-1%3A1%3Afunction%3Afn-a%3A%24LATEST/invocations",
			want: []Access{{"lambda:InvokeFunction", "arn:aws:lambda:us-east-1:1:function:fn-a"}}},
		{name: "other lambda api", svc: "lambda", method: "GET", path: "/2015-03-31/functions/fn-a", err: true},
		{name: "parameters by path", svc: "ssm", target: "AmazonSSM.GetParametersByPath", method: "POST", path: "/",
			body: `{"Path":"/strata/subs","Recursive":true}`, want: []Access{{"ssm:GetParametersByPath", "arn:aws:ssm:us-east-1:123456789012:parameter/strata/subs"}}},
		{name: "ssm write", svc: "ssm", target: "AmazonSSM.PutParameter", method: "POST", path: "/", body: `{"Name":"/x"}`, err: true},
		{name: "unsigned", method: "GET", path: "/bkt/k", err: true},
		{name: "another service", svc: "sqs", method: "POST", path: "/", err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := url.Parse("http://127.0.0.1" + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			h := http.Header{}
			if tc.svc != "" {
				h = signed(tc.svc)
			}
			if tc.target != "" {
				h.Set("X-Amz-Target", tc.target)
			}
			for k, v := range tc.header {
				h.Set(k, v)
			}
			got, err := Classify(tc.method, u, h, []byte(tc.body), streams)
			if (err != nil) != tc.err || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Classify = %v, %v; want %v (error %v)", got, err, tc.want, tc.err)
			}
		})
	}
}

func TestStep(t *testing.T) {
	bisect := MappingSettings{Bisect: true, MaxRetries: 2}
	plain := MappingSettings{MaxRetries: 2}
	forever := MappingSettings{MaxRetries: -1}
	for _, tc := range []struct {
		name   string
		s      MappingSettings
		b      Batch
		failed bool
		want   StepResult
	}{
		{"success is done", bisect, Batch{0, 10, 0}, false, StepResult{}},
		{"bisect a failed batch, retries kept", bisect, Batch{0, 10, 1}, true, StepResult{Next: []Batch{{0, 5, 1}, {5, 10, 1}}}},
		{"odd batch: the second half is larger", bisect, Batch{3, 6, 0}, true, StepResult{Next: []Batch{{3, 4, 0}, {4, 6, 0}}}},
		{"one record: retry", bisect, Batch{4, 5, 0}, true, StepResult{Next: []Batch{{4, 5, 1}}}},
		{"one record, retries spent: discard", bisect, Batch{4, 5, 2}, true, StepResult{Discard: &Batch{4, 5, 2}}},
		{"no bisect: retry the whole batch", plain, Batch{0, 10, 1}, true, StepResult{Next: []Batch{{0, 10, 2}}}},
		{"no bisect, retries spent: discard the batch", plain, Batch{0, 10, 2}, true, StepResult{Discard: &Batch{0, 10, 2}}},
		{"retries -1: until the records expire", forever, Batch{0, 10, 1000}, true, StepResult{Next: []Batch{{0, 10, 1001}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Step(tc.s, tc.b, tc.failed); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Step = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestDue: a shard's pending records go at once without a batching window or when
// they fill a batch; with a window they wait until it has passed since the first.
func TestDue(t *testing.T) {
	t0 := time.Unix(1796092200, 0)
	none := MappingSettings{BatchSize: 100}
	window := MappingSettings{BatchSize: 100, BatchingWindow: time.Second}
	for _, tc := range []struct {
		name    string
		s       MappingSettings
		pending int
		after   time.Duration
		want    bool
	}{
		{"nothing pending", none, 0, time.Hour, false},
		{"no window: at once", none, 1, 0, true},
		{"window: waits", window, 1, 999 * time.Millisecond, false},
		{"window: goes once it passed", window, 1, time.Second, true},
		{"window: a full batch goes at once", window, 100, 0, true},
		{"window: nothing pending never goes", window, 0, time.Hour, false},
	} {
		if got := Due(tc.s, tc.pending, t0, t0.Add(tc.after)); got != tc.want {
			t.Errorf("%s: Due = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestStepDeliversInOrderOnce (property): applying Step as the poller does, with a
// function that fails any batch holding a poison record, bisect on: every good record
// is part of exactly one successful invocation, in order, and exactly the poison
// records are discarded, each once (a failed batch's good records are delivered again,
// as Lambda redelivers them, but succeed once).
func TestStepDeliversInOrderOnce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 40).Draw(t, "records")
		poison := map[int]bool{}
		for _, i := range rapid.SliceOfDistinct(rapid.IntRange(0, n-1), rapid.ID[int]).Draw(t, "poison") {
			poison[i] = true
		}
		s := MappingSettings{Bisect: true, MaxRetries: rapid.IntRange(0, 3).Draw(t, "retries")}
		queue := []Batch{{0, n, 0}}
		var succeeded []int
		discarded := map[int]int{}
		for steps := 0; len(queue) > 0; steps++ {
			if steps > 10000 {
				t.Fatal("the mapping does not terminate")
			}
			b := queue[0]
			queue = queue[1:]
			failed := false
			for i := b.Lo; i < b.Hi; i++ {
				failed = failed || poison[i]
			}
			if !failed {
				for i := b.Lo; i < b.Hi; i++ {
					succeeded = append(succeeded, i)
				}
			}
			r := Step(s, b, failed)
			if r.Discard != nil {
				for i := r.Discard.Lo; i < r.Discard.Hi; i++ {
					discarded[i]++
				}
			}
			queue = append(r.Next, queue...)
		}
		var good []int
		for i := range n {
			if !poison[i] {
				good = append(good, i)
			}
		}
		if !slices.Equal(succeeded, good) {
			t.Fatalf("records succeeded %v, want each good record once in order %v", succeeded, good)
		}
		for i := range n {
			if poison[i] != (discarded[i] == 1) || discarded[i] > 1 {
				t.Fatalf("record %d (poison %v) discarded %d times", i, poison[i], discarded[i])
			}
		}
	})
}

// FuzzClassify: the proxy classifies requests whose bodies and paths come from the
// functions; nothing may panic, and a classification names an action of the service.
func FuzzClassify(f *testing.F) {
	f.Add("dynamodb", "DynamoDB_20120810.TransactWriteItems", "POST", "/", `{"TransactItems":[{"Put":{"TableName":"a"}}]}`)
	f.Add("dynamodb", "DynamoDBStreams_20120810.GetRecords", "POST", "/", `{"ShardIterator":"x"}`)
	f.Add("s3", "", "POST", "/b?delete", `<Delete><Object><Key>k</Key></Object></Delete>`)
	f.Add("s3", "", "GET", "/b/%zz", ``)
	f.Add("lambda", "", "POST", "/2015-03-31/functions/arn%3Aa/invocations", `{}`)
	f.Fuzz(func(t *testing.T, svc, target, method, path, body string) {
		u, err := url.Parse("http://127.0.0.1/" + strings.TrimPrefix(path, "/"))
		if err != nil {
			return
		}
		h := signed(svc)
		h.Set("X-Amz-Target", target)
		got, err := Classify(method, u, h, []byte(body), func(string) string { return "" })
		if err != nil {
			return
		}
		prefix := map[string]string{"dynamodb": "dynamodb:", "s3": "s3:", "lambda": "lambda:", "ssm": "ssm:"}[Service(h)]
		for _, a := range got {
			if prefix == "" || !strings.HasPrefix(a.Action, prefix) || a.Resource == "" {
				t.Fatalf("Classify(%s %s) = %v", method, path, got)
			}
		}
	})
}

// TestURLRoute: a request through the function URL is counted under the HTTP API
// route key it would have matched, so the cost run counts appends and topic
// descriptions alike behind either front door.
func TestURLRoute(t *testing.T) {
	for path, want := range map[string]string{
		"POST /v1/topics/orders/records":             "POST /v1/topics/{topic}/records",
		"GET /v1/topics/orders":                      "GET /v1/topics/{topic}",
		"GET /v1/topics/orders/partitions/3/records": "GET /v1/topics/{topic}/partitions/{partition}/records",
		"POST /v1/topics":                            "POST /v1/topics",
		"PUT /v1/groups/g/settings":                  "PUT /v1/groups/g/settings",
	} {
		method, p, _ := strings.Cut(path, " ")
		if got := urlRoute(method, p); got != want {
			t.Errorf("urlRoute(%s) = %q, want %q", path, got, want)
		}
	}
}
