package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/clocktest"
	"github.com/stratalog/strata/pkg/httpapi"
	"github.com/stratalog/strata/pkg/wire"
)

// everyDocumentedRoute is one request per route of docs/openapi.yaml, on topic orders
// and group billing (authEnv's), that is valid apart from what a test adds.
var everyDocumentedRoute = []struct {
	method, path string
	body         any
}{
	{"GET", "/v1/health", nil},
	{"GET", "/metrics", nil},
	{"POST", "/v1/topics", map[string]any{"name": "orders2", "partitions": 1}},
	{"GET", "/v1/topics", nil},
	{"GET", "/v1/topics/orders", nil},
	{"PATCH", "/v1/topics/orders", map[string]any{"partitions": 2}},
	{"DELETE", "/v1/topics/orders", nil},
	{"POST", "/v1/topics/orders/records", appendBody(rec{value: "x"})},
	{"GET", "/v1/topics/orders/partitions/0/records?offset=0", nil},
	{"GET", "/v1/topics/orders/partitions/0/search?key=eA%3D%3D", nil},
	{"GET", "/v1/topics/orders/partitions/0/stats", nil},
	{"GET", "/v1/summary", nil},
	{"POST", "/v1/groups/billing/topics/orders/partitions/0/lease", lease("m")},
	{"DELETE", "/v1/groups/billing/topics/orders/partitions/0/lease", lease("m", "generation", 1)},
	{"POST", "/v1/groups/billing/topics/orders/partitions/0/commit", lease("m", "generation", 1, "next_offset", 0)},
	{"GET", "/v1/groups/billing", nil},
	{"POST", "/v1/groups/billing/topics/orders/reset", map[string]any{"to": "earliest"}},
	{"POST", "/v1/groups/billing/topics/orders/heartbeat", heartbeat("m")},
	{"DELETE", "/v1/groups/billing/members", map[string]any{"member": "m"}},
	{"GET", "/v1/groups", nil},
	{"GET", "/v1/groups/billing/settings", nil},
	{"GET", "/v1/groups/billing/lag-history", nil},
	{"GET", "/v1/groups/billing/members", nil},
	{"PUT", "/v1/groups/billing/settings", map[string]any{"reset_policy": "earliest", "max_attempts": 5}},
	{"DELETE", "/v1/groups/billing/topics/orders/commits", nil},
	{"DELETE", "/v1/groups/billing", nil},
	{"GET", "/v1/topics/orders/offsets?timestamp_ms=0", nil},
	{"GET", "/v1/topics/orders/keys/o-1", nil},
	{"GET", "/v1/groups/billing/parked", nil},
	{"POST", "/v1/groups/billing/parked/release", map[string]any{"topic": "orders", "key": "b3JkZXItMQ=="}},
	{"GET", "/v1/groups/billing/topics/orders/partitions/0/parked", nil},
	{"PUT", "/v1/groups/billing/topics/orders/partitions/0/parked", parkedBody("m", 1, "k")},
	{"POST", "/v1/groups/billing/topics/orders/partitions/0/parked/unpark", map[string]any{"member": "m", "generation": 1, "key": ""}},
}

// state renders what a refused request must leave as it was: topics, offsets, groups.
func state(t *testing.T, e *env) string {
	t.Helper()
	var b strings.Builder
	r := e.call("GET", "/v1/topics", nil, bearer("admin-token")...).want(t, 200)
	b.Write(r.raw)
	for _, topic := range []string{"orders", "orders2"} {
		b.Write(e.call("GET", "/v1/topics/"+topic, nil, bearer("admin-token")...).raw)
	}
	b.Write(e.call("GET", "/v1/groups/billing", nil, bearer("admin-token")...).raw)
	return b.String()
}

// TestUnknownQueryParameterOnEveryRoute (issue 19, item 9): docs/API.md says unknown
// query parameters are 400; before, every route but poll ignored them. A refused
// request changes nothing.
func TestUnknownQueryParameterOnEveryRoute(t *testing.T) {
	e := authEnv(t)
	before := state(t, e)
	for _, rt := range everyDocumentedRoute {
		for _, q := range []string{"bogus=1", "force", "=x"} {
			sep := "?"
			if strings.Contains(rt.path, "?") {
				sep = "&"
			}
			r := e.call(rt.method, rt.path+sep+q, rt.body, bearer("admin-token")...)
			if r.status != http.StatusBadRequest {
				t.Errorf("%s %s%s%s: %d %s, want 400", rt.method, rt.path, sep, q, r.status, r.raw)
			}
		}
	}
	if after := state(t, e); after != before {
		t.Fatalf("refused requests changed state:\n%s\n->\n%s", before, after)
	}
	// An empty query is no parameter.
	e.call("GET", "/v1/topics?", nil, bearer("admin-token")...).want(t, 200)
}

