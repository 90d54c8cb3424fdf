package httpapi_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratalog/strata/pkg/httpapi"
)

const authFile = `{"principals": {
  "admin-token00000000000": {"name": "admin", "allow": [
    {"resource": "topic:*", "ops": ["create", "describe", "append", "read", "delete", "alter"]},
    {"resource": "group:*", "ops": ["consume", "describe", "reset"]}]},
  "orders-token0000000000": {"name": "orders-svc", "allow": [
    {"resource": "topic:orders", "ops": ["create", "describe", "append", "read"]},
    {"resource": "group:billing", "ops": ["consume", "describe", "reset"]}]},
  "prefix-token0000000000": {"name": "prefix", "allow": [
    {"resource": "topic:ord*", "ops": ["describe", "read"]},
    {"resource": "group:bill*", "ops": ["consume"]}]},
  "consume-only0000000000": {"name": "consume-only", "allow": [
    {"resource": "group:billing", "ops": ["consume", "reset"]}]},
  "none-token000000000000": {"name": "none", "allow": []}
}}`

func authEnv(t *testing.T) *env {
	t.Helper()
	path := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(path, []byte(authFile), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := httpapi.LoadAuth(path)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, withAuth(a))
	for _, topic := range []string{"orders", "ordinals", "payments"} {
		e.call("POST", "/v1/topics", map[string]any{"name": topic, "partitions": 1}, bearer("admin-token")...).want(t, 201)
	}
	e.call("POST", "/v1/topics/orders/records", appendBody(rec{value: "x"}), bearer("admin-token")...).want(t, 200)
	return e
}

// bearer is the Authorization header of token, padded as tok pads it.
func bearer(token string) []string { return []string{"Authorization", "Bearer " + tok(token)} }

// tok pads a test token to httpapi.MinTokenLength with zeros, so tests name principals
// by short words and the auth files hold tokens the loader accepts.
func tok(name string) string {
	return name + strings.Repeat("0", max(0, httpapi.MinTokenLength-len(name)))
}

// everyRoute is one valid request per protected route, against topic orders and group billing.
var everyRoute = []struct {
	method, path string
	body         any
}{
	{"POST", "/v1/topics", map[string]any{"name": "orders2", "partitions": 1}},
	{"GET", "/v1/topics/orders", nil},
	{"POST", "/v1/topics/orders/records", appendBody(rec{value: "x"})},
	{"GET", "/v1/topics/orders/partitions/0/records?offset=0", nil},
	{"GET", "/v1/topics/orders/partitions/0/search?key=eA%3D%3D", nil},
	{"GET", "/v1/topics/orders/partitions/0/stats", nil},
	{"POST", "/v1/groups/billing/topics/orders/partitions/0/lease", lease("m")},
	{"DELETE", "/v1/groups/billing/topics/orders/partitions/0/lease", lease("m", "generation", 1)},
	{"POST", "/v1/groups/billing/topics/orders/partitions/0/commit", lease("m", "generation", 1, "next_offset", 0)},
	{"GET", "/v1/groups/billing", nil},
	{"POST", "/v1/groups/billing/topics/orders/reset", map[string]any{"to": "earliest"}},
	{"GET", "/v1/groups/billing/topics/orders/partitions/0/parked", nil},
	{"PUT", "/v1/groups/billing/topics/orders/partitions/0/parked", parkedBody("m", 1, "k")},
	{"POST", "/v1/groups/billing/topics/orders/partitions/0/parked/unpark", map[string]any{"member": "m", "generation": 1, "key": ""}},
}

func TestAuthUnauthorized(t *testing.T) {
	e := authEnv(t)
	e.call("GET", "/v1/health", nil).want(t, 200)
	routes := append(everyRoute[:len(everyRoute):len(everyRoute)], struct {
		method, path string
		body         any
	}{"GET", "/v1/topics", nil})
	for _, rt := range routes {
		for _, hdr := range [][]string{nil, bearer("wrong"), {"Authorization", "Basic YWRtaW46eA=="}, {"Authorization", "Bearer"}, {"Authorization", "admin-token"}} {
			r := e.call(rt.method, rt.path, rt.body, hdr...).want(t, 401, "unauthorized")
			if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("%s %s: 401 without WWW-Authenticate: Bearer", rt.method, rt.path)
			}
		}
		// Authentication comes before validation.
		e.call(rt.method, rt.path, "{bad json").want(t, 401, "unauthorized")
	}
	if hw := e.hw("orders", 0); hw != 1 {
		t.Fatalf("hw %d after unauthorized appends, want 1", hw)
	}
	// The scheme is case-insensitive.
	e.call("GET", "/v1/topics/orders", nil, "Authorization", "bearer "+tok("orders-token")).want(t, 200)
}

