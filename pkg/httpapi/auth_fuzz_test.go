package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// oracleFile is the test's own reading of an auth file.
type oracleFile struct {
	Principals map[string]struct {
		Name  string `json:"name"`
		Allow []struct {
			Resource string   `json:"resource"`
			Ops      []string `json:"ops"`
		} `json:"allow"`
	} `json:"principals"`
}

// resourceRE is a grant's resource as docs/API.md describes it: a kind and a name, or a
// kind and a name prefix ending in one final '*'.
var resourceRE = regexp.MustCompile(`^(topic|group):([A-Za-z0-9][A-Za-z0-9._-]{0,199}|[A-Za-z0-9._-]*\*)$`)

// exactShape reports whether data is valid UTF-8 with no null, no member given twice and
// no member name outside the auth file's own (matched exactly, unlike encoding/json).
func exactShape(data []byte) bool {
	// I-JSON (RFC 7493): valid UTF-8 (escapes included) and unique names.
	if !jsontext.Value(data).IsValid() {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var walk func() bool
	walk = func() bool {
		tok, err := dec.Token()
		if err != nil || tok == nil {
			return false
		}
		if d, ok := tok.(json.Delim); ok {
			seen := map[string]bool{}
			for dec.More() {
				if d == '{' {
					k, err := dec.Token()
					if err != nil || seen[k.(string)] {
						return false
					}
					seen[k.(string)] = true
				}
				if !walk() {
					return false
				}
			}
			_, err := dec.Token()
			return err == nil
		}
		return true
	}
	if !walk() {
		return false
	}
	var v any
	if json.Unmarshal(data, &v) != nil {
		return false
	}
	only := func(m any, names ...string) bool {
		o, ok := m.(map[string]any)
		if !ok {
			return true // a wrong type is encoding/json's to refuse
		}
		for k := range o {
			if !contains(names, k) {
				return false
			}
		}
		return true
	}
	if !only(v, "principals") {
		return false
	}
	top, _ := v.(map[string]any)
	ps, _ := top["principals"].(map[string]any)
	for _, p := range ps {
		if !only(p, "name", "allow") {
			return false
		}
		pm, _ := p.(map[string]any)
		gs, _ := pm["allow"].([]any)
		for _, g := range gs {
			if !only(g, "resource", "ops") {
				return false
			}
		}
	}
	return true
}

// oracleParse decodes data strictly (one JSON value, exact names, no null, no member
// twice, no unknown fields) and reports whether it is a valid auth file.
func oracleParse(data []byte) (oracleFile, bool) {
	var f oracleFile
	if !exactShape(data) {
		return f, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil || f.Principals == nil {
		return f, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return f, false
	}
	for token, p := range f.Principals {
		unusable := strings.IndexFunc(token, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0
		if utf8.RuneCountInString(token) < MinTokenLength || unusable || p.Name == "" {
			return f, false
		}
		for _, g := range p.Allow {
			cluster := g.Resource == "cluster"
			if !cluster && !resourceRE.MatchString(g.Resource) || len(g.Ops) == 0 {
				return f, false
			}
			for _, op := range g.Ops {
				if cluster && op != "metrics" || !cluster && !knownOps[op] {
					return f, false
				}
			}
		}
	}
	return f, true
}

// FuzzParseAuth: ParseAuth never panics, accepts exactly the valid files, and the
// principals it builds authenticate by their tokens and allow exactly what their grants
// say, a wildcard allowing every resource its prefix covers.
func FuzzParseAuth(f *testing.F) {
	for _, seed := range []string{
		`{"principals": {"admin-token00000000000": {"name": "admin", "allow": [
		  {"resource": "topic:*", "ops": ["create", "describe", "append", "read"]},
		  {"resource": "group:*", "ops": ["consume", "describe", "reset"]}]},
		  "t200000000000000000000": {"name": "orders-svc", "allow": [
		  {"resource": "topic:orders", "ops": ["create", "describe", "append", "read"]},
		  {"resource": "group:billing", "ops": ["consume", "describe", "reset"]}]}}}`,
		`{"principals": {"p000000000000000000000": {"name": "prefix", "allow": [{"resource": "topic:ord*", "ops": ["describe", "read"]}, {"resource": "group:bill*", "ops": ["consume"]}]}}}`,
		`{"principals": {"p000000000000000000000": {"name": "n", "allow": [{"resource": "topic:.*", "ops": ["read"]}, {"resource": "topic:a", "ops": ["read", "read"]}]}}}`,
		`{"principals": {"none000000000000000000": {"name": "none", "allow": []}, "nil0000000000000000000": {"name": "nil"}}}`,
		`{"principals": {}}`,
		`{"principals": {"short-token": {"name": "n", "allow": []}}}`,
		`{"principals": {"exactly-22-characters!": {"name": "n", "allow": []}}}`,
		`{"principals": {"t000000000000000000000": {"name": "a"}, "t000000000000000000000": {"name": "b"}}}`,
		`{"Principals": {"t000000000000000000000": {"NAME": "n", "Allow": [{"Resource": "topic:a", "OPS": ["read"]}]}}}`,
		`{"principals": {"t000000000000000000000": {"name": "n", "allow": [{"resource": "topic:a*b", "ops": ["read"]}]}}}`,
		`{"principals": {"t000000000000000000000": {"name": "n", "allow": [{"resource": "topic:a**", "ops": ["read"]}]}}}`,
		`{"principals": {"t000000000000000000000": {"name": "n", "allow": [{"resource": "*", "ops": ["read"]}]}}}`,
		`{"principals": {"t000000000000000000000": {"name": "n", "allow": [{"resource": "queue:a", "ops": ["read"]}]}}}`,
		`{"principals": {"t000000000000000000000": {"name": "n", "allow": [{"resource": "topic:..", "ops": ["read"]}]}}}`,
		`{"principals": {"t000000000000000000000": {"name": "n", "allow": [{"resource": "topic:a", "ops": []}]}}}`,
		`{"principals": {"t000000000000000000000": {"name": "n", "allow": [{"resource": "topic:a", "ops": ["write"]}]}}}`,
		`{"principals": {"t000000000000000000000": {"name": "n", "allow": [{"resource": "topic:a", "ops": ["read"], "deny": true}]}}}`,
		`{"principals": {"a b": {"name": "n"}}}`,
		`{"principals": {"\u000bt": {"name": "n"}}}`,
		`{"principals": {"t\u00a0": {"name": "n"}}}`,
		`{"principals": {"": {"name": "n"}}}`,
		`{"principals": {"t000000000000000000000": {"name": ""}}}`,
		`{"principals": {"t000000000000000000000": {"name": "n", "allow": [{"resource": "cluster", "ops": ["metrics"]}, {"resource": "topic:*", "ops": ["read"]}]}}}`,
		`{"principals": {"t000000000000000000000": {"name": "n", "allow": [{"resource": "cluster", "ops": ["read"]}]}}}`,
		`{"principals": {"t000000000000000000000": {"name": "n", "allow": [{"resource": "topic:*", "ops": ["metrics"]}]}}}`,
		`{"principals": {"t000000000000000000000": {"name": "n", "allow": null}}}`,
		`{"principals": {"t000000000000000000000": {"name": "n", "allow": [{"resource": "topic:a", "ops": ["read"], "Ops": ["append"]}]}}}`,
		`{"principals": {}} {}`,
		`{"principals": {}}]`,
		`{"principals": {}}}`,
		`{"principals": null}`,
		`{}`,
		`[]`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := ParseAuth(data)
		want, valid := oracleParse(data)
		if err != nil {
			if a != nil {
				t.Fatalf("ParseAuth returned an Authorizer with error %v", err)
			}
			if valid {
				t.Fatalf("ParseAuth refused a valid file: %v\n%s", err, data)
			}
			return
		}
		if !valid {
			t.Fatalf("ParseAuth accepted an invalid file:\n%q", data)
		}
		if len(a.byToken) != len(want.Principals) {
			t.Fatalf("%d principals from %d tokens", len(a.byToken), len(want.Principals))
		}
		s := &server{auth: a}
		for token, wp := range want.Principals {
			req := httptest.NewRequest("GET", "/v1/topics", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			p, e := s.authenticate(req)
			if e != nil || p == nil || p.Name != wp.Name {
				t.Fatalf("token %q (principal %q) does not authenticate: %v", token, wp.Name, e)
			}
			for _, res := range probes(wp.Allow) {
				for _, op := range []string{OpCreate, OpDescribe, OpAppend, OpRead, OpConsume, OpReset, OpDelete, OpAlter, OpMetrics, "write", ""} {
					expect := false
					for _, g := range wp.Allow {
						if !contains(g.Ops, op) {
							continue
						}
						if prefix, wild := strings.CutSuffix(g.Resource, "*"); g.Resource == res || wild && strings.HasPrefix(res, prefix) {
							expect = true
						}
					}
					if got := p.Allowed(op, res); got != expect {
						t.Fatalf("principal %q: Allowed(%q, %q) = %v, want %v", wp.Name, op, res, got, expect)
					}
				}
			}
		}
		unknown := "unknown"
		for _, ok := want.Principals[unknown]; ok; _, ok = want.Principals[unknown] {
			unknown += "x"
		}
		req := httptest.NewRequest("GET", "/v1/topics", nil)
		req.Header.Set("Authorization", "Bearer "+unknown)
		if _, e := s.authenticate(req); e == nil {
			t.Fatalf("unknown token %q authenticated", unknown)
		}
	})
}

// probes returns resources around a principal's grants: each exact resource, and for a
// wildcard its bare prefix, longer names under it, a shorter one and the other kind.
func probes(allow []struct {
	Resource string   `json:"resource"`
	Ops      []string `json:"ops"`
}) []string {
	set := map[string]bool{"topic:orders": true, "group:billing": true, "topic:": true, "group:": true, "orders": true,
		"cluster": true, "cluster:": true, "topic:cluster": true}
	for _, g := range allow {
		r := g.Resource
		set[r] = true
		prefix, wild := strings.CutSuffix(r, "*")
		if !wild {
			set[r+"x"] = true
			set[r[:len(r)-1]] = true
			continue
		}
		set[prefix] = true
		set[prefix+"a"] = true
		set[prefix+".b-9_c"] = true
		if len(prefix) > 0 {
			set[prefix[:len(prefix)-1]] = true
		}
		kind, name, _ := strings.Cut(prefix, ":")
		other := "group"
		if kind == "group" {
			other = "topic"
		}
		set[other+":"+name+"a"] = true
		set[strings.ToUpper(prefix)+"a"] = true
	}
	out := make([]string, 0, len(set))
	for r := range set {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
