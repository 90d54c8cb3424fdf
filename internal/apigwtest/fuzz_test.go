package apigwtest_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/apigwtest"
)

// FuzzFront: whatever the method, path, Authorization, X-Amz-Date and body, the front
// never panics, answers, and invokes the function only for a signature it verified
// (never for these unsigned or forged requests, since the fuzzer does not know the
// secret).
func FuzzFront(f *testing.F) {
	f.Add("POST", "/v1/topics/orders/records", "AWS4-HMAC-SHA256 Credential=AKIDPRODUCER/20261201/eu-west-1/execute-api/aws4_request, SignedHeaders=host;x-amz-date, Signature=00", "20261201T100000Z", []byte("{}"))
	f.Add("GET", "/v1/health", "", "", []byte(nil))
	f.Add("GET", "/", "AWS4-HMAC-SHA256 Credential=////, SignedHeaders=;, Signature=", "x", []byte{0xff})
	f.Add("DELETE", "/v1/topics/a/b/c", "AWS4-HMAC-SHA256 ,,,=", "20261201T100000Z", []byte("\x00"))
	f.Fuzz(forgedNeverInvoke(apigwtest.Config{Region: region, Principals: []apigwtest.Principal{producer},
		Routes: []apigwtest.Route{{Key: "GET /v1/health", Public: true}, {Key: "$default"}, {Key: "ANY /v1/{x+}"}}},
		"example.execute-api.eu-west-1.amazonaws.com",
		func(method, path string) bool { return method == "GET" && path == "/v1/health" }))
}

// FuzzFunctionURLFront: the function-URL front (Service lambda) never panics, answers
// every request, and invokes the function for none of these unsigned or forged ones —
// not even the health check, which a function URL does not make public.
func FuzzFunctionURLFront(f *testing.F) {
	f.Add("POST", "/v1/topics/orders/records", "AWS4-HMAC-SHA256 Credential=AKIDPRODUCER/20261201/eu-west-1/lambda/aws4_request, SignedHeaders=host;x-amz-date, Signature=00", "20261201T100000Z", []byte("{}"))
	f.Add("GET", "/v1/health", "", "", []byte(nil))
	f.Add("GET", "/", "AWS4-HMAC-SHA256 Credential=AKIDPRODUCER/20261201/eu-west-1/execute-api/aws4_request, SignedHeaders=host, Signature=ab", "20261201T100000Z", []byte{0xff})
	f.Fuzz(forgedNeverInvoke(apigwtest.Config{Region: region, Service: apigwtest.ServiceLambda,
		Principals: []apigwtest.Principal{producer}},
		"abc.lambda-url.eu-west-1.on.aws",
		func(string, string) bool { return false }))
}

// forgedNeverInvoke is the body of the front fuzz targets: a front of cfg (with a
// counting Invoker and the tests' clock) sent the fuzzed request at host must answer it,
// and must not invoke the function unless public says the route needs no signature.
func forgedNeverInvoke(cfg apigwtest.Config, host string, public func(method, path string) bool) func(t *testing.T, method, path, authz, date string, body []byte) {
	return func(t *testing.T, method, path, authz, date string, body []byte) {
		u, err := url.Parse(path)
		if err != nil || method == "" {
			return
		}
		inv := &echo{}
		cfg := cfg
		cfg.Invoker, cfg.Clock = inv, func() time.Time { return now }
		fr, err := apigwtest.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		req := &http.Request{Method: method, URL: u, Host: host, Header: http.Header{},
			Body: http.NoBody, Proto: "HTTP/1.1", RemoteAddr: "192.0.2.1:1234"}
		if len(body) > 0 {
			req.Body = httpBody(body)
		}
		if authz != "" {
			req.Header.Set("Authorization", authz)
		}
		if date != "" {
			req.Header.Set("X-Amz-Date", date)
		}
		rec := httptest.NewRecorder()
		fr.ServeHTTP(rec, req)
		if !public(method, u.Path) && inv.calls.Load() != 0 {
			t.Fatalf("a forged request reached the function: %d %s", rec.Code, rec.Body)
		}
		if rec.Code == 0 {
			t.Fatal("no answer")
		}
	}
}

type body struct{ *bytes.Reader }

func (body) Close() error { return nil }

func httpBody(b []byte) body { return body{bytes.NewReader(b)} }
