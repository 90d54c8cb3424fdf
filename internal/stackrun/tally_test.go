package stackrun

import (
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"reflect"
	"strings"
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

// TestItemBytes: an item's size is DynamoDB's: names plus values, numbers by their
// significant digits, binaries decoded, lists and maps with their overheads.
func TestItemBytes(t *testing.T) {
	cases := []struct {
		name, item string
		want       int
	}{
		{"string", `{"pk":{"S":"abc"}}`, 2 + 3},
		{"utf-8 string", `{"s":{"S":"é"}}`, 1 + 2},
		{"number", `{"n":{"N":"123.450"}}`, 1 + 3 + 1},
		{"small number", `{"n":{"N":"-0.00500"}}`, 1 + 1 + 1},
		{"exponent", `{"n":{"N":"12e40"}}`, 1 + 1 + 1},
		{"binary", `{"b":{"B":"AQID"}}`, 1 + 3},
		{"bool and null", `{"t":{"BOOL":true},"z":{"NULL":true}}`, 2 + 2},
		{"list", `{"l":{"L":[{"S":"ab"},{"N":"7"}]}}`, 1 + 3 + 2 + 2 + 2},
		{"empty list", `{"l":{"L":[]}}`, 1 + 3},
		{"map", `{"m":{"M":{"k":{"S":"v"}}}}`, 1 + 3 + 1 + 1 + 1},
		{"string set", `{"ss":{"SS":["a","bc"]}}`, 2 + 3},
		{"number set", `{"ns":{"NS":["1","1234"]}}`, 2 + 2 + 3},
		{"not a value", `{"x":5}`, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var item map[string]any
			if err := json.Unmarshal([]byte(c.item), &item); err != nil {
				t.Fatal(err)
			}
			if got := itemBytes(item); got != c.want {
				t.Fatalf("itemBytes(%s) = %d, want %d", c.item, got, c.want)
			}
		})
	}
}

// TestUpdateAssignments: an update expression's SET and ADD actions, with their value
// placeholders; REMOVE and DELETE assign nothing; keywords in any case.
func TestUpdateAssignments(t *testing.T) {
	cases := []struct {
		expr string
		want []updateAssignment
	}{
		{"SET a = :a, #b = list_append(#b, :l) ADD #n :one REMOVE x, y DELETE s :s",
			[]updateAssignment{{"a", []string{":a"}}, {"#b", []string{":l"}}, {"#n", []string{":one"}}}},
		{"set #g = if_not_exists(#g, :zero) + :one, m.#k[2] = :v",
			[]updateAssignment{{"#g", []string{":zero", ":one"}}, {"m.#k[2]", []string{":v"}}}},
		{"REMOVE #owner", nil},
		{"SET #settings = :set", []updateAssignment{{"#settings", []string{":set"}}}},
		{"", nil},
	}
	for _, c := range cases {
		if got := updateAssignments(c.expr); !reflect.DeepEqual(got, c.want) {
			t.Errorf("updateAssignments(%q) = %v, want %v", c.expr, got, c.want)
		}
	}
}

