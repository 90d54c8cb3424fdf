package apigwtest_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/stratalog/strata/internal/apigwtest"
)

const region = "eu-west-1"

var (
	now      = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	producer = apigwtest.Principal{AccessKeyID: "AKIDPRODUCER", SecretAccessKey: "producer-secret",
		ARN: "arn:aws:iam::123456789012:user/producer", UserID: "AIDAPRODUCER"}
	temporary = apigwtest.Principal{AccessKeyID: "ASIATEMP", SecretAccessKey: "temp-secret", SessionToken: "session-token",
		ARN: "arn:aws:sts::123456789012:assumed-role/consumer/session", UserID: "AROACONSUMER:session"}
)

// echo is an Invoker answering 200 with the event it received as the JSON body, and
// counting invocations.
type echo struct{ calls atomic.Int64 }

func (e *echo) Invoke(_ context.Context, payload []byte) ([]byte, error) {
	e.calls.Add(1)
	return json.Marshal(events.APIGatewayV2HTTPResponse{StatusCode: 200,
		Headers: map[string]string{"Content-Type": "application/json"}, Body: string(payload)})
}

func newFront(t *testing.T, inv apigwtest.Invoker, routes []apigwtest.Route) (*apigwtest.Front, *httptest.Server) {
	t.Helper()
	f, err := apigwtest.New(apigwtest.Config{Region: region, APIID: "abc123", Principals: []apigwtest.Principal{producer, temporary},
		Routes: routes, Invoker: inv, Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

// signed builds a request to srv signed by p at when with the SDK's v4 signer, as the
// Strata client signs it.
func signed(t *testing.T, srv *httptest.Server, p apigwtest.Principal, when time.Time, method, pathQuery string, body []byte, hdr map[string]string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+pathQuery, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body == nil {
		req.Body, req.GetBody, req.ContentLength = http.NoBody, nil, 0
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: p.AccessKeyID, SecretAccessKey: p.SecretAccessKey, SessionToken: p.SessionToken}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), "execute-api", region, when); err != nil {
		t.Fatal(err)
	}
	return req
}

func do(t *testing.T, req *http.Request) (int, http.Header, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

func eventOf(t *testing.T, body []byte) events.APIGatewayV2HTTPRequest {
	t.Helper()
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(body, &ev); err != nil {
		t.Fatalf("echoed event %s: %v", body, err)
	}
	return ev
}

// TestSignedRequestsPass: a request signed by a known principal reaches the function as
// API Gateway's event, with the caller in requestContext.authorizer.iam, a JSON body as
// text and a binary one base64.
func TestSignedRequestsPass(t *testing.T) {
	inv := &echo{}
	f, srv := newFront(t, inv, nil)
	bin := []byte{0, 1, 2, 0xff, 0xfe}
	for _, tc := range []struct {
		name        string
		p           apigwtest.Principal
		body        []byte
		contentType string
		wantBody    string
		wantB64     bool
	}{
		{"json", producer, []byte(`{"records":[]}`), "application/json", `{"records":[]}`, false},
		{"binary", producer, bin, "application/vnd.strata.blocks", base64.StdEncoding.EncodeToString(bin), true},
		{"session token", temporary, nil, "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := map[string]string{"Idempotency-Key": "k,1"}
			if tc.contentType != "" {
				hdr["Content-Type"] = tc.contentType
			}
			status, _, body := do(t, signed(t, srv, tc.p, now.Add(-time.Minute), "POST", "/v1/topics/orders/records?a=1&a=2", tc.body, hdr))
			if status != 200 {
				t.Fatalf("status %d: %s", status, body)
			}
			ev := eventOf(t, body)
			iam := ev.RequestContext.Authorizer.IAM
			if iam.UserARN != tc.p.ARN || iam.AccessKey != tc.p.AccessKeyID || iam.UserID != tc.p.UserID || iam.AccountID != "123456789012" {
				t.Errorf("iam = %+v, want the principal %+v", iam, tc.p)
			}
			if ev.Body != tc.wantBody || ev.IsBase64Encoded != tc.wantB64 {
				t.Errorf("body %q base64 %v, want %q %v", ev.Body, ev.IsBase64Encoded, tc.wantBody, tc.wantB64)
			}
			if ev.Version != "2.0" || ev.RouteKey != "$default" || ev.RawPath != "/v1/topics/orders/records" ||
				ev.RawQueryString != "a=1&a=2" || ev.QueryStringParameters["a"] != "1,2" || ev.RequestContext.HTTP.Method != "POST" ||
				ev.RequestContext.APIID != "abc123" || ev.RequestContext.Stage != "$default" || ev.Headers["idempotency-key"] != "k,1" {
				t.Errorf("event = %+v", ev)
			}
		})
	}
	if st := f.Stats(); st.Accepted != 3 || st.Refused != 0 {
		t.Errorf("stats %+v, want 3 accepted", st)
	}
}

// TestRefused: a missing, unknown, stale or tampered signature is API Gateway's 403 with
// its JSON message, and the function is never invoked.
func TestRefused(t *testing.T) {
	body := []byte(`{"records":[{"value":"eA=="}]}`)
	hdr := map[string]string{"Content-Type": "application/json", "Idempotency-Key": "k1"}
	good := func(t *testing.T, srv *httptest.Server) *http.Request {
		return signed(t, srv, producer, now, "POST", "/v1/topics/orders/records?wait_ms=10", body, hdr)
	}
	for _, tc := range []struct {
		name    string
		req     func(t *testing.T, srv *httptest.Server) *http.Request
		errType string
		message string
	}{
		{"unsigned", func(t *testing.T, srv *httptest.Server) *http.Request {
			r := good(t, srv)
			r.Header.Del("Authorization")
			return r
		}, "ForbiddenException", "Forbidden"},
		{"unknown access key", func(t *testing.T, srv *httptest.Server) *http.Request {
			return signed(t, srv, apigwtest.Principal{AccessKeyID: "AKIDNOBODY", SecretAccessKey: "x"}, now, "GET", "/v1/topics", nil, nil)
		}, "UnrecognizedClientException", "The security token included in the request is invalid."},
		{"wrong secret", func(t *testing.T, srv *httptest.Server) *http.Request {
			p := producer
			p.SecretAccessKey = "guessed"
			return signed(t, srv, p, now, "GET", "/v1/topics", nil, nil)
		}, "InvalidSignatureException", "The request signature we calculated does not match"},
		{"tampered body", func(t *testing.T, srv *httptest.Server) *http.Request {
			r := good(t, srv)
			evil := bytes.Replace(body, []byte("eA=="), []byte("eQ=="), 1)
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(evil)), int64(len(evil))
			return r
		}, "InvalidSignatureException", "The request signature we calculated does not match"},
		{"tampered body of another length", func(t *testing.T, srv *httptest.Server) *http.Request {
			r := good(t, srv)
			evil := append(bytes.Clone(body), ' ')
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(evil)), int64(len(evil))
			return r
		}, "InvalidSignatureException", "The request signature we calculated does not match"},
		{"tampered header", func(t *testing.T, srv *httptest.Server) *http.Request {
			r := good(t, srv)
			r.Header.Set("Idempotency-Key", "k2")
			return r
		}, "InvalidSignatureException", "The request signature we calculated does not match"},
		{"tampered path", func(t *testing.T, srv *httptest.Server) *http.Request {
			r := good(t, srv)
			r.URL.Path = "/v1/topics/payments/records"
			return r
		}, "InvalidSignatureException", "The request signature we calculated does not match"},
		{"tampered query", func(t *testing.T, srv *httptest.Server) *http.Request {
			r := good(t, srv)
			r.URL.RawQuery = "wait_ms=20"
			return r
		}, "InvalidSignatureException", "The request signature we calculated does not match"},
		{"tampered method", func(t *testing.T, srv *httptest.Server) *http.Request {
			r := good(t, srv)
			r.Method = "PUT"
			return r
		}, "InvalidSignatureException", "The request signature we calculated does not match"},
		{"expired", func(t *testing.T, srv *httptest.Server) *http.Request {
			return signed(t, srv, producer, now.Add(-6*time.Minute), "GET", "/v1/topics", nil, nil)
		}, "InvalidSignatureException", "Signature expired: 20261201T095400Z is now earlier than 20261201T095500Z (20261201T100000Z - 5 min.)"},
		{"not yet current", func(t *testing.T, srv *httptest.Server) *http.Request {
			return signed(t, srv, producer, now.Add(6*time.Minute), "GET", "/v1/topics", nil, nil)
		}, "InvalidSignatureException", "Signature not yet current"},
		{"session token missing", func(t *testing.T, srv *httptest.Server) *http.Request {
			p := temporary
			p.SessionToken = ""
			return signed(t, srv, p, now, "GET", "/v1/topics", nil, nil)
		}, "UnrecognizedClientException", "The security token included in the request is invalid."},
		{"malformed header", func(t *testing.T, srv *httptest.Server) *http.Request {
			r := good(t, srv)
			r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIDPRODUCER/20261201/eu-west-1/execute-api/aws4_request")
			return r
		}, "IncompleteSignatureException", "Authorization header requires 'Signature' parameter."},
		{"payload hash header lies", func(t *testing.T, srv *httptest.Server) *http.Request {
			r := good(t, srv)
			r.Header.Set("X-Amz-Content-Sha256", strings.Repeat("0", 64))
			return r
		}, "InvalidSignatureException", "The request signature we calculated does not match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv := &echo{}
			f, srv := newFront(t, inv, nil)
			status, h, got := do(t, tc.req(t, srv))
			if status != http.StatusForbidden {
				t.Fatalf("status %d (%s), want 403", status, got)
			}
			var msg struct {
				Message string `json:"message"`
			}
			if err := json.Unmarshal(got, &msg); err != nil || !strings.Contains(msg.Message, tc.message) {
				t.Errorf("body %s, want a message containing %q", got, tc.message)
			}
			if h.Get("X-Amzn-Errortype") != tc.errType || h.Get("Content-Type") != "application/json" {
				t.Errorf("headers %v, want x-amzn-ErrorType %s", h, tc.errType)
			}
			if inv.calls.Load() != 0 || f.Stats().Refused != 1 {
				t.Errorf("function invoked %d times, stats %+v", inv.calls.Load(), f.Stats())
			}
		})
	}
}

