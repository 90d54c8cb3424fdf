package httpapi

import (
	"encoding/base64"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/stratalog/strata/pkg/wire"
)

// These tests keep the contract in one place: pkg/wire's JSON shapes, names, limits and
// codes must say what docs/openapi.yaml says, and the server's presence-checking request
// decoders must carry exactly the fields of the wire shapes the SDK sends.

// jsonMembers lists the JSON member names of struct type t as encoding/json sees them
// (embedded structs flattened, "-" left out).
func jsonMembers(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			out = append(out, jsonMembers(f.Type)...)
			continue
		}
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

// openAPIRoot is docs/openapi.yaml as generic YAML.
func openAPIRoot(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile("../../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := yaml.Unmarshal(data, &root); err != nil {
		t.Fatal(err)
	}
	return root
}

// schemaAt follows a path of schema names and property names ("items" steps into an
// array) from components/schemas, resolving $ref and merging allOf.
func schemaAt(t *testing.T, root map[string]any, path string) map[string]any {
	t.Helper()
	schemas := root["components"].(map[string]any)["schemas"].(map[string]any)
	var resolve func(s map[string]any) map[string]any
	resolve = func(s map[string]any) map[string]any {
		if ref, ok := s["$ref"].(string); ok {
			return resolve(schemas[strings.TrimPrefix(ref, "#/components/schemas/")].(map[string]any))
		}
		if all, ok := s["allOf"].([]any); ok {
			props := map[string]any{}
			for _, part := range all {
				for k, v := range properties(resolve(part.(map[string]any))) {
					props[k] = v
				}
			}
			return map[string]any{"type": "object", "properties": props}
		}
		return s
	}
	parts := strings.Split(path, ".")
	s, ok := schemas[parts[0]].(map[string]any)
	if !ok {
		t.Fatalf("openapi.yaml has no schema %s", parts[0])
	}
	s = resolve(s)
	for _, p := range parts[1:] {
		var next any
		if p == "items" {
			next = s["items"]
		} else {
			next = properties(s)[p]
		}
		m, ok := next.(map[string]any)
		if !ok {
			t.Fatalf("openapi.yaml: %s: no %s", path, p)
		}
		s = resolve(m)
	}
	return s
}

func properties(s map[string]any) map[string]any {
	p, _ := s["properties"].(map[string]any)
	return p
}

// TestWireShapesMatchOpenAPI: every wire JSON shape has exactly the members of its
// schema in docs/openapi.yaml, so the SDK, the server (which answers with these types)
// and the published document cannot drift apart.
func TestWireShapesMatchOpenAPI(t *testing.T) {
	root := openAPIRoot(t)
	for _, tc := range []struct {
		schema string
		typ    reflect.Type
	}{
		{"CreateTopicRequest", typeOf[wire.TopicCreate]()},
		{"AlterTopicRequest", typeOf[wire.TopicAlter]()},
		{"TopicInfo", typeOf[wire.Topic]()},
		{"TopicInfo.partition_info.items", typeOf[wire.PartitionInfo]()},
		{"AppendRequest", typeOf[wire.Append]()},
		{"AppendRequest.records.items", typeOf[wire.Record]()},
		{"AppendResult", typeOf[wire.Result]()},
		{"BlockResult", typeOf[wire.BlockResult]()},
		{"PollResponse", typeOf[wire.PollResponse]()},
		{"PollResponse.records.items", typeOf[wire.PolledRecord]()},
		{"KeyRecord", typeOf[wire.KeyRecord]()},
		{"LeaseRequest", typeOf[wire.LeaseRequest]()},
		{"Lease", typeOf[wire.Lease]()},
		{"ReleaseRequest", typeOf[wire.Release]()},
		{"CommitRequest", typeOf[wire.Commit]()},
		{"GroupDescription", typeOf[wire.Group]()},
		{"GroupDescription.partitions.items", typeOf[wire.GroupPartition]()},
		{"HeartbeatRequest", typeOf[wire.Heartbeat]()},
		{"HeartbeatRequest.held.items", typeOf[wire.HeldLease]()},
		{"MemberLease", typeOf[wire.MemberLease]()},
		{"Assignment", typeOf[wire.Assignment]()},
		{"Assignment.acquired.items", typeOf[wire.AcquiredLease]()},
		{"LeaveRequest", typeOf[wire.Leave]()},
		{"GroupSettings", typeOf[wire.GroupSettings]()},
		{"GroupSettingsRequest", typeOf[wire.GroupSettingsRequest]()},
		{"ParkedList", typeOf[wire.ParkedList]()},
		{"ParkedKey", typeOf[wire.ParkedKey]()},
		{"ParkedReleaseRequest", typeOf[wire.ParkedRelease]()},
		{"ParkedState", typeOf[wire.ParkedState]()},
		{"ParkedRow", typeOf[wire.ParkedRow]()},
		{"ParkedRows", typeOf[wire.ParkedRows]()},
		{"ParkedPutRequest", typeOf[wire.ParkedPut]()},
		{"ParkedUnparkRequest", typeOf[wire.ParkedUnpark]()},
		{"Summary", typeOf[wire.Summary]()},
		{"Summary.principal", typeOf[wire.SummaryPrincipal]()},
		{"Summary.principal.grants.items", typeOf[wire.Grant]()},
		{"Summary.topics.items", typeOf[wire.SummaryTopic]()},
		{"Summary.topics.items.partition_info.items", typeOf[wire.SummaryPartition]()},
		{"Summary.groups.items", typeOf[wire.SummaryGroup]()},
		{"Summary.groups.items.members.items", typeOf[wire.SummaryMember]()},
		{"Summary.groups.items.members.items.holds.items", typeOf[wire.TopicPartition]()},
		{"KeySearch", typeOf[wire.KeySearch]()},
		{"PartitionStats", typeOf[wire.PartitionStats]()},
	} {
		var doc []string
		for k := range properties(schemaAt(t, root, tc.schema)) {
			doc = append(doc, k)
		}
		slices.Sort(doc)
		if got := jsonMembers(tc.typ); !slices.Equal(got, doc) {
			t.Errorf("wire.%s has JSON members %v; openapi.yaml's %s has %v", tc.typ.Name(), got, tc.schema, doc)
		}
	}
}

