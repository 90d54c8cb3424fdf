package httpapi_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/httpapi"
)

// TestParkedRoutes: the parked list and release answer as documented — rights, bad
// bodies, unknown keys, an unavailable store — and a refused release changes nothing.
func TestParkedRoutes(t *testing.T) {
	e := authEnv(t)
	admin := bearer("admin-token")
	e.call("PUT", "/v1/groups/billing/settings", map[string]any{"reset_policy": "earliest", "max_attempts": 1, "on_failure": "retry"}, admin...).want(t, 400, "invalid_request")
	// Parking appends to billing.parked: orders-svc may not append there.
	e.call("PUT", "/v1/groups/billing/settings", map[string]any{"reset_policy": "earliest", "max_attempts": 1, "on_failure": "park"}, bearer("orders-token")...).want(t, 403, "forbidden")
	r := e.call("PUT", "/v1/groups/billing/settings", map[string]any{"reset_policy": "earliest", "max_attempts": 1, "on_failure": "park"}, admin...).want(t, 200)
	if r.body["on_failure"] != "park" {
		t.Fatalf("settings %s", r.raw)
	}
	l := e.call("POST", "/v1/groups/billing/topics/orders/partitions/0/lease", lease("m", "ttl_ms", 300000), admin...).want(t, 200)
	coord := group.New(e.meta, e.log, nil)
	if err := coord.PutParked(context.Background(), group.Parked{Group: "billing", Topic: "orders", Key: []byte("order-1"),
		Records: 2, LastOffset: 1, Error: "declined", ParkedAt: time.UnixMilli(5), ParkOffset: -1}, "m", int64(l.num("generation"))); err != nil {
		t.Fatal(err)
	}
	k := base64.StdEncoding.EncodeToString([]byte("order-1"))

	r = e.call("GET", "/v1/groups/billing/parked", nil, admin...).want(t, 200)
	if !strings.Contains(string(r.raw), `"key":"`+k+`"`) || !strings.Contains(string(r.raw), `"records":2`) || strings.Contains(string(r.raw), "release_requested") {
		t.Fatalf("parked %s", r.raw)
	}
	e.call("GET", "/v1/groups/billing/parked", nil, bearer("consume-only")...).want(t, 403, "forbidden")
	e.call("GET", "/v1/groups/nope/parked", nil, admin...).want(t, 404, "not_found")

	release := func(body any, hdr []string) *resp {
		return e.call("POST", "/v1/groups/billing/parked/release", body, hdr...)
	}
	release(map[string]any{"topic": "orders", "key": k}, bearer("prefix-token")).want(t, 403, "forbidden")
	release(map[string]any{"topic": "orders"}, admin).want(t, 400, "invalid_request")
	release(map[string]any{"topic": "orders", "key": "%%"}, admin).want(t, 400, "invalid_request")
	release(map[string]any{"topic": "orders", "key": base64.StdEncoding.EncodeToString([]byte("order-2"))}, admin).want(t, 404, "not_found")
	release(map[string]any{"topic": "orders", "key": strings.Repeat("A", 70<<10)}, admin).want(t, 413)
	e.meta.down.Store(true)
	e.call("GET", "/v1/groups/billing/parked", nil, admin...).want(t, 503, "unavailable")
	release(map[string]any{"topic": "orders", "key": k}, admin).want(t, 503, "unavailable")
	e.meta.down.Store(false)
	if r := e.call("GET", "/v1/groups/billing/parked", nil, admin...).want(t, 200); strings.Contains(string(r.raw), "release_requested") {
		t.Fatalf("a refused release changed the row: %s", r.raw)
	}
	r = release(map[string]any{"topic": "orders", "key": k}, admin).want(t, 200)
	if !strings.Contains(string(r.raw), `"release_requested_at_ms":`) {
		t.Fatalf("release %s", r.raw)
	}
}

