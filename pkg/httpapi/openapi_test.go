package httpapi_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"mime"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/stratalog/strata/pkg/wire"
)

const openAPIPath = "../../docs/openapi.yaml"

// openAPIDoc is docs/openapi.yaml as generic YAML, with just enough of OpenAPI 3.0 to
// list operations and check JSON answers against their schemas.
type openAPIDoc struct {
	root  map[string]any
	paths []docPath
}

type docPath struct {
	template string
	re       *regexp.Regexp
	ops      map[string]map[string]any // upper-case method -> operation
}

type docOperation struct {
	method, path string
	statuses     []string
}

var (
	docOnce sync.Once
	docVal  *openAPIDoc
	docErr  error
)

func loadOpenAPI() (*openAPIDoc, error) {
	docOnce.Do(func() { docVal, docErr = parseOpenAPI(openAPIPath) })
	return docVal, docErr
}

func parseOpenAPI(file string) (*openAPIDoc, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var root map[string]any
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("parse %s: %w", file, err)
	}
	d := &openAPIDoc{root: root}
	paths, ok := root["paths"].(map[string]any)
	if !ok {
		return nil, errors.New("no paths")
	}
	for tmpl, v := range paths {
		item, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("path %s is not an object", tmpl)
		}
		dp := docPath{template: tmpl, ops: map[string]map[string]any{}}
		dp.re = regexp.MustCompile("^" + regexp.MustCompile(`\\\{[^}]+\\\}`).ReplaceAllString(regexp.QuoteMeta(tmpl), `[^/]+`) + "$")
		for _, m := range []string{"get", "post", "put", "delete", "patch"} {
			if op, ok := item[m].(map[string]any); ok {
				dp.ops[strings.ToUpper(m)] = op
			}
		}
		d.paths = append(d.paths, dp)
	}
	sort.Slice(d.paths, func(i, j int) bool { return d.paths[i].template < d.paths[j].template })
	return d, nil
}

// operations lists every documented method, path and response status.
func (d *openAPIDoc) operations() []docOperation {
	var out []docOperation
	for _, p := range d.paths {
		for m, op := range p.ops {
			rs, _ := op["responses"].(map[string]any)
			o := docOperation{method: m, path: p.template}
			for s := range rs {
				o.statuses = append(o.statuses, s)
			}
			sort.Strings(o.statuses)
			out = append(out, o)
		}
	}
	return out
}

// find returns the operation serving method and a concrete URL path.
func (d *openAPIDoc) find(method, urlPath string) (string, map[string]any, bool) {
	for _, p := range d.paths {
		if p.re.MatchString(urlPath) {
			op, ok := p.ops[method]
			return p.template, op, ok
		}
	}
	return "", nil, false
}

// resolve follows a local $ref.
func (d *openAPIDoc) resolve(ref string) (map[string]any, error) {
	if !strings.HasPrefix(ref, "#/") {
		return nil, fmt.Errorf("non-local $ref %q", ref)
	}
	var cur any = d.root
	for _, part := range strings.Split(ref[2:], "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("$ref %q: %q is not inside an object", ref, part)
		}
		cur, ok = m[part]
		if !ok {
			return nil, fmt.Errorf("$ref %q does not resolve", ref)
		}
	}
	m, ok := cur.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("$ref %q is not an object", ref)
	}
	return m, nil
}

func (d *openAPIDoc) deref(m map[string]any) (map[string]any, error) {
	for i := 0; i < 10; i++ {
		ref, ok := m["$ref"].(string)
		if !ok {
			return m, nil
		}
		var err error
		if m, err = d.resolve(ref); err != nil {
			return nil, err
		}
	}
	return nil, errors.New("$ref chain too long")
}