// TestRoutes: requests go to the most specific route with its path parameters; a
// public route needs no signature; without $default an unknown path is API Gateway's
// 404; an Authorize hook's refusal is a 403 naming the resource.
func TestRoutes(t *testing.T) {
	inv := &echo{}
	routes := []apigwtest.Route{
		{Key: "GET /v1/health", Public: true},
		{Key: "POST /v1/topics/{topic}/records"},
		{Key: "ANY /v1/topics/{topic}/{rest+}"},
		{Key: "GET /v1/topics/{topic}/partitions/{partition}/records"},
	}
	_, srv := newFront(t, inv, routes)
	for _, tc := range []struct {
		method, path string
		sign         bool
		status       int
		routeKey     string
		params       map[string]string
	}{
		{"GET", "/v1/health", false, 200, "GET /v1/health", nil},
		{"POST", "/v1/topics/orders/records", true, 200, "POST /v1/topics/{topic}/records", map[string]string{"topic": "orders"}},
		{"POST", "/v1/topics/orders/records", false, 403, "", nil},
		{"GET", "/v1/topics/orders/partitions/3/records", true, 200, "GET /v1/topics/{topic}/partitions/{partition}/records",
			map[string]string{"topic": "orders", "partition": "3"}},
		{"DELETE", "/v1/topics/orders/a/b", true, 200, "ANY /v1/topics/{topic}/{rest+}", map[string]string{"topic": "orders", "rest": "a/b"}},
		{"GET", "/v1/groups", true, 404, "", nil},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			var req *http.Request
			if tc.sign {
				req = signed(t, srv, producer, now, tc.method, tc.path, nil, nil)
			} else {
				req, _ = http.NewRequest(tc.method, srv.URL+tc.path, nil)
			}
			status, _, body := do(t, req)
			if status != tc.status {
				t.Fatalf("status %d (%s), want %d", status, body, tc.status)
			}
			if status != 200 {
				return
			}
			ev := eventOf(t, body)
			if ev.RouteKey != tc.routeKey || len(ev.PathParameters) != len(tc.params) {
				t.Fatalf("route %q params %v, want %q %v", ev.RouteKey, ev.PathParameters, tc.routeKey, tc.params)
			}
			for k, v := range tc.params {
				if ev.PathParameters[k] != v {
					t.Errorf("param %s = %q, want %q", k, ev.PathParameters[k], v)
				}
			}
			if tc.sign != (ev.RequestContext.Authorizer != nil) {
				t.Errorf("authorizer %+v on a route signed=%v", ev.RequestContext.Authorizer, tc.sign)
			}
		})
	}

	t.Run("authorize", func(t *testing.T) {
		var seen apigwtest.Authorization
		f, err := apigwtest.New(apigwtest.Config{Region: region, APIID: "abc123", Principals: []apigwtest.Principal{producer},
			Invoker: inv, Clock: func() time.Time { return now },
			Authorize: func(_ context.Context, a apigwtest.Authorization) error {
				seen = a
				return errDenied("User: " + a.Caller.ARN + " is not authorized to perform: execute-api:Invoke on resource: " + a.Resource)
			}})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(f)
		defer srv.Close()
		status, _, body := do(t, signed(t, srv, producer, now, "GET", "/v1/topics/orders", nil, nil))
		want := "arn:aws:execute-api:eu-west-1:123456789012:abc123/$default/GET/v1/topics/orders"
		if status != 403 || seen.Resource != want || !strings.Contains(string(body), want) {
			t.Errorf("status %d body %s resource %q, want 403 naming %s", status, body, seen.Resource, want)
		}
	})
}

