package runtime_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
)

// alterServer is the assembled server (runtime.Handler()) of a node whose maximum
// retention is maxR (0: none), with topic "t" of retention 1h.
func alterServer(t *testing.T, maxR time.Duration) (*runtime.Runtime, func(body string) (int, map[string]any)) {
	t.Helper()
	ctx := context.Background()
	rt, err := runtime.New(ctx, runtime.Config{Node: node.Config{DataDir: t.TempDir(), Topics: log.TopicDefaults{MaxRetention: maxR}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	if _, err := rt.Log().CreateTopic(ctx, "t", 1, time.Hour); err != nil {
		t.Fatal(err)
	}
	h := rt.Handler()
	return rt, func(body string) (int, map[string]any) {
		t.Helper()
		req := httptest.NewRequest(http.MethodPatch, "/v1/topics/t", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		var m map[string]any
		_ = json.Unmarshal(w.Body.Bytes(), &m)
		return w.Code, m
	}
}

// errMessage is error.message of an error answer.
func errMessage(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["message"].(string)
	return s
}

// TestAlterTopicRetentionContract: PATCH /v1/topics/{topic} {"retention_ms": N} sets the
// retention and answers the topic; above the deployment's maximum, -1 (for ever) where
// there is a maximum, a value below a second, or with another change in the same
// request, it is a 400 (the over-maximum ones naming strata:maxRetentionDays and
// --max-retention, also when the topic's pin cap takes it over) and the topic's
// retention stays.
func TestAlterTopicRetentionContract(t *testing.T) {
	ctx := context.Background()
	rt, patch := alterServer(t, 72*time.Hour)
	if code, m := patch(`{"retention_ms": 259200000}`); code != 200 || m["retention_ms"] != float64(259200000) || m["partitions"] != float64(1) {
		t.Fatalf("alter to 3d = %d %v", code, m)
	}
	for _, c := range []struct {
		body, want string
	}{
		{`{"retention_ms": 259200001}`, "strata:maxRetentionDays"},
		{`{"retention_ms": -1}`, "strata:maxRetentionDays"},
		{`{"retention_ms": 999}`, "retention_ms"},
		{`{"retention_ms": -2}`, "retention_ms"},
		{`{"retention_ms": "1d"}`, "retention_ms"},
		{`{"retention_ms": 3600000, "partitions": 2}`, "exactly one"},
		{`{"retention_ms": 3600000, "retention_pin_ms": 0}`, "exactly one"},
	} {
		code, m := patch(c.body)
		if code != 400 || !strings.Contains(errMessage(m), c.want) {
			t.Errorf("PATCH %s = %d %v, want 400 naming %q", c.body, code, m, c.want)
		}
		if c.want == "strata:maxRetentionDays" && !strings.Contains(errMessage(m), "--max-retention") {
			t.Errorf("PATCH %s: %q does not name --max-retention", c.body, errMessage(m))
		}
	}
	if r, err := rt.Log().Retention(ctx, "t"); err != nil || r != 72*time.Hour {
		t.Fatalf("retention %s (%v) after refusals, want 72h", r, err)
	}
	// With the pin cap: 2d + 1d pin fits, 2d + 1ms + 1d does not.
	if code, m := patch(`{"retention_ms": 172800000}`); code != 200 || m["retention_ms"] != float64(172800000) {
		t.Fatalf("alter to 2d = %d %v", code, m)
	}
	if code, m := patch(`{"retention_pin_ms": 86400000}`); code != 200 {
		t.Fatalf("pin 1d = %d %v", code, m)
	}
	if code, m := patch(`{"retention_ms": 172800001}`); code != 400 || !strings.Contains(errMessage(m), "strata:maxRetentionDays") {
		t.Errorf("alter above the maximum with the pin = %d %v, want 400 naming strata:maxRetentionDays", code, m)
	}
	if r, err := rt.Log().Retention(ctx, "t"); err != nil || r != 48*time.Hour {
		t.Fatalf("retention %s (%v) after the refusal, want 48h", r, err)
	}

	// Without a maximum, -1 keeps the topic's records for ever.
	rt, patch = alterServer(t, 0)
	if code, m := patch(`{"retention_ms": -1}`); code != 200 || m["retention_ms"] != float64(9223372036854) {
		t.Fatalf("alter to for ever = %d %v", code, m)
	}
	if r, err := rt.Log().Retention(ctx, "t"); err != nil || r < 200*365*24*time.Hour {
		t.Fatalf("retention %s (%v), want for ever", r, err)
	}
}
