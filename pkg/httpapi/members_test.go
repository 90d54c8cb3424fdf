package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/httpapi"
)

const hbPath = "/v1/groups/g/topics/t/heartbeat"

func heartbeat(member string, held ...[2]int64) map[string]any {
	hs := []any{}
	for _, h := range held {
		hs = append(hs, map[string]any{"partition": h[0], "generation": h[1]})
	}
	return map[string]any{"member": member, "ttl_ms": 3000, "held": hs}
}

// partitionsOf lists the "partition" of each object in r's field.
func partitionsOf(r *resp, field string) string {
	var out []string
	for _, x := range r.body[field].([]any) {
		switch v := x.(type) {
		case map[string]any:
			out = append(out, fmt.Sprint(v["partition"]))
		default:
			out = append(out, fmt.Sprint(v))
		}
	}
	return strings.Join(out, " ")
}

// TestMemberHeartbeats: a lone member takes every partition; a second one gets nothing
// while the first holds them, the first is told to release its extras, and the second
// takes them at its next heartbeat; a member leaving hands its share back.
func TestMemberHeartbeats(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 4)
	r := e.call("POST", hbPath, heartbeat("a")).want(t, 200)
	if partitionsOf(r, "acquired") != "0 1 2 3" && len(r.body["acquired"].([]any)) != 4 || r.num("live_members") != 1 || r.num("fair_share") != 4 {
		t.Fatalf("first heartbeat %s", r.raw)
	}
	gens := map[string]int64{}
	for _, x := range r.body["acquired"].([]any) {
		m := x.(map[string]any)
		gens[fmt.Sprint(m["partition"])] = int64(m["generation"].(float64))
		if m["committed_offset"] != nil {
			t.Fatalf("a new group's lease has a committed offset: %s", r.raw)
		}
	}
	held := func() [][2]int64 {
		var out [][2]int64
		for p := range 4 {
			if g, ok := gens[fmt.Sprint(p)]; ok {
				out = append(out, [2]int64{int64(p), g})
			}
		}
		return out
	}
	r = e.call("POST", hbPath, heartbeat("b")).want(t, 200)
	if partitionsOf(r, "acquired") != "" || r.num("live_members") != 2 || r.num("fair_share") != 2 {
		t.Fatalf("second member's first heartbeat %s: want nothing acquired, 2 members, share 2", r.raw)
	}
	r = e.call("POST", hbPath, heartbeat("a", held()...)).want(t, 200)
	rel := strings.Fields(partitionsOf(r, "release"))
	if len(rel) != 2 || partitionsOf(r, "held") != "0 1 2 3" || partitionsOf(r, "lost") != "" {
		t.Fatalf("overloaded member's heartbeat %s: want 2 to release, 4 held", r.raw)
	}
	for _, p := range rel {
		e.call("DELETE", "/v1/groups/g/topics/t/partitions/"+p+"/lease", lease("a", "generation", gens[p])).want(t, 204)
		delete(gens, p)
	}
	r = e.call("POST", hbPath, heartbeat("b")).want(t, 200)
	if got := partitionsOf(r, "acquired"); got != strings.Join(rel, " ") {
		t.Fatalf("second member acquired %q, want the released %v: %s", got, rel, r.raw)
	}
	// A lease a member claims but does not hold comes back lost, never taken.
	r = e.call("POST", hbPath, heartbeat("a", append(held(), [2]int64{int64(len(rel)), 99})...)).want(t, 200)
	if !strings.Contains(partitionsOf(r, "lost"), fmt.Sprint(len(rel))) {
		t.Fatalf("a claimed lease the member does not own: %s", r.raw)
	}
	// b leaves: after a's leases lapse nothing changes for b's, but a takes b's share once
	// b releases and leaves.
	e.call("DELETE", "/v1/groups/g/members", map[string]any{"member": "b"}).want(t, 204)
	e.call("DELETE", "/v1/groups/g/members", map[string]any{"member": "never-joined"}).want(t, 204)
	e.clock.Advance(4 * time.Second)
	r = e.call("POST", hbPath, heartbeat("a")).want(t, 200)
	if r.num("live_members") != 1 || len(r.body["acquired"].([]any)) != 4 {
		t.Fatalf("after b left and every lease lapsed, a gets all 4: %s", r.raw)
	}
}

func TestMemberRoutesInvalid(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 2)
	for _, body := range []any{
		map[string]any{"ttl_ms": 3000},
		map[string]any{"member": "m", "ttl_ms": 1},
		map[string]any{"member": "m", "ttl_ms": 3000, "held": []any{map[string]any{"partition": 0}}},
		map[string]any{"member": "m", "held": []any{map[string]any{"partition": 0, "generation": 0}}},
		map[string]any{"member": "m", "held": []any{map[string]any{"partition": -1, "generation": 1}}},
		map[string]any{"member": "m", "held": []any{map[string]any{"partition": 0, "generation": 1}, map[string]any{"partition": 0, "generation": 1}}},
		map[string]any{"member": "", "ttl_ms": 3000},
		map[string]any{"member": "m", "extra": 1},
		`{"member": "m", "held": "x"}`,
	} {
		e.call("POST", hbPath, body).want(t, 400, "invalid_request")
	}
	e.call("POST", "/v1/groups/g/topics/nope/heartbeat", heartbeat("m")).want(t, 404, "not_found")
	e.call("DELETE", "/v1/groups/g/members", map[string]any{}).want(t, 400, "invalid_request")
	e.call("DELETE", "/v1/groups/g/members", map[string]any{"member": ""}).want(t, 400, "invalid_request")
	pad := strings.Repeat("x", httpapi.MaxSmallBody)
	e.call("POST", hbPath, `{"member": "`+pad+`"}`).want(t, 413, "payload_too_large")
	e.call("DELETE", "/v1/groups/g/members", `{"member": "`+pad+`"}`).want(t, 413, "payload_too_large")
	e.meta.down.Store(true)
	e.call("POST", hbPath, heartbeat("m")).want(t, 503, "unavailable")
	e.call("DELETE", "/v1/groups/g/members", map[string]any{"member": "m"}).want(t, 503, "unavailable")
}

func TestMemberRoutesAuth(t *testing.T) {
	e := authEnv(t)
	hb, leave := "/v1/groups/billing/topics/orders/heartbeat", "/v1/groups/billing/members"
	e.call("POST", hb, heartbeat("m")).want(t, 401, "unauthorized")
	e.call("DELETE", leave, map[string]any{"member": "m"}).want(t, 401, "unauthorized")
	e.call("POST", hb, heartbeat("m"), bearer("none-token")...).want(t, 403, "forbidden")
	e.call("POST", hb, heartbeat("m"), bearer("consume-only")...).want(t, 403, "forbidden")
	e.call("DELETE", leave, map[string]any{"member": "m"}, bearer("none-token")...).want(t, 403, "forbidden")
	e.call("POST", hb, heartbeat("m"), bearer("orders-token")...).want(t, 200)
	e.call("DELETE", leave, map[string]any{"member": "m"}, bearer("orders-token")...).want(t, 204)
}

// RemoveMember fails while the store is down, like the other operations faultyMeta wraps.
func (f *faultyMeta) RemoveMember(ctx context.Context, g, id string) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.MetaStore.RemoveMember(ctx, g, id)
}
