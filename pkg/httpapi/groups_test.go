package httpapi_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/httpapi"
)

const gp = "/v1/groups/g/topics/t/partitions/"

func lease(member string, extra ...any) map[string]any {
	m := map[string]any{"member": member}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i].(string)] = extra[i+1]
	}
	return m
}

func TestLeaseLifecycle(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 2)
	e.call("POST", "/v1/topics/t/records", appendBody(rec{value: "a", partition: ptr(0)}, rec{value: "b", partition: ptr(0)}, rec{value: "c", partition: ptr(0)})).want(t, 200)
	now := e.clock.Now()

	r := e.call("POST", gp+"0/lease", lease("m-1")).want(t, 200)
	if r.num("generation") != 1 || r.body["committed_offset"] != nil || r.num("lease_expires_at_ms") != now.Add(30*time.Second).UnixMilli() {
		t.Fatalf("first lease %s: want generation 1, committed_offset null, expiry now+30s", r.raw)
	}
	r = e.call("POST", gp+"0/lease", lease("m-1", "generation", 1, "ttl_ms", 1000)).want(t, 200)
	if r.num("generation") != 1 || r.num("lease_expires_at_ms") != now.Add(time.Second).UnixMilli() {
		t.Fatalf("renew %s: want generation 1, expiry now+1s", r.raw)
	}
	r = e.call("POST", gp+"0/lease", lease("m-2")).want(t, 409, "lease_held")
	if r.errField("owner") != "m-1" || r.errField("lease_expires_at_ms") != float64(now.Add(time.Second).UnixMilli()) {
		t.Fatalf("lease_held details %s", r.raw)
	}

	e.clock.Advance(2 * time.Second)
	r = e.call("POST", gp+"0/lease", lease("m-2", "ttl_ms", 300000)).want(t, 200)
	if r.num("generation") != 2 {
		t.Fatalf("takeover of an expired lease %s: want generation 2", r.raw)
	}
	e.call("POST", gp+"0/lease", lease("m-1", "generation", 1)).want(t, 409, "fenced")
	e.call("DELETE", gp+"0/lease", lease("m-1", "generation", 1)).want(t, 409, "fenced")
	e.call("POST", gp+"0/commit", lease("m-1", "generation", 1, "next_offset", 1)).want(t, 409, "fenced")

	commit := func(off int) *resp {
		return e.call("POST", gp+"0/commit", lease("m-2", "generation", 2, "next_offset", off))
	}
	r = commit(2).want(t, 200)
	if r.num("committed_offset") != 2 {
		t.Fatalf("commit %s", r.raw)
	}
	commit(2).want(t, 200)
	commit(1).want(t, 409, "stale_commit")
	r = commit(4).want(t, 422, "beyond_high_watermark")
	if r.errField("high_watermark") != float64(3) {
		t.Fatalf("422 details %s", r.raw)
	}
	commit(3).want(t, 200)
	e.call("POST", gp+"1/commit", lease("m-2", "generation", 2, "next_offset", 0)).want(t, 409, "fenced")

	r = e.call("GET", "/v1/groups/g", nil).want(t, 200)
	parts := r.body["partitions"].([]any)
	if r.body["group"] != "g" || len(parts) != 1 {
		t.Fatalf("describe %s", r.raw)
	}
	p0 := parts[0].(map[string]any)
	if p0["topic"] != "t" || p0["partition"] != float64(0) || p0["committed_offset"] != float64(3) || p0["high_watermark"] != float64(3) ||
		p0["lag_records"] != float64(0) || p0["owner"] != "m-2" || p0["generation"] != float64(2) || p0["lease_expires_at_ms"] == nil {
		t.Fatalf("describe partition %v", p0)
	}
	if v, ok := p0["seconds_to_data_loss"]; !ok || v != nil || p0["records_lost"] != float64(0) {
		t.Fatalf("caught up %v: want seconds_to_data_loss null, records_lost 0", p0)
	}

	e.call("DELETE", gp+"0/lease", lease("m-2", "generation", 2)).want(t, 204)
	r = e.call("GET", "/v1/groups/g", nil).want(t, 200)
	p0 = r.body["partitions"].([]any)[0].(map[string]any)
	if p0["owner"] != nil || p0["lease_expires_at_ms"] != nil || p0["generation"] != float64(2) {
		t.Fatalf("after release %v: want owner and expiry null, generation 2", p0)
	}
	r = e.call("POST", gp+"0/lease", lease("m-3")).want(t, 200)
	if r.num("generation") != 3 || r.num("committed_offset") != 3 {
		t.Fatalf("lease after commit %s: want generation 3, committed_offset 3", r.raw)
	}
	e.call("GET", "/v1/groups/unknown", nil).want(t, 404, "not_found")
	e.call("GET", "/v1/groups/bad%00", nil).want(t, 400, "invalid_request")
}

