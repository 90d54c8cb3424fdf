package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/httpapi"
	"github.com/stratalog/strata/pkg/store"
)

func TestGroupSettings(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 1)
	e.createTopic("dlq", 1)
	e.call("GET", "/v1/groups/g/settings", nil).want(t, 404, "not_found")
	r := e.call("PUT", "/v1/groups/g/settings", map[string]any{"reset_policy": "latest", "max_attempts": 3, "dead_letter_topic": "dlq"}).want(t, 200)
	if r.body["reset_policy"] != "latest" || r.num("max_attempts") != 3 || r.body["dead_letter_topic"] != "dlq" || r.body["group"] != "g" {
		t.Fatalf("put settings %s", r.raw)
	}
	created := r.num("created_at_ms")
	r = e.call("PUT", "/v1/groups/g/settings", map[string]any{"reset_policy": "fail", "max_attempts": 1}).want(t, 200)
	if r.body["reset_policy"] != "fail" || r.body["dead_letter_topic"] != nil || r.num("created_at_ms") != created {
		t.Fatalf("update settings %s", r.raw)
	}
	r = e.call("GET", "/v1/groups/g/settings", nil).want(t, 200)
	if r.body["reset_policy"] != "fail" || r.num("max_attempts") != 1 {
		t.Fatalf("get settings %s", r.raw)
	}
	// A group created by its first lease has the defaults.
	e.call("POST", gp+"0/lease", lease("m")).want(t, 200)
	for _, body := range []any{
		map[string]any{"reset_policy": "middle", "max_attempts": 1},
		map[string]any{"reset_policy": "latest", "max_attempts": 0},
		map[string]any{"reset_policy": "latest", "max_attempts": 101},
		map[string]any{"reset_policy": "latest"},
		map[string]any{"max_attempts": 2},
		map[string]any{"reset_policy": "latest", "max_attempts": 2, "dead_letter_topic": ""},
		map[string]any{"reset_policy": "latest", "max_attempts": 2, "dead_letter_topic": "missing"},
		map[string]any{"reset_policy": "latest", "max_attempts": 2, "dead_letter_topic": "bad/name"},
		map[string]any{"reset_policy": "latest", "max_attempts": 2, "extra": 1},
	} {
		e.call("PUT", "/v1/groups/g/settings", body).want(t, 400, "invalid_request")
	}
	e.call("PUT", "/v1/groups/g/settings", `{"reset_policy": "`+strings.Repeat("x", httpapi.MaxSmallBody)+`"}`).want(t, 413, "payload_too_large")
	e.meta.down.Store(true)
	e.call("GET", "/v1/groups/g/settings", nil).want(t, 503, "unavailable")
	e.call("PUT", "/v1/groups/g/settings", map[string]any{"reset_policy": "latest", "max_attempts": 2}).want(t, 503, "unavailable")
}

func TestListGroupsAndDeletePositions(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 2)
	e.call("POST", "/v1/topics/t/records", appendBody(rec{value: "a", partition: ptr(0)})).want(t, 200)
	r := e.call("GET", "/v1/groups", nil).want(t, 200)
	if fmt.Sprint(r.body["groups"]) != "[]" {
		t.Fatalf("no groups yet: %s", r.raw)
	}
	e.call("POST", "/v1/groups/b/topics/t/reset", map[string]any{"to": "latest"}).want(t, 200)
	l := e.call("POST", "/v1/groups/a/topics/t/partitions/0/lease", lease("m")).want(t, 200)
	e.call("POST", "/v1/groups/a/topics/t/partitions/0/commit", lease("m", "generation", l.num("generation"), "next_offset", 1)).want(t, 200)
	r = e.call("GET", "/v1/groups", nil).want(t, 200)
	if fmt.Sprint(r.body["groups"]) != "[a b]" {
		t.Fatalf("groups %s", r.raw)
	}

	e.call("DELETE", "/v1/groups/a/topics/t/commits", nil).want(t, 409, "group_active")
	e.call("DELETE", "/v1/groups/a/topics/t/partitions/0/lease", lease("m", "generation", l.num("generation"))).want(t, 204)
	e.call("DELETE", "/v1/groups/a/topics/t/commits", nil).want(t, 204)
	r = e.call("GET", "/v1/groups/a", nil).want(t, 200)
	for _, p := range r.body["partitions"].([]any) {
		if c := p.(map[string]any)["committed_offset"]; c != nil {
			t.Fatalf("positions survived deletion: %s", r.raw)
		}
	}
	e.call("DELETE", "/v1/groups/nope/topics/t/commits", nil).want(t, 404, "not_found")
	e.call("DELETE", "/v1/groups/a/topics/bad..name!/commits", nil).want(t, 400, "invalid_request")
	e.meta.down.Store(true)
	e.call("GET", "/v1/groups", nil).want(t, 503, "unavailable")
	e.call("DELETE", "/v1/groups/a/topics/t/commits", nil).want(t, 503, "unavailable")
}