// TestServerRequestTypesMatchWire: the server decodes requests into its own types
// (pointers, to tell a missing member from a zero one) and answers polls from raw bytes;
// each must carry exactly the members of the wire shape the SDK uses.
func TestServerRequestTypesMatchWire(t *testing.T) {
	for _, tc := range []struct {
		server, wire reflect.Type
	}{
		{typeOf[createTopicRequest](), typeOf[wire.TopicCreate]()},
		{typeOf[alterTopicRequest](), typeOf[wire.TopicAlter]()},
		{typeOf[appendRequest](), typeOf[wire.Append]()},
		{typeOf[appendRecord](), typeOf[wire.Record]()},
		{typeOf[pollResponse](), typeOf[wire.PollResponse]()},
		{typeOf[pollRecord](), typeOf[wire.PolledRecord]()},
		{typeOf[leaseRequest](), typeOf[wire.LeaseRequest]()},
		{typeOf[releaseRequest](), typeOf[wire.Release]()},
		{typeOf[commitRequest](), typeOf[wire.Commit]()},
		{typeOf[settingsRequest](), typeOf[wire.GroupSettingsRequest]()},
		{typeOf[heartbeatRequest](), typeOf[wire.Heartbeat]()},
		{typeOf[heldLeaseJSON](), typeOf[wire.HeldLease]()},
		{typeOf[leaveRequest](), typeOf[wire.Leave]()},
		{typeOf[parkedReleaseRequest](), typeOf[wire.ParkedRelease]()},
		{typeOf[parkedPutRequest](), typeOf[wire.ParkedPut]()},
		{typeOf[parkedUnparkRequest](), typeOf[wire.ParkedUnpark]()},
	} {
		if got, want := jsonMembers(tc.server), jsonMembers(tc.wire); !slices.Equal(got, want) {
			t.Errorf("httpapi.%s has JSON members %v; wire.%s has %v", tc.server.Name(), got, tc.wire.Name(), want)
		}
	}
}