// TestBodyNeedsJSONContentType (issue 19, item 1): a body that is not
// application/json (a browser's cross-site "simple" POST is text/plain or a form) is
// 415 on every route that takes one, and nothing changes; the binary type is accepted
// only where it means something (an append).
func TestBodyNeedsJSONContentType(t *testing.T) {
	e := authEnv(t)
	before := state(t, e)
	for _, rt := range everyDocumentedRoute {
		if rt.body == nil {
			continue
		}
		types := []string{"text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "", "application/jsonx", "json"}
		if !strings.HasSuffix(rt.path, "/records") {
			types = append(types, wire.ContentTypeBlocks)
		}
		for _, ct := range types {
			// An empty value is a missing header.
			e.call(rt.method, rt.path, rt.body, append(bearer("admin-token"), "Content-Type", ct)...).
				want(t, http.StatusUnsupportedMediaType, "unsupported_media_type")
		}
		// Two Content-Type headers are no JSON either.
		e.call(rt.method, rt.path, rt.body, append(bearer("admin-token"), "Content-Type", "application/json", "Content-Type", "text/plain")...).
			want(t, http.StatusUnsupportedMediaType, "unsupported_media_type")
	}
	if after := state(t, e); after != before {
		t.Fatalf("refused requests changed state:\n%s\n->\n%s", before, after)
	}
	e.call("POST", "/v1/topics", map[string]any{"name": "orders2", "partitions": 1},
		append(bearer("admin-token"), "Content-Type", "application/json; charset=utf-8")...).want(t, 201)
}

// TestAuthFailuresSlowedPerClient (issue 19, item 8): a client address that presented
// wrong tokens beyond the burst is answered 429 with Retry-After on every route for a
// wrong token, until its bucket refills, and a wrong token repeated from many addresses
// likewise; a right token is answered from anywhere; the memory of failures is
// bounded.
func TestAuthFailuresSlowedPerClient(t *testing.T) {
	a, err := httpapi.ParseAuth([]byte(authFile))
	if err != nil {
		t.Fatal(err)
	}
	clock := clocktest.New(time.Now())
	e := newEnv(t, withAuth(a), func(c *httpapi.Config) {
		c.Clock = clock.Now
		c.AuthFailures = httpapi.AuthFailureLimit{FailuresPerSecond: 0.5, FailuresBurst: 3, MaxClients: 8}
	})
	e.call("POST", "/v1/topics", map[string]any{"name": "orders", "partitions": 1}, bearer("admin-token")...).want(t, 201)
	send := func(addr, method, path string, body any, token string) *httptest.ResponseRecorder {
		var rd *bytes.Reader
		if body != nil {
			j, _ := json.Marshal(body)
			rd = bytes.NewReader(j)
		} else {
			rd = bytes.NewReader(nil)
		}
		req := httptest.NewRequest(method, path, rd)
		req.RemoteAddr = addr
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, req)
		return w
	}
	const attacker, other = "198.51.100.7:5555", "203.0.113.9:6666"
	for i := range 3 {
		if w := send(attacker, "GET", "/v1/topics", nil, "guess-of-twenty-two-chars"); w.Code != 401 {
			t.Fatalf("guess %d: %d, want 401", i, w.Code)
		}
	}
	for _, rt := range everyDocumentedRoute {
		if rt.path == "/v1/health" {
			continue // needs no token
		}
		if w := send(attacker, rt.method, rt.path, rt.body, tok("admin-token")); w.Code == 401 || w.Code == 429 {
			t.Errorf("%s %s with the right token from a guessing address: %d %s", rt.method, rt.path, w.Code, w.Body)
		}
		w := send(attacker, rt.method, rt.path, rt.body, "guess-of-twenty-two-chars")
		if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" {
			t.Errorf("%s %s from a guessing address: %d (Retry-After %q) %s, want 429 with Retry-After",
				rt.method, rt.path, w.Code, w.Header().Get("Retry-After"), w.Body)
		}
		if n, err := strconv.Atoi(w.Header().Get("Retry-After")); err != nil || n < 1 || n > 2 {
			t.Errorf("Retry-After %q, want 1–2 s", w.Header().Get("Retry-After"))
		}
	}
	if w := send(other, "GET", "/v1/topics", nil, "another-guess-of-22-chars"); w.Code != 401 {
		t.Fatalf("a new wrong token from another address: %d %s, want 401", w.Code, w.Body)
	}
	// The attacker's repeated guess is limited as a credential from other addresses too.
	if w := send(other, "GET", "/v1/topics", nil, "guess-of-twenty-two-chars"); w.Code != 429 {
		t.Fatalf("the repeated wrong token from another address: %d %s, want 429", w.Code, w.Body)
	}
	clock.Advance(2 * time.Second)
	if w := send(attacker, "GET", "/v1/topics", nil, "a-new-guess-of-22-chars"); w.Code != 401 {
		t.Fatalf("after the bucket refilled: %d %s, want 401", w.Code, w.Body)
	}
	// Many addresses failing once each: still answered, memory bounded by MaxClients
	// (checked inside the package by TestFailLimiterBounded).
	for i := range 100 {
		if w := send(fmt.Sprintf("192.0.2.%d:1", i), "GET", "/v1/topics", nil, fmt.Sprintf("wrong-token-%011d", i)); w.Code != 401 {
			t.Fatalf("address %d: %d, want 401", i, w.Code)
		}
	}
}

