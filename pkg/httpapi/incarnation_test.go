package httpapi_test

import (
	"net/url"
	"strings"
	"testing"
)

// deleteAndRecreate deletes topic and creates it again (one partition) as admin.
func deleteAndRecreate(t *testing.T, e *env, topic string) {
	t.Helper()
	e.call("DELETE", "/v1/topics/"+topic, nil, bearer("admin-token")...).want(t, 204)
	e.call("POST", "/v1/topics", map[string]any{"name": topic, "partitions": 1}, bearer("admin-token")...).want(t, 201)
}

// TestMemberIncarnationFencesEveryMemberRoute: the lease and heartbeat answers name the
// lease's incarnation, and each member route given it back acts on that incarnation
// only: after delete + re-create, the same member's generation-1 lease of the new topic
// is out of the old lease's reach (409 fenced on renew, commit, release, parked rows
// read, written and deleted, and on the poll), while a call without an incarnation
// acts on the live one as before.
func TestMemberIncarnationFencesEveryMemberRoute(t *testing.T) {
	e := authEnv(t)
	admin := bearer("admin-token")
	const gp = "/v1/groups/billing/topics/orders/partitions/0/"
	old := e.call("POST", gp+"lease", lease("m"), admin...).want(t, 200)
	inc, _ := old.body["incarnation"].(string)
	if inc == "" {
		t.Fatalf("lease answer names no incarnation: %s", old.raw)
	}
	hb := e.call("POST", "/v1/groups/billing/topics/orders/heartbeat", map[string]any{"member": "m",
		"held": []any{map[string]any{"partition": 0, "generation": old.num("generation"), "incarnation": inc}}}, admin...).want(t, 200)
	if held, _ := hb.body["held"].([]any); len(held) != 1 || held[0].(map[string]any)["incarnation"] != inc {
		t.Fatalf("heartbeat answer's held leases do not name incarnation %q: %s", inc, hb.raw)
	}
	deleteAndRecreate(t, e, "orders")
	e.call("POST", "/v1/topics/orders/records", appendBody(rec{value: "new"}), admin...).want(t, 200)
	fresh := e.call("POST", gp+"lease", lease("m"), admin...).want(t, 200)
	if fresh.num("generation") != old.num("generation") || fresh.body["incarnation"] == inc {
		t.Fatalf("the successor's lease %s, want the old one's generation under a new incarnation (old %s)", fresh.raw, old.raw)
	}
	gen := old.num("generation")
	e.call("POST", gp+"lease", lease("m", "generation", gen, "incarnation", inc), admin...).want(t, 409, "fenced")
	e.call("POST", gp+"commit", lease("m", "generation", gen, "next_offset", 1, "incarnation", inc), admin...).want(t, 409, "fenced")
	e.call("PUT", gp+"parked", parkedPut("m", gen, "k", "incarnation", inc), admin...).want(t, 409, "fenced")
	e.call("POST", gp+"parked/unpark", lease("m", "generation", gen, "key", b64("k"), "incarnation", inc), admin...).want(t, 409, "fenced")
	e.call("GET", gp+"parked?incarnation="+inc, nil, admin...).want(t, 409, "fenced")
	e.call("GET", "/v1/topics/orders/partitions/0/records?offset=0&incarnation="+inc, nil, admin...).want(t, 409, "fenced")
	e.call("DELETE", gp+"lease", lease("m", "generation", gen, "incarnation", inc), admin...).want(t, 409, "fenced")
	// Nothing reached the successor: its lease is held, uncommitted, with no parked row.
	d := e.call("GET", "/v1/groups/billing", nil, admin...).want(t, 200)
	for _, p := range d.body["partitions"].([]any) {
		p := p.(map[string]any)
		if p["topic"] == "orders" && (p["committed_offset"] != nil || p["owner"] != "m") {
			t.Errorf("successor after the old lease's calls: %v, want owned by m and uncommitted", p)
		}
	}
	// The successor's own incarnation and the name alone (older clients) act on it.
	newInc := fresh.body["incarnation"].(string)
	e.call("GET", gp+"parked?incarnation="+newInc, nil, admin...).want(t, 200)
	e.call("GET", "/v1/topics/orders/partitions/0/records?offset=0&incarnation="+newInc, nil, admin...).want(t, 200)
	e.call("POST", gp+"lease", lease("m", "generation", gen, "incarnation", newInc), admin...).want(t, 200)
	e.call("POST", gp+"commit", lease("m", "generation", gen, "next_offset", 1), admin...).want(t, 200)
	// A heartbeat still holding the deleted incarnation's lease learns it is lost.
	hb = e.call("POST", "/v1/groups/billing/topics/orders/heartbeat", map[string]any{"member": "m",
		"held": []any{map[string]any{"partition": 0, "generation": gen, "incarnation": inc}}}, admin...).want(t, 200)
	if lost, _ := hb.body["lost"].([]any); len(lost) != 1 {
		t.Errorf("heartbeat holding the deleted incarnation's lease: %s, want partition 0 lost", hb.raw)
	}
}

// parkedPut is a PUT .../parked body for key, with extra members.
func parkedPut(member string, gen int64, key string, extra ...any) map[string]any {
	m := lease(member, "generation", gen, "key", b64(key), "first_offset", 0, "last_offset", 0, "records", 1,
		"error", "boom", "attempts", 1, "parked_at_ms", 1, "park_partition", 0, "park_offset", -1)
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i].(string)] = extra[i+1]
	}
	return m
}

