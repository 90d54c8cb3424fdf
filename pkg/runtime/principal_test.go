package runtime_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/httpapi"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
	"github.com/stratalog/strata/pkg/store/awstest"
	"github.com/stratalog/strata/pkg/wire"
)

// Tokens of the principals of principalNode's auth file.
const (
	aliceToken   = "alice-token-0123456789abcdef"
	malloryToken = "mallory-token-0123456789abcdef"
)

// principalNode is a node with authorization on, on backend, where alice may append to
// and read "orders" and mallory may only append to it; and the topic, created.
func principalNode(t *testing.T, backend string) (*runtime.Runtime, http.Handler) {
	t.Helper()
	ctx := context.Background()
	auth, err := httpapi.ParseAuth([]byte(`{"principals": {
		"` + aliceToken + `": {"name": "alice", "allow": [{"resource": "topic:orders", "ops": ["append", "read", "describe"]}]},
		"` + malloryToken + `": {"name": "mallory", "allow": [{"resource": "topic:orders", "ops": ["append"]}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := node.Config{Backend: backend}
	switch backend {
	case node.BackendLocal:
		cfg.DataDir = t.TempDir()
	case node.BackendAWS:
		sdk := awstest.Config(ctx, t)
		dcfg := emulatedTables(t, "pk")
		cfg.AWS = node.AWSConfig{SDK: &sdk, Bucket: dcfg.Bucket, TablePrefix: dcfg.TablePrefix, Bootstrap: true}
	}
	rt, err := runtime.New(ctx, runtime.Config{Node: cfg, Auth: auth})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	if _, err := rt.Log().CreateTopic(ctx, "orders", 2, time.Hour); err != nil {
		t.Fatal(err)
	}
	return rt, rt.Handler()
}

// appendAs posts body to orders as the token's principal with headers hdr and returns
// the status and the offsets answered (nil on an error).
func appendAs(t *testing.T, h http.Handler, token, body string, hdr map[string]string) (int, []int64, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/v1/topics/orders/records", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	var out struct {
		Results []wire.Result `json:"results"`
	}
	_ = json.Unmarshal(w.Body.Bytes(), &out)
	var offs []int64
	for _, r := range out.Results {
		if r.Offset != nil {
			offs = append(offs, int64(r.Partition)<<40+*r.Offset)
		}
	}
	return w.Code, offs, w.Body.String()
}

// TestIdempotencyKeyScopedByPrincipal: an Idempotency-Key is the calling principal's.
// mallory, who may append to the topic, uses alice's key first — as a plain key and as a
// producer request's, whose retry fences it — and alice's own requests under the key
// are still hers: her append is not 422, her producer retry is not 409 superseded, and
// her retries are answered with her first offsets, appending nothing again. Both
// backends, through the assembled server with token auth.
func TestIdempotencyKeyScopedByPrincipal(t *testing.T) {
	for _, backend := range []string{node.BackendLocal, node.BackendAWS} {
		t.Run(backend, func(t *testing.T) {
			rt, h := principalNode(t, backend)
			ctx := context.Background()
			hw := func() int64 {
				t.Helper()
				info, err := rt.Log().DescribeTopic(ctx, "orders")
				if err != nil {
					t.Fatal(err)
				}
				var n int64
				for _, p := range info.Partitions {
					n += p.HighWatermark
				}
				return n
			}
			alice := `{"records": [{"value": "YWxpY2U=", "partition": 0}, {"value": "YWxpY2U=", "partition": 1}]}`
			mallory := `{"records": [{"value": "bWFsbG9yeQ==", "partition": 0}]}`

			// A plain key (Client.Append's: no Strata-Attempt, so every call reads its claim).
			plain := map[string]string{"Idempotency-Key": "order-42"}
			if code, _, body := appendAs(t, h, malloryToken, mallory, plain); code != http.StatusOK {
				t.Fatalf("mallory's append: %d %s", code, body)
			}
			code, first, body := appendAs(t, h, aliceToken, alice, plain)
			if code != http.StatusOK || len(first) != 2 {
				t.Fatalf("alice's append under the key mallory used first: %d %s, want 200 with her own offsets", code, body)
			}
			before := hw()
			code, again, body := appendAs(t, h, aliceToken, alice, plain)
			if code != http.StatusOK || len(again) != 2 || again[0] != first[0] || again[1] != first[1] || hw() != before {
				t.Fatalf("alice's retry: %d %s (offsets %v, first %v; %d records → %d), want her first offsets, nothing appended",
					code, body, again, first, before, hw())
			}

			// A producer request's key, fenced by mallory's "retry" of it first.
			retry := func(attempt int) map[string]string {
				return map[string]string{"Idempotency-Key": "01JDZ8W7R8S9T0U1V2W3X4Y5Z6.7", wire.HeaderIdempotency: wire.IdempotencyProducer,
					wire.HeaderAttempt: strconv.Itoa(attempt), wire.HeaderRetryElapsed: "1000", wire.HeaderBatchFloor: "0"}
			}
			if code, _, body := appendAs(t, h, malloryToken, mallory, retry(9)); code != http.StatusOK {
				t.Fatalf("mallory's producer retry: %d %s", code, body)
			}
			code, first, body = appendAs(t, h, aliceToken, alice, retry(1))
			if code != http.StatusOK || len(first) != 2 {
				t.Fatalf("alice's producer retry after mallory fenced her key: %d %s, want 200", code, body)
			}
			before = hw()
			code, again, body = appendAs(t, h, aliceToken, alice, retry(2))
			if code != http.StatusOK || len(again) != 2 || again[0] != first[0] || again[1] != first[1] || hw() != before {
				t.Fatalf("alice's next producer retry: %d %s (offsets %v, first %v; %d records → %d), want her first offsets, nothing appended",
					code, body, again, first, before, hw())
			}
		})
	}
}