func TestDescribeLag(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 1)
	e.call("POST", gp+"0/lease", lease("m")).want(t, 200)
	e.call("POST", "/v1/topics/t/records", appendBody(rec{value: "a"}, rec{value: "b"})).want(t, 200)
	time.Sleep(20 * time.Millisecond)
	e.clock.Advance(5 * time.Second)
	r := e.call("GET", "/v1/groups/g", nil).want(t, 200)
	p0 := r.body["partitions"].([]any)[0].(map[string]any)
	if p0["lag_records"] != float64(2) || p0["committed_offset"] != nil {
		t.Fatalf("lag %v: want 2 records behind and nothing committed", p0)
	}
	if ls := p0["lag_seconds"].(float64); ls < 4.5 || ls > 60 {
		t.Fatalf("lag_seconds %v, want about 5", ls)
	}
	// The default retention (24h) less the oldest unread record's age.
	if s, ok := p0["seconds_to_data_loss"].(float64); !ok || s > 86400-4.5 || s < 86400-60 {
		t.Fatalf("seconds_to_data_loss %v, want about 86395", p0["seconds_to_data_loss"])
	}
}

func TestGroupValidation(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 1)
	for _, body := range []any{
		lease("m", "ttl_ms", 99),
		lease("m", "ttl_ms", 300001),
		lease("m", "ttl_ms", 0),
		lease("m", "ttl_ms", -5),
		lease("m", "generation", 0),
		lease(""),
		lease(strings.Repeat("m", 201)),
		lease("bad\u0001member"),
		lease("héllo"),
		map[string]any{"ttl_ms": 1000},
		lease("m", "owner", "x"),
		`{"member": 5}`,
		`{"member": "m"`,
		``,
	} {
		e.call("POST", gp+"0/lease", body).want(t, 400, "invalid_request")
	}
	e.call("POST", gp+"1/lease", lease("m")).want(t, 400, "invalid_request")
	e.call("POST", gp+"x/lease", lease("m")).want(t, 400, "invalid_request")
	e.call("POST", "/v1/groups/g%00/topics/t/partitions/0/lease", lease("m")).want(t, 400, "invalid_request")
	e.call("POST", "/v1/groups/g/topics/nope/partitions/0/lease", lease("m")).want(t, 404, "not_found")
	e.call("POST", "/v1/groups/g/topics/nope/partitions/0/commit", lease("m", "generation", 1, "next_offset", 0)).want(t, 404, "not_found")
	e.call("POST", gp+"0/lease", lease(strings.Repeat("m", 200), "ttl_ms", 100)).want(t, 200)

	for _, body := range []any{
		lease("m"),
		map[string]any{"generation": 1},
		lease("m", "generation", 1, "next_offset", 0, "metadata", "x"),
	} {
		e.call("DELETE", gp+"0/lease", body).want(t, 400, "invalid_request")
	}
	for _, body := range []any{
		lease("m", "generation", 1),
		lease("m", "next_offset", 0),
		map[string]any{"generation": 1, "next_offset": 0},
		lease("m", "generation", 1, "next_offset", -1),
		lease("m", "generation", 1, "next_offset", "0"),
	} {
		e.call("POST", gp+"0/commit", body).want(t, 400, "invalid_request")
	}
	pad := strings.Repeat("x", httpapi.MaxSmallBody)
	for _, route := range []struct{ method, path string }{
		{"POST", gp + "0/lease"}, {"DELETE", gp + "0/lease"}, {"POST", gp + "0/commit"}, {"POST", "/v1/groups/g/topics/t/reset"},
	} {
		e.call(route.method, route.path, `{"member": "`+pad+`"}`).want(t, 413, "payload_too_large")
	}
}