// TestRequestUnits: the write units of each DynamoDB write, by its items' sizes (not
// its request bytes), a transaction's doubled; reads without ConsistentRead counted
// eventually consistent.
func TestRequestUnits(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	cases := []struct {
		name, op, body string
		items          int64 // -1: not checked (Items counts written items)
		wru            float64
		eventual       int64
	}{
		{"small put", "PutItem", `{"TableName":"t","Item":{"pk":{"S":"a"}},"ConditionExpression":"attribute_not_exists(pk)"}`, 1, 1, 0},
		// 2+1 + 1+1500 bytes: two units.
		{"put", "PutItem", `{"TableName":"t","Item":{"pk":{"S":"a"},"v":{"S":"` + long(1500) + `"}}}`, 1, 2, 0},
		// The key (4), payload (7+1100), count (5+1+2) and not the removed attribute:
		// 1119 bytes, two units.
		{"update", "UpdateItem", `{"TableName":"t","Key":{"pk":{"S":"k1"}},` +
			`"UpdateExpression":"SET #p = :p, #c = if_not_exists(#c, :zero) + :one REMOVE #old",` +
			`"ExpressionAttributeNames":{"#p":"payload","#c":"count","#old":"old"},` +
			`"ExpressionAttributeValues":{":p":{"S":"` + long(1100) + `"},":zero":{"N":"0"},":one":{"N":"1"}}}`, 1, 2, 0},
		// The key (3) and the ADD's attribute (1+1020): 1024 bytes, one unit.
		{"update add", "UpdateItem", `{"TableName":"t","Key":{"pk":{"S":"k"}},"UpdateExpression":"ADD #n :s",` +
			`"ExpressionAttributeNames":{"#n":"n"},"ExpressionAttributeValues":{":s":{"SS":["` + long(1020) + `"]}}}`, 1, 1, 0},
		{"delete", "DeleteItem", `{"TableName":"t","Key":{"pk":{"S":"a"}},"ReturnValues":"ALL_OLD"}`, 1, 1, 0},
		// A put of 1104 bytes (two units) and an update of 12 (one), doubled.
		{"transaction", "TransactWriteItems", `{"TransactItems":[` +
			`{"Put":{"TableName":"a","Item":{"pk":{"S":"a"},"v":{"S":"` + long(1100) + `"}}}},` +
			`{"Update":{"TableName":"b","Key":{"pk":{"S":"b"}},"UpdateExpression":"SET #o = :o",` +
			`"ExpressionAttributeNames":{"#o":"owner"},"ExpressionAttributeValues":{":o":{"S":"me"}}}}]}`, 2, 6, 0},
		{"transaction check", "TransactWriteItems", `{"TransactItems":[{"ConditionCheck":{"TableName":"a","Key":{"pk":{"S":"a"}}}},` +
			`{"Delete":{"TableName":"a","Key":{"pk":{"S":"b"}}}}]}`, 2, 4, 0},
		// A put of 2104 bytes (three units) and a delete (one).
		{"batch", "BatchWriteItem", `{"RequestItems":{"t":[{"PutRequest":{"Item":{"pk":{"S":"a"},"v":{"S":"` + long(2100) + `"}}}},` +
			`{"DeleteRequest":{"Key":{"pk":{"S":"b"}}}}]}}`, 2, 4, 0},
		{"unparseable put", "PutItem", `{"TableName":`, 1, 1, 0},
		{"unparseable transaction", "TransactWriteItems", `not json`, 1, 2, 0},
		{"eventual get", "GetItem", `{"TableName":"t","Key":{"pk":{"S":"a"}}}`, 1, 0, 1},
		{"consistent get", "GetItem", `{"TableName":"t","Key":{"pk":{"S":"a"}},"ConsistentRead":true}`, 1, 0, 0},
		{"eventual query", "Query", `{"TableName":"t","ConsistentRead":false,"KeyConditionExpression":"pk = :p"}`, 1, 0, 1},
		{"consistent batch get", "BatchGetItem", `{"RequestItems":{"t":{"Keys":[{"pk":{"S":"a"}}],"ConsistentRead":true}}}`, -1, 0, 0},
		{"eventual batch get", "BatchGetItem", `{"RequestItems":{"t":{"Keys":[{"pk":{"S":"a"}}]}}}`, -1, 0, 1},
		{"transact get", "TransactGetItems", `{"TransactItems":[{"Get":{"TableName":"t","Key":{"pk":{"S":"a"}}}}]}`, 1, 0, 0},
		{"unparseable get", "GetItem", `{`, 1, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/", nil)
			r.Header.Set("X-Amz-Target", "DynamoDB_20120810."+c.op)
			got := requestOf("dynamodb", r, nil, []byte(c.body))
			if c.items >= 0 && got.Items != c.items || got.WriteUnits != c.wru || got.EventualReads != c.eventual {
				t.Fatalf("requestOf = %d items, %g write units, %d eventual reads; want %d, %g, %d",
					got.Items, got.WriteUnits, got.EventualReads, c.items, c.wru, c.eventual)
			}
		})
	}
	r, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/", nil)
	r.Header.Set("X-Amz-Target", "DynamoDBStreams_20120810.GetRecords")
	if got := requestOf("dynamodb", r, nil, []byte(`{"ShardIterator":"x"}`)); got.WriteUnits != 0 || got.EventualReads != 0 {
		t.Fatalf("a stream read: %+v, want no write units and no eventual reads", got)
	}
}