// TestParkingTopicCreateNeedsCreateRight: choosing on_failure "park" creates the
// group's parking topic when it is missing, and creating a topic needs create on it:
// a principal with only append there is refused (403 naming the create right), with
// nothing created and the settings unchanged; once the topic exists append suffices.
func TestParkingTopicCreateNeedsCreateRight(t *testing.T) {
	a, err := httpapi.ParseAuth([]byte(`{"principals": {
  "admin-token00000000000": {"name": "admin", "allow": [
    {"resource": "topic:*", "ops": ["create", "describe", "append", "read"]},
    {"resource": "group:*", "ops": ["consume", "describe", "reset"]}]},
  "appender-token00000000": {"name": "appender", "allow": [
    {"resource": "topic:billing.parked", "ops": ["append"]},
    {"resource": "group:billing", "ops": ["reset", "describe"]}]},
  "creator-token000000000": {"name": "creator", "allow": [
    {"resource": "topic:refunds.parked", "ops": ["create", "append"]},
    {"resource": "group:refunds", "ops": ["reset"]}]}
}}`))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, withAuth(a))
	admin := bearer("admin-token")
	park := map[string]any{"reset_policy": "earliest", "max_attempts": 1, "on_failure": "park"}
	r := e.call("PUT", "/v1/groups/billing/settings", park, bearer("appender-token")...).want(t, 403, "forbidden")
	if !strings.Contains(string(r.raw), "create topic:billing.parked") {
		t.Fatalf("the refusal does not name the missing right: %s", r.raw)
	}
	e.call("GET", "/v1/topics/billing.parked", nil, admin...).want(t, 404, "not_found")
	e.call("GET", "/v1/groups/billing/settings", nil, admin...).want(t, 404, "not_found")

	e.call("PUT", "/v1/groups/refunds/settings", park, bearer("creator-token")...).want(t, 200)
	e.call("GET", "/v1/topics/refunds.parked", nil, admin...).want(t, 200)

	e.call("POST", "/v1/topics", map[string]any{"name": "billing.parked", "partitions": 1}, admin...).want(t, 201)
	e.call("PUT", "/v1/groups/billing/settings", park, bearer("appender-token")...).want(t, 200)
}

// TestParkedListSaysWhatExpired: GET …/parked marks a key whose first parked record
// the parking topic's retention took ("expired": true), so an operator sees before a
// release that some of its records are gone; a key whose records are all there is not
// marked.
func TestParkedListSaysWhatExpired(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.call("POST", "/v1/topics", map[string]any{"name": "orders", "partitions": 1}).want(t, 201)
	e.call("PUT", "/v1/groups/billing/settings", map[string]any{"reset_policy": "earliest", "max_attempts": 1, "on_failure": "park"}).want(t, 200)
	p0 := 0
	for range 3 {
		e.call("POST", "/v1/topics/billing.parked/records", appendBody(rec{key: "k", value: "x", partition: &p0})).want(t, 200)
	}
	l := e.call("POST", "/v1/groups/billing/topics/orders/partitions/0/lease", lease("m", "ttl_ms", 300000)).want(t, 200)
	coord := group.New(e.meta, e.log, nil)
	for _, row := range []group.Parked{
		{Group: "billing", Topic: "orders", Key: []byte("gone"), Records: 2, LastOffset: 1, Error: "x", ParkedAt: time.UnixMilli(5), ParkOffset: 0},
		{Group: "billing", Topic: "orders", Key: []byte("kept"), Records: 1, FirstOffset: 4, LastOffset: 4, Error: "x", ParkedAt: time.UnixMilli(5), ParkOffset: 2},
	} {
		if err := coord.PutParked(ctx, row, "m", int64(l.num("generation"))); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.meta.AdvanceLogStart(ctx, e.tid("billing.parked"), 0, 2); err != nil {
		t.Fatal(err)
	}
	r := e.call("GET", "/v1/groups/billing/parked", nil).want(t, 200)
	gone, kept := base64.StdEncoding.EncodeToString([]byte("gone")), base64.StdEncoding.EncodeToString([]byte("kept"))
	raw := string(r.raw)
	if !strings.Contains(raw, `"key":"`+gone+`","first_offset":0,"records":2,"error":"x","parked_at_ms":5,"expired":true`) ||
		!strings.Contains(raw, `"key":"`+kept+`","first_offset":4,"records":1,"error":"x","parked_at_ms":5}`) {
		t.Fatalf("parked %s: want %q expired and %q not", raw, "gone", "kept")
	}
}
