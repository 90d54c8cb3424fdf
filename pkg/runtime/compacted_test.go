package runtime_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
)

// TestCompactedTopicContract: on the assembled server a topic is created compacted with
// its settings (answered by create and describe), refuses a keyless record with a 400
// naming the policy, and GET /v1/topics/{topic}/keys/{key} answers each acknowledged
// overwrite at once, a tombstone as 404 key_deleted with its offset, a key never
// written as 404 not_found; keys are path segments (percent-encoded) or URL-safe base64
// (encoding=base64). PATCH turns compaction on for a delete topic and refuses turning it
// off; a bad policy is 400 and creates nothing.
func TestCompactedTopicContract(t *testing.T) {
	ctx := context.Background()
	rt, err := runtime.New(ctx, runtime.Config{Node: node.Config{DataDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	h := rt.Handler()
	do := func(method, path, body string) (int, string) {
		t.Helper()
		code, out := parkCall(t, h, method, path, body)
		return code, string(out)
	}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	want := func(what string, code int, body string, wantCode int, wantIn ...string) {
		t.Helper()
		if code != wantCode {
			t.Fatalf("%s: %d %s, want %d", what, code, body, wantCode)
		}
		for _, s := range wantIn {
			if !strings.Contains(body, s) {
				t.Fatalf("%s: %d %s, want it to hold %s", what, code, body, s)
			}
		}
	}
	code, body := do("POST", "/v1/topics", `{"name": "orders", "partitions": 2, "cleanup_policy": "compact", "delete_retention_ms": 3600000, "min_compaction_lag_ms": 1000}`)
	want("create", code, body, 201, `"cleanup_policy":"compact"`, `"delete_retention_ms":3600000`, `"min_compaction_lag_ms":1000`)
	code, body = do("GET", "/v1/topics/orders", "")
	want("describe", code, body, 200, `"cleanup_policy":"compact"`, `"delete_retention_ms":3600000`)
	code, body = do("POST", "/v1/topics", `{"name": "bad", "cleanup_policy": "compacted"}`)
	want("bad policy", code, body, 400, "cleanup_policy")
	code, _ = do("GET", "/v1/topics/bad", "")
	want("topic of a refused create", code, "", 404)

	code, body = do("POST", "/v1/topics/orders/records", `{"records": [{"key": "`+b64("o-1")+`", "value": "`+b64("x")+`"}, {"value": "`+b64("keyless")+`"}]}`)
	want("keyless append", code, body, 400, "cleanup.policy=compact", "without key")
	code, body = do("GET", "/v1/topics/orders/keys/o-1", "")
	want("key of a refused append", code, body, 404, `"not_found"`)

	for _, v := range []string{"new", "paid", "shipped"} {
		code, body = do("POST", "/v1/topics/orders/records", `{"records": [{"key": "`+b64("o-42")+`", "value": "`+b64(v)+`", "headers": {"by": "`+b64("api")+`"}}]}`)
		want("append "+v, code, body, 200)
		code, body = do("GET", "/v1/topics/orders/keys/o-42", "")
		want("lookup after "+v, code, body, 200, `"value":"`+b64(v)+`"`, `"key":"`+b64("o-42")+`"`, `"headers":{"by":"`+b64("api")+`"}`)
	}
	var kr struct {
		Partition int32 `json:"partition"`
		Offset    int64 `json:"offset"`
	}
	if err := json.Unmarshal([]byte(body), &kr); err != nil || kr.Offset != 2 {
		t.Fatalf("lookup answer %s: offset %d, %v; want 2", body, kr.Offset, err)
	}
	code, body = do("POST", "/v1/topics/orders/records", `{"records": [{"key": "`+b64("o-42")+`", "value": null}]}`)
	want("tombstone", code, body, 200)
	code, body = do("GET", "/v1/topics/orders/keys/o-42", "")
	want("lookup after the tombstone", code, body, 404, `"code":"key_deleted"`, `"offset":3`, `"deleted_at_ms":`)
	code, body = do("GET", "/v1/topics/orders/keys/o-99", "")
	want("key never written", code, body, 404, `"code":"not_found"`)

	odd := "a/b c\x00"
	code, body = do("POST", "/v1/topics/orders/records", `{"records": [{"key": "`+b64(odd)+`", "value": "`+b64("odd")+`"}]}`)
	want("append an odd key", code, body, 200)
	code, body = do("GET", "/v1/topics/orders/keys/a%2Fb%20c%00", "")
	want("lookup by a percent-encoded key", code, body, 200, `"value":"`+b64("odd")+`"`)
	code, body = do("GET", "/v1/topics/orders/keys/"+base64.RawURLEncoding.EncodeToString([]byte(odd))+"?encoding=base64", "")
	want("lookup by a base64 key", code, body, 200, `"value":"`+b64("odd")+`"`)
	code, body = do("GET", "/v1/topics/orders/keys/o-42?encoding=hex", "")
	want("unknown encoding", code, body, 400)
	code, body = do("GET", "/v1/topics/orders/keys/o-42?partition=9", "")
	want("partition out of range", code, body, 400)

	code, body = do("PATCH", "/v1/topics/orders", `{"cleanup_policy": "delete"}`)
	want("compact to delete", code, body, 400, "compact")
	code, body = do("PATCH", "/v1/topics/orders", `{"cleanup_policy": "compact,delete", "max_compaction_lag_ms": 60000}`)
	want("compact to compact,delete", code, body, 200, `"cleanup_policy":"compact,delete"`, `"max_compaction_lag_ms":60000`, `"delete_retention_ms":3600000`)
	code, body = do("PATCH", "/v1/topics/orders", `{"cleanup_policy": "compact", "partitions": 4}`)
	want("two changes", code, body, 400)

	code, body = do("POST", "/v1/topics", `{"name": "plain", "partitions": 1}`)
	want("create plain", code, body, 201, `"cleanup_policy":"delete"`)
	code, body = do("GET", "/v1/topics/plain/keys/k", "")
	want("lookup on a delete topic", code, body, 400, "not compacted")
	code, body = do("PATCH", "/v1/topics/plain", `{"cleanup_policy": "compact"}`)
	want("delete to compact", code, body, 200, `"cleanup_policy":"compact"`)
	code, body = do("POST", "/v1/topics/plain/records", `{"records": [{"value": "`+b64("keyless")+`"}]}`)
	want("keyless after compaction on", code, body, 400, "without key")
}