func TestAuthForbidden(t *testing.T) {
	e := authEnv(t)
	for _, rt := range everyRoute {
		e.call(rt.method, rt.path, rt.body, bearer("none-token")...).want(t, 403, "forbidden")
	}
	if hw := e.hw("orders", 0); hw != 1 {
		t.Fatalf("hw %d after forbidden appends, want 1", hw)
	}
	r := e.call("GET", "/v1/topics", nil, bearer("none-token")...).want(t, 200)
	if fmt.Sprint(r.body["topics"]) != "[]" {
		t.Fatalf("none-token lists %s, want no topics", r.raw)
	}
	// Permission on one topic says nothing about another, and 403 comes before 404.
	e.call("GET", "/v1/topics/payments", nil, bearer("orders-token")...).want(t, 403, "forbidden")
	e.call("GET", "/v1/topics/missing", nil, bearer("orders-token")...).want(t, 403, "forbidden")
	e.call("GET", "/v1/topics/missing", nil, bearer("admin-token")...).want(t, 404, "not_found")
	e.call("POST", "/v1/topics", map[string]any{"name": "payments2", "partitions": 1}, bearer("orders-token")...).want(t, 403, "forbidden")
	// Lease and commit need consume on the group and read on the topic.
	e.call("POST", "/v1/groups/billing/topics/orders/partitions/0/lease", lease("m"), bearer("consume-only")...).want(t, 403, "forbidden")
	e.call("POST", "/v1/groups/billing/topics/orders/partitions/0/commit", lease("m", "generation", 1, "next_offset", 0), bearer("consume-only")...).want(t, 403, "forbidden")
	e.call("POST", "/v1/groups/other/topics/orders/partitions/0/lease", lease("m"), bearer("orders-token")...).want(t, 403, "forbidden")
	e.call("POST", "/v1/groups/billing/topics/orders/reset", map[string]any{"to": "earliest"}, bearer("consume-only")...).want(t, 403, "forbidden")
	e.call("POST", "/v1/groups/billing/topics/orders/reset", map[string]any{"to": "earliest"}, bearer("prefix-token")...).want(t, 403, "forbidden")
}

func TestAuthAllowed(t *testing.T) {
	e := authEnv(t)
	tok := bearer("orders-token")
	e.call("GET", "/v1/topics/orders", nil, tok...).want(t, 200)
	e.call("POST", "/v1/topics/orders/records", appendBody(rec{value: "y"}), tok...).want(t, 200)
	e.call("GET", "/v1/topics/orders/partitions/0/records?offset=0", nil, tok...).want(t, 200)
	e.call("POST", "/v1/groups/billing/topics/orders/reset", map[string]any{"to": "earliest"}, tok...).want(t, 200)
	r := e.call("POST", "/v1/groups/billing/topics/orders/partitions/0/lease", lease("m"), tok...).want(t, 200)
	gen := r.num("generation")
	e.call("POST", "/v1/groups/billing/topics/orders/partitions/0/commit", lease("m", "generation", gen, "next_offset", 1), tok...).want(t, 200)
	e.call("GET", "/v1/groups/billing", nil, tok...).want(t, 200)
	e.call("DELETE", "/v1/groups/billing/topics/orders/partitions/0/lease", lease("m", "generation", gen), tok...).want(t, 204)
	e.call("POST", "/v1/topics", map[string]any{"name": "orders", "partitions": 1}, tok...).want(t, 409, "topic_exists")

	r = e.call("GET", "/v1/topics", nil, tok...).want(t, 200)
	if fmt.Sprint(r.body["topics"]) != "[orders]" {
		t.Fatalf("orders-token lists %s, want [orders]", r.raw)
	}

	// Prefix wildcards: topic:ord* covers orders and ordinals, not payments.
	pt := bearer("prefix-token")
	r = e.call("GET", "/v1/topics", nil, pt...).want(t, 200)
	if fmt.Sprint(r.body["topics"]) != "[orders ordinals]" {
		t.Fatalf("prefix-token lists %s, want [orders ordinals]", r.raw)
	}
	e.call("GET", "/v1/topics/ordinals", nil, pt...).want(t, 200)
	e.call("GET", "/v1/topics/orders/partitions/0/records?offset=0", nil, pt...).want(t, 200)
	e.call("GET", "/v1/topics/payments", nil, pt...).want(t, 403, "forbidden")
	e.call("POST", "/v1/topics/orders/records", appendBody(rec{value: "z"}), pt...).want(t, 403, "forbidden")
	e.call("POST", "/v1/groups/billing-2/topics/orders/partitions/0/lease", lease("p"), pt...).want(t, 200)
	e.call("POST", "/v1/groups/billing-2/topics/payments/partitions/0/lease", lease("p"), pt...).want(t, 403, "forbidden")
	e.call("GET", "/v1/groups/billing-2", nil, pt...).want(t, 403, "forbidden")
}

