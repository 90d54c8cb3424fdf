package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/stratalog/strata/pkg/client"
)

// exchange is what a route test expects the client to send and what the server answers.
type exchange struct {
	method, path, query string
	body                string // expected request JSON ("" = no body), compared as JSON
	header              map[string]string
	status              int
	answer              string
	answerHeader        map[string]string
}

// serveOne starts a server expecting exactly the exchange ex and answering it.
func serveOne(t *testing.T, ex exchange) *client.Client {
	t.Helper()
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		if r.Method != ex.method || r.URL.Path != ex.path {
			t.Errorf("request %s %s, want %s %s", r.Method, r.URL.Path, ex.method, ex.path)
		}
		if r.URL.RawQuery != ex.query {
			t.Errorf("query %q, want %q", r.URL.RawQuery, ex.query)
		}
		b, _ := io.ReadAll(r.Body)
		switch {
		case ex.body == "" && len(b) != 0:
			t.Errorf("unexpected body %s", b)
		case ex.body != "":
			if ct := r.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if !jsonEqual(t, b, []byte(ex.body)) {
				t.Errorf("body %s, want %s", b, ex.body)
			}
		}
		for k, v := range ex.header {
			if got := r.Header.Get(k); got != v {
				t.Errorf("header %s = %q, want %q", k, got, v)
			}
		}
		for k, v := range ex.answerHeader {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(ex.status)
		_, _ = io.WriteString(w, ex.answer)
	}))
	t.Cleanup(func() {
		srv.Close()
		if calls != 1 {
			t.Errorf("%d requests, want 1", calls)
		}
	})
	c, err := client.New(srv.URL+"/", client.WithToken("tok"), client.WithUserAgent("ua-test"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Errorf("bad JSON %s: %v", a, err)
		return false
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("bad expected JSON %s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

func i64(v int64) *int64 { return &v }
func i32(v int32) *int32 { return &v }

// TestRoutes checks, for every route, the request the client sends (method, path,
// query, JSON body, headers) and how it decodes the contract's answer.
func TestRoutes(t *testing.T) {
	ctx := context.Background()
	auth := map[string]string{"Authorization": "Bearer tok", "User-Agent": "ua-test"}
	cases := []struct {
		name string
		ex   exchange
		call func(c *client.Client) (any, error)
		want any
	}{
		{
			name: "create topic",
			ex: exchange{method: "POST", path: "/v1/topics", header: auth,
				body:   `{"name":"orders","partitions":8,"retention_ms":3600000}`,
				status: 201, answer: `{"name":"orders","partitions":8,"retention_ms":3600000}`},
			call: func(c *client.Client) (any, error) {
				return c.CreateTopic(ctx, "orders", client.TopicConfig{Partitions: 8, Retention: time.Hour})
			},
			want: &client.Topic{Name: "orders", Partitions: 8, Retention: time.Hour},
		},
		{
			name: "create topic, default retention",
			ex: exchange{method: "POST", path: "/v1/topics", body: `{"name":"t","partitions":1}`,
				status: 201, answer: `{"name":"t","partitions":1,"retention_ms":86400000}`},
			call: func(c *client.Client) (any, error) {
				return c.CreateTopic(ctx, "t", client.TopicConfig{Partitions: 1})
			},
			want: &client.Topic{Name: "t", Partitions: 1, Retention: 24 * time.Hour},
		},
		{
			name: "describe topic",
			ex: exchange{method: "GET", path: "/v1/topics/orders", header: auth, status: 200,
				answer: `{"name":"orders","partitions":2,"retention_ms":1000,"partition_info":[` +
					`{"partition":0,"log_start_offset":3,"high_watermark":9},{"partition":1,"log_start_offset":0,"high_watermark":0}]}`},
			call: func(c *client.Client) (any, error) { return c.DescribeTopic(ctx, "orders") },
			want: &client.Topic{Name: "orders", Partitions: 2, Retention: time.Second, PartitionInfo: []client.PartitionInfo{
				{Partition: 0, LogStartOffset: 3, HighWatermark: 9}, {Partition: 1}}},
		},
		{
			name: "list topics",
			ex:   exchange{method: "GET", path: "/v1/topics", status: 200, answer: `{"topics":["a","b"]}`},
			call: func(c *client.Client) (any, error) { return c.ListTopics(ctx) },
			want: []string{"a", "b"},
		},
		{
			name: "append",
			ex: exchange{method: "POST", path: "/v1/topics/orders/records",
				header: map[string]string{"Idempotency-Key": "k-1", "Authorization": "Bearer tok"},
				body: `{"records":[` +
					`{"key":"b3JkZXItMQ==","value":"eyJ0b3RhbCI6IDQyfQ==","headers":{"h":"dg=="},"partition":3,"timestamp_ms":1732870000000},` +
					`{"value":null},{"key":"","value":"AA=="}]}`,
				status: 200, answer: `{"results":[{"partition":3,"offset":41},{"partition":0,"offset":7},{"partition":5,"offset":0}]}`},
			call: func(c *client.Client) (any, error) {
				return c.Append(ctx, "orders", []client.Record{
					{Key: []byte("order-1"), Value: []byte(`{"total": 42}`), Headers: map[string][]byte{"h": []byte("v")},
						Partition: i32(3), Timestamp: time.UnixMilli(1732870000000)},
					{},
					{Key: []byte{}, Value: []byte{0}},
				}, client.AppendOptions{IdempotencyKey: "k-1"})
			},
			want: []client.Result{{Partition: 3, Offset: 41}, {Partition: 0, Offset: 7}, {Partition: 5, Offset: 0}},
		},
		{
			name: "poll",
			ex: exchange{method: "GET", path: "/v1/topics/orders/partitions/2/records",
				query: "max_bytes=2048&max_records=10&offset=5&wait_ms=1500", status: 200,
				header: map[string]string{"Accept": "application/vnd.strata.blocks, application/json;q=0.5"},
				answer: `{"records":[{"offset":5,"timestamp_ms":1000,"key":"aw==","value":"dg==","headers":{"x":"eQ=="}},` +
					`{"offset":6,"timestamp_ms":1001,"key":null,"value":""}],"next_offset":7,"high_watermark":9,"log_start_offset":1}`},
			call: func(c *client.Client) (any, error) {
				return c.Poll(ctx, "orders", 2, 5, client.PollOptions{MaxRecords: 10, MaxBytes: 2048, Wait: 1500 * time.Millisecond})
			},
			want: &client.PollResult{Records: []client.PolledRecord{
				{Offset: 5, Timestamp: time.UnixMilli(1000), Key: []byte("k"), Value: []byte("v"), Headers: map[string][]byte{"x": []byte("y")}, HeaderList: []client.Header{{Key: "x", Value: []byte("y")}}},
				{Offset: 6, Timestamp: time.UnixMilli(1001), Value: []byte{}},
			}, NextOffset: 7, HighWatermark: 9, LogStartOffset: 1},
		},
		{
			name: "poll defaults, wait rounded up",
			ex: exchange{method: "GET", path: "/v1/topics/t/partitions/0/records", query: "offset=0&wait_ms=1", status: 200,
				answer: `{"records":[],"next_offset":0,"high_watermark":0,"log_start_offset":0}`},
			call: func(c *client.Client) (any, error) {
				return c.Poll(ctx, "t", 0, 0, client.PollOptions{Wait: time.Microsecond})
			},
			want: &client.PollResult{Records: []client.PolledRecord{}},
		},
		{
			name: "lease",
			ex: exchange{method: "POST", path: "/v1/groups/g/topics/t/partitions/1/lease",
				body: `{"member":"m-1","ttl_ms":30000}`, status: 200,
				answer: `{"generation":4,"lease_expires_at_ms":1700000030000,"committed_offset":null}`},
			call: func(c *client.Client) (any, error) { return c.Lease(ctx, "g", "t", 1, "m-1", 30*time.Second) },
			want: &client.Lease{Generation: 4, ExpiresAt: time.UnixMilli(1700000030000)},
		},
		{
			name: "lease, default ttl",
			ex: exchange{method: "POST", path: "/v1/groups/g/topics/t/partitions/0/lease",
				body: `{"member":"m"}`, status: 200,
				answer: `{"generation":1,"lease_expires_at_ms":5,"committed_offset":12}`},
			call: func(c *client.Client) (any, error) { return c.Lease(ctx, "g", "t", 0, "m", 0) },
			want: &client.Lease{Generation: 1, ExpiresAt: time.UnixMilli(5), CommittedOffset: i64(12)},
		},
		{
			name: "renew lease",
			ex: exchange{method: "POST", path: "/v1/groups/g/topics/t/partitions/1/lease",
				body: `{"member":"m-1","generation":4,"ttl_ms":1000}`, status: 200,
				answer: `{"generation":4,"lease_expires_at_ms":1700000031000,"committed_offset":17}`},
			call: func(c *client.Client) (any, error) { return c.RenewLease(ctx, "g", "t", 1, "m-1", 4, time.Second) },
			want: &client.Lease{Generation: 4, ExpiresAt: time.UnixMilli(1700000031000), CommittedOffset: i64(17)},
		},
		{
			name: "release",
			ex: exchange{method: "DELETE", path: "/v1/groups/g/topics/t/partitions/1/lease",
				body: `{"member":"m-1","generation":4}`, status: 204},
			call: func(c *client.Client) (any, error) { return nil, c.Release(ctx, "g", "t", 1, "m-1", 4) },
			want: nil,
		},
		{
			name: "commit",
			ex: exchange{method: "POST", path: "/v1/groups/g/topics/t/partitions/1/commit",
				body: `{"member":"m-1","generation":4,"next_offset":0}`, status: 200, answer: `{"committed_offset":0}`},
			call: func(c *client.Client) (any, error) { return c.Commit(ctx, "g", "t", 1, "m-1", 4, 0) },
			want: int64(0),
		},
		{
			name: "describe group",
			ex: exchange{method: "GET", path: "/v1/groups/g", status: 200, answer: `{"group":"g","partitions":[` +
				`{"topic":"t","partition":0,"committed_offset":5,"high_watermark":9,"lag_records":4,"lag_seconds":2.5,"owner":"m","generation":3,"lease_expires_at_ms":77},` +
				`{"topic":"t","partition":1,"committed_offset":null,"high_watermark":0,"lag_records":0,"lag_seconds":0,"owner":null,"generation":1,"lease_expires_at_ms":null}]}`},
			call: func(c *client.Client) (any, error) { return c.DescribeGroup(ctx, "g") },
			want: &client.Group{Name: "g", Partitions: []client.GroupPartition{
				{Topic: "t", Partition: 0, CommittedOffset: i64(5), HighWatermark: 9, LagRecords: 4, LagSeconds: 2.5,
					Owner: "m", Generation: 3, LeaseExpiresAt: time.UnixMilli(77)},
				{Topic: "t", Partition: 1, Generation: 1},
			}},
		},
		{
			name: "reset earliest",
			ex: exchange{method: "POST", path: "/v1/groups/g/topics/t/reset", body: `{"to":"earliest"}`, status: 200,
				answer: `{"partitions":[{"partition":0,"committed_offset":3},{"partition":1,"committed_offset":0}]}`},
			call: func(c *client.Client) (any, error) { return c.ResetGroup(ctx, "g", "t", client.ResetEarliest()) },
			want: []client.PartitionOffset{{Partition: 0, CommittedOffset: 3}, {Partition: 1}},
		},
		{
			name: "reset latest",
			ex: exchange{method: "POST", path: "/v1/groups/g/topics/t/reset", body: `{"to":"latest"}`, status: 200,
				answer: `{"partitions":[]}`},
			call: func(c *client.Client) (any, error) { return c.ResetGroup(ctx, "g", "t", client.ResetLatest()) },
			want: []client.PartitionOffset{},
		},
		{
			name: "reset to offset",
			ex: exchange{method: "POST", path: "/v1/groups/g/topics/t/reset", body: `{"to":{"offset":42}}`, status: 200,
				answer: `{"partitions":[{"partition":0,"committed_offset":42}]}`},
			call: func(c *client.Client) (any, error) { return c.ResetGroup(ctx, "g", "t", client.ResetToOffset(42)) },
			want: []client.PartitionOffset{{Partition: 0, CommittedOffset: 42}},
		},
		{
			name: "reset to time",
			ex: exchange{method: "POST", path: "/v1/groups/g/topics/t/reset", body: `{"to":{"timestamp_ms":1732870000000}}`,
				status: 200, answer: `{"partitions":[{"partition":0,"committed_offset":8}]}`},
			call: func(c *client.Client) (any, error) {
				return c.ResetGroup(ctx, "g", "t", client.ResetToTime(time.UnixMilli(1732870000000)))
			},
			want: []client.PartitionOffset{{Partition: 0, CommittedOffset: 8}},
		},
		{
			name: "health",
			ex:   exchange{method: "GET", path: "/v1/health", status: 200, answer: `{"status":"ok"}`},
			call: func(c *client.Client) (any, error) { return nil, c.Health(ctx) },
			want: nil,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := serveOne(t, tc.ex)
			got, err := tc.call(c)
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			if !reflect.DeepEqual(normalize(got), normalize(tc.want)) {
				t.Fatalf("decoded\n%#v\nwant\n%#v", got, tc.want)
			}
		})
	}
}

// normalize turns typed nil pointers into plain nil for comparison.
func normalize(v any) any {
	if v == nil {
		return nil
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer && rv.IsNil() {
		return nil
	}
	return v
}

func TestNewRejectsBadBaseURL(t *testing.T) {
	for _, u := range []string{"", "localhost:4580", "ftp://h", "http://", "http://h/?q=1", "http://h/#f", "://"} {
		if _, err := client.New(u); err == nil {
			t.Errorf("New(%q) accepted", u)
		}
	}
	c, err := client.New("http://127.0.0.1:1/stage/")
	if err != nil || c == nil {
		t.Fatalf("New with a path prefix: %v", err)
	}
}

// TestBasePathPrefix: an API Gateway stage prefix is kept in front of every route.
func TestBasePathPrefix(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.URL.Path
		_, _ = io.WriteString(w, `{"status":"ok"}`)
	}))
	defer srv.Close()
	c, err := client.New(srv.URL + "/prod/")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Health(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got != "/prod/v1/health" {
		t.Fatalf("path %q, want /prod/v1/health", got)
	}
}

var allSentinels = []error{
	client.ErrInvalid, client.ErrUnauthorized, client.ErrForbidden, client.ErrNotFound, client.ErrTopicExists,
	client.ErrLeaseHeld, client.ErrFenced, client.ErrStaleCommit, client.ErrGroupActive, client.ErrPayloadTooLarge,
	client.ErrOffsetOutOfRange, client.ErrIdempotencyKeyReused, client.ErrBeyondHighWatermark,
	client.ErrRateLimited, client.ErrUnavailable, client.ErrMethodNotAllowed, client.ErrInternal,
}

// TestAPIErrorDecoding: every status/code of docs/API.md decodes into an *APIError
// that matches its sentinel, and no other, with its details.
func TestAPIErrorDecoding(t *testing.T) {
	cases := []struct {
		status   int
		code     string
		details  string
		header   map[string]string
		sentinel error
		check    func(t *testing.T, e *client.APIError)
	}{
		{status: 400, code: "invalid_request", sentinel: client.ErrInvalid},
		{status: 401, code: "unauthorized", sentinel: client.ErrUnauthorized},
		{status: 403, code: "forbidden", sentinel: client.ErrForbidden},
		{status: 404, code: "not_found", sentinel: client.ErrNotFound},
		{status: 409, code: "topic_exists", sentinel: client.ErrTopicExists},
		{status: 409, code: "lease_held", details: `,"owner":"m-2","lease_expires_at_ms":1700000000123`,
			sentinel: client.ErrLeaseHeld, check: func(t *testing.T, e *client.APIError) {
				if o, ok := e.Owner(); !ok || o != "m-2" {
					t.Errorf("Owner() = %q, %v", o, ok)
				}
				if at, ok := e.LeaseExpiresAt(); !ok || !at.Equal(time.UnixMilli(1700000000123)) {
					t.Errorf("LeaseExpiresAt() = %v, %v", at, ok)
				}
			}},
		{status: 409, code: "fenced", sentinel: client.ErrFenced},
		{status: 409, code: "stale_commit", sentinel: client.ErrStaleCommit},
		{status: 409, code: "group_active", sentinel: client.ErrGroupActive},
		{status: 413, code: "payload_too_large", sentinel: client.ErrPayloadTooLarge},
		{status: 416, code: "offset_out_of_range", details: `,"log_start_offset":9007199254740993,"high_watermark":9007199254740999`,
			sentinel: client.ErrOffsetOutOfRange, check: func(t *testing.T, e *client.APIError) {
				// Beyond 2^53: exact only if numbers are not decoded as float64.
				if v, ok := e.LogStartOffset(); !ok || v != 9007199254740993 {
					t.Errorf("LogStartOffset() = %d, %v", v, ok)
				}
				if v, ok := e.HighWatermark(); !ok || v != 9007199254740999 {
					t.Errorf("HighWatermark() = %d, %v", v, ok)
				}
			}},
		{status: 422, code: "idempotency_key_reused", sentinel: client.ErrIdempotencyKeyReused},
		{status: 422, code: "beyond_high_watermark", sentinel: client.ErrBeyondHighWatermark},
		{status: 429, code: "rate_limited", header: map[string]string{"Retry-After": "7"}, sentinel: client.ErrRateLimited,
			check: func(t *testing.T, e *client.APIError) {
				if e.RetryAfter != 7*time.Second {
					t.Errorf("RetryAfter = %v, want 7s", e.RetryAfter)
				}
				if !e.Temporary() || !client.IsRetryable(e) {
					t.Error("429 must be retryable")
				}
			}},
		{status: 405, code: "method_not_allowed", sentinel: client.ErrMethodNotAllowed},
		{status: 500, code: "internal", sentinel: client.ErrInternal},
		{status: 503, code: "unavailable", sentinel: client.ErrUnavailable, check: func(t *testing.T, e *client.APIError) {
			if !client.IsRetryable(e) || e.RetryAfter != 0 {
				t.Errorf("503: retryable %v, RetryAfter %v", client.IsRetryable(e), e.RetryAfter)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.code, func(t *testing.T) {
			c := serveOne(t, exchange{method: "GET", path: "/v1/topics/x", status: tc.status, answerHeader: tc.header,
				answer: `{"error":{"code":"` + tc.code + `","message":"msg of ` + tc.code + `"` + tc.details + `}}`})
			_, err := c.DescribeTopic(context.Background(), "x")
			var e *client.APIError
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T) is not an *APIError", err, err)
			}
			if e.Status != tc.status || e.Code != tc.code || e.Message != "msg of "+tc.code {
				t.Fatalf("decoded %+v", e)
			}
			for _, s := range allSentinels {
				if got := errors.Is(err, s); got != (s == tc.sentinel) {
					t.Errorf("errors.Is(%v, %v) = %v", err, s, got)
				}
			}
			if !strings.Contains(err.Error(), tc.code) {
				t.Errorf("message %q lacks the code", err)
			}
			if tc.sentinel != client.ErrRateLimited && tc.sentinel != client.ErrUnavailable && client.IsRetryable(err) {
				t.Errorf("%s must not be retryable", tc.code)
			}
			if tc.check != nil {
				tc.check(t, e)
			}
		})
	}
}

// TestAPIErrorWithoutContractBody: a gateway's non-JSON error page still yields an
// *APIError classified by status.
func TestAPIErrorWithoutContractBody(t *testing.T) {
	for _, tc := range []struct {
		status   int
		body     string
		sentinel error
	}{
		{502, "<html>Bad Gateway</html>", client.ErrUnavailable},
		{504, `{"message": "Endpoint request timed out"}`, client.ErrUnavailable},
		{429, "", client.ErrRateLimited},
		{403, `{"message":"Missing Authentication Token"}`, client.ErrForbidden},
		{418, "teapot", nil},
	} {
		c := serveOne(t, exchange{method: "GET", path: "/v1/health", status: tc.status, answer: tc.body})
		err := c.Health(context.Background())
		var e *client.APIError
		if !errors.As(err, &e) || e.Status != tc.status || e.Message == "" {
			t.Fatalf("%d: %v", tc.status, err)
		}
		for _, s := range allSentinels {
			if errors.Is(err, s) != (s == tc.sentinel) {
				t.Errorf("%d: errors.Is(%v) = %v", tc.status, s, !(s == tc.sentinel))
			}
		}
	}
}

// TestGatewayMessage: API Gateway's own error body ({"message": …}, e.g. a refused
// SigV4 signature) becomes the *APIError's message rather than the raw JSON.
func TestGatewayMessage(t *testing.T) {
	const msg = "The request signature we calculated does not match the signature you provided."
	c := serveOne(t, exchange{method: "GET", path: "/v1/health", status: 403, answer: `{"message":"` + msg + `"}`})
	err := c.Health(context.Background())
	var e *client.APIError
	if !errors.As(err, &e) || e.Status != 403 || e.Message != msg || e.Code != "" || !errors.Is(err, client.ErrForbidden) {
		t.Fatalf("err = %v (%+v), want a 403 with the gateway's message", err, e)
	}
}

// TestAppendPartialFailure: a 503 with results returns the results (appended ones with
// offsets, failed ones with an *APIError) together with the error.
func TestAppendPartialFailure(t *testing.T) {
	c := serveOne(t, exchange{method: "POST", path: "/v1/topics/t/records", status: 503,
		body: `{"records":[{"value":"YQ==","partition":0},{"value":"Yg==","partition":1}]}`,
		answer: `{"error":{"code":"unavailable","message":"partition 1 failed"},"results":[` +
			`{"partition":0,"offset":12},{"partition":1,"error":{"code":"unavailable","message":"sequencer"}}]}`})
	res, err := c.Append(context.Background(), "t", []client.Record{
		{Value: []byte("a"), Partition: i32(0)}, {Value: []byte("b"), Partition: i32(1)}}, client.AppendOptions{})
	if !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("err = %v", err)
	}
	if len(res) != 2 || res[0].Err != nil || res[0].Offset != 12 || res[0].Partition != 0 {
		t.Fatalf("results %+v", res)
	}
	var e *client.APIError
	if !errors.As(res[1].Err, &e) || e.Code != "unavailable" || e.Status != 503 || res[1].Partition != 1 {
		t.Fatalf("result 1 error %v", res[1].Err)
	}
}

