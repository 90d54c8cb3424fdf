package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/httpapi"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
)

// serveFuzz sends one request to e's handler (the fuzz function's own helper: env.call
// reports to the *testing.F the env was built with).
func serveFuzz(e *env, method, target string, body []byte) (*http.Request, *httptest.ResponseRecorder) {
	req := httptest.NewRequest(method, target, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, req)
	return req, w
}

// groupState renders everything a rejected request on group g must leave as it was:
// whether the group exists, its leases and its commits. It reads the store beneath the
// fault switches, so it works while they are on.
func groupState(t *testing.T, e *env, g string) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	_, err := e.meta.MetaStore.GetGroup(ctx, g)
	switch {
	case err == nil:
		b.WriteString("exists")
	case errors.Is(err, store.ErrNotFound):
		b.WriteString("absent")
	default:
		t.Fatalf("read group %q: %v", g, err)
	}
	as, err := e.meta.MetaStore.ListAssignments(ctx, g)
	if err != nil {
		t.Fatalf("list leases of %q: %v", g, err)
	}
	for _, a := range as {
		fmt.Fprintf(&b, "\nlease %s/%d owner=%q gen=%d exp=%d", a.Topic, a.Partition, a.Owner, a.Generation, a.ExpiresAt.UnixMilli())
	}
	cs, err := e.meta.MetaStore.ListCommits(ctx, g)
	if err != nil {
		t.Fatalf("list commits of %q: %v", g, err)
	}
	for _, c := range cs {
		fmt.Fprintf(&b, "\ncommit %s/%d next=%d gen=%d at=%d meta=%q completed=%v", c.Topic, c.Partition, c.NextOffset, c.Generation, c.CommittedAt.UnixNano(), c.Metadata, c.Completed)
	}
	return b.String()
}

// topicNames lists the topics in the store beneath the fault switches.
func topicNames(t *testing.T, e *env) []string {
	t.Helper()
	names, err := e.meta.MetaStore.ListTopics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	return names
}

// decodeLoose decodes an accepted request body for the test's own bookkeeping (the
// server decoded it strictly already).
func decodeLoose(t *testing.T, body []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("the server accepted a body encoding/json refuses: %v: %q", err, body)
	}
}

func answerNum(t *testing.T, w *httptest.ResponseRecorder, name string) (int64, bool) {
	t.Helper()
	var body map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatalf("answer is not a JSON object: %q", w.Body.Bytes())
	}
	f, ok := body[name].(float64)
	return int64(f), ok
}

