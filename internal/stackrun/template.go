package stackrun

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

// Account and Region are the local "AWS account" the stack is run in: moto's default
// account, and the region every test client uses.
const (
	Account = "123456789012"
	Region  = "us-east-1"
)

// Template is a synthesized CloudFormation template, with the local physical name of
// every resource it names.
type Template struct {
	Resources map[string]Resource `json:"Resources"`
	// names maps a logical id to its local physical name (what Ref resolves to).
	names map[string]string
	// attrs maps "logicalId.Attribute" to what Fn::GetAtt resolves to, for attributes
	// known only once the resource exists (a table's StreamArn).
	attrs map[string]string
}

// Resource is one resource of the template.
type Resource struct {
	Type       string         `json:"Type"`
	Properties map[string]any `json:"Properties"`
}

// ReadTemplate reads a template file and names its resources: a resource whose
// properties give its name (TableName, FunctionName, ...) keeps it, as CloudFormation
// does; every other one gets "<stack>-<logical id>" (lower case for buckets), as
// CloudFormation generates a name from the stack and the logical id.
func ReadTemplate(path, stack string) (*Template, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseTemplate(raw, stack)
}

// ParseTemplate parses a template's JSON; see ReadTemplate.
func ParseTemplate(raw []byte, stack string) (*Template, error) {
	var t Template
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("stackrun: template: %w", err)
	}
	if len(t.Resources) == 0 {
		return nil, errors.New("stackrun: template has no resources")
	}
	t.names = map[string]string{}
	t.attrs = map[string]string{}
	for id, r := range t.Resources {
		t.names[id] = physicalName(stack, id, r)
	}
	return &t, nil
}

// nameProperty is the property that names a resource of each type, when given.
var nameProperty = map[string]string{
	"AWS::DynamoDB::Table":  "TableName",
	"AWS::S3::Bucket":       "BucketName",
	"AWS::Lambda::Function": "FunctionName",
	"AWS::IAM::Role":        "RoleName",
	"AWS::Logs::LogGroup":   "LogGroupName",
	"AWS::SQS::Queue":       "QueueName",
}

var nonBucketChars = regexp.MustCompile(`[^a-z0-9-]`)

func physicalName(stack, id string, r Resource) string {
	if p, ok := nameProperty[r.Type]; ok {
		if s, ok := r.Properties[p].(string); ok && s != "" {
			return s
		}
	}
	name := stack + "-" + id
	switch r.Type {
	case "AWS::S3::Bucket":
		name = nonBucketChars.ReplaceAllString(strings.ToLower(name), "-")
		if len(name) > 63 {
			name = name[:63]
		}
	case "AWS::ApiGatewayV2::Api":
		name = strings.ToLower(stack) + "api"
	default:
		if len(name) > 64 {
			name = name[:64]
		}
	}
	return name
}

// Name is the local physical name of a logical id (what Ref resolves to).
func (t *Template) Name(id string) string { return t.names[id] }

// SetAttr records an attribute known once the resource exists (a table's StreamArn).
func (t *Template) SetAttr(id, attr, value string) { t.attrs[id+"."+attr] = value }

// OfType returns the logical ids of every resource of type typ, sorted.
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

// ARN is the ARN of the resource with logical id id, as Fn::GetAtt [id, Arn] gives it.
func (t *Template) ARN(id string) (string, error) {
	r, ok := t.Resources[id]
	if !ok {
		return "", fmt.Errorf("stackrun: no resource %s", id)
	}
	n := t.names[id]
	switch r.Type {
	case "AWS::DynamoDB::Table":
		return "arn:aws:dynamodb:" + Region + ":" + Account + ":table/" + n, nil
	case "AWS::S3::Bucket":
		return "arn:aws:s3:::" + n, nil
	case "AWS::Lambda::Function":
		return FunctionARN(n), nil
	case "AWS::IAM::Role":
		return "arn:aws:iam::" + Account + ":role/" + n, nil
	case "AWS::Logs::LogGroup":
		return "arn:aws:logs:" + Region + ":" + Account + ":log-group:" + n + ":*", nil
	case "AWS::SQS::Queue":
		return "arn:aws:sqs:" + Region + ":" + Account + ":" + n, nil
	case "AWS::Events::Rule":
		return "arn:aws:events:" + Region + ":" + Account + ":rule/" + n, nil
	}
	return "", fmt.Errorf("stackrun: no Arn for %s (%s)", id, r.Type)
}