// TestDeleteGroup: a group is deleted only when no lease of it is live; it then leaves
// the list and describe, and a former owner cannot commit into it.
func TestDeleteGroup(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 2)
	l := e.call("POST", "/v1/groups/a/topics/t/partitions/0/lease", lease("m")).want(t, 200)
	e.call("POST", "/v1/groups/b/topics/t/reset", map[string]any{"to": "latest"}).want(t, 200)
	e.call("DELETE", "/v1/groups/a", nil).want(t, 409, "group_active")
	e.call("GET", "/v1/groups/a", nil).want(t, 200)
	e.call("DELETE", "/v1/groups/a/topics/t/partitions/0/lease", lease("m", "generation", l.num("generation"))).want(t, 204)
	e.call("DELETE", "/v1/groups/a", nil).want(t, 204)
	e.call("GET", "/v1/groups/a", nil).want(t, 404, "not_found")
	r := e.call("GET", "/v1/groups", nil).want(t, 200)
	if fmt.Sprint(r.body["groups"]) != "[b]" {
		t.Fatalf("groups after deleting a: %s", r.raw)
	}
	e.call("POST", "/v1/groups/a/topics/t/partitions/0/commit", lease("m", "generation", l.num("generation"), "next_offset", 0)).want(t, 409, "fenced")
	e.call("DELETE", "/v1/groups/a", nil).want(t, 404, "not_found")
	e.call("DELETE", "/v1/groups/bad%00name", nil).want(t, 400, "invalid_request")
	e.meta.down.Store(true)
	e.call("DELETE", "/v1/groups/b", nil).want(t, 503, "unavailable")
}

func TestResetPartitions(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 3)
	e.call("POST", "/v1/topics/t/records", appendBody(rec{value: "a", partition: ptr(0)}, rec{value: "b", partition: ptr(0)}, rec{value: "c", partition: ptr(1)})).want(t, 200)
	reset := func(body map[string]any) *resp { return e.call("POST", "/v1/groups/g/topics/t/reset", body) }
	reset(map[string]any{"to": "latest"}).want(t, 200)
	r := reset(map[string]any{"to": map[string]any{"offset": 1}, "partitions": []int{0}}).want(t, 200)
	if fmt.Sprint(r.body["partitions"]) != "[map[committed_offset:1 partition:0]]" {
		t.Fatalf("reset of partition 0: %s", r.raw)
	}
	r = e.call("GET", "/v1/groups/g", nil).want(t, 200)
	var got []string
	for _, p := range r.body["partitions"].([]any) {
		m := p.(map[string]any)
		got = append(got, fmt.Sprintf("%v:%v", m["partition"], m["committed_offset"]))
	}
	if strings.Join(got, " ") != "0:1 1:1 2:0" {
		t.Fatalf("after resetting only partition 0: %v", got)
	}
	// Offset 2 is out of range on partition 1 (HW 1) but fine on 0: a per-partition reset
	// reaches it; resetting both is refused and changes nothing.
	reset(map[string]any{"to": map[string]any{"offset": 2}, "partitions": []int{0, 1}}).want(t, 416, "offset_out_of_range")
	reset(map[string]any{"to": map[string]any{"offset": 2}, "partitions": []int{0}}).want(t, 200)
	for _, ps := range [][]int{{}, {3}, {-1}, {0, 0}} {
		reset(map[string]any{"to": "earliest", "partitions": ps}).want(t, 400, "invalid_request")
	}
}

// The group administration operations of the wrapped store, failing while it is down.
func (f *faultyMeta) PutGroupConfig(ctx context.Context, cfg store.GroupConfig) (store.GroupConfig, error) {
	if err := f.fail(); err != nil {
		return store.GroupConfig{}, err
	}
	return f.MetaStore.(store.GroupAdminStore).PutGroupConfig(ctx, cfg)
}

func (f *faultyMeta) ListGroups(ctx context.Context) ([]string, error) {
	if err := f.fail(); err != nil {
		return nil, err
	}
	return f.MetaStore.(store.GroupAdminStore).ListGroups(ctx)
}

