package httpapi_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/group"
)

// parkedState is the group's parked rows as text, for before/after comparisons.
func parkedState(t *testing.T, c *group.Coordinator, g string) string {
	t.Helper()
	rows, err := c.ListParked(context.Background(), g)
	if err != nil {
		t.Fatalf("list parked of %q: %v", g, err)
	}
	var b strings.Builder
	for _, p := range rows {
		fmt.Fprintf(&b, "%s/%d %q first=%d n=%d release=%d\n", p.Topic, p.Partition, p.Key, p.FirstOffset, p.Records, p.ReleaseRequested.UnixNano())
	}
	return b.String()
}

// FuzzParkedReleaseRequest: any body gets a documented answer and never a panic; a
// refused one changes no parked row, an accepted one names a parked key.
func FuzzParkedReleaseRequest(f *testing.F) {
	e := newEnv(f)
	e.createTopic("t", 1)
	e.call("PUT", "/v1/groups/g/settings", map[string]any{"reset_policy": "earliest", "max_attempts": 1, "on_failure": "park"}).want(f, 200)
	r := e.call("POST", gp+"0/lease", lease("m", "ttl_ms", 300000)).want(f, 200)
	coord := group.New(e.meta, e.log, nil)
	if err := coord.PutParked(context.Background(), group.Parked{Group: "g", Topic: "t", Key: []byte("o-1"), FirstOffset: 0, LastOffset: 0,
		Records: 1, Error: "x", ParkedAt: time.UnixMilli(1), ParkOffset: -1}, "m", int64(r.num("generation"))); err != nil {
		f.Fatal(err)
	}
	k := base64.StdEncoding.EncodeToString([]byte("o-1"))
	for _, seed := range []string{
		`{"topic": "t", "key": "` + k + `"}`,
		`{"topic": "t", "key": ""}`,
		`{"topic": "t", "key": "%%"}`,
		`{"topic": "t"}`,
		`{"key": "` + k + `"}`,
		`{"topic": "t", "key": null}`,
		`{"topic": "nope", "key": "` + k + `"}`,
		`{"topic": "t", "key": "` + k + `", "partition": 0}`,
		`{"topic": "t", "key": "` + k + `"}{}`,
		`null`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		before := parkedState(t, coord, "g")
		req, w := serveFuzz(e, "POST", "/v1/groups/g/parked/release", body)
		checkFuzzAnswer(t, req, w)
		if w.Code >= 400 {
			if after := parkedState(t, coord, "g"); after != before {
				t.Fatalf("rejected release (%d) changed the parked keys:\n%s->\n%s", w.Code, before, after)
			}
			return
		}
		if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"key":"`+k+`"`) {
			t.Fatalf("release %q answered %d %s", body, w.Code, w.Body.Bytes())
		}
	})
}

// FuzzParkedList: any group path segment gets a documented answer and never a panic.
func FuzzParkedList(f *testing.F) {
	e := newEnv(f)
	e.call("PUT", "/v1/groups/g/settings", map[string]any{"reset_policy": "earliest", "max_attempts": 1, "on_failure": "park"}).want(f, 200)
	for _, seed := range []string{"g", "nope", "a.b", strings.Repeat("g", 201), ".."} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, g string) {
		if strings.ContainsAny(g, "/?#%") || !isURLSafe(g) {
			return
		}
		req, w := serveFuzz(e, "GET", "/v1/groups/"+g+"/parked", nil)
		checkFuzzAnswer(t, req, w)
	})
}

func isURLSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// parkedFuzzEnv is a parking group whose member m holds orders/0 at the returned
// generation, with one parked row.
func parkedFuzzEnv(f *testing.F) (*env, *group.Coordinator, int64) {
	e := newEnv(f)
	e.createTopic("orders", 1)
	e.call("PUT", "/v1/groups/billing/settings", map[string]any{"reset_policy": "earliest", "max_attempts": 1, "on_failure": "park"}).want(f, 200)
	gen := e.call("POST", "/v1/groups/billing/topics/orders/partitions/0/lease", lease("m", "ttl_ms", 300000)).want(f, 200).num("generation")
	e.call("PUT", ppark, parkedBody("m", gen, "o-1")).want(f, 204)
	return e, group.New(e.meta, e.log, nil), gen
}

// FuzzParkedPutRequest: any body of the owner's parked-row write gets a documented
// answer and never a panic; a refused one changes no parked row, an accepted one
// stores the row it names.
func FuzzParkedPutRequest(f *testing.F) {
	e, coord, gen := parkedFuzzEnv(f)
	k := base64.StdEncoding.EncodeToString([]byte("o-2"))
	row := func(extra string) string {
		return fmt.Sprintf(`{"member": "m", "generation": %d, "key": "%s", "first_offset": 1, "last_offset": 4, "records": 2, "error": "x",
			"attempts": 3, "parked_at_ms": 5, "park_partition": 0, "park_offset": %s}`, gen, k, extra)
	}
	for _, seed := range []string{
		row("-1"), row("7"), row("-2"), row("-1, \"extra\": 1"), row("null"), row("1e3"), row("9223372036854775808"),
		strings.Replace(row("-1"), `"m"`, `"zombie"`, 1),
		strings.Replace(row("-1"), `"records": 2`, `"records": 9`, 1),
		strings.Replace(row("-1"), `"key": "`+k+`"`, `"key": "%%"`, 1),
		`{"member": "m"}`, `null`, ``, `[]`,
	} {
		f.Add([]byte(seed))
	}
	for _, seed := range withIncarnations(e, "orders", row("-1")) {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		before := parkedState(t, coord, "billing")
		req, w := serveFuzz(e, "PUT", ppark, body)
		checkFuzzAnswer(t, req, w)
		if w.Code >= 400 {
			if after := parkedState(t, coord, "billing"); after != before {
				t.Fatalf("rejected PUT (%d) changed the parked rows:\n%s->\n%s", w.Code, before, after)
			}
			return
		}
		if w.Code != http.StatusNoContent {
			t.Fatalf("PUT %q answered %d %s", body, w.Code, w.Body.Bytes())
		}
		var sent struct {
			Key     string `json:"key"`
			Records int64  `json:"records"`
		}
		decodeLoose(t, body, &sent)
		key, _ := base64.StdEncoding.DecodeString(sent.Key)
		rows, err := coord.ParkedOf(context.Background(), "billing", "orders", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if string(r.Key) == string(key) && r.Records == sent.Records {
				return
			}
		}
		t.Fatalf("accepted PUT %q: no row of key %q with %d records in %+v", body, key, sent.Records, rows)
	})
}

// FuzzParkedUnparkRequest: any body of the owner's unpark gets a documented answer and
// never a panic; a refused one changes no parked row, an accepted one leaves its key
// unparked.
func FuzzParkedUnparkRequest(f *testing.F) {
	e, coord, gen := parkedFuzzEnv(f)
	k := base64.StdEncoding.EncodeToString([]byte("o-1"))
	for _, seed := range []string{
		fmt.Sprintf(`{"member": "m", "generation": %d, "key": "%s"}`, gen, k),
		fmt.Sprintf(`{"member": "m", "generation": %d, "key": "%s"}`, gen+1, k),
		fmt.Sprintf(`{"member": "zombie", "generation": %d, "key": "%s"}`, gen, k),
		fmt.Sprintf(`{"member": "m", "generation": %d, "key": ""}`, gen),
		fmt.Sprintf(`{"member": "m", "generation": %d, "key": "%%%%"}`, gen),
		fmt.Sprintf(`{"member": "m", "generation": %d}`, gen),
		`{"member": "m", "generation": 0, "key": ""}`, `null`, ``,
	} {
		f.Add([]byte(seed))
	}
	for _, seed := range withIncarnations(e, "orders", fmt.Sprintf(`{"member": "m", "generation": %d, "key": "%s"}`, gen, k)) {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		before := parkedState(t, coord, "billing")
		req, w := serveFuzz(e, "POST", ppark+"/unpark", body)
		checkFuzzAnswer(t, req, w)
		if w.Code >= 400 {
			if after := parkedState(t, coord, "billing"); after != before {
				t.Fatalf("rejected unpark (%d) changed the parked rows:\n%s->\n%s", w.Code, before, after)
			}
			return
		}
		if w.Code != http.StatusNoContent {
			t.Fatalf("unpark %q answered %d %s", body, w.Code, w.Body.Bytes())
		}
		var sent struct {
			Key string `json:"key"`
		}
		decodeLoose(t, body, &sent)
		key, _ := base64.StdEncoding.DecodeString(sent.Key)
		rows, err := coord.ParkedOf(context.Background(), "billing", "orders", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if string(r.Key) == string(key) {
				t.Fatalf("accepted unpark %q left key %q parked", body, key)
			}
		}
		// Park it again, so later inputs find a row to unpark.
		if err := coord.PutParked(context.Background(), group.Parked{Group: "billing", Topic: "orders", Key: []byte("o-1"), FirstOffset: 3,
			LastOffset: 7, Records: 2, Error: "card expired", Attempts: 5, ParkedAt: time.UnixMilli(1700000000000), ParkOffset: -1}, "m", gen); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzPartitionParkedList: any group, topic and partition path segments get a
// documented answer and never a panic.
func FuzzPartitionParkedList(f *testing.F) {
	e, _, _ := parkedFuzzEnv(f)
	for _, seed := range [][3]string{{"billing", "orders", "0"}, {"billing", "orders", "1"}, {"nope", "orders", "0"},
		{"billing", "nope", "0"}, {"billing", "orders", "-1"}, {"billing", "orders", "x"}, {"billing", "orders", "99999999999"}} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, g, topic, p string) {
		for _, s := range []string{g, topic, p} {
			if s == "" || strings.ContainsAny(s, "/?#%") || !isURLSafe(s) || s == "." || s == ".." {
				return
			}
		}
		req, w := serveFuzz(e, "GET", "/v1/groups/"+g+"/topics/"+topic+"/partitions/"+p+"/parked", nil)
		checkFuzzAnswer(t, req, w)
	})
}

// FuzzPartitionParkedQuery: any query of the owner's parked-rows read gets a documented
// answer and never a panic; one naming an incarnation other than the live one is never
// answered rows (it is fenced or refused).
func FuzzPartitionParkedQuery(f *testing.F) {
	e, _, _ := parkedFuzzEnv(f)
	_, live, _ := strings.Cut(e.tid("orders"), "#")
	for _, q := range []string{"", "incarnation=" + live, "incarnation=0deleted", "incarnation=", "incarnation=UPPER",
		"incarnation=a%23b", "incarnation=" + live + "&incarnation=" + live, "other=1", "%zz"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, query string) {
		req := httptest.NewRequest("GET", ppark, nil)
		req.URL.RawQuery = query
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, req)
		checkFuzzAnswer(t, req, w)
		if w.Code != http.StatusOK {
			return
		}
		v, err := url.ParseQuery(query)
		if err != nil {
			t.Fatalf("malformed query %q was accepted", query)
		}
		if inc, ok := v["incarnation"]; ok && (len(inc) != 1 || inc[0] != live) {
			t.Fatalf("query %q read rows though it names an incarnation other than the live %q", query, live)
		}
	})
}