func FuzzCreateTopicRequest(f *testing.F) {
	e := newEnv(f)
	e.createTopic("taken", 1)
	for _, seed := range []string{
		`{"name": "orders", "partitions": 8, "retention_ms": 86400000}`,
		`{"name": "a", "partitions": 1}`,
		`{"name": "x.y_z-0", "partitions": 1024, "retention_ms": 1000}`,
		`{"name": "taken", "partitions": 1}`,
		`{"name": "b", "partitions": 1025}`,
		`{"name": "b", "partitions": 0}`,
		`{"name": "b", "partitions": -1}`,
		`{"name": "b", "partitions": 2147483648}`,
		`{"name": "b", "partitions": 1, "retention_ms": 999}`,
		`{"name": "b", "partitions": 1, "retention_ms": 0}`,
		`{"name": "b", "partitions": 1, "retention_ms": 9223372036854775807}`,
		`{"name": "b", "partitions": 1, "retention_ms": 9223372036854}`,
		`{"name": "b", "partitions": 1, "retention_ms": 9223372036854, "retention_pin_ms": 1}`,
		`{"name": "b", "partitions": 1, "retention_pin_ms": 21600000}`,
		`{"name": "b", "partitions": 1, "retention_pin_ms": -1}`,
		`{"name": "b", "partitions": 1, "retention_pin_ms": 0}`,
		`{"name": "b", "partitions": 1, "cleanup_policy": "compact", "min_compaction_lag_ms": 1, "max_compaction_lag_ms": 2, "delete_retention_ms": 3}`,
		`{"name": "b", "partitions": 1, "cleanup_policy": "delete,compact"}`,
		`{"name": "b", "partitions": 1, "cleanup_policy": "none"}`,
		`{"name": "b", "partitions": 1, "delete_retention_ms": -1}`,
		`{"name": "b", "partitions": 1.5}`,
		`{"name": ".", "partitions": 1}`,
		`{"name": "..", "partitions": 1}`,
		`{"name": "", "partitions": 1}`,
		`{"name": "a/b", "partitions": 1}`,
		`{"name": "` + strings.Repeat("n", 201) + `", "partitions": 1}`,
		`{"name": null, "partitions": 1}`,
		`{"partitions": 1}`,
		`{"name": "b"}`,
		`{"name": "b", "partitions": 1, "extra": true}`,
		`{"name": "b", "partitions": 1} {}`,
		`{"NAME": "c", "Partitions": 1}`,
		`[]`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		before := topicNames(t, e)
		req, w := serveFuzz(e, "POST", "/v1/topics", body)
		checkFuzzAnswer(t, req, w)
		after := topicNames(t, e)
		if w.Code >= 400 {
			if fmt.Sprint(after) != fmt.Sprint(before) {
				t.Fatalf("rejected create (%d) changed the topics %v -> %v", w.Code, before, after)
			}
			return
		}
		if w.Code != http.StatusCreated {
			t.Fatalf("create answered %d", w.Code)
		}
		var sent struct {
			Name        string
			Partitions  int32
			RetentionMs *int64 `json:"retention_ms"`
		}
		decodeLoose(t, body, &sent)
		// A create that leaves out partitions or retention gets the log's defaults.
		wantRetention := log.DefaultRetention.Milliseconds()
		if sent.RetentionMs != nil {
			wantRetention = *sent.RetentionMs
		}
		wantPartitions := sent.Partitions
		if wantPartitions == 0 {
			wantPartitions = log.DefaultPartitions
		}
		var got struct {
			Name        string `json:"name"`
			Partitions  int32  `json:"partitions"`
			RetentionMs int64  `json:"retention_ms"`
		}
		decodeLoose(t, w.Body.Bytes(), &got)
		if got.Name != sent.Name || got.Partitions != wantPartitions || got.RetentionMs != wantRetention {
			t.Fatalf("created %+v from %q", got, body)
		}
		if len(after) != len(before)+1 {
			t.Fatalf("a created topic changed the topics %v -> %v", before, after)
		}
		info, err := e.log.DescribeTopic(context.Background(), sent.Name)
		if err != nil || info.Topic.Partitions != wantPartitions || info.Retention.Milliseconds() != wantRetention {
			t.Fatalf("created topic reads back as %+v, %v", info.Topic, err)
		}
	})
}

// leaseBody is the test's reading of an accepted lease body.
type leaseBody struct {
	Member     string
	TTLMs      *int64 `json:"ttl_ms"`
	Generation *int64
}