// TestMemberIncarnationChecksGrantOnTopicName: a member route's permissions are those
// of the topic's name, whatever incarnation the call names. A principal without rights
// on payments reaches it neither through the path payments#<incarnation> nor through
// another topic's path with payments' incarnation; and a topic path holding '#' is no
// topic, refused as before incarnations were named (400 on the group routes, 404 on
// the poll), for a principal with every right too.
func TestMemberIncarnationChecksGrantOnTopicName(t *testing.T) {
	e := authEnv(t)
	admin, svc := bearer("admin-token"), bearer("orders-token")
	pay := e.call("POST", "/v1/groups/billing/topics/payments/partitions/0/lease", lease("m"), admin...).want(t, 200)
	_, inc, _ := strings.Cut(e.tid("payments"), "#")
	if pay.body["incarnation"] != inc {
		t.Errorf("lease answer %s, want incarnation %q", pay.raw, inc)
	}
	gen := pay.num("generation")
	ref := url.PathEscape("payments#" + inc)
	refGP := "/v1/groups/billing/topics/" + ref + "/partitions/0/"
	// orders-svc may consume billing and read orders, not payments.
	e.call("POST", refGP+"commit", lease("m", "generation", gen, "next_offset", 0), svc...).want(t, 403, "forbidden")
	e.call("POST", refGP+"lease", lease("m", "generation", gen), svc...).want(t, 403, "forbidden")
	e.call("DELETE", refGP+"lease", lease("m", "generation", gen), svc...).want(t, 403, "forbidden")
	e.call("GET", refGP+"parked", nil, svc...).want(t, 403, "forbidden")
	e.call("PUT", refGP+"parked", parkedPut("m", gen, "k"), svc...).want(t, 403, "forbidden")
	e.call("POST", refGP+"parked/unpark", lease("m", "generation", gen, "key", b64("k")), svc...).want(t, 403, "forbidden")
	e.call("GET", "/v1/topics/"+ref+"/partitions/0/records?offset=0", nil, svc...).want(t, 403, "forbidden")
	e.call("POST", "/v1/groups/billing/topics/payments/partitions/0/commit",
		lease("m", "generation", gen, "next_offset", 0, "incarnation", inc), svc...).want(t, 403, "forbidden")
	// A path naming an incarnation is refused whoever asks.
	e.call("POST", refGP+"commit", lease("m", "generation", gen, "next_offset", 0), admin...).want(t, 400, "invalid_request")
	e.call("POST", refGP+"lease", lease("m", "generation", gen), admin...).want(t, 400, "invalid_request")
	e.call("DELETE", refGP+"lease", lease("m", "generation", gen), admin...).want(t, 400, "invalid_request")
	e.call("GET", refGP+"parked", nil, admin...).want(t, 400, "invalid_request")
	e.call("PUT", refGP+"parked", parkedPut("m", gen, "k"), admin...).want(t, 400, "invalid_request")
	e.call("POST", refGP+"parked/unpark", lease("m", "generation", gen, "key", b64("k")), admin...).want(t, 400, "invalid_request")
	e.call("GET", "/v1/topics/"+ref+"/partitions/0/records?offset=0", nil, admin...).want(t, 404, "not_found")
	// payments' incarnation on orders' path names no incarnation of orders: fenced, and
	// payments' lease is untouched.
	const ordersGP = "/v1/groups/billing/topics/orders/partitions/0/"
	e.call("DELETE", ordersGP+"lease", lease("m", "generation", gen, "incarnation", inc), svc...).want(t, 409, "fenced")
	e.call("GET", "/v1/topics/orders/partitions/0/records?offset=0&incarnation="+inc, nil, svc...).want(t, 409, "fenced")
	e.call("POST", "/v1/groups/billing/topics/payments/partitions/0/lease", lease("m", "generation", gen, "incarnation", inc), admin...).want(t, 200)

	// An incarnation that cannot be one is a bad request, and a lease's first take
	// names none.
	for _, bad := range []any{"", "UPPER", "a#b", 7} {
		e.call("POST", ordersGP+"commit", lease("m", "generation", 1, "next_offset", 0, "incarnation", bad), admin...).want(t, 400, "invalid_request")
	}
	e.call("GET", ordersGP+"parked?incarnation=", nil, admin...).want(t, 400, "invalid_request")
	e.call("GET", "/v1/topics/orders/partitions/0/records?offset=0&incarnation=A", nil, admin...).want(t, 400, "invalid_request")
	e.call("POST", ordersGP+"lease", lease("m", "incarnation", inc), admin...).want(t, 400, "invalid_request")
	e.call("POST", "/v1/groups/billing/topics/orders/heartbeat", map[string]any{"member": "m",
		"held": []any{map[string]any{"partition": 0, "generation": 1, "incarnation": "NOPE"}}}, admin...).want(t, 400, "invalid_request")
}

// withIncarnations is seed (a JSON object) with each kind of "incarnation" member added:
// the live incarnation of topic, one that is not (a deleted one's), and values that
// cannot be one. Fuzz targets of the member routes start from them.
func withIncarnations(e *env, topic, seed string) []string {
	_, live, _ := strings.Cut(e.tid(topic), "#")
	i := strings.LastIndexByte(seed, '}')
	if i < 0 {
		return nil
	}
	var out []string
	for _, v := range []string{`"` + live + `"`, `"0deleted"`, `""`, `"UPPER"`, `"a#b"`, `7`, `null`} {
		out = append(out, seed[:i]+`, "incarnation": `+v+seed[i:])
	}
	return out
}
