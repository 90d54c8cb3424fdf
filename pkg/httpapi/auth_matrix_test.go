package httpapi_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratalog/strata/pkg/httpapi"
)

// matrixGrant is one grant of the matrix's auth file.
type matrixGrant struct {
	Resource string   `json:"resource"`
	Ops      []string `json:"ops"`
}

// matrixPrincipals are the principals of the matrix, by token: exact grants, prefix
// wildcards, the all-names wildcard, the cluster grant for /metrics, and none.
var matrixPrincipals = map[string][]matrixGrant{
	"exact": {
		{"topic:orders", []string{"create", "describe", "append", "read"}},
		{"group:billing", []string{"consume", "describe", "reset"}},
	},
	"prefix": {
		{"topic:ord*", []string{"describe", "read"}},
		{"group:bill*", []string{"consume"}},
	},
	"all": {
		{"topic:*", []string{"create", "describe", "append", "read"}},
		{"group:*", []string{"consume", "describe", "reset"}},
	},
	"producer": {{"topic:*", []string{"append"}}},
	"reader":   {{"topic:orders", []string{"read"}}, {"group:*", []string{"consume", "reset", "describe"}}},
	"monitor":  {{"cluster", []string{"metrics"}}, {"topic:*", []string{"describe"}}},
	"none":     {},
}

// matrixAllowed is the rule of docs/API.md: a grant allows its ops on its resource, and
// one ending in * on every resource of the kind whose name starts with the prefix.
func matrixAllowed(token, op, resource string) bool {
	for _, g := range matrixPrincipals[token] {
		has := false
		for _, o := range g.Ops {
			has = has || o == op
		}
		prefix, wild := strings.CutSuffix(g.Resource, "*")
		if has && (g.Resource == resource || wild && strings.HasPrefix(resource, prefix)) {
			return true
		}
	}
	return false
}

// matrixOp is one operation of the contract and the permissions docs/API.md says it
// needs, for a topic and a group.
type matrixOp struct {
	name  string
	needs func(topic, group string) [][2]string // {op, resource}
	req   func(topic, group string) (method, path string, body any)
}

var matrixOps = []matrixOp{
	{"create topic", func(t, _ string) [][2]string { return [][2]string{{"create", "topic:" + t + "-new"}} },
		func(t, _ string) (string, string, any) {
			return "POST", "/v1/topics", map[string]any{"name": t + "-new", "partitions": 1}
		}},
	{"describe topic", func(t, _ string) [][2]string { return [][2]string{{"describe", "topic:" + t}} },
		func(t, _ string) (string, string, any) { return "GET", "/v1/topics/" + t, nil }},
	{"append", func(t, _ string) [][2]string { return [][2]string{{"append", "topic:" + t}} },
		func(t, _ string) (string, string, any) {
			return "POST", "/v1/topics/" + t + "/records", appendBody(rec{value: "x"})
		}},
	{"poll", func(t, _ string) [][2]string { return [][2]string{{"read", "topic:" + t}} },
		func(t, _ string) (string, string, any) {
			return "GET", "/v1/topics/" + t + "/partitions/0/records?offset=0", nil
		}},
	{"lease", func(t, g string) [][2]string { return [][2]string{{"consume", "group:" + g}, {"read", "topic:" + t}} },
		func(t, g string) (string, string, any) {
			return "POST", "/v1/groups/" + g + "/topics/" + t + "/partitions/0/lease", lease("m", "ttl_ms", 100)
		}},
	{"release", func(t, g string) [][2]string { return [][2]string{{"consume", "group:" + g}, {"read", "topic:" + t}} },
		func(t, g string) (string, string, any) {
			return "DELETE", "/v1/groups/" + g + "/topics/" + t + "/partitions/0/lease", lease("m", "generation", 99)
		}},
	{"commit", func(t, g string) [][2]string { return [][2]string{{"consume", "group:" + g}, {"read", "topic:" + t}} },
		func(t, g string) (string, string, any) {
			return "POST", "/v1/groups/" + g + "/topics/" + t + "/partitions/0/commit", lease("m", "generation", 99, "next_offset", 0)
		}},
	{"describe group", func(_, g string) [][2]string { return [][2]string{{"describe", "group:" + g}} },
		func(_, g string) (string, string, any) { return "GET", "/v1/groups/" + g, nil }},
	{"reset", func(t, g string) [][2]string { return [][2]string{{"reset", "group:" + g}, {"read", "topic:" + t}} },
		func(t, g string) (string, string, any) {
			return "POST", "/v1/groups/" + g + "/topics/" + t + "/reset", map[string]any{"to": "earliest"}
		}},
	{"metrics", func(_, _ string) [][2]string { return [][2]string{{"metrics", "cluster"}} },
		func(_, _ string) (string, string, any) { return "GET", "/metrics", nil }},
}