func FuzzLeaseRequest(f *testing.F) {
	e := newEnv(f)
	e.createTopic("t", 2)
	e.call("POST", "/v1/topics/t/records", appendBody(rec{value: "a", partition: ptr(0)}, rec{value: "b", partition: ptr(0)})).want(f, 200)
	e.call("POST", gp+"0/lease", lease("m", "ttl_ms", 300000)).want(f, 200)
	e.call("POST", gp+"0/commit", lease("m", "generation", 1, "next_offset", 1)).want(f, 200)
	e.call("POST", gp+"1/lease", lease("other", "ttl_ms", 300000)).want(f, 200)
	for _, seed := range []string{
		// acquire
		`{"member": "m"}`,
		`{"member": "m", "ttl_ms": 100}`,
		`{"member": "m", "ttl_ms": 300000}`,
		`{"member": "n"}`,
		`{"member": "other"}`,
		`{"member": "m", "ttl_ms": 99}`,
		`{"member": "m", "ttl_ms": 300001}`,
		`{"member": "m", "ttl_ms": 0}`,
		`{"member": "m", "ttl_ms": -1}`,
		`{"member": "m", "ttl_ms": 1e3}`,
		`{"member": "m", "ttl_ms": "1000"}`,
		`{"member": ""}`,
		`{"member": "` + strings.Repeat("m", 201) + `"}`,
		`{"member": "tab\there"}`,
		`{"member": "h\u00e9"}`,
		`{"member": null}`,
		`{"ttl_ms": 1000}`,
		`{"member": "m", "owner": "x"}`,
		// renew
		`{"member": "m", "generation": 1, "ttl_ms": 1000}`,
		`{"member": "m", "generation": 1}`,
		`{"member": "m", "generation": 2}`,
		`{"member": "m", "generation": 0}`,
		`{"member": "m", "generation": -1}`,
		`{"member": "m", "generation": 9223372036854775807}`,
		`{"member": "m", "generation": 9223372036854775808}`,
		`{"member": "other", "generation": 1}`,
		`{"member": "m", "generation": null}`,
		`{"member": "m"} x`,
		`{`,
		``,
	} {
		f.Add([]byte(seed), false)
	}
	f.Add([]byte(`{"member": "other", "generation": 1, "ttl_ms": 500}`), true)
	f.Add([]byte(`{"member": "m"}`), true)
	for _, seed := range append(withIncarnations(e, "t", `{"member": "m", "generation": 1}`), withIncarnations(e, "t", `{"member": "m"}`)...) {
		f.Add([]byte(seed), false)
	}
	f.Fuzz(func(t *testing.T, body []byte, second bool) {
		p := int32(0)
		if second {
			p = 1
		}
		before := groupState(t, e, "g")
		prev, _ := e.meta.MetaStore.GetAssignment(context.Background(), "g", e.tid("t"), p)
		req, w := serveFuzz(e, "POST", fmt.Sprintf("%s%d/lease", gp, p), body)
		checkFuzzAnswer(t, req, w)
		if w.Code >= 400 {
			if after := groupState(t, e, "g"); after != before {
				t.Fatalf("rejected lease (%d) changed the group:\n%s\n->\n%s", w.Code, before, after)
			}
			return
		}
		var sent leaseBody
		decodeLoose(t, body, &sent)
		ttl := 30 * time.Second
		if sent.TTLMs != nil {
			ttl = time.Duration(*sent.TTLMs) * time.Millisecond
		}
		gen, _ := answerNum(t, w, "generation")
		exp, _ := answerNum(t, w, "lease_expires_at_ms")
		if want := e.clock.Now().Add(ttl).UnixMilli(); exp != want {
			t.Fatalf("lease %q expires at %d, want %d", body, exp, want)
		}
		switch {
		case sent.Generation != nil && gen != *sent.Generation:
			t.Fatalf("renew %q answered generation %d", body, gen)
		case sent.Generation == nil && gen != prev.Generation+1:
			t.Fatalf("acquire %q answered generation %d after %d", body, gen, prev.Generation)
		}
		a, err := e.meta.MetaStore.GetAssignment(context.Background(), "g", e.tid("t"), p)
		if err != nil || a.Owner != sent.Member || a.Generation != gen || a.ExpiresAt.UnixMilli() != exp {
			t.Fatalf("after lease %q the store holds %+v, %v; answer %s", body, a, err, w.Body.Bytes())
		}
	})
}