type errDenied string

func (e errDenied) Error() string { return string(e) }

// TestWriteResponse: the function's answer becomes the HTTP answer, a base64 body
// decoded, and a function error or a malformed answer API Gateway's 500.
func TestWriteResponse(t *testing.T) {
	bin := []byte{0, 0xff, 7}
	for _, tc := range []struct {
		name   string
		inv    apigwtest.InvokerFunc
		status int
		body   []byte
		header string
	}{
		{"base64", func(context.Context, []byte) ([]byte, error) {
			return json.Marshal(events.APIGatewayV2HTTPResponse{StatusCode: 201, Headers: map[string]string{"Content-Type": "application/vnd.strata.blocks"},
				Body: base64.StdEncoding.EncodeToString(bin), IsBase64Encoded: true})
		}, 201, bin, "application/vnd.strata.blocks"},
		{"function error", func(context.Context, []byte) ([]byte, error) { return nil, io.ErrUnexpectedEOF }, 500, []byte(`{"message":"Internal Server Error"}`), "application/json"},
		{"not a response", func(context.Context, []byte) ([]byte, error) { return []byte(`[1]`), nil }, 500, []byte(`{"message":"Internal Server Error"}`), "application/json"},
		{"bad base64", func(context.Context, []byte) ([]byte, error) {
			return json.Marshal(events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: "!!", IsBase64Encoded: true})
		}, 500, []byte(`{"message":"Internal Server Error"}`), "application/json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, srv := newFront(t, tc.inv, nil)
			status, h, body := do(t, signed(t, srv, producer, now, "GET", "/v1/topics", nil, nil))
			if status != tc.status || !bytes.Equal(body, tc.body) || h.Get("Content-Type") != tc.header {
				t.Errorf("got %d %q %q, want %d %q %q", status, h.Get("Content-Type"), body, tc.status, tc.header, tc.body)
			}
		})
	}
}

