package runtime_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
	"github.com/stratalog/strata/pkg/store/awstest"
)

// stackNode is the node the api function runs on a stack with a 7-day maximum
// retention: its configuration parsed from the environment the stack renders
// (deploy.Settings), on the local or the emulated aws backend.
func stackNode(t *testing.T, backend string) http.Handler {
	t.Helper()
	ctx := context.Background()
	env, err := deploy.Settings{DefaultPartitions: 3, DefaultRetention: 24 * time.Hour, MaxRetention: 7 * 24 * time.Hour}.Env()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := node.FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Backend = backend
	switch backend {
	case node.BackendLocal:
		cfg.DataDir = t.TempDir()
	case node.BackendAWS:
		sdk := awstest.Config(ctx, t)
		dcfg := emulatedTables(t, "rb")
		cfg.AWS = node.AWSConfig{SDK: &sdk, Bucket: dcfg.Bucket, TablePrefix: dcfg.TablePrefix, Bootstrap: true}
	}
	rt, err := runtime.New(ctx, runtime.Config{Node: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	return rt.Handler()
}

func call(t *testing.T, h http.Handler, method, path, body string) (int, map[string]any) {
	t.Helper()
	w := httptest.NewRecorder()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(w, req)
	var out map[string]any
	_ = json.Unmarshal(w.Body.Bytes(), &out)
	return w.Code, out
}

// TestThirtyDayTopicOnSevenDayStackRefused: a topic asking for more retention than the
// stack's maximum (whose bucket lifecycle rule would expire its live records on day 8)
// is refused with 400 naming the maximum, and nothing is created; at the maximum it is
// accepted; partitions and retention left out take the stack's defaults.
func TestThirtyDayTopicOnSevenDayStackRefused(t *testing.T) {
	for _, backend := range []string{node.BackendLocal, node.BackendAWS} {
		t.Run(backend, func(t *testing.T) {
			h := stackNode(t, backend)
			code, body := call(t, h, "POST", "/v1/topics", `{"name":"orders","partitions":2,"retention_ms":2592000000}`)
			e, _ := body["error"].(map[string]any)
			if code != http.StatusBadRequest || e["code"] != "invalid_request" || !strings.Contains(e["message"].(string), "604800000") {
				t.Fatalf("30 days on a 7-day stack: %d %v, want 400 naming the maximum 604800000", code, body)
			}
			if code, _ := call(t, h, "GET", "/v1/topics/orders", ""); code != http.StatusNotFound {
				t.Fatalf("refused topic: GET %d, want 404", code)
			}
			if code, body := call(t, h, "POST", "/v1/topics", `{"name":"orders","partitions":2,"retention_ms":604800000}`); code != http.StatusCreated {
				t.Fatalf("7 days: %d %v", code, body)
			}
			code, body = call(t, h, "POST", "/v1/topics", `{"name":"plain"}`)
			if code != http.StatusCreated || body["partitions"] != float64(3) || body["retention_ms"] != float64(86400000) {
				t.Fatalf("defaults: %d %v, want 3 partitions and 24 h", code, body)
			}
		})
	}
}