func TestReset(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 2)
	e.call("POST", "/v1/topics/t/records", appendBody(rec{value: "a", partition: ptr(0)}, rec{value: "b", partition: ptr(0)}, rec{value: "c", partition: ptr(1)})).want(t, 200)
	cut := time.Now()
	time.Sleep(5 * time.Millisecond)
	e.call("POST", "/v1/topics/t/records", appendBody(rec{value: "d", partition: ptr(0)})).want(t, 200)

	offsets := func(r *resp) string {
		var out []string
		for _, x := range r.body["partitions"].([]any) {
			m := x.(map[string]any)
			out = append(out, fmt.Sprintf("%v:%v", m["partition"], m["committed_offset"]))
		}
		return strings.Join(out, " ")
	}
	reset := func(to any) *resp {
		return e.call("POST", "/v1/groups/g/topics/t/reset", map[string]any{"to": to})
	}
	if got := offsets(reset("latest").want(t, 200)); got != "0:3 1:1" {
		t.Fatalf("latest: %s", got)
	}
	if got := offsets(reset("earliest").want(t, 200)); got != "0:0 1:0" {
		t.Fatalf("earliest: %s", got)
	}
	if got := offsets(reset(map[string]any{"offset": 1}).want(t, 200)); got != "0:1 1:1" {
		t.Fatalf("offset 1: %s", got)
	}
	if got := offsets(reset(map[string]any{"timestamp_ms": cut.UnixMilli() + 1}).want(t, 200)); got != "0:2 1:1" {
		t.Fatalf("timestamp: %s", got)
	}
	r := reset(map[string]any{"offset": 2}).want(t, 416, "offset_out_of_range")
	if r.errField("log_start_offset") != float64(0) || r.errField("high_watermark") != float64(1) {
		t.Fatalf("416 details %s, want partition 1's bounds [0, 1]", r.raw)
	}
	r = e.call("GET", "/v1/groups/g", nil).want(t, 200)
	if got := fmt.Sprint(r.body["partitions"].([]any)[0].(map[string]any)["committed_offset"]); got != "2" {
		t.Fatalf("a refused reset moved partition 0 to %s, want 2", got)
	}
	for _, to := range []any{"middle", "", nil, 5, map[string]any{}, map[string]any{"offset": -1},
		map[string]any{"offset": 1, "timestamp_ms": 1}, map[string]any{"offset": "1"}, map[string]any{"at": 1}, []any{"earliest"}} {
		reset(to).want(t, 400, "invalid_request")
	}
	e.call("POST", "/v1/groups/g/topics/t/reset", `{}`).want(t, 400, "invalid_request")
	e.call("POST", "/v1/groups/g/topics/nope/reset", map[string]any{"to": "earliest"}).want(t, 404, "not_found")

	e.call("POST", "/v1/groups/g/topics/t/partitions/1/lease", lease("m")).want(t, 200)
	reset("earliest").want(t, 409, "group_active")
	r = e.call("GET", "/v1/groups/g", nil).want(t, 200)
	if got := fmt.Sprint(r.body["partitions"].([]any)[0].(map[string]any)["committed_offset"]); got != "2" {
		t.Fatalf("a refused reset moved partition 0 to %s, want 2", got)
	}
}

func TestGroupsUnavailable(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 1)
	e.call("POST", "/v1/topics/t/records", appendBody(rec{value: "a"})).want(t, 200)
	e.call("POST", gp+"0/lease", lease("m")).want(t, 200)
	e.meta.down.Store(true)
	e.call("POST", gp+"0/lease", lease("m")).want(t, 503, "unavailable")
	e.call("POST", gp+"0/lease", lease("m", "generation", 1)).want(t, 503, "unavailable")
	e.call("DELETE", gp+"0/lease", lease("m", "generation", 1)).want(t, 503, "unavailable")
	e.call("POST", gp+"0/commit", lease("m", "generation", 1, "next_offset", 1)).want(t, 503, "unavailable")
	e.call("GET", "/v1/groups/g", nil).want(t, 503, "unavailable")
	e.call("POST", "/v1/groups/g/topics/t/reset", map[string]any{"to": "earliest"}).want(t, 503, "unavailable")
}