// TestLambdaLimits: an event over Lambda's 6 MB invocation limit (a 4.5 MiB binary body
// is 6 MiB base64) is API Gateway's 413 and never invoked; an answer over it is a 500.
func TestLambdaLimits(t *testing.T) {
	inv := &echo{}
	_, srv := newFront(t, inv, nil)
	big := bytes.Repeat([]byte{0xff}, 4608<<10)
	status, _, body := do(t, signed(t, srv, producer, now, "POST", "/v1/topics/t/records", big, map[string]string{"Content-Type": "application/octet-stream"}))
	if status != http.StatusRequestEntityTooLarge || string(body) != `{"message":"Request Entity Too Large"}` || inv.calls.Load() != 0 {
		t.Errorf("big request: %d %s, %d invocations; want 413 and none", status, body, inv.calls.Load())
	}
	huge := apigwtest.InvokerFunc(func(context.Context, []byte) ([]byte, error) {
		return json.Marshal(events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: strings.Repeat("x", 6<<20)})
	})
	_, srv = newFront(t, huge, nil)
	if status, _, body := do(t, signed(t, srv, producer, now, "GET", "/v1/topics", nil, nil)); status != http.StatusInternalServerError {
		t.Errorf("huge answer: %d %.100s, want 500", status, body)
	}
}