// TestWireNamesAndLimitsMatchOpenAPI: the name pattern, the Idempotency-Key bound and
// the batch limits in docs/openapi.yaml are pkg/wire's.
func TestWireNamesAndLimitsMatchOpenAPI(t *testing.T) {
	root := openAPIRoot(t)
	for _, path := range []string{"Name", "GroupSettings.dead_letter_topic", "GroupSettingsRequest.dead_letter_topic"} {
		if got := schemaAt(t, root, path)["pattern"]; got != wire.NamePattern {
			t.Errorf("openapi.yaml's %s pattern is %v, wire.NamePattern is %s", path, got, wire.NamePattern)
		}
	}
	number := func(v any) int64 {
		switch n := v.(type) {
		case int:
			return int64(n)
		case int64:
			return n
		case float64:
			return int64(n)
		}
		return -1
	}
	for _, tc := range []struct {
		path, key string
		want      int64
	}{
		{"CreateTopicRequest.partitions", "maximum", wire.MaxPartitions},
		{"AppendRequest.records", "maxItems", wire.MaxRecordsPerBatch},
		{"AppendRequest.records.items.timestamp_ms", "maximum", wire.MaxTimestampMs},
		{"LeaseRequest.ttl_ms", "minimum", wire.MinLeaseTTL.Milliseconds()},
		{"LeaseRequest.ttl_ms", "maximum", wire.MaxLeaseTTL.Milliseconds()},
		{"LeaseRequest.ttl_ms", "default", wire.DefaultLeaseTTL.Milliseconds()},
		{"HeartbeatRequest.held", "maxItems", wire.MaxPartitions},
		{"ParkedPutRequest.error", "maxLength", wire.MaxParkedError},
		{"ParkedState.error", "maxLength", wire.MaxParkedError},
		{"ParkedPutRequest.parked_at_ms", "maximum", wire.MaxTimestampMs},
		{"ParkedPutRequest.park_partition", "maximum", wire.MaxPartitions - 1},
		{"ParkedPutRequest.key", "maxLength", int64(base64.StdEncoding.EncodedLen(wire.MaxParkedKey))},
		{"ParkedUnparkRequest.key", "maxLength", int64(base64.StdEncoding.EncodedLen(wire.MaxParkedKey))},
	} {
		if got := number(schemaAt(t, root, tc.path)[tc.key]); got != tc.want {
			t.Errorf("openapi.yaml's %s %s is %d, pkg/wire says %d", tc.path, tc.key, got, tc.want)
		}
	}
	idem, attempt, producer, elapsed, floor := false, false, false, false, false
	for _, item := range root["paths"].(map[string]any) {
		for _, op := range item.(map[string]any) {
			om, _ := op.(map[string]any) // path-level "parameters" is a list
			params, _ := om["parameters"].([]any)
			for _, p := range params {
				pm, _ := p.(map[string]any)
				switch pm["name"] {
				case wire.HeaderAttempt:
					attempt = true
					s := pm["schema"].(map[string]any)
					if number(s["minimum"]) != 0 || number(s["maximum"]) != wire.MaxAttempt {
						t.Errorf("openapi.yaml's %s is %v–%v, pkg/wire reads 0–%d", wire.HeaderAttempt, s["minimum"], s["maximum"], wire.MaxAttempt)
					}
				case wire.HeaderRetryElapsed:
					elapsed = true
					s := pm["schema"].(map[string]any)
					if s["type"] != "integer" || number(s["minimum"]) != 0 || number(s["maximum"]) != wire.MaxRetryElapsed.Milliseconds() {
						t.Errorf("openapi.yaml's %s is %v %v–%v, pkg/wire reads integers 0–%d", wire.HeaderRetryElapsed,
							s["type"], s["minimum"], s["maximum"], wire.MaxRetryElapsed.Milliseconds())
					}
				case wire.HeaderBatchFloor:
					floor = true
					for _, v := range []string{"0", "17@tc01abc", wire.BatchMark{Batch: wire.MaxBatchNumber, Incarnation: "z"}.String()} {
						if !regexp.MustCompile(pm["schema"].(map[string]any)["pattern"].(string)).MatchString(v) {
							t.Errorf("openapi.yaml's %s pattern refuses %q, which pkg/wire reads", wire.HeaderBatchFloor, v)
						}
					}
				case wire.HeaderIdempotency:
					producer = true
					s := pm["schema"].(map[string]any)
					if enum, _ := s["enum"].([]any); s["type"] != "string" || len(enum) != 1 || enum[0] != wire.IdempotencyProducer {
						t.Errorf("openapi.yaml's %s is %v %v, pkg/wire reads the one value %q", wire.HeaderIdempotency,
							s["type"], s["enum"], wire.IdempotencyProducer)
					}
				}
				if pm["name"] != "Idempotency-Key" {
					continue
				}
				idem = true
				s := pm["schema"].(map[string]any)
				if number(s["minLength"]) != 1 || number(s["maxLength"]) != wire.MaxIdempotencyKey {
					t.Errorf("openapi.yaml's Idempotency-Key is %v–%v characters, wire.MaxIdempotencyKey is %d", s["minLength"], s["maxLength"], wire.MaxIdempotencyKey)
				}
			}
		}
	}
	if !floor {
		t.Errorf("openapi.yaml declares no %s", wire.HeaderBatchFloor)
	}
	if !idem || !attempt || !producer || !elapsed {
		t.Errorf("openapi.yaml declares Idempotency-Key %t, %s %t, %s %t, %s %t; want all", idem, wire.HeaderAttempt, attempt,
			wire.HeaderIdempotency, producer, wire.HeaderRetryElapsed, elapsed)
	}
}

// TestWireCodesMatchOpenAPI: the error codes pkg/wire declares are the enum of
// openapi.yaml's Error.code, neither more nor fewer.
func TestWireCodesMatchOpenAPI(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../wire/codes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			for _, v := range s.(*ast.ValueSpec).Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					c, _ := strconv.Unquote(lit.Value)
					codes = append(codes, c)
				}
			}
		}
	}
	var doc []string
	for _, c := range schemaAt(t, openAPIRoot(t), "Error.code")["enum"].([]any) {
		doc = append(doc, c.(string))
	}
	slices.Sort(codes)
	slices.Sort(doc)
	if len(codes) == 0 || !slices.Equal(codes, doc) {
		t.Errorf("pkg/wire's error codes are %v; openapi.yaml's Error.code enum is %v", codes, doc)
	}
}