// checkAnswer validates an answer of method urlPath against the document: the status
// must be documented and a JSON body must match its schema.
func (d *openAPIDoc) checkAnswer(method, urlPath string, status int, contentType string, body any, hasBody bool) error {
	tmpl, op, ok := d.find(method, urlPath)
	if !ok {
		return fmt.Errorf("%s %s is not documented", method, urlPath)
	}
	rs, _ := op["responses"].(map[string]any)
	r, ok := rs[fmt.Sprint(status)].(map[string]any)
	if !ok {
		return fmt.Errorf("status %d of %s %s is not documented", status, method, tmpl)
	}
	r, err := d.deref(r)
	if err != nil {
		return err
	}
	content, _ := r["content"].(map[string]any)
	if ct, _, _ := mime.ParseMediaType(contentType); hasBody && ct != "application/json" {
		if _, ok := content[ct]; !ok {
			return fmt.Errorf("status %d of %s %s answered %q, documented %v", status, method, tmpl, contentType, slices.Sorted(maps.Keys(content)))
		}
		return nil
	}
	mt, _ := content["application/json"].(map[string]any)
	if mt == nil {
		if hasBody && len(content) == 0 {
			return fmt.Errorf("status %d of %s %s has a body, documented without one", status, method, tmpl)
		}
		return nil
	}
	schema, _ := mt["schema"].(map[string]any)
	if err := d.validate("$", schema, body); err != nil {
		return fmt.Errorf("status %d of %s %s: %w", status, method, tmpl, err)
	}
	return nil
}

// validate checks v (decoded JSON) against a schema of the OpenAPI 3.0 subset the
// document uses.
func (d *openAPIDoc) validate(at string, schema map[string]any, v any) error {
	schema, err := d.deref(schema)
	if err != nil {
		return err
	}
	if all, ok := schema["allOf"].([]any); ok {
		for _, s := range all {
			sm, _ := s.(map[string]any)
			if err := d.validate(at, sm, v); err != nil {
				return err
			}
		}
	}
	if one, ok := schema["oneOf"].([]any); ok {
		n := 0
		for _, s := range one {
			sm, _ := s.(map[string]any)
			if d.validate(at, sm, v) == nil {
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("%s: matches %d of oneOf", at, n)
		}
	}
	if v == nil {
		if schema["nullable"] == true || schema["type"] == nil {
			return nil
		}
		return fmt.Errorf("%s: null, not nullable", at)
	}
	if enum, ok := schema["enum"].([]any); ok {
		found := false
		for _, e := range enum {
			if fmt.Sprint(e) == fmt.Sprint(v) {
				found = true
			}
		}
		if !found {
			return fmt.Errorf("%s: %v not in %v", at, v, enum)
		}
	}
	switch schema["type"] {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: want object, got %T", at, v)
		}
		req, _ := schema["required"].([]any)
		for _, r := range req {
			if _, ok := m[r.(string)]; !ok {
				return fmt.Errorf("%s: missing required %q", at, r)
			}
		}
		props, _ := schema["properties"].(map[string]any)
		for k, pv := range m {
			ps, ok := props[k].(map[string]any)
			if !ok {
				switch ap := schema["additionalProperties"].(type) {
				case bool:
					if !ap {
						return fmt.Errorf("%s: unexpected property %q", at, k)
					}
				case map[string]any:
					if err := d.validate(at+"."+k, ap, pv); err != nil {
						return err
					}
				}
				continue
			}
			if err := d.validate(at+"."+k, ps, pv); err != nil {
				return err
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: want array, got %T", at, v)
		}
		items, _ := schema["items"].(map[string]any)
		for i, e := range a {
			if err := d.validate(fmt.Sprintf("%s[%d]", at, i), items, e); err != nil {
				return err
			}
		}
	case "string":
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s: want string, got %T", at, v)
		}
		if schema["format"] == "byte" {
			if _, err := base64.StdEncoding.DecodeString(s); err != nil {
				return fmt.Errorf("%s: not base64: %v", at, err)
			}
		}
		if p, ok := schema["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(s) {
			return fmt.Errorf("%s: %q does not match %s", at, s, p)
		}
	case "integer", "number":
		f, ok := v.(float64)
		if !ok {
			return fmt.Errorf("%s: want number, got %T", at, v)
		}
		if schema["type"] == "integer" && f != math.Trunc(f) {
			return fmt.Errorf("%s: %v is not an integer", at, f)
		}
		if lo, ok := schema["minimum"].(int); ok && f < float64(lo) {
			return fmt.Errorf("%s: %v below minimum %d", at, f, lo)
		}
		if hi, ok := schema["maximum"].(int); ok && f > float64(hi) {
			return fmt.Errorf("%s: %v above maximum %d", at, f, hi)
		}
	}
	return nil
}

