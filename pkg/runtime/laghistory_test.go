package runtime_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
	"github.com/stratalog/strata/pkg/wire"
)

// TestLagHistoryAcrossFunctions: as deployed, the api (runtime.New, a fresh node per
// Lambda host) keeps nothing between requests, and the retention function's scheduled
// pass (another node on the same tables) samples the lag: the api's Handler serves what
// the pass stored, and a second api node, a new host, serves the same history.
func TestLagHistoryAcrossFunctions(t *testing.T) {
	ctx := context.Background()
	emulatorEnv(t)
	dcfg := emulatedTables(t, "lh")
	ncfg := node.Config{Backend: node.BackendAWS, AWS: node.AWSConfig{Bucket: dcfg.Bucket, TablePrefix: dcfg.TablePrefix, Bootstrap: true}}
	api := func() http.Handler {
		rt, err := runtime.New(ctx, runtime.Config{Node: ncfg})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rt.Close(ctx) })
		return rt.Handler()
	}
	call := func(h http.Handler, method, path, body string) (int, string) {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code, w.Body.String()
	}
	h := api()
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/topics", `{"name": "orders", "partitions": 1}`},
		{"POST", "/v1/topics/orders/records", `{"records": [{"value": "YQ=="}, {"value": "Yg=="}]}`},
		{"POST", "/v1/groups/billing/topics/orders/partitions/0/lease", `{"member": "m", "ttl_ms": 60000}`},
	} {
		if code, out := call(h, c.method, c.path, c.body); code >= 300 {
			t.Fatalf("%s %s: %d %s", c.method, c.path, code, out)
		}
	}
	if code, out := call(h, "GET", "/v1/groups/billing/lag-history", ""); code != 200 || !strings.Contains(out, `"partitions":[]`) {
		t.Fatalf("before any pass: %d %s, want no samples", code, out)
	}
	retention, err := node.Open(ctx, ncfg, node.PartRetention|node.PartGroups)
	if err != nil {
		t.Fatal(err)
	}
	defer retention.Close()
	if _, err := retention.RunScheduledPass(ctx); err != nil {
		t.Fatalf("scheduled pass: %v", err)
	}
	for _, h := range []http.Handler{h, api()} {
		code, out := call(h, "GET", "/v1/groups/billing/lag-history", "")
		var got wire.LagHistory
		if err := json.Unmarshal([]byte(out), &got); code != 200 || err != nil {
			t.Fatalf("lag history: %d %s (%v)", code, out, err)
		}
		if len(got.Partitions) != 1 || len(got.Partitions[0].Samples) != 1 || got.Partitions[0].Samples[0].LagRecords != 2 {
			t.Fatalf("lag history after one pass = %s, want one sample of 2 records on orders/0", out)
		}
	}
}

// TestLagSampleLoop: a node made by Open (strata dev) samples the lag on its own loop,
// and the history outlives the process: a reopened node serves it before sampling.
func TestLagSampleLoop(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	rt, c, stop := start(t, runtime.Config{Node: node.Config{DataDir: dir}, LagSampleInterval: 20 * time.Millisecond})
	if _, err := c.CreateTopic(ctx, "orders", client.TopicConfig{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Coordinator().Acquire(ctx, "billing", "orders", 0, "m", time.Minute); err != nil {
		t.Fatal(err)
	}
	samples := func(url string) int {
		_, body := get(t, url+"/v1/groups/billing/lag-history", "")
		var h wire.LagHistory
		if err := json.Unmarshal([]byte(body), &h); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		if len(h.Partitions) == 0 {
			return 0
		}
		return len(h.Partitions[0].Samples)
	}
	deadline := time.Now().Add(30 * time.Second)
	for samples(rt.URL()) < 3 {
		if time.Now().After(deadline) {
			t.Fatal("the loop never recorded 3 samples")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := stop(); err != nil {
		t.Fatal(err)
	}
	again, _, _ := start(t, runtime.Config{Node: node.Config{DataDir: dir}, LagSampleInterval: -1})
	if n := samples(again.URL()); n < 3 {
		t.Fatalf("after a restart the history has %d samples, want the 3 or more kept", n)
	}
}
