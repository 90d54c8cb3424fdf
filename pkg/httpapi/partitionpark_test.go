package httpapi_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stratalog/strata/pkg/group"
)

// ppark is the member-side parked-row route of billing's orders/0.
const ppark = "/v1/groups/billing/topics/orders/partitions/0/parked"

// parkedBody is a valid PUT body for member at generation, the key k.
func parkedBody(member string, gen int64, k string, extra ...any) map[string]any {
	m := map[string]any{"member": member, "generation": gen, "key": base64.StdEncoding.EncodeToString([]byte(k)),
		"first_offset": 3, "last_offset": 7, "records": 2, "error": "card expired", "attempts": 5,
		"parked_at_ms": 1700000000000, "park_partition": 0, "park_offset": -1}
	for i := 0; i+1 < len(extra); i += 2 {
		if extra[i+1] == nil {
			delete(m, extra[i].(string))
			continue
		}
		m[extra[i].(string)] = extra[i+1]
	}
	return m
}

// TestPartitionParkedRoutes: the member-side parked-row routes store, list and delete a
// partition's rows for its owner, with the rights of a commit; a bad body is 400 and
// changes nothing; an old generation or another member is 409 fenced, as a commit.
func TestPartitionParkedRoutes(t *testing.T) {
	e := authEnv(t)
	admin := bearer("admin-token")
	e.call("PUT", "/v1/groups/billing/settings", map[string]any{"reset_policy": "earliest", "max_attempts": 1, "on_failure": "park"}, admin...).want(t, 200)
	gen := e.call("POST", "/v1/groups/billing/topics/orders/partitions/0/lease", lease("m", "ttl_ms", 300000), admin...).want(t, 200).num("generation")
	coord := group.New(e.meta, e.log, nil)
	state := func() string { return parkedState(t, coord, "billing") }

	r := e.call("GET", ppark, nil, admin...).want(t, 200)
	if strings.TrimSpace(string(r.raw)) != `{"parked":[]}` {
		t.Fatalf("no rows: %s", r.raw)
	}
	e.call("PUT", ppark, parkedBody("m", gen, "order-1"), admin...).want(t, 204)
	r = e.call("GET", ppark, nil, bearer("prefix-token")...).want(t, 200)
	want := `{"parked":[{"key":"` + b64("order-1") + `","first_offset":3,"last_offset":7,"records":2,"error":"card expired","attempts":5,` +
		`"parked_at_ms":1700000000000,"park_partition":0,"park_offset":-1}]}`
	if strings.TrimSpace(string(r.raw)) != want {
		t.Fatalf("rows %s\nwant %s", r.raw, want)
	}
	before := state()

	for _, c := range []struct {
		name string
		body any
	}{
		{"no member", parkedBody("m", gen, "order-2", "member", nil)},
		{"no generation", parkedBody("m", gen, "order-2", "generation", nil)},
		{"no key", parkedBody("m", gen, "order-2", "key", nil)},
		{"no park_offset", parkedBody("m", gen, "order-2", "park_offset", nil)},
		{"no error", parkedBody("m", gen, "order-2", "error", nil)},
		{"bad base64", parkedBody("m", gen, "order-2", "key", "%%")},
		{"key too long", parkedBody("m", gen, "order-2", "key", base64.StdEncoding.EncodeToString(make([]byte, 1025)))},
		{"negative first", parkedBody("m", gen, "order-2", "first_offset", -1)},
		{"last below first", parkedBody("m", gen, "order-2", "last_offset", 2)},
		{"no records", parkedBody("m", gen, "order-2", "records", 0)},
		{"more records than offsets", parkedBody("m", gen, "order-2", "records", 6)},
		{"error too long", parkedBody("m", gen, "order-2", "error", strings.Repeat("e", 4097))},
		{"negative attempts", parkedBody("m", gen, "order-2", "attempts", -1)},
		{"time beyond 9999", parkedBody("m", gen, "order-2", "parked_at_ms", int64(253402300800000))},
		{"park partition 1024", parkedBody("m", gen, "order-2", "park_partition", 1024)},
		{"park offset -2", parkedBody("m", gen, "order-2", "park_offset", -2)},
		{"generation 0", parkedBody("m", 0, "order-2")},
		{"unknown field", parkedBody("m", gen, "order-2", "release_requested_at_ms", 1)},
		{"null error", `{"member": "m", "generation": 1, "key": "", "first_offset": 0, "last_offset": 0, "records": 1, "error": null,
			"attempts": 1, "parked_at_ms": 0, "park_partition": 0, "park_offset": -1}`},
		{"not an object", `[]`},
	} {
		e.call("PUT", ppark, c.body, admin...).want(t, 400, "invalid_request")
		if got := state(); got != before {
			t.Fatalf("%s: a refused PUT changed the rows:\n%s->\n%s", c.name, before, got)
		}
	}
	for _, c := range []struct{ name, body string }{
		{"no key", `{"member": "m", "generation": 1}`},
		{"bad base64", `{"member": "m", "generation": 1, "key": "%%"}`},
		{"unknown field", `{"member": "m", "generation": 1, "key": "", "partition": 0}`},
	} {
		e.call("POST", ppark+"/unpark", c.body, admin...).want(t, 400, "invalid_request")
		if got := state(); got != before {
			t.Fatalf("unpark %s: changed the rows:\n%s->\n%s", c.name, before, got)
		}
	}
	e.call("PUT", "/v1/groups/billing/topics/orders/partitions/x/parked", parkedBody("m", gen, "order-2"), admin...).want(t, 400, "invalid_request")

	// The rights of a commit: consume on the group and read on the topic.
	e.call("GET", ppark, nil, bearer("consume-only")...).want(t, 403, "forbidden")
	e.call("PUT", ppark, parkedBody("m", gen, "order-2"), bearer("consume-only")...).want(t, 403, "forbidden")
	e.call("POST", ppark+"/unpark", map[string]any{"member": "m", "generation": gen, "key": b64("order-1")}, bearer("consume-only")...).want(t, 403, "forbidden")
	e.call("PUT", "/v1/groups/other/topics/orders/partitions/0/parked", parkedBody("m", gen, "order-2"), bearer("orders-token")...).want(t, 403, "forbidden")

	// Another member, or the same one at an old generation, is fenced as a commit is.
	e.call("PUT", ppark, parkedBody("zombie", gen, "order-2"), admin...).want(t, 409, "fenced")
	e.call("DELETE", "/v1/groups/billing/topics/orders/partitions/0/lease", lease("m", "generation", gen), admin...).want(t, 204)
	gen2 := e.call("POST", "/v1/groups/billing/topics/orders/partitions/0/lease", lease("m2", "ttl_ms", 300000), admin...).want(t, 200).num("generation")
	if gen2 <= gen {
		t.Fatalf("generation %d after %d", gen2, gen)
	}
	e.call("POST", "/v1/groups/billing/topics/orders/partitions/0/commit", lease("m", "generation", gen, "next_offset", 0), admin...).want(t, 409, "fenced")
	e.call("PUT", ppark, parkedBody("m", gen, "order-2"), admin...).want(t, 409, "fenced")
	e.call("POST", ppark+"/unpark", map[string]any{"member": "m", "generation": gen, "key": b64("order-1")}, admin...).want(t, 409, "fenced")
	if got := state(); got != before {
		t.Fatalf("a fenced write changed the rows:\n%s->\n%s", before, got)
	}

	// The owner updates (a release asked meanwhile is kept) and unparks.
	e.call("POST", "/v1/groups/billing/parked/release", map[string]any{"topic": "orders", "key": b64("order-1")}, admin...).want(t, 200)
	e.call("PUT", ppark, parkedBody("m2", gen2, "order-1", "park_offset", 4, "records", 3), admin...).want(t, 204)
	r = e.call("GET", ppark, nil, admin...).want(t, 200)
	if !strings.Contains(string(r.raw), `"records":3`) || !strings.Contains(string(r.raw), `"park_offset":4`) || !strings.Contains(string(r.raw), `"release_requested_at_ms":`) {
		t.Fatalf("after the owner's update: %s", r.raw)
	}
	e.call("POST", ppark+"/unpark", map[string]any{"member": "m2", "generation": gen2, "key": b64("order-1")}, admin...).want(t, 204)
	e.call("POST", ppark+"/unpark", map[string]any{"member": "m2", "generation": gen2, "key": b64("order-1")}, admin...).want(t, 204)
	if got := state(); got != "" {
		t.Fatalf("after unpark: %s", got)
	}
	e.meta.down.Store(true)
	e.call("GET", ppark, nil, admin...).want(t, 503, "unavailable")
	e.call("PUT", ppark, parkedBody("m2", gen2, "order-1"), admin...).want(t, 503, "unavailable")
	e.call("POST", ppark+"/unpark", map[string]any{"member": "m2", "generation": gen2, "key": b64("order-1")}, admin...).want(t, 503, "unavailable")
	e.meta.down.Store(false)
	// An unknown topic (no lease there: a write is fenced), and a body over the small-body limit.
	missing := "/v1/groups/billing/topics/missing/partitions/0/parked"
	e.call("GET", missing, nil, admin...).want(t, 404, "not_found")
	e.call("PUT", missing, parkedBody("m2", gen2, "order-1"), admin...).want(t, 409, "fenced")
	e.call("POST", missing+"/unpark", map[string]any{"member": "m2", "generation": gen2, "key": b64("order-1")}, admin...).want(t, 409, "fenced")
	e.call("PUT", ppark, parkedBody("m2", gen2, "order-1", "error", strings.Repeat("e", 70<<10)), admin...).want(t, 413)
	e.call("POST", ppark+"/unpark", map[string]any{"member": "m2", "generation": gen2, "key": strings.Repeat("A", 70<<10)}, admin...).want(t, 413)
	if got := state(); got != "" {
		t.Fatalf("an unavailable store's PUT stored %s", got)
	}
}
