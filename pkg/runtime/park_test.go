package runtime_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
	"github.com/stratalog/strata/pkg/wire"
)

func parkCall(t *testing.T, h http.Handler, method, path, body string) (int, []byte) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w.Code, w.Body.Bytes()
}

// TestParkedKeysContract drives issue 22.1's routes through the assembled server: the
// on_failure setting (validated), the parked list a consumer's parking fills, and a
// release that the next run replays before unparking the key.
func TestParkedKeysContract(t *testing.T) {
	ctx := context.Background()
	rt, err := runtime.New(ctx, runtime.Config{Node: node.Config{DataDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	h := rt.Handler()
	if code, body := parkCall(t, h, "POST", "/v1/topics", `{"name": "orders", "partitions": 1}`); code != 201 {
		t.Fatalf("create topic: %d %s", code, body)
	}
	if code, body := parkCall(t, h, "PUT", "/v1/groups/billing/settings", `{"reset_policy": "earliest", "max_attempts": 1, "on_failure": "retry"}`); code != 400 {
		t.Fatalf("on_failure retry: %d %s, want 400", code, body)
	}
	code, body := parkCall(t, h, "PUT", "/v1/groups/billing/settings", `{"reset_policy": "earliest", "max_attempts": 1, "on_failure": "park"}`)
	if code != 200 || !bytes.Contains(body, []byte(`"on_failure":"park"`)) {
		t.Fatalf("settings: %d %s", code, body)
	}
	if _, err := rt.Log().Partitions(ctx, wire.ParkingTopic("billing")); err != nil {
		t.Fatalf("the parking topic was not created: %v", err)
	}
	if code, body := parkCall(t, h, "GET", "/v1/groups/billing/parked", ""); code != 200 || strings.TrimSpace(string(body)) != `{"parked":[]}` {
		t.Fatalf("parked before any failure: %d %s", code, body)
	}
	p := int32(0)
	if _, err := rt.Log().Append(ctx, "orders", []log.Record{{Key: []byte("o-1"), Value: []byte("x"), Partition: &p},
		{Key: []byte("o-2"), Value: []byte("y"), Partition: &p}, {Key: []byte("o-1"), Value: []byte("z"), Partition: &p}}, log.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	var healed atomic.Bool
	var replayed []int64
	run := func(member string) consumer.Stats {
		c, err := consumer.New(rt.Log(), rt.Coordinator(), consumer.Config{Group: "billing", Topic: "orders", Member: member,
			PollWait: 10 * time.Millisecond, Handler: func(_ context.Context, r consumer.Record) error {
				if string(r.Key) == "o-1" {
					if !healed.Load() {
						return errors.New("card expired")
					}
					replayed = append(replayed, r.Offset)
				}
				return nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		st, err := c.Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if st := run("m-1"); st.Parked != 2 || st.Handled != 1 {
		t.Fatalf("first run %+v, want o-1's two records parked and o-2 handled", st)
	}
	code, body = parkCall(t, h, "GET", "/v1/groups/billing/parked", "")
	var list wire.ParkedList
	if err := json.Unmarshal(body, &list); code != 200 || err != nil || len(list.Parked) != 1 {
		t.Fatalf("parked: %d %s %v", code, body, err)
	}
	k := base64.StdEncoding.EncodeToString([]byte("o-1"))
	if got := list.Parked[0]; got.Topic != "orders" || got.Partition != 0 || got.Key != k || got.FirstOffset != 0 || got.Records != 2 ||
		got.Error != "card expired" || got.ParkedAtMs == 0 || got.ReleaseRequestedAtMs != nil {
		t.Fatalf("parked row %+v", got)
	}
	for _, c := range []struct {
		body string
		code int
	}{
		{`{"topic": "orders"}`, 400},
		{`{"topic": "orders", "key": "%%%"}`, 400},
		{`{"topic": "orders", "key": "` + k + `", "extra": 1}`, 400},
		{`{"topic": "orders", "key": "` + base64.StdEncoding.EncodeToString([]byte("o-9")) + `"}`, 404},
		{`{"topic": "other", "key": "` + k + `"}`, 404},
	} {
		if code, body := parkCall(t, h, "POST", "/v1/groups/billing/parked/release", c.body); code != c.code {
			t.Errorf("release %s: %d %s, want %d", c.body, code, body, c.code)
		}
	}
	code, body = parkCall(t, h, "POST", "/v1/groups/billing/parked/release", `{"topic": "orders", "key": "`+k+`"}`)
	if code != 200 || !bytes.Contains(body, []byte(`"release_requested_at_ms":`)) {
		t.Fatalf("release: %d %s", code, body)
	}
	healed.Store(true)
	if st := run("m-2"); st.Replayed != 2 {
		t.Fatalf("release run %+v, want 2 replayed", st)
	}
	if len(replayed) != 2 || replayed[0] != 0 || replayed[1] != 2 {
		t.Fatalf("replayed %v, want [0 2]", replayed)
	}
	if code, body := parkCall(t, h, "GET", "/v1/groups/billing/parked", ""); code != 200 || strings.TrimSpace(string(body)) != `{"parked":[]}` {
		t.Fatalf("parked after release: %d %s", code, body)
	}
}