func (f *faultyMeta) DeleteCommits(ctx context.Context, g, topic string, now time.Time) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.MetaStore.(store.GroupAdminStore).DeleteCommits(ctx, g, topic, now)
}

func (f *faultyMeta) DeleteGroup(ctx context.Context, g string, now time.Time) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.MetaStore.(store.GroupAdminStore).DeleteGroup(ctx, g, now)
}

func TestGroupAdminAuth(t *testing.T) {
	e := authEnv(t)
	settings := map[string]any{"reset_policy": "latest", "max_attempts": 2}
	e.call("GET", "/v1/groups", nil).want(t, 401, "unauthorized")
	e.call("GET", "/v1/groups/billing/settings", nil).want(t, 401, "unauthorized")
	e.call("PUT", "/v1/groups/billing/settings", settings).want(t, 401, "unauthorized")
	e.call("DELETE", "/v1/groups/billing/topics/orders/commits", nil).want(t, 401, "unauthorized")
	e.call("GET", "/v1/groups/billing/settings", nil, bearer("none-token")...).want(t, 403, "forbidden")
	e.call("PUT", "/v1/groups/billing/settings", settings, bearer("none-token")...).want(t, 403, "forbidden")
	e.call("DELETE", "/v1/groups/billing/topics/orders/commits", nil, bearer("consume-only")...).want(t, 403, "forbidden")
	e.call("PUT", "/v1/groups/billing/settings", settings, bearer("orders-token")...).want(t, 200)
	// A consumer reads its group's settings when a run starts: consume admits it.
	e.call("GET", "/v1/groups/billing/settings", nil, bearer("consume-only")...).want(t, 200)
	e.call("PUT", "/v1/groups/other/settings", settings, bearer("admin-token")...).want(t, 200)
	r := e.call("GET", "/v1/groups", nil, bearer("orders-token")...).want(t, 200)
	if fmt.Sprint(r.body["groups"]) != "[billing]" {
		t.Fatalf("orders-token sees groups %s, want only billing", r.raw)
	}
	e.call("GET", "/v1/groups/billing/settings", nil, bearer("orders-token")...).want(t, 200)
	e.call("GET", "/v1/groups/bad%00name/settings", nil, bearer("admin-token")...).want(t, 400, "invalid_request")
	e.call("DELETE", "/v1/groups/billing/topics/orders/commits", nil, bearer("orders-token")...).want(t, 204)
}

// TestOffsetsForTime: the server resolves a time to each partition's first offset
// appended at or after it (the high watermark when none), so a reader from a time
// downloads nothing before it.
func TestOffsetsForTime(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 2)
	e.call("POST", "/v1/topics/t/records", appendBody(rec{value: "a", partition: ptr(0)}, rec{value: "b", partition: ptr(0)})).want(t, 200)
	r := e.call("GET", "/v1/topics/t/offsets?timestamp_ms=0", nil).want(t, 200)
	if fmt.Sprint(r.body["partitions"]) != "[map[offset:0 partition:0] map[offset:0 partition:1]]" {
		t.Fatalf("offsets at 0: %s", r.raw)
	}
	future := time.Now().Add(time.Hour).UnixMilli()
	r = e.call("GET", fmt.Sprintf("/v1/topics/t/offsets?timestamp_ms=%d", future), nil).want(t, 200)
	if fmt.Sprint(r.body["partitions"]) != "[map[offset:2 partition:0] map[offset:0 partition:1]]" {
		t.Fatalf("offsets in an hour: %s", r.raw)
	}
	e.call("GET", "/v1/topics/t/offsets", nil).want(t, 400, "invalid_request")
	e.call("GET", "/v1/topics/t/offsets?timestamp_ms=x", nil).want(t, 400, "invalid_request")
	e.call("GET", "/v1/topics/t/offsets?timestamp_ms=1&x=1", nil).want(t, 400, "invalid_request")
	e.call("GET", "/v1/topics/nope/offsets?timestamp_ms=1", nil).want(t, 404, "not_found")
	e.meta.down.Store(true)
	e.call("GET", "/v1/topics/t/offsets?timestamp_ms=1", nil).want(t, 503, "unavailable")

	a := authEnv(t)
	a.call("GET", "/v1/topics/orders/offsets?timestamp_ms=1", nil, bearer("none-token")...).want(t, 403, "forbidden")
	a.call("GET", "/v1/topics/orders/offsets?timestamp_ms=1", nil, bearer("orders-token")...).want(t, 200)
	a.call("DELETE", "/v1/groups/billing", nil, bearer("none-token")...).want(t, 403, "forbidden")
}