// TestTallyUnits: the proxy's tally sums write units and eventual reads per API and
// resource.
func TestTallyUnits(t *testing.T) {
	p := &Proxy{requests: map[requestKey]*Request{}}
	p.tally(Request{API: "DynamoDB.PutItem", Resource: "t", Requests: 1, Items: 1, WriteUnits: 2})
	p.tally(Request{API: "DynamoDB.PutItem", Resource: "t", Requests: 1, Items: 1, WriteUnits: 1})
	p.tally(Request{API: "DynamoDB.GetItem", Resource: "t", Requests: 1, Items: 1, EventualReads: 1})
	p.tally(Request{API: "DynamoDB.GetItem", Resource: "t", Requests: 1, Items: 1})
	want := []Request{
		{API: "DynamoDB.GetItem", Resource: "t", Requests: 2, Items: 2, EventualReads: 1},
		{API: "DynamoDB.PutItem", Resource: "t", Requests: 2, Items: 2, WriteUnits: 3},
	}
	if got := p.Requests(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Requests = %+v, want %+v", got, want)
	}
}

// FuzzRequestOf: whatever body a function sends, requestOf does not panic, and its
// write units and eventual reads are finite and not negative.
func FuzzRequestOf(f *testing.F) {
	ops := []string{"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems",
		"GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems"}
	f.Add(uint8(0), []byte(`{"TableName":"t","Item":{"pk":{"S":"a"},"l":{"L":[{"M":{"k":{"N":"1.5"}}}]},"b":{"B":"AQID"}}}`))
	f.Add(uint8(1), []byte(`{"Key":{"pk":{"S":"a"}},"UpdateExpression":"SET #a = if_not_exists(#a, :z) + :o ADD n :o REMOVE x","ExpressionAttributeNames":{"#a":"a"},"ExpressionAttributeValues":{":z":{"N":"0"},":o":{"N":"1"}}}`))
	f.Add(uint8(3), []byte(`{"RequestItems":{"t":[{"PutRequest":{"Item":{}}},{"DeleteRequest":{"Key":{"pk":{"NULL":true}}}},7]}}`))
	f.Add(uint8(4), []byte(`{"TransactItems":[{"Put":{"TableName":"a"}},{"Update":{"UpdateExpression":"SET ,= (("}},{}]}`))
	f.Add(uint8(8), []byte(`{"RequestItems":{"t":{"ConsistentRead":"yes"}}}`))
	f.Add(uint8(2), []byte(`{"Key":{"pk":{"S":5,"N":"-","B":"!!","SS":[1],"L":{"x":1},"M":[]}}}`))
	f.Fuzz(func(t *testing.T, op uint8, body []byte) {
		r, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/", nil)
		r.Header.Set("X-Amz-Target", "DynamoDB_20120810."+ops[int(op)%len(ops)])
		got := requestOf("dynamodb", r, nil, body)
		if got.WriteUnits < 0 || math.IsNaN(got.WriteUnits) || math.IsInf(got.WriteUnits, 0) {
			t.Fatalf("write units %g", got.WriteUnits)
		}
		if got.EventualReads < 0 || got.EventualReads > got.Requests {
			t.Fatalf("eventual reads %d of %d requests", got.EventualReads, got.Requests)
		}
	})
}
