// Package tmpl reads a synthesized CloudFormation template for tests: resources by type,
// the statements of a role, and checks of awscdk/v2/assertions turned into test errors
// (the assertions panic through jsii on a mismatch).
package tmpl

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
)

// Template is a synthesized template, both as the assertions' Template and as JSON.
type Template struct {
	A         assertions.Template
	Resources map[string]Resource
	Outputs   map[string]Output
}

// Output is one output of the template.
type Output struct {
	Value  any `json:"Value"`
	Export *struct {
		Name string `json:"Name"`
	} `json:"Export"`
}

// Resource is one resource of the template.
type Resource struct {
	Type       string         `json:"Type"`
	Properties map[string]any `json:"Properties"`
}

// New reads the template of t.
func New(t assertions.Template) (*Template, error) {
	raw, err := json.Marshal(t.ToJSON())
	if err != nil {
		return nil, err
	}
	var doc struct {
		Resources map[string]Resource `json:"Resources"`
		Outputs   map[string]Output   `json:"Outputs"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	return &Template{A: t, Resources: doc.Resources, Outputs: doc.Outputs}, nil
}

// Export writes the template as JSON to $STRATA_INFRA_TEMPLATES/<name>.template.json when
// that variable is set (infra/test.sh lints what the tests synthesized), else nothing.
func (t *Template) Export(name string) error {
	dir := os.Getenv("STRATA_INFRA_TEMPLATES")
	if dir == "" {
		return nil
	}
	raw, err := json.MarshalIndent(t.A.ToJSON(), "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name+".template.json"), raw, 0o644)
}

// Check runs an assertion of the assertions package and reports its failure as an error
// of tb instead of a panic.
func Check(tb testing.TB, what string, assertion func()) {
	tb.Helper()
	defer func() {
		if r := recover(); r != nil {
			tb.Errorf("%s: %v", what, r)
		}
	}()
	assertion()
}

// OfType returns the logical ids of the resources of type typ, sorted.
func (t *Template) OfType(typ string) []string {
	var ids []string
	for id, r := range t.Resources {
		if r.Type == typ {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// Find returns the one resource of type typ whose property key equals want.
func (t *Template) Find(typ, key string, want any) (string, Resource, error) {
	var found []string
	for _, id := range t.OfType(typ) {
		if reflect.DeepEqual(t.Resources[id].Properties[key], want) {
			found = append(found, id)
		}
	}
	if len(found) != 1 {
		return "", Resource{}, fmt.Errorf("%d resources of type %s with %s = %v, want 1", len(found), typ, key, want)
	}
	return found[0], t.Resources[found[0]], nil
}

// Statement is one IAM policy statement with its fields normalised to lists.
type Statement struct {
	Sid       string
	Effect    string
	Actions   []string
	Resources []any
	Condition map[string]any
}

// RoleStatements returns every statement granted to the role with logical id role:
// from AWS::IAM::Policy resources attached to it and its inline policies. Managed
// policies are returned by name in managed.
func (t *Template) RoleStatements(role string) (stmts []Statement, managed []any, err error) {
	r, ok := t.Resources[role]
	if !ok || r.Type != "AWS::IAM::Role" {
		return nil, nil, fmt.Errorf("no role %s", role)
	}
	if m, ok := r.Properties["ManagedPolicyArns"].([]any); ok {
		managed = m
	}
	if inline, ok := r.Properties["Policies"].([]any); ok {
		for _, p := range inline {
			st, err := statements(p.(map[string]any)["PolicyDocument"])
			if err != nil {
				return nil, nil, err
			}
			stmts = append(stmts, st...)
		}
	}
	ref := map[string]any{"Ref": role}
	for _, id := range t.OfType("AWS::IAM::Policy") {
		p := t.Resources[id].Properties
		roles, _ := p["Roles"].([]any)
		for _, r := range roles {
			if reflect.DeepEqual(r, ref) {
				st, err := statements(p["PolicyDocument"])
				if err != nil {
					return nil, nil, err
				}
				stmts = append(stmts, st...)
			}
		}
	}
	return stmts, managed, nil
}

// AllStatements returns the statements of every identity and resource policy of the
// template, with the logical id of the resource holding each.
func (t *Template) AllStatements() (map[string][]Statement, error) {
	out := map[string][]Statement{}
	for id, r := range t.Resources {
		var docs []any
		switch r.Type {
		case "AWS::IAM::Policy", "AWS::IAM::ManagedPolicy", "AWS::S3::BucketPolicy", "AWS::SQS::QueuePolicy":
			docs = append(docs, r.Properties["PolicyDocument"])
		case "AWS::IAM::Role":
			if inline, ok := r.Properties["Policies"].([]any); ok {
				for _, p := range inline {
					docs = append(docs, p.(map[string]any)["PolicyDocument"])
				}
			}
		}
		for _, d := range docs {
			st, err := statements(d)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", id, err)
			}
			out[id] = append(out[id], st...)
		}
	}
	return out, nil
}

func statements(doc any) ([]Statement, error) {
	d, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("policy document is %T", doc)
	}
	var out []Statement
	list, _ := d["Statement"].([]any)
	for _, raw := range list {
		m := raw.(map[string]any)
		st := Statement{Effect: fmt.Sprint(m["Effect"])}
		if sid, ok := m["Sid"].(string); ok {
			st.Sid = sid
		}
		for _, a := range asList(m["Action"]) {
			st.Actions = append(st.Actions, fmt.Sprint(a))
		}
		if m["NotAction"] != nil {
			return nil, fmt.Errorf("statement %q uses NotAction", st.Sid)
		}
		st.Resources = asList(m["Resource"])
		if c, ok := m["Condition"].(map[string]any); ok {
			st.Condition = c
		}
		out = append(out, st)
	}
	return out, nil
}

func asList(v any) []any {
	switch x := v.(type) {
	case nil:
		return nil
	case []any:
		return x
	default:
		return []any{x}
	}
}

// GetAtt returns the logical id of a {"Fn::GetAtt": [id, attr]} with the given attr.
func GetAtt(v any, attr string) (string, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return "", false
	}
	l, ok := m["Fn::GetAtt"].([]any)
	if !ok || len(l) != 2 || l[1] != attr {
		return "", false
	}
	id, ok := l[0].(string)
	return id, ok
}

// Join flattens {"Fn::Join": ["", [parts...]]} into a string with each reference
// written as <Ref:id>, <GetAtt:id.attr> or <Import:export name>; a plain string is
// returned as is.
func Join(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case map[string]any:
		if ref, ok := x["Ref"].(string); ok {
			return "<Ref:" + ref + ">"
		}
		if name, ok := x["Fn::ImportValue"].(string); ok {
			return "<Import:" + name + ">"
		}
		if l, ok := x["Fn::GetAtt"].([]any); ok && len(l) == 2 {
			return fmt.Sprintf("<GetAtt:%v.%v>", l[0], l[1])
		}
		if l, ok := x["Fn::Join"].([]any); ok && len(l) == 2 {
			var b strings.Builder
			for _, p := range asList(l[1]) {
				b.WriteString(Join(p))
			}
			return b.String()
		}
	}
	raw, _ := json.Marshal(v)
	return string(raw)
}