// walkRefs calls fn for every $ref in v.
func walkRefs(v any, fn func(string)) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && k == "$ref" {
				fn(s)
			}
			walkRefs(e, fn)
		}
	case []any:
		for _, e := range x {
			walkRefs(e, fn)
		}
	}
}

func TestOpenAPIDocument(t *testing.T) {
	d, err := loadOpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := d.root["openapi"].(string); !strings.HasPrefix(v, "3.0.") {
		t.Fatalf("openapi version %q, want 3.0.x", v)
	}
	walkRefs(d.root, func(ref string) {
		if _, err := d.resolve(ref); err != nil {
			t.Error(err)
		}
	})
	ids := map[string]bool{}
	for _, op := range d.operations() {
		_, o, _ := d.find(op.method, op.path)
		id, _ := o["operationId"].(string)
		if id == "" || ids[id] {
			t.Errorf("%s %s: missing or repeated operationId %q", op.method, op.path, id)
		}
		ids[id] = true
		if len(op.statuses) == 0 {
			t.Errorf("%s %s: no responses", op.method, op.path)
		}
	}

	// Every documented operation is served (answered by its route, not the fallback),
	// and every route the server has is documented.
	e := newEnv(t)
	for _, op := range d.operations() {
		path := strings.NewReplacer("{topic}", "t", "{group}", "g", "{p}", "0").Replace(op.path)
		r := e.call(op.method, path, nil)
		if r.status == http.StatusMethodNotAllowed || (r.status == http.StatusNotFound && strings.Contains(r.errField("message").(string), "no route")) {
			t.Errorf("%s %s is documented but not served: %s", op.method, op.path, r.raw)
		}
	}
}

// TestOpenAPIValidatorRejects checks that the schema check used on every answer can fail.
func TestOpenAPIValidatorRejects(t *testing.T) {
	d, err := loadOpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	poll := func(body string) error {
		var v any
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatal(err)
		}
		return d.checkAnswer("GET", "/v1/topics/t/partitions/0/records", 200, "application/json", v, true)
	}
	if err := poll(`{"records": [{"offset": 0, "timestamp_ms": 1, "key": null, "value": "", "headers": {}}], "next_offset": 1, "high_watermark": 1, "log_start_offset": 0}`); err != nil {
		t.Fatalf("valid poll answer refused: %v", err)
	}
	for _, bad := range []string{
		`{"records": [], "high_watermark": 1, "log_start_offset": 0}`,
		`{"records": [{"offset": 0, "timestamp_ms": 1, "key": null, "value": "%%", "headers": {}}], "next_offset": 1, "high_watermark": 1, "log_start_offset": 0}`,
		`{"records": [{"offset": 0.5, "timestamp_ms": 1, "key": null, "value": "", "headers": {}}], "next_offset": 1, "high_watermark": 1, "log_start_offset": 0}`,
		`{"records": [{"offset": 0, "timestamp_ms": 1, "value": "", "headers": {}}], "next_offset": 1, "high_watermark": 1, "log_start_offset": 0}`,
		`{"records": null, "next_offset": 1, "high_watermark": 1, "log_start_offset": 0}`,
	} {
		if err := poll(bad); err == nil {
			t.Errorf("invalid poll answer accepted: %s", bad)
		}
	}
	if err := d.checkAnswer("GET", "/v1/topics/t/partitions/0/records", 409, "application/json", map[string]any{}, true); err == nil {
		t.Error("an undocumented status was accepted")
	}
	var e416 any
	_ = json.Unmarshal([]byte(`{"error": {"code": "offset_out_of_range", "message": "m", "high_watermark": 1}}`), &e416)
	if err := d.checkAnswer("GET", "/v1/topics/t/partitions/0/records", 416, "application/json", e416, true); err == nil {
		t.Error("a 416 without log_start_offset was accepted")
	}
}

// wireContentType is the binary answers' media type, which is not JSON.
const wireContentType = wire.ContentTypeBlocks
