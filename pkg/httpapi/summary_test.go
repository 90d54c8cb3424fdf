package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stratalog/strata/pkg/httpapi"
	"github.com/stratalog/strata/pkg/wire"
)

// TestSummary: GET /v1/summary answers every topic and group the caller may describe in
// one call — partitions with their records, the group's state, members with what they
// hold, lag, parked keys and settings — and, with auth, leaves out what the caller may
// not describe and says what it may do on each.
func TestSummary(t *testing.T) {
	a, err := httpapi.ParseAuth([]byte(`{"principals": {
		"admin-token-0123456789a": {"name": "admin", "allow": [{"resource": "topic:*", "ops": ["describe", "read", "create", "append", "alter", "delete"]},
			{"resource": "group:*", "ops": ["describe", "consume", "reset", "delete"]}]},
		"viewer-token-012345678": {"name": "viewer", "allow": [{"resource": "topic:orders", "ops": ["describe"]}, {"resource": "group:bill*", "ops": ["describe"]}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, withAuth(a))
	admin := []string{"Authorization", "Bearer admin-token-0123456789a"}
	for _, name := range []string{"orders", "audit"} {
		if r := e.call("POST", "/v1/topics", map[string]any{"name": name, "partitions": 2}, admin...); r.status != http.StatusCreated {
			t.Fatalf("create %s: %d %s", name, r.status, r.raw)
		}
	}
	recs := []map[string]any{{"value": "YQ==", "partition": 0}, {"value": "Yg==", "partition": 0}, {"value": "Yw==", "partition": 1}}
	if r := e.call("POST", "/v1/topics/orders/records", map[string]any{"records": recs}, admin...); r.status != http.StatusOK {
		t.Fatalf("append: %d %s", r.status, r.raw)
	}
	for _, g := range []string{"billing", "shipping"} {
		if r := e.call("POST", "/v1/groups/"+g+"/topics/orders/partitions/0/lease", map[string]any{"member": "m-1", "ttl_ms": 30000}, admin...); r.status != http.StatusOK {
			t.Fatalf("lease: %d %s", r.status, r.raw)
		}
	}
	if r := e.call("POST", "/v1/groups/billing/topics/orders/partitions/0/commit", map[string]any{"member": "m-1", "generation": 1, "next_offset": 1}, admin...); r.status != http.StatusOK {
		t.Fatalf("commit: %d %s", r.status, r.raw)
	}

	for _, tc := range []struct {
		token       []string
		topics      []string
		groups      []string
		topicOps    string
		groupOps    string
		principal   string
		wantRecords int64
	}{
		{admin, []string{"audit", "orders"}, []string{"billing", "shipping"}, "[describe read append alter delete create]", "[describe consume reset delete]", "admin", 3},
		{[]string{"Authorization", "Bearer viewer-token-012345678"}, []string{"orders"}, []string{"billing"}, "[describe]", "[describe]", "viewer", 3},
	} {
		r := e.call("GET", "/v1/summary", nil, tc.token...)
		if r.status != http.StatusOK {
			t.Fatalf("summary: %d %s", r.status, r.raw)
		}
		var s wire.Summary
		if err := json.Unmarshal(r.raw, &s); err != nil {
			t.Fatal(err)
		}
		if s.Principal.Name != tc.principal || s.Principal.Open || len(s.Principal.Grants) != 2 {
			t.Errorf("principal %+v, want %s with its two grants", s.Principal, tc.principal)
		}
		var topics, groups []string
		records := map[string]int64{}
		for _, x := range s.Topics {
			topics = append(topics, x.Name)
			for _, p := range x.PartitionInfo {
				records[x.Name] += p.Records
			}
			if x.Name == "orders" && fmt.Sprint(x.Allowed) != tc.topicOps {
				t.Errorf("%s: ops on orders %v, want %s", tc.principal, x.Allowed, tc.topicOps)
			}
		}
		for _, g := range s.Groups {
			groups = append(groups, g.Group)
			if fmt.Sprint(g.Allowed) != tc.groupOps {
				t.Errorf("%s: ops on %s %v, want %s", tc.principal, g.Group, g.Allowed, tc.groupOps)
			}
			if g.Group != "billing" {
				continue
			}
			// m-1 holds orders/0 with a live lease; orders/0 is the one partition the
			// group has, so the group is stable; it committed 1 of 2 records there.
			if g.State != wire.GroupStable || len(g.Members) != 1 || g.Members[0].Member != "m-1" ||
				fmt.Sprint(g.Members[0].Holds) != "[{orders 0}]" || len(g.Partitions) != 1 || *g.Partitions[0].LagRecords != 1 ||
				g.Settings == nil || g.Settings.ResetPolicy == "" {
				t.Errorf("%s: billing %+v, want stable, m-1 holding orders/0 with lag 1 and its settings", tc.principal, g)
			}
		}
		if fmt.Sprint(topics) != fmt.Sprint(tc.topics) || fmt.Sprint(groups) != fmt.Sprint(tc.groups) {
			t.Errorf("%s sees topics %v and groups %v, want %v and %v", tc.principal, topics, groups, tc.topics, tc.groups)
		}
		if records["orders"] != tc.wantRecords {
			t.Errorf("%s: orders holds %d records, want %d", tc.principal, records["orders"], tc.wantRecords)
		}
	}
	if r := e.call("GET", "/v1/summary", nil); r.status != http.StatusUnauthorized {
		t.Errorf("summary without a token: %d, want 401", r.status)
	}
	if r := e.call("GET", "/v1/summary?x=1", nil, admin...); r.status != http.StatusBadRequest {
		t.Errorf("summary with a query parameter: %d, want 400", r.status)
	}
	// Released, the group has no live member: empty.
	if r := e.call("DELETE", "/v1/groups/shipping/topics/orders/partitions/0/lease", map[string]any{"member": "m-1", "generation": 1}, admin...); r.status != http.StatusNoContent {
		t.Fatalf("release: %d %s", r.status, r.raw)
	}
	var s wire.Summary
	if err := json.Unmarshal(e.call("GET", "/v1/summary", nil, admin...).raw, &s); err != nil {
		t.Fatal(err)
	}
	for _, g := range s.Groups {
		if g.Group == "shipping" && (g.State != wire.GroupEmpty || len(g.Members) != 0) {
			t.Errorf("shipping after its release: %+v, want empty", g)
		}
	}
}

// TestKeySearch: a search returns the records of one key within the offsets it scanned,
// says where to go on, and refuses bad input with 400.
func TestKeySearch(t *testing.T) {
	e := newEnv(t)
	if r := e.call("POST", "/v1/topics", map[string]any{"name": "orders", "partitions": 1}); r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.raw)
	}
	var recs []map[string]any
	for i := range 30 {
		key := "YQ==" // "a"
		if i%3 != 0 {
			key = "Yg==" // "b"
		}
		recs = append(recs, map[string]any{"key": key, "value": "dg==", "partition": 0})
	}
	recs = append(recs, map[string]any{"value": "dg==", "partition": 0}) // no key
	if r := e.call("POST", "/v1/topics/orders/records", map[string]any{"records": recs}); r.status != http.StatusOK {
		t.Fatalf("append: %d %s", r.status, r.raw)
	}
	for _, tc := range []struct {
		query    string
		offsets  string
		next     int64
		complete bool
	}{
		{"key=YQ%3D%3D", "[0 3 6 9 12 15 18 21 24 27]", 31, true},
		{"key=YQ%3D%3D&offset=10&max_scan=10", "[12 15 18]", 20, false},
		{"key=YQ%3D%3D&max_records=2", "[0 3]", 4, false},
		{"key=Yw%3D%3D", "[]", 31, true},
		{"key=YQ%3D%3D&offset=31", "[]", 31, true},
		{"key=YQ%3D%3D&offset=999", "[]", 31, true},
	} {
		r := e.call("GET", "/v1/topics/orders/partitions/0/search?"+tc.query, nil)
		if r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", tc.query, r.status, r.raw)
		}
		var s wire.KeySearch
		if err := json.Unmarshal(r.raw, &s); err != nil {
			t.Fatal(err)
		}
		var offsets []int64
		for _, x := range s.Records {
			offsets = append(offsets, x.Offset)
			if x.Key == nil || *x.Key != "YQ==" {
				t.Errorf("%s: record %d has key %v", tc.query, x.Offset, x.Key)
			}
		}
		if fmt.Sprint(offsets) != tc.offsets && !(tc.offsets == "[]" && offsets == nil) || s.NextOffset != tc.next || s.Complete != tc.complete {
			t.Errorf("%s: offsets %v next %d complete %v, want %s, %d, %v", tc.query, offsets, s.NextOffset, s.Complete, tc.offsets, tc.next, tc.complete)
		}
	}
	for _, q := range []string{"", "key=%%", "key=YQ", "key=YQ%3D%3D&max_scan=0", "key=YQ%3D%3D&max_scan=100001", "key=YQ%3D%3D&max_records=501", "key=YQ%3D%3D&offset=-1", "key=YQ%3D%3D&key=YQ%3D%3D", "key=YQ%3D%3D&x=1"} {
		if r := e.call("GET", "/v1/topics/orders/partitions/0/search?"+q, nil); r.status != http.StatusBadRequest {
			t.Errorf("search?%s: %d, want 400", q, r.status)
		}
	}
	if r := e.call("GET", "/v1/topics/orders/partitions/1/search?key=YQ%3D%3D", nil); r.status != http.StatusBadRequest {
		t.Errorf("search of a partition out of range: %d, want 400", r.status)
	}
	if r := e.call("GET", "/v1/topics/nope/partitions/0/search?key=YQ%3D%3D", nil); r.status != http.StatusNotFound {
		t.Errorf("search of an unknown topic: %d, want 404", r.status)
	}
	// With the metadata store down, a search is a retryable 503.
	e.meta.down.Store(true)
	if r := e.call("GET", "/v1/topics/orders/partitions/0/search?key=YQ%3D%3D", nil); r.status != http.StatusServiceUnavailable {
		t.Errorf("search with the store down: %d, want 503", r.status)
	}
}