func FuzzReleaseRequest(f *testing.F) {
	e := newEnv(f)
	e.createTopic("t", 1)
	e.call("POST", gp+"0/lease", lease("m", "ttl_ms", 300000)).want(f, 200)
	for _, seed := range []string{
		`{"member": "m", "generation": 1}`,
		`{"member": "m", "generation": 2}`,
		`{"member": "m", "generation": 0}`,
		`{"member": "m", "generation": -1}`,
		`{"member": "x", "generation": 1}`,
		`{"member": "", "generation": 1}`,
		`{"member": "m"}`,
		`{"generation": 1}`,
		`{"member": "m", "generation": 1, "ttl_ms": 1000}`,
		`{"member": "m", "generation": "1"}`,
		`{"member": "m", "generation": 1.0}`,
		`{"member": "m", "generation": 1}{}`,
		`null`,
		``,
	} {
		f.Add([]byte(seed))
	}
	for _, seed := range withIncarnations(e, "t", `{"member": "m", "generation": 1}`) {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		before := groupState(t, e, "g")
		prev, _ := e.meta.MetaStore.GetAssignment(context.Background(), "g", e.tid("t"), 0)
		req, w := serveFuzz(e, "DELETE", gp+"0/lease", body)
		checkFuzzAnswer(t, req, w)
		if w.Code >= 400 {
			if after := groupState(t, e, "g"); after != before {
				t.Fatalf("rejected release (%d) changed the group:\n%s\n->\n%s", w.Code, before, after)
			}
			return
		}
		if w.Code != http.StatusNoContent || w.Body.Len() != 0 {
			t.Fatalf("release answered %d %q", w.Code, w.Body.Bytes())
		}
		var sent leaseBody
		decodeLoose(t, body, &sent)
		a, err := e.meta.MetaStore.GetAssignment(context.Background(), "g", e.tid("t"), 0)
		if err != nil || a.Live(e.clock.Now()) || a.Generation != prev.Generation || prev.Owner != sent.Member ||
			sent.Generation == nil || *sent.Generation != prev.Generation {
			t.Fatalf("release %q of %+v left %+v, %v", body, prev, a, err)
		}
		// Take the lease back for the next input.
		if _, w := serveFuzz(e, "POST", gp+"0/lease", []byte(`{"member": "m", "ttl_ms": 300000}`)); w.Code != http.StatusOK {
			t.Fatalf("re-acquire after release: %d %s", w.Code, w.Body.Bytes())
		}
	})
}

func FuzzResetRequest(f *testing.F) {
	e := newEnv(f)
	e.createTopic("t", 2)
	e.call("POST", "/v1/topics/t/records", appendBody(rec{value: "a", partition: ptr(0)}, rec{value: "b", partition: ptr(0)}, rec{value: "c", partition: ptr(1)})).want(f, 200)
	// Group g holds a live lease on t, so every valid reset of it is group_active.
	e.call("POST", gp+"0/lease", lease("m", "ttl_ms", 300000)).want(f, 200)
	e.call("POST", "/v1/groups/r/topics/t/reset", map[string]any{"to": "latest"}).want(f, 200)
	for _, seed := range []string{
		`{"to": "earliest"}`,
		`{"to": "latest"}`,
		`{"to": {"offset": 1}}`,
		`{"to": {"offset": 0}}`,
		`{"to": {"offset": 2}}`,
		`{"to": {"offset": -1}}`,
		`{"to": {"offset": 9223372036854775807}}`,
		`{"to": {"timestamp_ms": 0}}`,
		`{"to": {"timestamp_ms": -9223372036854775808}}`,
		`{"to": {"timestamp_ms": 9223372036854775807}}`,
		`{"to": {"timestamp_ms": 253402300799999}}`,
		`{"to": {"offset": 1, "timestamp_ms": 1}}`,
		`{"to": {"offset": "1"}}`,
		`{"to": {"at": 1}}`,
		`{"to": {}}`,
		`{"to": "middle"}`,
		`{"to": ""}`,
		`{"to": null}`,
		`{"to": 5}`,
		`{"to": ["earliest"]}`,
		`{"to": "earliest", "force": true}`,
		`{"to": {"offset": 1}} {}`,
		`{"to": {"offset": 1} }`,
		`{}`,
		``,
	} {
		f.Add([]byte(seed), false)
	}
	f.Add([]byte(`{"to": "earliest"}`), true)
	f.Add([]byte(`{"to": {"offset": 1}}`), true)
	f.Fuzz(func(t *testing.T, body []byte, active bool) {
		g := "r"
		if active {
			g = "g"
		}
		before := groupState(t, e, g)
		req, w := serveFuzz(e, "POST", "/v1/groups/"+g+"/topics/t/reset", body)
		checkFuzzAnswer(t, req, w)
		if w.Code >= 400 {
			if after := groupState(t, e, g); after != before {
				t.Fatalf("rejected reset (%d) changed the group:\n%s\n->\n%s", w.Code, before, after)
			}
			return
		}
		if active {
			t.Fatalf("reset %q of a group with a live lease answered %d", body, w.Code)
		}
		var got struct {
			Partitions []struct {
				Partition       int32 `json:"partition"`
				CommittedOffset int64 `json:"committed_offset"`
			} `json:"partitions"`
		}
		decodeLoose(t, w.Body.Bytes(), &got)
		var sent struct{ To json.RawMessage }
		decodeLoose(t, body, &sent)
		var word string
		var pos struct{ Offset *int64 }
		_ = json.Unmarshal(sent.To, &word)
		_ = json.Unmarshal(sent.To, &pos)
		info, err := e.log.DescribeTopic(context.Background(), "t")
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Partitions) != len(info.Partitions) {
			t.Fatalf("reset %q answered %s", body, w.Body.Bytes())
		}
		for i, p := range got.Partitions {
			b := info.Partitions[i]
			want := int64(-1)
			switch {
			case word == "earliest":
				want = b.LogStartOffset
			case word == "latest":
				want = b.HighWatermark
			case pos.Offset != nil:
				want = *pos.Offset
			}
			if p.Partition != int32(i) || p.CommittedOffset < b.LogStartOffset || p.CommittedOffset > b.HighWatermark ||
				(want >= 0 && p.CommittedOffset != want) {
				t.Fatalf("reset %q answered %s; bounds %+v", body, w.Body.Bytes(), info.Partitions)
			}
			c, err := e.meta.MetaStore.GetCommit(context.Background(), g, e.tid("t"), int32(i))
			if err != nil || c.NextOffset != p.CommittedOffset {
				t.Fatalf("reset %q answered %s, the store holds %+v, %v", body, w.Body.Bytes(), c, err)
			}
		}
	})
}

