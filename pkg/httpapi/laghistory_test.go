package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// The lag history operations of the wrapped store, failing while it is down.
func (f *faultyMeta) RecordLag(ctx context.Context, g string, at time.Time, lags []store.PartitionLag, keep int) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.MetaStore.(store.LagHistoryStore).RecordLag(ctx, g, at, lags, keep)
}

func (f *faultyMeta) LagHistory(ctx context.Context, g string) ([]store.LagSeries, error) {
	if err := f.fail(); err != nil {
		return nil, err
	}
	return f.MetaStore.(store.LagHistoryStore).LagHistory(ctx, g)
}

func (f *faultyMeta) DeleteLagHistory(ctx context.Context, g string) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.MetaStore.(store.LagHistoryStore).DeleteLagHistory(ctx, g)
}

// sampleLag runs one sampling pass over e's store, as the scheduled pass does.
func sampleLag(t *testing.T, e *env) {
	t.Helper()
	if _, err := group.New(e.meta, e.log, e.clock.Now).SampleLag(context.Background()); err != nil {
		t.Fatalf("SampleLag: %v", err)
	}
}

// TestLagHistoryRoute: the route answers the samples the passes stored, oldest first,
// in records and seconds, only on topics the caller may describe; an unknown group is
// 404, and the rights are describe's.
func TestLagHistoryRoute(t *testing.T) {
	e := authEnv(t)
	admin := bearer("admin-token")
	for _, p := range []string{"orders", "payments"} {
		e.call("POST", "/v1/groups/billing/topics/"+p+"/partitions/0/lease", lease("m"), admin...).want(t, 200)
	}
	e.clock.Advance(3 * time.Second)
	sampleLag(t, e)
	e.call("POST", "/v1/topics/orders/records", appendBody(rec{value: "y"}), admin...).want(t, 200)
	e.clock.Advance(2 * time.Second)
	sampleLag(t, e)

	get := func(token string) *resp {
		return e.call("GET", "/v1/groups/billing/lag-history", nil, bearer(token)...)
	}
	var all wire.LagHistory
	if err := json.Unmarshal(get("admin-token").want(t, 200).raw, &all); err != nil {
		t.Fatal(err)
	}
	if all.Group != "billing" || len(all.Partitions) != 2 || all.Partitions[0].Topic != "orders" || all.Partitions[1].Topic != "payments" {
		t.Fatalf("admin sees %+v, want orders/0 and payments/0", all)
	}
	s := all.Partitions[0].Samples
	if len(s) != 2 || s[0].LagRecords != 1 || s[1].LagRecords != 2 || s[1].TimestampMs-s[0].TimestampMs != 2000 || s[1].LagSeconds < s[0].LagSeconds || s[0].LagSeconds <= 0 {
		t.Fatalf("orders/0 samples = %+v, want lag 1 then 2 records, 2 s apart, seconds growing", s)
	}
	var mine wire.LagHistory
	if err := json.Unmarshal(get("orders-token").want(t, 200).raw, &mine); err != nil {
		t.Fatal(err)
	}
	if len(mine.Partitions) != 1 || mine.Partitions[0].Topic != "orders" {
		t.Fatalf("orders-token sees %+v, want orders only (payments is not its to describe)", mine)
	}
	e.call("GET", "/v1/groups/billing/lag-history", nil).want(t, 401, "unauthorized")
	get("consume-only").want(t, 403, "forbidden")
	e.call("GET", "/v1/groups/nosuch/lag-history", nil, admin...).want(t, 404, "not_found")
	e.call("GET", "/v1/groups/bad%00name/lag-history", nil, admin...).want(t, 400, "invalid_request")
	e.call("GET", "/v1/groups/billing/lag-history?since=1", nil, admin...).want(t, 400, "invalid_request")
	e.call("POST", "/v1/groups/billing/lag-history", nil, admin...).want(t, 405, "method_not_allowed")
	e.call("GET", "/v1/groups/billing/members", nil, bearer("consume-only")...).want(t, 403, "forbidden")
	e.call("GET", "/v1/groups/billing/members", nil, admin...).want(t, 200)
	e.meta.down.Store(true)
	get("admin-token").want(t, 503, "unavailable")
	e.call("GET", "/v1/groups/billing/members", nil, admin...).want(t, 503, "unavailable")
}

// FuzzLagHistoryRoute: any group segment and query get a documented answer from the lag
// history and member list routes, never a panic or a 5xx, and reading changes nothing.
func FuzzLagHistoryRoute(f *testing.F) {
	e := newEnv(f)
	e.createTopic("t", 2)
	e.call("POST", gp+"0/lease", lease("m")).want(f, 200)
	for _, seed := range []string{"g", "nosuch", "bad..name", "%zz", "g?x=1", "g?", strings.Repeat("a", 300), "g/extra", "%2e%2e"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seg string) {
		if strings.ContainsAny(seg, " #\r\n\x00") {
			return
		}
		before := groupState(t, e, "g")
		target := "/v1/groups/" + seg
		q := ""
		if i := strings.IndexByte(seg, '?'); i >= 0 {
			target, q = "/v1/groups/"+seg[:i], seg[i:]
		}
		for _, route := range []string{"/lag-history", "/members"} {
			if _, err := url.ParseRequestURI(target + route + q); err != nil {
				return // no client can send it (httptest.NewRequest would panic)
			}
			req, w := serveFuzz(e, "GET", target+route+q, nil)
			checkFuzzAnswer(t, req, w)
			if w.Code != http.StatusOK && w.Code < 400 {
				t.Fatalf("answered %d", w.Code)
			}
		}
		if after := groupState(t, e, "g"); after != before {
			t.Fatalf("reading the lag history changed the group:\n%s\n->\n%s", before, after)
		}
	})
}

// TestListMembersRoute: the live members, heartbeating ones holding partitions or not,
// ordered by ID; a member that left is gone; an unknown group is 404.
func TestListMembersRoute(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 1)
	e.call("POST", "/v1/groups/g/topics/t/heartbeat", heartbeat("m-b")).want(t, 200)
	e.call("POST", "/v1/groups/g/topics/t/heartbeat", heartbeat("m-a")).want(t, 200)
	e.call("POST", "/v1/groups/g/topics/t/heartbeat", heartbeat("m-c")).want(t, 200)
	e.call("DELETE", "/v1/groups/g/members", map[string]any{"member": "m-c"}).want(t, 204)
	var got wire.MemberList
	if err := json.Unmarshal(e.call("GET", "/v1/groups/g/members", nil).want(t, 200).raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.Group != "g" || len(got.Members) != 2 || got.Members[0].Member != "m-a" || got.Members[1].Member != "m-b" ||
		got.Members[0].ExpiresAtMs <= e.clock.Now().UnixMilli() {
		t.Fatalf("members = %+v, want m-a and m-b, live", got)
	}
	e.call("GET", "/v1/groups/nosuch/members", nil).want(t, 404, "not_found")
	e.call("GET", "/v1/groups/bad%00name/members", nil).want(t, 400, "invalid_request")
}
