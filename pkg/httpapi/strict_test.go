package httpapi_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestStrictBodies: a member name matched only up to case, a member given twice, a null
// anywhere and invalid UTF-8 (a byte, or a lone surrogate escape) are 400 on every route
// with a body (encoding/json alone accepts all four), and change nothing: no topic, no
// record, no lease, no commit.
func TestStrictBodies(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 2)
	e.call("POST", "/v1/topics/t/records", appendBody(rec{value: "seed", partition: ptr(0)})).want(t, 200)
	e.call("POST", "/v1/groups/g/topics/t/partitions/0/lease", lease("m")).want(t, 200)
	const gp = "/v1/groups/g/topics/t/partitions/0"
	v := b64("v")
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/v1/topics", `{"Name": "x", "partitions": 1}`},
		{"POST", "/v1/topics", `{"name": "x", "PARTITIONS": 1}`},
		{"POST", "/v1/topics", `{"name": "x", "partitions": 1, "Retention_ms": 5000}`},
		{"POST", "/v1/topics", `{"name": "x", "partitions": 1, "retention_ms": null}`},
		{"POST", "/v1/topics", `{"name": null, "partitions": 1}`},
		{"POST", "/v1/topics", `{"name": "x", "partitions": 1, "partitions": 2}`},
		{"POST", "/v1/topics", `{"name": "x", "name": "y", "partitions": 1}`},
		{"POST", "/v1/topics", `null`},
		{"POST", "/v1/topics/t/records", `{"Records": [{"value": "` + v + `"}]}`},
		{"POST", "/v1/topics/t/records", `{"records": [{"Value": "` + v + `"}]}`},
		{"POST", "/v1/topics/t/records", `{"records": [{"value": "` + v + `", "Partition": 1}]}`},
		{"POST", "/v1/topics/t/records", `{"records": [{"value": "` + v + `", "key": null}]}`},
		{"POST", "/v1/topics/t/records", `{"records": [{"value": "` + v + `", "headers": null}]}`},
		{"POST", "/v1/topics/t/records", `{"records": [{"value": "` + v + `", "headers": {"h": null}}]}`},
		{"POST", "/v1/topics/t/records", `{"records": [{"value": "` + v + `", "headers": {"h": "` + v + `", "h": "` + v + `"}}]}`},
		{"POST", "/v1/topics/t/records", `{"records": [{"value": "` + v + `", "partition": null}]}`},
		{"POST", "/v1/topics/t/records", `{"records": [{"value": "` + v + `", "timestamp_ms": null}]}`},
		{"POST", "/v1/topics/t/records", `{"records": [{"value": "` + v + `", "headers": {"\ud800": "` + v + `"}}]}`},
		{"POST", "/v1/topics/t/records", "{\"records\": [{\"value\": \"" + v + "\", \"headers\": {\"h\xff\": \"" + v + "\"}}]}"},
		{"POST", "/v1/topics/t/records", `{"records": [null]}`},
		{"POST", "/v1/topics/t/records", `{"records": null}`},
		{"POST", "/v1/topics/t/records", `{"records": [{"value": "` + v + `", "value": "` + v + `"}]}`},
		{"POST", gp + "/lease", `{"Member": "m2"}`},
		{"POST", gp + "/lease", `{"member": "m2", "ttl_ms": null}`},
		{"POST", gp + "/lease", `{"member": "m", "generation": null}`},
		{"POST", gp + "/lease", `{"member": "m", "member": "m2"}`},
		{"DELETE", gp + "/lease", `{"member": "m", "Generation": 1}`},
		{"POST", gp + "/commit", `{"member": "m", "generation": 1, "Next_Offset": 1}`},
		{"POST", gp + "/commit", `{"member": "m", "generation": 1, "next_offset": 1, "next_offset": 0}`},
		{"POST", "/v1/groups/g/topics/t/reset", `{"To": "earliest"}`},
		{"POST", "/v1/groups/g/topics/t/reset", `{"to": null}`},
		{"POST", "/v1/groups/g/topics/t/reset", `{"to": {"Offset": 0}}`},
		{"POST", "/v1/groups/g/topics/t/reset", `{"to": {"offset": null}}`},
		{"POST", "/v1/groups/g/topics/t/reset", `{"to": {"offset": 0, "offset": 1}}`},
		{"POST", "/v1/groups/g/topics/t/reset", `{"to": {"timestamp_ms": -1}}`},
		{"POST", "/v1/groups/g/topics/t/reset", `{"to": {"timestamp_ms": 253402300800000}}`},
		{"POST", "/v1/groups/g/topics/t/reset", `{"to": {"timestamp_ms": -9223372036854775808}}`},
	} {
		t.Run(fmt.Sprintf("%s %s %s", tc.method, strings.TrimPrefix(tc.path, "/v1/"), tc.body), func(t *testing.T) {
			hws := fmt.Sprint(e.hws("t"))
			group := e.call("GET", "/v1/groups/g", nil).want(t, 200).raw
			e.call(tc.method, tc.path, tc.body).want(t, 400, "invalid_request")
			if got := fmt.Sprint(e.hws("t")); got != hws {
				t.Fatalf("high watermarks %s -> %s", hws, got)
			}
			if got := e.call("GET", "/v1/groups/g", nil).want(t, 200).raw; string(got) != string(group) {
				t.Fatalf("group changed:\n%s\n%s", group, got)
			}
			e.call("GET", "/v1/topics/x", nil).want(t, 404, "not_found")
		})
	}
	// The exact spellings are still accepted.
	e.call("POST", "/v1/topics", `{"name": "x", "partitions": 1, "retention_ms": 5000}`).want(t, 201)
	e.call("POST", "/v1/groups/g2/topics/t/reset", `{"to": {"timestamp_ms": 0}}`).want(t, 200)
	e.call("POST", "/v1/groups/g2/topics/t/reset", `{"to": {"timestamp_ms": 253402300799999}}`).want(t, 200)
}

// TestStrictDepth: a body nested deeper than any request is a 400, however deep (the
// walk must not recurse once per '['), and a shallow one still decodes.
func TestStrictDepth(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 1)
	for _, n := range []int{33, 10_000, 1 << 20} {
		body := strings.Repeat("[", n) + strings.Repeat("]", n)
		e.call("POST", "/v1/topics/t/records", `{"records": `+body+`}`).want(t, 400, "invalid_request")
		if n < 10_000 {
			e.call("POST", "/v1/topics", strings.Repeat(`{"name":`, n)).want(t, 400, "invalid_request")
		}
	}
	e.call("POST", "/v1/groups/g/topics/t/reset", `{"to": {"offset": 0}}`).want(t, 200)
}
