package httpapi_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
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