// TestPermissionMatrix: every principal × operation × resource is answered 403 exactly
// when a permission docs/API.md names for the operation is missing (computed from the
// grants by the documented rule), never 401 for a known token; without a token every
// operation is 401; /metrics is covered like any other operation; GET /v1/topics lists
// exactly the describable topics.
func TestPermissionMatrix(t *testing.T) {
	file := map[string]any{}
	for token, grants := range matrixPrincipals {
		g := grants
		if g == nil {
			g = []matrixGrant{}
		}
		file[tok(token)] = map[string]any{"name": token + "-svc", "allow": g}
	}
	data, err := json.Marshal(map[string]any{"principals": file})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := httpapi.LoadAuth(path)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, withAuth(a), withMetricsHandler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte("strata_secret_topic_lag 1\n"))
	})))
	topics := []string{"orders", "ordinals", "payments", "o"}
	groups := []string{"billing", "billboard", "shipping", "b"}
	for _, topic := range topics {
		e.call("POST", "/v1/topics", map[string]any{"name": topic, "partitions": 1}, bearer("all")...).want(t, 201)
	}
	cells, denied := 0, 0
	for token := range matrixPrincipals {
		for _, op := range matrixOps {
			for i, topic := range topics {
				g := groups[i]
				want := true
				for _, n := range op.needs(topic, g) {
					want = want && matrixAllowed(token, n[0], n[1])
				}
				method, p, body := op.req(topic, g)
				r := e.call(method, p, body, bearer(token)...)
				cells++
				switch {
				case !want:
					denied++
					if r.status != 403 || r.errCode() != "forbidden" {
						t.Errorf("%s: %s on %s/%s: %d %s, want 403 forbidden", token, op.name, topic, g, r.status, r.raw)
					}
				case r.status == 401 || r.status == 403:
					t.Errorf("%s: %s on %s/%s: %d %s, want it allowed", token, op.name, topic, g, r.status, r.raw)
				}
			}
		}
		// GET /v1/topics lists exactly the topics the principal may describe.
		r := e.call("GET", "/v1/topics", nil, bearer(token)...).want(t, 200)
		var want []string
		for _, n := range r.body["topics"].([]any) {
			if !matrixAllowed(token, "describe", "topic:"+n.(string)) {
				t.Errorf("%s: GET /v1/topics lists %s, which it may not describe", token, n)
			}
			want = append(want, n.(string))
		}
		for _, topic := range topics {
			if matrixAllowed(token, "describe", "topic:"+topic) && !strings.Contains(" "+strings.Join(want, " ")+" ", " "+topic+" ") {
				t.Errorf("%s: GET /v1/topics omits %s: %v", token, topic, want)
			}
		}
	}
	// Spot checks of the rule itself, so the matrix is not only the oracle agreeing with
	// the code: a prefix wildcard, a grant of one op, the cluster grant.
	for _, c := range []struct {
		token, method, path string
		status              int
	}{
		{"prefix", "GET", "/v1/topics/ordinals", 200},
		{"prefix", "GET", "/v1/topics/o", 403},
		{"prefix", "GET", "/v1/topics/payments", 403},
		{"exact", "GET", "/v1/topics/ordinals", 403},
		{"producer", "GET", "/v1/topics/orders/partitions/0/records?offset=0", 403},
		{"monitor", "GET", "/metrics", 200},
		{"all", "GET", "/metrics", 403},
		{"none", "GET", "/metrics", 403},
		{"", "GET", "/metrics", 401},
		{"wrong-token", "GET", "/metrics", 401},
	} {
		var h []string
		if c.token != "" {
			h = bearer(c.token)
		}
		r := e.call(c.method, c.path, nil, h...)
		if r.status != c.status {
			t.Errorf("%s %s as %q: %d, want %d: %s", c.method, c.path, c.token, r.status, c.status, r.raw)
		}
		if r.status == 200 && c.path == "/metrics" && !strings.Contains(string(r.raw), "strata_secret_topic_lag") {
			t.Errorf("/metrics as %q: %q", c.token, r.raw)
		}
	}
	// Without a token, or with an unknown one, every operation is 401 and says nothing more.
	for _, op := range matrixOps {
		method, p, body := op.req("orders", "billing")
		e.call(method, p, body).want(t, 401, "unauthorized")
		e.call(method, p, body, bearer("nobody")...).want(t, 401, "unauthorized")
	}
	if denied == 0 || denied == cells {
		t.Fatalf("%d of %d cells denied: the matrix tests nothing", denied, cells)
	}
	t.Logf("%d principal × operation × resource cells, %d denied", cells, denied)
}
