package stackrun

import (
	"net/http"
	"net/url"
	"reflect"
	"testing"

	"github.com/stratalog/strata/internal/lambdarun"
)

// TestLogStream: the runtime emulator's own lines are not the function's; START lines
// count invocations; EMF documents and their metrics are told apart; what was written
// before ResetLogs is not counted.
func TestLogStream(t *testing.T) {
	buf := &lambdarun.LockedBuffer{}
	f := &Function{instances: []*lambdarun.Process{{Log: buf}}}
	_, _ = buf.Write([]byte("before the reset\n"))
	f.ResetLogs()
	emf := `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"Strata","Dimensions":[["topic"],[]],"Metrics":[{"Name":"m"}]}]},"topic":"orders","m":1}`
	_, _ = buf.Write([]byte("02 Dec 2026 13:38:49,116 [INFO] (rapid) INVOKE START(requestId: x)\n" +
		"START RequestId: x Version: $LATEST\n" +
		`{"level":"INFO","msg":"hello"}` + "\n" +
		emf + "\n" +
		"END RequestId: x\n" +
		"REPORT RequestId: x\tDuration: 1 ms\n"))
	got := f.LogStream()
	want := LogStream{Lines: 2, Bytes: int64(len(`{"level":"INFO","msg":"hello"}`) + len(emf)), EMFLines: 1, EMFBytes: int64(len(emf)),
		Metrics: []string{"Strata/m{topic=orders}", "Strata/m{}"}, Invocations: 1}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("LogStream = %+v, want %+v", got, want)
	}
}

// TestRequestOf: the proxy names each request's API and resource as pkg/awscount
// names operations, with a transaction's items and a DeleteObjects' keys.
func TestRequestOf(t *testing.T) {
	ddb := func(target, body string) (*http.Request, []byte) {
		r, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/", nil)
		r.Header.Set("X-Amz-Target", target)
		return r, []byte(body)
	}
	s3 := func(method, raw string) *http.Request {
		u, _ := url.Parse(raw)
		return &http.Request{Method: method, URL: u, Header: http.Header{}}
	}
	cases := []struct {
		name     string
		svc      string
		r        *http.Request
		needs    []Access
		body     []byte
		api, res string
		items    int64
	}{
		{"put item", "dynamodb", nil, nil, nil, "DynamoDB.PutItem", "t-index", 1},
		{"transaction", "dynamodb", nil, []Access{{"dynamodb:PutItem", tableARN("a")}}, nil, "DynamoDB.TransactWriteItems", "a+b", 2},
		{"stream", "dynamodb", nil, nil, nil, "DynamoDBStreams.GetRecords", "", 1},
		{"put object", "s3", s3(http.MethodPut, "http://h/bucket/seg/1"), []Access{{"s3:PutObject", "arn:aws:s3:::bucket/seg/1"}}, nil, "S3.PutObject", "bucket", 1},
		{"list", "s3", s3(http.MethodGet, "http://h/bucket?list-type=2&prefix=seg/"), []Access{{"s3:ListBucket", "arn:aws:s3:::bucket"}}, nil, "S3.ListObjectsV2", "bucket", 1},
		{"delete objects", "s3", s3(http.MethodPost, "http://h/bucket?delete"), []Access{{"s3:DeleteObject", "arn:aws:s3:::bucket/a"}, {"s3:DeleteObject", "arn:aws:s3:::bucket/b"}}, nil, "S3.DeleteObjects", "bucket", 2},
		{"invoke", "lambda", s3(http.MethodPost, "http://h/2015-03-31/functions/Sr1-consumer/invocations"), nil, nil, "Lambda.Invoke", "Sr1-consumer", 1},
	}
	cases[0].r, cases[0].body = ddb("DynamoDB_20120810.PutItem", `{"TableName":"t-index","x":1}`)
	cases[1].r, cases[1].body = ddb("DynamoDB_20120810.TransactWriteItems", `{"TransactItems":[{"Put":{"TableName":"b"}},{"ConditionCheck":{"TableName":"a"}}],"y":1}`)
	cases[2].r, cases[2].body = ddb("DynamoDBStreams_20120810.GetRecords", `{}`)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := requestOf(c.svc, c.r, c.needs, c.body)
			if got.API != c.api || got.Resource != c.res || got.Items != c.items || got.Requests != 1 || got.BytesSent != int64(len(c.body)) {
				t.Fatalf("requestOf = %+v, want %s on %q, %d items", got, c.api, c.res, c.items)
			}
		})
	}
}
