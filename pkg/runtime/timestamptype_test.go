package runtime_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
)

// TestTimestampTypeContract: on the assembled server, POST /v1/topics takes
// "timestamp_type": "log_append_time", answers it, and such a topic replaces a record's
// timestamp_ms with its append time; a topic left out is "create_time" and keeps it;
// another value is 400 and creates nothing.
func TestTimestampTypeContract(t *testing.T) {
	ctx := context.Background()
	rt, err := runtime.New(ctx, runtime.Config{Node: node.Config{DataDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	h := rt.Handler()
	do := func(method, path, body string) (int, string) {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code, w.Body.String()
	}
	for _, c := range []struct{ body, want string }{
		{`{"name": "lat", "partitions": 1, "timestamp_type": "log_append_time"}`, "log_append_time"},
		{`{"name": "ct", "partitions": 1}`, "create_time"},
	} {
		code, body := do("POST", "/v1/topics", c.body)
		var got struct {
			TimestampType string `json:"timestamp_type"`
		}
		if err := json.Unmarshal([]byte(body), &got); code != 201 || err != nil || got.TimestampType != c.want {
			t.Fatalf("create %s: %d %s, want 201 with timestamp_type %s", c.body, code, body, c.want)
		}
	}
	if code, body := do("GET", "/v1/topics/lat", ""); code != 200 || !strings.Contains(body, `"timestamp_type":"log_append_time"`) {
		t.Fatalf("describe: %d %s", code, body)
	}
	if code, _ := do("POST", "/v1/topics", `{"name": "bad", "timestamp_type": "LogAppendTime"}`); code != 400 {
		t.Fatalf("bad timestamp_type: %d, want 400", code)
	}
	if code, _ := do("GET", "/v1/topics/bad", ""); code != 404 {
		t.Fatalf("topic of a refused create: %d, want 404", code)
	}
	before := time.Now().UnixMilli()
	for topic, wantKept := range map[string]bool{"lat": false, "ct": true} {
		if code, body := do("POST", "/v1/topics/"+topic+"/records", `{"records": [{"value": "", "timestamp_ms": 1000}]}`); code != 200 {
			t.Fatalf("append %s: %d %s", topic, code, body)
		}
		_, body := do("GET", "/v1/topics/"+topic+"/partitions/0/records?offset=0", "")
		var poll struct {
			Records []struct {
				TimestampMs int64 `json:"timestamp_ms"`
			} `json:"records"`
		}
		if err := json.Unmarshal([]byte(body), &poll); err != nil || len(poll.Records) != 1 {
			t.Fatalf("poll %s: %s", topic, body)
		}
		if ts := poll.Records[0].TimestampMs; (ts == 1000) != wantKept || (!wantKept && ts < before) {
			t.Fatalf("%s: timestamp_ms %d (producer's 1000 kept: want %v)", topic, ts, wantKept)
		}
	}
}