// TestDeadLetterTopicNeedsAppend (issue 19, item 3): naming a group's dead-letter topic
// needs append on it, so a caller can neither redirect dead letters into a topic it may
// not write nor learn whether a topic exists from the answer.
func TestDeadLetterTopicNeedsAppend(t *testing.T) {
	a, err := httpapi.ParseAuth([]byte(`{"principals": {
		"` + tok("admin") + `": {"name": "admin", "allow": [{"resource": "topic:*", "ops": ["create", "describe", "append", "read"]}]},
		"` + tok("ops") + `": {"name": "ops", "allow": [{"resource": "group:billing", "ops": ["reset", "describe"]},
			{"resource": "topic:billing.dlq", "ops": ["append"]}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, withAuth(a))
	for _, n := range []string{"billing.dlq", "payments"} {
		e.call("POST", "/v1/topics", map[string]any{"name": n, "partitions": 1}, bearer("admin")...).want(t, 201)
	}
	settings := func(dlq string) map[string]any {
		return map[string]any{"reset_policy": "earliest", "max_attempts": 5, "dead_letter_topic": dlq}
	}
	// Another topic, existing or not: the same 403, and nothing stored.
	e.call("PUT", "/v1/groups/billing/settings", settings("payments"), bearer("ops")...).want(t, 403, "forbidden")
	e.call("PUT", "/v1/groups/billing/settings", settings("missing"), bearer("ops")...).want(t, 403, "forbidden")
	e.call("GET", "/v1/groups/billing/settings", nil, bearer("ops")...).want(t, 404, "not_found")
	r := e.call("PUT", "/v1/groups/billing/settings", settings("billing.dlq"), bearer("ops")...).want(t, 200)
	if r.body["dead_letter_topic"] != "billing.dlq" {
		t.Fatalf("settings %s", r.raw)
	}
	// Without a dead-letter topic, reset on the group is enough.
	e.call("PUT", "/v1/groups/billing/settings", map[string]any{"reset_policy": "latest", "max_attempts": 5}, bearer("ops")...).want(t, 200)
}

// TestDescribeGroupFilteredByTopicRights (issue 19, item 4): GET /v1/groups/{group}
// shows only the partitions of topics the caller may describe, as GET /v1/topics lists
// only those: no topic name, high watermark or owner of another topic leaks.
func TestDescribeGroupFilteredByTopicRights(t *testing.T) {
	a, err := httpapi.ParseAuth([]byte(`{"principals": {
		"` + tok("admin") + `": {"name": "admin", "allow": [{"resource": "topic:*", "ops": ["create", "describe", "append", "read"]},
			{"resource": "group:*", "ops": ["consume", "describe"]}]},
		"` + tok("billing") + `": {"name": "billing", "allow": [{"resource": "topic:orders", "ops": ["describe"]},
			{"resource": "group:billing", "ops": ["describe"]}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, withAuth(a))
	for _, n := range []string{"orders", "secret-payroll"} {
		e.call("POST", "/v1/topics", map[string]any{"name": n, "partitions": 2}, bearer("admin")...).want(t, 201)
		e.call("POST", "/v1/groups/billing/topics/"+n+"/partitions/0/lease", lease("member-"+n), bearer("admin")...).want(t, 200)
	}
	all := e.call("GET", "/v1/groups/billing", nil, bearer("admin")...).want(t, 200)
	if !strings.Contains(string(all.raw), "secret-payroll") {
		t.Fatalf("admin should see every topic: %s", all.raw)
	}
	r := e.call("GET", "/v1/groups/billing", nil, bearer("billing")...).want(t, 200)
	if strings.Contains(string(r.raw), "secret-payroll") || strings.Contains(string(r.raw), "member-secret-payroll") {
		t.Fatalf("describe shows a topic the caller may not describe: %s", r.raw)
	}
	parts, _ := r.body["partitions"].([]any)
	if len(parts) == 0 {
		t.Fatalf("describe lost the topic the caller may describe: %s", r.raw)
	}
	for _, p := range parts {
		if p.(map[string]any)["topic"] != "orders" {
			t.Fatalf("partition of %v shown: %s", p, r.raw)
		}
	}
}

// TestAPIAnswersNosniff (issue 19, item 9): every answer of the API, errors included,
// carries X-Content-Type-Options: nosniff.
func TestAPIAnswersNosniff(t *testing.T) {
	e := authEnv(t)
	for _, rt := range everyDocumentedRoute {
		for _, hdr := range [][]string{bearer("admin-token"), nil} {
			r := e.call(rt.method, rt.path, rt.body, hdr...)
			if got := r.header.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("%s %s (%d): X-Content-Type-Options %q", rt.method, rt.path, r.status, got)
			}
		}
	}
	if r := e.call("GET", "/nowhere", nil); r.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("404: no nosniff")
	}
}