// FunctionARN is the ARN of the function named name.
func FunctionARN(name string) string {
	return "arn:aws:lambda:" + Region + ":" + Account + ":function:" + name
}

func (t *Template) getAtt(id, attr string) (string, error) {
	if v, ok := t.attrs[id+"."+attr]; ok {
		return v, nil
	}
	r, ok := t.Resources[id]
	if !ok {
		return "", fmt.Errorf("stackrun: Fn::GetAtt of unknown resource %s", id)
	}
	switch attr {
	case "Arn":
		return t.ARN(id)
	case "QueueName":
		if r.Type == "AWS::SQS::Queue" {
			return t.names[id], nil
		}
	case "StreamArn":
		return "", fmt.Errorf("stackrun: %s.StreamArn is not known before the table exists", id)
	}
	return "", fmt.Errorf("stackrun: Fn::GetAtt %s.%s (%s) not supported", id, attr, r.Type)
}

// pseudo are the pseudo parameters Ref resolves.
var pseudo = map[string]string{
	"AWS::Region":    Region,
	"AWS::AccountId": Account,
	"AWS::Partition": "aws",
	"AWS::URLSuffix": "amazonaws.com",
}

// Resolve evaluates v (a template value) to a string: a literal, Ref (a resource's
// local name or a pseudo parameter), Fn::GetAtt, Fn::Join and Fn::Sub. Anything else is
// an error naming it, so a template the harness cannot run is never run half-resolved.
func (t *Template) Resolve(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case float64:
		return fmt.Sprint(x), nil
	case bool:
		return fmt.Sprint(x), nil
	case map[string]any:
		if len(x) != 1 {
			break
		}
		for fn, arg := range x {
			switch fn {
			case "Ref":
				name, _ := arg.(string)
				if p, ok := pseudo[name]; ok {
					return p, nil
				}
				if n, ok := t.names[name]; ok {
					return n, nil
				}
				return "", fmt.Errorf("stackrun: Ref of unknown %q", name)
			case "Fn::GetAtt":
				parts, ok := arg.([]any)
				if !ok || len(parts) != 2 {
					return "", fmt.Errorf("stackrun: Fn::GetAtt %v", arg)
				}
				id, _ := parts[0].(string)
				attr, _ := parts[1].(string)
				return t.getAtt(id, attr)
			case "Fn::Join":
				parts, ok := arg.([]any)
				if !ok || len(parts) != 2 {
					return "", fmt.Errorf("stackrun: Fn::Join %v", arg)
				}
				sep, _ := parts[0].(string)
				list, ok := parts[1].([]any)
				if !ok {
					return "", fmt.Errorf("stackrun: Fn::Join list %v", parts[1])
				}
				var out []string
				for _, e := range list {
					s, err := t.Resolve(e)
					if err != nil {
						return "", err
					}
					out = append(out, s)
				}
				return strings.Join(out, sep), nil
			case "Fn::Sub":
				s, ok := arg.(string)
				if !ok {
					return "", fmt.Errorf("stackrun: Fn::Sub with variables not supported: %v", arg)
				}
				return t.sub(s)
			}
			return "", fmt.Errorf("stackrun: intrinsic %s not supported", fn)
		}
	}
	return "", fmt.Errorf("stackrun: cannot resolve %v", v)
}

var subVar = regexp.MustCompile(`\$\{([^}!][^}]*)\}`)

func (t *Template) sub(s string) (string, error) {
	var err error
	out := subVar.ReplaceAllStringFunc(s, func(m string) string {
		name := m[2 : len(m)-1]
		var v string
		var e error
		if id, attr, ok := strings.Cut(name, "."); ok {
			v, e = t.getAtt(id, attr)
		} else {
			v, e = t.Resolve(map[string]any{"Ref": name})
		}
		if e != nil && err == nil {
			err = e
		}
		return v
	})
	return out, err
}

// ResolveList resolves a value that is one item or a list of items.
func (t *Template) ResolveList(v any) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		list = []any{v}
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		s, err := t.Resolve(e)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// idFromRef returns the logical id a {"Ref": id} or {"Fn::GetAtt": [id, ...]} names.
func idFromRef(v any) (string, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return "", false
	}
	if s, ok := m["Ref"].(string); ok {
		return s, true
	}
	if parts, ok := m["Fn::GetAtt"].([]any); ok && len(parts) == 2 {
		s, ok := parts[0].(string)
		return s, ok
	}
	return "", false
}
