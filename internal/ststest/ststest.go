// Package ststest fronts the emulator's STS for presigned requests. moto routes a
// request to a service by its Authorization header alone and takes the caller's access
// key from there, so a presigned GetCallerIdentity (signed in its query) would reach
// its S3. Relay restates the query's credential as an Authorization header and passes
// the request on to the emulator unchanged otherwise; real STS redeems the URL as it
// is, so only tests use it.
package ststest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/stratalog/strata/pkg/store/awstest"
)

// Relay starts a relay on 127.0.0.1 in front of the emulator's STS (awstest.Endpoint:
// it skips or fails as that does) and returns its URL, the endpoint tokens are
// presigned for and redeemed at.
func Relay(t testing.TB) string {
	t.Helper()
	emu, err := url.Parse(awstest.Endpoint(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out := *r.URL
		out.Scheme, out.Host = emu.Scheme, emu.Host
		req, err := http.NewRequestWithContext(r.Context(), r.Method, out.String(), nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		q := r.URL.Query()
		req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+q.Get("X-Amz-Credential")+
			", SignedHeaders="+q.Get("X-Amz-SignedHeaders")+", Signature="+q.Get("X-Amz-Signature"))
		if tok := q.Get("X-Amz-Security-Token"); tok != "" {
			req.Header.Set("X-Amz-Security-Token", tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