// signedFor is signed scoped to service instead of execute-api.
func signedFor(t *testing.T, srv *httptest.Server, p apigwtest.Principal, service, method, pathQuery string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+pathQuery, http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(nil)
	creds := aws.Credentials{AccessKeyID: p.AccessKeyID, SecretAccessKey: p.SecretAccessKey, SessionToken: p.SessionToken}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), service, region, now); err != nil {
		t.Fatal(err)
	}
	return req
}

// TestFunctionURLFront (issue 20 item 3): with Service lambda the Front is a function
// URL with IAM auth: a request signed for lambda passes and reaches the function as the
// same 2.0 event (routeKey $default, the caller in authorizer.iam), one signed for
// execute-api is refused, every path needs a signature (no public route), Authorize is
// asked about the function's ARN, and routes are refused in its configuration.
func TestFunctionURLFront(t *testing.T) {
	inv := &echo{}
	var asked []string
	f, err := apigwtest.New(apigwtest.Config{Region: region, APIID: "urlid123", Service: apigwtest.ServiceLambda,
		Principals: []apigwtest.Principal{producer}, Invoker: inv, Clock: func() time.Time { return now },
		Authorize: func(_ context.Context, a apigwtest.Authorization) error {
			asked = append(asked, a.Resource)
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)

	status, _, body := do(t, signedFor(t, srv, producer, "lambda", "GET", "/v1/topics/orders?x=1"))
	if status != http.StatusOK {
		t.Fatalf("signed for lambda: %d %s", status, body)
	}
	ev := eventOf(t, body)
	if ev.RouteKey != "$default" || ev.RawPath != "/v1/topics/orders" || ev.RawQueryString != "x=1" || ev.RequestContext.APIID != "urlid123" ||
		ev.RequestContext.Authorizer == nil || ev.RequestContext.Authorizer.IAM == nil || ev.RequestContext.Authorizer.IAM.UserARN != producer.ARN {
		t.Errorf("event %+v", ev)
	}
	if want := "arn:aws:lambda:" + region + ":123456789012:function:apigwtest"; len(asked) != 1 || asked[0] != want {
		t.Errorf("Authorize asked about %q, want [%s]", asked, want)
	}
	for _, tc := range []struct {
		name string
		req  *http.Request
	}{
		{"signed for execute-api", signedFor(t, srv, producer, "execute-api", "GET", "/v1/topics/orders")},
		{"unsigned health", func() *http.Request { r, _ := http.NewRequest("GET", srv.URL+"/v1/health", nil); return r }()},
	} {
		if status, _, body := do(t, tc.req); status != http.StatusForbidden {
			t.Errorf("%s: %d %s, want 403", tc.name, status, body)
		}
	}
	if inv.calls.Load() != 1 {
		t.Errorf("%d invocations, want only the lambda-signed one", inv.calls.Load())
	}
	if _, err := apigwtest.New(apigwtest.Config{Region: region, Service: apigwtest.ServiceLambda, Invoker: inv,
		Routes: []apigwtest.Route{{Key: "$default"}}}); err == nil {
		t.Error("a function URL with routes accepted")
	}
	if _, err := apigwtest.New(apigwtest.Config{Region: region, Service: "s3", Invoker: inv}); err == nil {
		t.Error("Service s3 accepted")
	}
}