func TestAuthQuotaPerPrincipal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(path, []byte(authFile), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := httpapi.LoadAuth(path)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, withAuth(a), withQuota(httpapi.Quota{RequestsPerSecond: 0.001, RequestBurst: 1}))
	e.call("POST", "/v1/topics", map[string]any{"name": "orders", "partitions": 1}, bearer("admin-token")...).want(t, 201)
	e.call("POST", "/v1/topics/orders/records", appendBody(rec{value: "x"}), bearer("admin-token")...).want(t, 200)
	e.call("POST", "/v1/topics/orders/records", appendBody(rec{value: "x"}), bearer("admin-token")...).want(t, 429, "rate_limited")
	// Another principal has its own bucket.
	e.call("POST", "/v1/topics/orders/records", appendBody(rec{value: "x"}), bearer("orders-token")...).want(t, 200)
}

func TestParseAuth(t *testing.T) {
	if _, err := httpapi.ParseAuth([]byte(authFile)); err != nil {
		t.Fatal(err)
	}
	bad := map[string]string{
		"not JSON":        `{`,
		"no principals":   `{}`,
		"unknown field":   `{"principals": {}, "version": 2}`,
		"unknown op":      `{"principals": {"tttttttttttttttttttttt": {"name": "n", "allow": [{"resource": "topic:a", "ops": ["write"]}]}}}`,
		"no ops":          `{"principals": {"tttttttttttttttttttttt": {"name": "n", "allow": [{"resource": "topic:a", "ops": []}]}}}`,
		"bad kind":        `{"principals": {"tttttttttttttttttttttt": {"name": "n", "allow": [{"resource": "queue:a", "ops": ["read"]}]}}}`,
		"bare star":       `{"principals": {"tttttttttttttttttttttt": {"name": "n", "allow": [{"resource": "*", "ops": ["read"]}]}}}`,
		"inner star":      `{"principals": {"tttttttttttttttttttttt": {"name": "n", "allow": [{"resource": "topic:a*b", "ops": ["read"]}]}}}`,
		"two stars":       `{"principals": {"tttttttttttttttttttttt": {"name": "n", "allow": [{"resource": "topic:a**", "ops": ["read"]}]}}}`,
		"bad name":        `{"principals": {"tttttttttttttttttttttt": {"name": "n", "allow": [{"resource": "topic:..", "ops": ["read"]}]}}}`,
		"no name":         `{"principals": {"tttttttttttttttttttttt": {"allow": []}}}`,
		"empty token":     `{"principals": {"": {"name": "n", "allow": []}}}`,
		"token space":     `{"principals": {"a b": {"name": "n", "allow": []}}}`,
		"unknown grant":   `{"principals": {"tttttttttttttttttttttt": {"name": "n", "allow": [{"resource": "topic:a", "ops": ["read"], "deny": true}]}}}`,
		"trailing object": `{"principals": {}} {}`,
	}
	for name, f := range bad {
		if _, err := httpapi.ParseAuth([]byte(f)); err == nil {
			t.Errorf("%s: accepted %s", name, f)
		}
	}
	if _, err := httpapi.LoadAuth(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("LoadAuth of a missing file succeeded")
	}
}