// TestAppendResultCountMismatch: a 200 whose results do not match the records is an
// error, never silently accepted.
func TestAppendResultCountMismatch(t *testing.T) {
	c := serveOne(t, exchange{method: "POST", path: "/v1/topics/t/records", status: 200,
		body: `{"records":[{"value":null},{"value":null}]}`, answer: `{"results":[{"partition":0,"offset":1}]}`})
	if _, err := c.Append(context.Background(), "t", []client.Record{{}, {}}, client.AppendOptions{}); err == nil {
		t.Fatal("accepted 1 result for 2 records")
	}
}

// TestPollBadBase64: a garbled record is an error, not a silently empty value.
func TestPollBadBase64(t *testing.T) {
	c := serveOne(t, exchange{method: "GET", path: "/v1/topics/t/partitions/0/records", query: "offset=0", status: 200,
		answer: `{"records":[{"offset":0,"timestamp_ms":1,"value":"!!"}],"next_offset":1,"high_watermark":1,"log_start_offset":0}`})
	if _, err := c.Poll(context.Background(), "t", 0, 0, client.PollOptions{}); err == nil {
		t.Fatal("accepted bad base64")
	}
}

func TestHealthNotOK(t *testing.T) {
	c := serveOne(t, exchange{method: "GET", path: "/v1/health", status: 200, answer: `{"status":"degraded"}`})
	if err := c.Health(context.Background()); err == nil {
		t.Fatal("accepted status degraded")
	}
}