// Fault modes of FuzzRouting (mode bits 1–2).
const (
	faultNone = iota
	faultMetaDown
	faultCorruptObjects
)

// validMethod reports whether m is an HTTP token, the only methods a server passes on.
func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for i := 0; i < len(m); i++ {
		c := m[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// pathNames returns the unescaped segments after "/v1/topics/" and "/v1/groups/" (and a
// group route's "/topics/"), the topic and group names a request may touch.
func pathNames(escaped string) (topics, groups []string) {
	segs := strings.Split(escaped, "/")
	for i := range segs {
		s, err := url.PathUnescape(segs[i])
		if err != nil {
			s = segs[i]
		}
		segs[i] = s
	}
	for i := 0; i+1 < len(segs); i++ {
		switch segs[i] {
		case "topics":
			topics = append(topics, segs[i+1])
		case "groups":
			groups = append(groups, segs[i+1])
		}
	}
	return topics, groups
}

// routingState renders what any rejected request must leave as it was: the topic list,
// the high watermarks of t and of the topics its path names, and the state of groups g
// and of the groups its path names.
func routingState(t *testing.T, e *env, req *http.Request) string {
	t.Helper()
	topics, groups := pathNames(req.URL.EscapedPath())
	var b strings.Builder
	names := topicNames(t, e)
	fmt.Fprintf(&b, "topics %q", names)
	for _, topic := range append([]string{"t"}, topics...) {
		if !contains(names, topic) {
			continue
		}
		fmt.Fprintf(&b, "\n%s hw %v", topic, highWatermarks(t, e, topic))
	}
	for _, g := range append([]string{"g"}, groups...) {
		fmt.Fprintf(&b, "\ngroup %q: %s", g, groupState(t, e, g))
	}
	return b.String()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// checkRoutingAnswer is checkFuzzAnswer for any method and path: allowed5xx is the one
// server-side status the fault mode may cause; HEAD is GET without a body; an answer of
// the fallback (no such route or method) is only checked for the error body.
func checkRoutingAnswer(t *testing.T, req *http.Request, w *httptest.ResponseRecorder, allowed5xx int) {
	t.Helper()
	status, raw := w.Code, w.Body.Bytes()
	if status < 200 || (status >= 300 && status < 400) || status >= 600 || (status >= 500 && status != allowed5xx) {
		t.Fatalf("%s %s: status %d: %s", req.Method, req.URL, status, truncate(raw))
	}
	if status >= 400 {
		if msg := errorShape(status, raw); msg != "" {
			t.Fatalf("%s %s: %s", req.Method, req.URL, msg)
		}
	}
	if status == http.StatusMethodNotAllowed && w.Header().Get("Allow") == "" {
		t.Fatalf("%s %s: 405 without Allow", req.Method, req.URL)
	}
	if status == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
		t.Fatalf("%s %s: 401 without WWW-Authenticate", req.Method, req.URL)
	}
	doc, err := loadOpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	method := req.Method
	if method == http.MethodHead {
		method = http.MethodGet
	}
	// The mux routes on the escaped path: "/v1/topics/a%2Fb" is topic "a/b".
	urlPath := req.URL.EscapedPath()
	if _, _, ok := doc.find(method, urlPath); !ok {
		if status != http.StatusNotFound && status != http.StatusMethodNotAllowed {
			t.Fatalf("%s %s: an undocumented route answered %d: %s", req.Method, req.URL, status, truncate(raw))
		}
		return
	}
	var body any
	if len(raw) > 0 && w.Header().Get("Content-Type") != wireContentType {
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Fatalf("non-JSON answer %q", raw)
		}
	}
	if err := doc.checkAnswer(method, urlPath, status, w.Header().Get("Content-Type"), body, len(raw) > 0); err != nil {
		t.Fatalf("%s %s: %v\n%s", req.Method, req.URL, err, truncate(raw))
	}
}

// FuzzRouting sends any method, path, query, body and Authorization header to the whole
// handler, without and with auth, with the metadata store down or the objects corrupt.
// mode bit 0 selects the auth server, bits 1–2 the fault, bit 3 sends a body without
// its JSON Content-Type.
func FuzzRouting(f *testing.F) {
	open := newEnv(f)
	a, err := httpapi.ParseAuth([]byte(authFile))
	if err != nil {
		f.Fatal(err)
	}
	authed := newEnv(f, withAuth(a))
	for _, e := range []*env{open, authed} {
		hdr := bearer("admin-token")
		for _, name := range []string{"t", "orders"} {
			e.call("POST", "/v1/topics", map[string]any{"name": name, "partitions": 2}, hdr...).want(f, 201)
			e.call("POST", "/v1/topics/"+name+"/records", appendBody(rec{value: "a", partition: ptr(0)}, rec{key: "k", value: "b", partition: ptr(0)}, rec{value: "c", partition: ptr(1)}), hdr...).want(f, 200)
		}
		for _, g := range []string{"g", "billing"} {
			e.call("POST", "/v1/groups/"+g+"/topics/t/partitions/0/lease", lease("m", "ttl_ms", 300000), hdr...).want(f, 200)
			e.call("POST", "/v1/groups/"+g+"/topics/t/partitions/0/commit", lease("m", "generation", 1, "next_offset", 1), hdr...).want(f, 200)
		}
		e.call("POST", "/v1/groups/idle/topics/t/reset", map[string]any{"to": "latest"}, hdr...).want(f, 200)
	}
	for _, seed := range []struct {
		method, target, body, auth string
		mode                       uint8
	}{
		{"GET", "/v1/health", "", "", 0},
		{"GET", "/v1/topics", "", "", 0},
		{"GET", "/v1/topics", "", "Bearer " + tok("orders-token"), 1},
		{"GET", "/v1/topics/t", "", "", 0},
		{"GET", "/v1/topics/nope", "", "", 0},
		{"GET", "/v1/topics/..x", "", "", 0},
		{"GET", "/v1/topics/orders", "", "Bearer " + tok("prefix-token"), 1},
		{"GET", "/v1/topics/t", "", "Bearer " + tok("none-token"), 1},
		{"GET", "/v1/topics/t", "", "Basic eDp5", 1},
		{"GET", "/v1/topics/t", "", "Bearer nope", 1},
		{"GET", "/v1/topics/t", "", "", 1},
		{"POST", "/v1/topics", `{"name": "n", "partitions": 1}`, "", 0},
		{"POST", "/v1/topics", `{"name": "n", "partitions": 1}`, "", 8},
		{"POST", "/v1/topics", `{"name": "ord9", "partitions": 1}`, "Bearer " + tok("prefix-token"), 1},
		{"POST", "/v1/topics/t/records", `{"records": [{"value": "eA=="}]}`, "", 0},
		{"POST", "/v1/topics/t/records?x=1", `{"records": [{"value": "eA==", "partition": 1}]}`, "", 2},
		{"GET", "/v1/topics/t/partitions/0/records?offset=0", "", "", 0},
		{"GET", "/v1/topics/t/partitions/0/records?offset=0", "", "", 4},
		{"GET", "/v1/topics/t/partitions/1/records?offset=1&wait_ms=50", "", "", 0},
		{"GET", "/v1/topics/t/partitions/0/records?offset=0", "", "", 2},
		{"POST", "/v1/groups/g/topics/t/partitions/1/lease", `{"member": "n"}`, "", 0},
		{"POST", "/v1/groups/g/topics/t/partitions/0/lease", `{"member": "m", "generation": 1}`, "", 2},
		{"DELETE", "/v1/groups/g/topics/t/partitions/0/lease", `{"member": "m", "generation": 1}`, "", 0},
		{"POST", "/v1/groups/g/topics/t/partitions/0/commit", `{"member": "m", "generation": 1, "next_offset": 2}`, "", 0},
		{"POST", "/v1/groups/billing/topics/orders/partitions/0/commit", `{"member": "m", "generation": 1, "next_offset": 2}`, "Bearer " + tok("consume-only"), 1},
		{"GET", "/v1/groups/g", "", "", 0},
		{"GET", "/v1/groups/g", "", "", 2},
		{"GET", "/v1/summary", "", "", 0},
		{"GET", "/v1/summary", "", "", 2},
		{"GET", "/v1/summary", "", "Bearer " + tok("orders-token"), 1},
		{"GET", "/v1/topics/t/partitions/0/search?key=aw%3D%3D", "", "", 0},
		{"GET", "/v1/topics/t/partitions/0/search?key=aw%3D%3D&offset=1&max_scan=5&max_records=1", "", "", 4},
		{"GET", "/v1/topics/t/partitions/0/search?key=aw", "", "Bearer " + tok("none-token"), 1},
		{"GET", "/v1/topics/t/partitions/0/stats", "", "", 0},
		{"GET", "/v1/topics/t/partitions/1/stats?max_entries=1", "", "", 4},
		{"GET", "/v1/topics/t/partitions/0/stats?max_entries=0", "", "Bearer " + tok("none-token"), 1},
		{"GET", "/v1/groups/billing", "", "Bearer " + tok("orders-token"), 1},
		{"GET", "/v1/groups/nope", "", "", 0},
		{"GET", "/v1/groups/-x", "", "", 0},
		{"GET", "/v1/groups/g?x=1", "", "", 0},
		{"POST", "/v1/groups/idle/topics/t/reset", `{"to": "earliest"}`, "", 0},
		{"POST", "/v1/groups/g/topics/t/reset", `{"to": "earliest"}`, "", 0},
		{"POST", "/v1/groups/idle/topics/t/reset", `{"to": {"offset": 0}}`, "", 2},
		{"HEAD", "/v1/topics", "", "", 0},
		{"PUT", "/v1/topics", "", "", 0},
		{"OPTIONS", "/v1/groups/g", "", "", 0},
		{"DELETE", "/v1/topics/t", "", "", 0},
		{"DELETE", "/v1/groups/idle", "", "", 0},
		{"GET", "/v1/topics/t/offsets?timestamp_ms=0", "", "", 0},
		{"GET", "/v1/topics/t/offsets?timestamp_ms=99999999999999", "", "", 2},
		{"GET", "/v1/topics/t/offsets?timestamp_ms=-1", "", "", 0},
		{"GET", "/v1/topics/orders/offsets?timestamp_ms=1", "", "Bearer " + tok("orders-token"), 1},
		{"GET", "/v1/topics/t/keys/k", "", "", 0},
		{"GET", "/v1/topics/t/keys/a%2Fb?partition=1", "", "", 0},
		{"GET", "/v1/topics/t/keys/YQ?encoding=base64", "", "", 2},
		{"POST", "/v1/topics", `{"name": "c", "partitions": 1, "cleanup_policy": "compact,delete", "delete_retention_ms": 1}`, "", 0},
		{"PATCH", "/v1/topics/t", `{"cleanup_policy": "compact", "min_compaction_lag_ms": 5}`, "", 0},
		{"DELETE", "/v1/groups/g", "", "", 0},
		{"DELETE", "/v1/groups/nope", "", "", 2},
		{"DELETE", "/v1/groups/billing", "", "Bearer " + tok("orders-token"), 1},
		{"GET", "/v2/topics", "", "", 0},
		{"GET", "/", "", "", 0},
		{"GET", "/v1/topics/", "", "", 0},
		{"GET", "/v1//topics", "", "", 0},
		{"GET", "/v1/topics/t/../t", "", "", 0},
		{"POST", "/v1/./topics", `{"name": "dot", "partitions": 1}`, "", 0},
		{"GET", "/v1/topics/t%2Fx", "", "", 0},
		{"GET", "/v1/topics/%74", "", "", 0},
		{"GET", "/v1/groups/g/topics/t/partitions/0/lease", "", "", 0},
	} {
		f.Add(seed.method, seed.target, []byte(seed.body), seed.auth, seed.mode)
	}
	f.Fuzz(func(t *testing.T, method, target string, body []byte, auth string, mode uint8) {
		if !validMethod(method) || !strings.HasPrefix(target, "/") || strings.ContainsAny(target, " #") {
			return // not a request line a server would pass on
		}
		u, err := url.ParseRequestURI(target)
		if err != nil {
			return // a server answers 400 itself
		}
		if method == http.MethodDelete && strings.HasPrefix(u.Path, "/v1/topics/") && strings.Count(u.Path, "/") == 3 {
			return // would delete the topics every input shares; TestDeleteTopic covers it
		}
		e := open
		if mode&1 != 0 {
			e = authed
		}
		fault := int(mode>>1) % 3
		req := httptest.NewRequest("GET", "/", bytes.NewReader(body))
		req.Method, req.URL, req.RequestURI = method, u, target
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		// A body is sent as JSON unless mode bit 3 is set.
		if len(body) > 0 && mode&8 == 0 {
			req.Header.Set("Content-Type", "application/json")
		}
		// A long poll at the high watermark would stall the fuzzer; cut it short.
		timeout := 10 * time.Second
		if u.Query().Has("wait_ms") {
			timeout = 100 * time.Millisecond
		}
		ctx, cancel := context.WithTimeout(req.Context(), timeout)
		defer cancel()
		req = req.WithContext(ctx)

		before := routingState(t, e, req)
		allowed5xx := 0
		switch fault {
		case faultMetaDown:
			allowed5xx = http.StatusServiceUnavailable
			e.meta.down.Store(true)
		case faultCorruptObjects:
			allowed5xx = http.StatusInternalServerError
			e.objects.on.Store(true)
		}
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, req)
		e.meta.down.Store(false)
		e.objects.on.Store(false)
		if ctx.Err() != nil {
			return // the client (the deadline) went away, as during a long poll
		}
		checkRoutingAnswer(t, req, w, allowed5xx)
		if w.Code >= 400 {
			if after := routingState(t, e, req); after != before {
				t.Fatalf("rejected %s %s (%d) changed state:\n%s\n->\n%s", method, target, w.Code, before, after)
			}
		}
	})
}
