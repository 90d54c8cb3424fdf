package apigwtest_test

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestSignedRoundTrip (property): any request signed with the right key passes, and the
// function gets exactly its body (text or base64), path and query; the same request with
// one body byte changed is refused.
func TestSignedRoundTrip(t *testing.T) {
	inv := &echo{}
	_, srv := newFront(t, inv, nil)
	name := rapid.StringMatching(`[a-zA-Z0-9._-]{1,20}`)
	rapid.Check(t, func(rt *rapid.T) {
		body := rapid.SliceOfN(rapid.Byte(), 0, 2048).Draw(rt, "body")
		ct := rapid.SampledFrom([]string{"application/json", "application/vnd.strata.blocks", "text/plain; charset=utf-8", ""}).Draw(rt, "content-type")
		path := "/v1/topics/" + name.Draw(rt, "topic") + "/records"
		q := url.Values{}
		for range rapid.IntRange(0, 3).Draw(rt, "params") {
			q.Add(name.Draw(rt, "key"), rapid.StringMatching(`[ -~]{0,10}`).Draw(rt, "value"))
		}
		target := path
		if len(q) > 0 {
			target += "?" + q.Encode()
		}
		hdr := map[string]string{}
		if ct != "" {
			hdr["Content-Type"] = ct
		}
		method := rapid.SampledFrom([]string{"POST", "PUT", "DELETE"}).Draw(rt, "method")
		first := signed(t, srv, producer, now, method, target, body, hdr)
		wantQuery := first.URL.RawQuery // the signer re-encodes the query canonically (values of a key sorted)
		status, _, got := do(t, first)
		if status != http.StatusOK {
			rt.Fatalf("signed request refused: %d %s", status, got)
		}
		ev := eventOf(t, got)
		sent := []byte(ev.Body)
		if ev.IsBase64Encoded {
			var err error
			if sent, err = base64.StdEncoding.DecodeString(ev.Body); err != nil {
				rt.Fatal(err)
			}
		}
		if !bytes.Equal(sent, body) || ev.RawPath != path || ev.RawQueryString != wantQuery || ev.RequestContext.HTTP.Method != method {
			rt.Fatalf("event %q %q %q %q, want %q %q %q %q", ev.RequestContext.HTTP.Method, ev.RawPath, ev.RawQueryString, sent, method, path, wantQuery, body)
		}
		if pq, err := url.ParseQuery(ev.RawQueryString); err != nil || sortedQuery(pq) != sortedQuery(q) {
			rt.Fatalf("query %q means %v, want %v", ev.RawQueryString, pq, q)
		}
		if len(body) == 0 {
			return
		}
		before := inv.calls.Load()
		req := signed(t, srv, producer, now, method, target, body, hdr)
		evil := bytes.Clone(body)
		evil[rapid.IntRange(0, len(evil)-1).Draw(rt, "at")] ^= byte(rapid.IntRange(1, 255).Draw(rt, "flip"))
		req.Body = httpBody(evil)
		if status, _, got := do(t, req); status != http.StatusForbidden || inv.calls.Load() != before {
			rt.Fatalf("tampered body: %d %s, want 403 without an invocation", status, got)
		}
	})
}

// sortedQuery encodes q with each key's values sorted, as the SDK's signer sends them.
func sortedQuery(q url.Values) string {
	c := url.Values{}
	for k, vs := range q {
		c[k] = slices.Sorted(slices.Values(vs))
	}
	return c.Encode()
}