// TestContextCancel: a call ends with the context, as context.Canceled, not retryable.
func TestContextCancel(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	c, _ := client.New(srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Poll(ctx, "t", 0, 0, client.PollOptions{Wait: time.Second})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if _, err := c.ListTopics(cctx); !errors.Is(err, context.Canceled) || client.IsRetryable(err) {
		t.Fatalf("cancelled: err = %v, retryable %v", err, client.IsRetryable(err))
	}
}

// TestAppendEncodingProperty: random records (nil, empty and binary keys, headers,
// timestamps including negative ones) reach the fake, which decodes the contract's JSON
// with its own types, byte for byte.
func TestAppendEncodingProperty(t *testing.T) {
	f := newFake(t, 1)
	c, _ := client.New(f.URL)
	bytesGen := rapid.SliceOfN(rapid.Byte(), 0, 40)
	rapid.Check(t, func(rt *rapid.T) {
		recs := rapid.SliceOfN(rapid.Custom(func(rt *rapid.T) client.Record {
			r := client.Record{Value: bytesGen.Draw(rt, "value")}
			if rapid.Bool().Draw(rt, "keyed") {
				r.Key = bytesGen.Draw(rt, "key")
				if r.Key == nil {
					r.Key = []byte{}
				}
			}
			r.Headers = rapid.MapOfN(rapid.StringN(1, 8, -1), bytesGen, 0, 3).Draw(rt, "headers")
			if rapid.Bool().Draw(rt, "ts") {
				r.Timestamp = time.UnixMilli(rapid.Int64Range(-1e13, 1e13).Draw(rt, "ms"))
			}
			return r
		}), 1, 10).Draw(rt, "records")
		_, before, _, _ := f.snapshot()
		res, err := c.Append(context.Background(), "orders", recs, client.AppendOptions{})
		if err != nil {
			rt.Fatal(err)
		}
		_, after, _, _ := f.snapshot()
		got := after[0][len(before[0]):]
		for i, r := range recs {
			g := got[i]
			if res[i].Offset != int64(len(before[0])+i) {
				rt.Fatalf("record %d offset %d", i, res[i].Offset)
			}
			if !bytes.Equal(g.Value, r.Value) || (g.Key == nil) != (r.Key == nil) || !bytes.Equal(g.Key, r.Key) {
				rt.Fatalf("record %d: sent key %q value %q, fake got key %q value %q", i, r.Key, r.Value, g.Key, g.Value)
			}
			var wantTs int64
			if !r.Timestamp.IsZero() {
				wantTs = r.Timestamp.UnixMilli()
			}
			if g.TsMs != wantTs || len(g.Headers) != len(r.Headers) {
				rt.Fatalf("record %d: ts %d want %d, headers %v want %v", i, g.TsMs, wantTs, g.Headers, r.Headers)
			}
			for k, v := range r.Headers {
				if !bytes.Equal(g.Headers[k], v) {
					rt.Fatalf("record %d header %q: %q, want %q", i, k, g.Headers[k], v)
				}
			}
		}
	})
}
