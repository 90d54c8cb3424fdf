package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/httpapi"
	"github.com/stratalog/strata/pkg/store"
)

// IncreasePartitions of the wrapped store, failing while it is down.
func (f *faultyMeta) IncreasePartitions(ctx context.Context, name string, partitions int32) (store.Topic, error) {
	if err := f.fail(); err != nil {
		return store.Topic{}, err
	}
	return f.MetaStore.(store.TopicAdminStore).IncreasePartitions(ctx, name, partitions)
}

// SetRetentionPin of the wrapped store, failing while it is down.
func (f *faultyMeta) SetRetentionPin(ctx context.Context, name string, pin time.Duration) (store.Topic, error) {
	if err := f.fail(); err != nil {
		return store.Topic{}, err
	}
	return f.MetaStore.(store.TopicAdminStore).SetRetentionPin(ctx, name, pin)
}

// SetRetention of the wrapped store, failing while it is down.
func (f *faultyMeta) SetRetention(ctx context.Context, name string, retention time.Duration) (store.Topic, error) {
	if err := f.fail(); err != nil {
		return store.Topic{}, err
	}
	return f.MetaStore.(store.RetentionStore).SetRetention(ctx, name, retention)
}

// TestTopicRetentionPin: create takes retention_pin_ms, describe and PATCH show it,
// PATCH replaces it (0 removes it), and a bad value or a pin past the deployment's
// maximum retention is 400 with nothing changed.
func TestTopicRetentionPin(t *testing.T) {
	e := newEnv(t)
	r := e.call("POST", "/v1/topics", map[string]any{"name": "p", "partitions": 1, "retention_ms": 3600000, "retention_pin_ms": 7200000}).want(t, 201)
	if r.num("retention_pin_ms") != 7200000 {
		t.Fatalf("create %s", r.raw)
	}
	if r := e.call("GET", "/v1/topics/p", nil).want(t, 200); r.num("retention_pin_ms") != 7200000 {
		t.Fatalf("describe %s", r.raw)
	}
	if r := e.call("PATCH", "/v1/topics/p", map[string]any{"retention_pin_ms": 1800000}).want(t, 200); r.num("retention_pin_ms") != 1800000 || r.num("partitions") != 1 {
		t.Fatalf("alter %s", r.raw)
	}
	r = e.call("PATCH", "/v1/topics/p", map[string]any{"retention_pin_ms": 0}).want(t, 200)
	if _, ok := r.body["retention_pin_ms"]; ok {
		t.Fatalf("a removed pin is still answered: %s", r.raw)
	}
	for _, body := range []any{
		map[string]any{"retention_pin_ms": -1}, map[string]any{"retention_pin_ms": "1"},
		map[string]any{"retention_pin_ms": int64(9223372036855)}, map[string]any{"retention_pin_ms": 1000, "partitions": 2},
	} {
		e.call("PATCH", "/v1/topics/p", body).want(t, 400, "invalid_request")
	}
	e.call("POST", "/v1/topics", map[string]any{"name": "q", "retention_pin_ms": -5}).want(t, 400, "invalid_request")
	if r := e.call("GET", "/v1/topics/p", nil).want(t, 200); r.num("partitions") != 1 || r.body["retention_pin_ms"] != nil {
		t.Fatalf("a refused alter changed the topic: %s", r.raw)
	}
	e.call("PATCH", "/v1/topics/nope", map[string]any{"retention_pin_ms": 1000}).want(t, 404, "not_found")
}

func TestAlterTopicPartitions(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 2)
	e.call("POST", "/v1/topics/t/records", appendBody(rec{value: "a", partition: ptr(1)})).want(t, 200)
	r := e.call("PATCH", "/v1/topics/t", map[string]any{"partitions": 4}).want(t, 200)
	if r.num("partitions") != 4 || r.body["name"] != "t" {
		t.Fatalf("alter %s", r.raw)
	}
	r = e.call("GET", "/v1/topics/t", nil).want(t, 200)
	if r.num("partitions") != 4 {
		t.Fatalf("describe after alter %s", r.raw)
	}
	e.call("POST", "/v1/topics/t/records", appendBody(rec{value: "b", partition: ptr(3)})).want(t, 200)
	if hw := e.hws("t"); len(hw) != 4 || hw[1] != 1 || hw[3] != 1 {
		t.Fatalf("high watermarks after alter %v", hw)
	}
	for _, body := range []any{
		map[string]any{"partitions": 4}, map[string]any{"partitions": 3}, map[string]any{"partitions": 0},
		map[string]any{"partitions": 1025}, map[string]any{}, map[string]any{"partitions": "5"}, map[string]any{"partitions": 5, "retention_ms": 1},
	} {
		e.call("PATCH", "/v1/topics/t", body).want(t, 400, "invalid_request")
	}
	e.call("PATCH", "/v1/topics/nope", map[string]any{"partitions": 4}).want(t, 404, "not_found")
	e.call("PATCH", "/v1/topics/t", `{"partitions": 5, "x": "`+strings.Repeat("a", httpapi.MaxSmallBody)+`"}`).want(t, 413, "payload_too_large")
	e.meta.down.Store(true)
	e.call("PATCH", "/v1/topics/t", map[string]any{"partitions": 8}).want(t, 503, "unavailable")
}

// The topic deletion operations of the wrapped store, failing while it is down.
func (f *faultyMeta) DeleteTopic(ctx context.Context, name string, at time.Time) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.MetaStore.(store.TopicAdminStore).DeleteTopic(ctx, name, at)
}

func (f *faultyMeta) DeletedTopics(ctx context.Context) ([]store.DeletedTopic, error) {
	if err := f.fail(); err != nil {
		return nil, err
	}
	return f.MetaStore.(store.TopicAdminStore).DeletedTopics(ctx)
}

func (f *faultyMeta) PurgeTopic(ctx context.Context, name, incarnation string) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.MetaStore.(store.TopicAdminStore).PurgeTopic(ctx, name, incarnation)
}

func TestDeleteTopic(t *testing.T) {
	e := newEnv(t)
	e.createTopic("t", 2)
	e.createTopic("keep", 1)
	e.call("POST", "/v1/topics/t/records", appendBody(rec{value: "a"})).want(t, 200)
	e.call("DELETE", "/v1/topics/t", nil).want(t, 204)
	e.call("POST", "/v1/topics/t/records", appendBody(rec{value: "b"})).want(t, 404, "not_found")
	e.call("GET", "/v1/topics/t", nil).want(t, 404, "not_found")
	r := e.call("GET", "/v1/topics", nil).want(t, 200)
	if fmt.Sprint(r.body["topics"]) != "[keep]" {
		t.Fatalf("topics after delete %s", r.raw)
	}
	e.call("DELETE", "/v1/topics/t", nil).want(t, 404, "not_found")
	e.call("DELETE", "/v1/topics/never", nil).want(t, 404, "not_found")
	// The name is free at once: created again, it is a new topic from offset 0.
	e.createTopic("t", 1)
	e.call("POST", "/v1/topics", map[string]any{"name": "t", "partitions": 1}).want(t, 409, "topic_exists")
	e.call("POST", "/v1/topics/t/records", appendBody(rec{value: "c"})).want(t, 200)
	if hw := e.hws("t"); len(hw) != 1 || hw[0] != 1 {
		t.Fatalf("high watermarks of the re-created topic %v, want [1]", hw)
	}
	e.meta.down.Store(true)
	e.call("DELETE", "/v1/topics/keep", nil).want(t, 503, "unavailable")
}

func TestAlterTopicAuth(t *testing.T) {
	e := authEnv(t)
	e.call("PATCH", "/v1/topics/orders", map[string]any{"partitions": 2}).want(t, 401, "unauthorized")
	e.call("PATCH", "/v1/topics/orders", map[string]any{"partitions": 2}, bearer("prefix-token")...).want(t, 403, "forbidden")
	e.call("PATCH", "/v1/topics/orders", map[string]any{"partitions": 2}, bearer("admin-token")...).want(t, 200)
	e.call("DELETE", "/v1/topics/payments", nil).want(t, 401, "unauthorized")
	e.call("DELETE", "/v1/topics/payments", nil, bearer("orders-token")...).want(t, 403, "forbidden")
	e.call("DELETE", "/v1/topics/payments", nil, bearer("admin-token")...).want(t, 204)
}

// TestDeleteAndAlterNeedTheirOwnOps (issue 19, item 2): a principal that may create,
// describe, append and read a topic may neither delete it nor add partitions; "delete"
// and "alter" grant exactly those.
func TestDeleteAndAlterNeedTheirOwnOps(t *testing.T) {
	a, err := httpapi.ParseAuth([]byte(`{"principals": {
		"` + tok("ci") + `": {"name": "ci", "allow": [{"resource": "topic:orders*", "ops": ["create", "describe", "append", "read"]}]},
		"` + tok("deleter") + `": {"name": "deleter", "allow": [{"resource": "topic:orders", "ops": ["delete"]}]},
		"` + tok("alterer") + `": {"name": "alterer", "allow": [{"resource": "topic:orders", "ops": ["alter"]}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, withAuth(a))
	e.call("POST", "/v1/topics", map[string]any{"name": "orders", "partitions": 1}, bearer("ci")...).want(t, 201)
	e.call("DELETE", "/v1/topics/orders", nil, bearer("ci")...).want(t, 403, "forbidden")
	e.call("PATCH", "/v1/topics/orders", map[string]any{"partitions": 2}, bearer("ci")...).want(t, 403, "forbidden")
	e.call("PATCH", "/v1/topics/orders", map[string]any{"partitions": 2}, bearer("deleter")...).want(t, 403, "forbidden")
	e.call("DELETE", "/v1/topics/orders", nil, bearer("alterer")...).want(t, 403, "forbidden")
	e.call("GET", "/v1/topics/orders", nil, bearer("ci")...).want(t, 200)
	e.call("PATCH", "/v1/topics/orders", map[string]any{"partitions": 2}, bearer("alterer")...).want(t, 200)
	e.call("DELETE", "/v1/topics/orders", nil, bearer("deleter")...).want(t, 204)
}

// FuzzAlterTopicRequest: any body gets a documented answer and never a panic, the
// partition count never falls, and a refused body changes neither it, the retention nor
// the pin.
func FuzzAlterTopicRequest(f *testing.F) {
	e := newEnv(f)
	e.createTopic("t", 2)
	for _, seed := range []string{`{"partitions": 3}`, `{"partitions": 1}`, `{"partitions": -1}`, `{"partitions": 1e9}`, `{"Partitions": 4}`, `null`, ``,
		`{"retention_pin_ms": 3600000}`, `{"retention_pin_ms": 0}`, `{"retention_pin_ms": -1}`, `{"retention_pin_ms": 9223372036855}`, `{"retention_pin_ms": 1, "partitions": 9}`,
		`{"retention_ms": 259200000}`, `{"retention_ms": -1}`, `{"retention_ms": 999}`, `{"retention_ms": -2}`, `{"retention_ms": 9223372036855}`,
		`{"retention_ms": "3d"}`, `{"retention_ms": 1000, "partitions": 3}`, `{"retention_ms": 1000, "retention_pin_ms": 0}`,
		`{"cleanup_policy": "compact,delete", "delete_retention_ms": 1000}`, `{"cleanup_policy": "delete"}`, `{"cleanup_policy": "kompact"}`,
		`{"min_compaction_lag_ms": 10, "max_compaction_lag_ms": 5}`, `{"max_compaction_lag_ms": -1}`, `{"cleanup_policy": "compact", "retention_ms": 1000}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		before, err := e.log.DescribeTopic(context.Background(), "t")
		if err != nil {
			t.Fatal(err)
		}
		req, w := serveFuzz(e, "PATCH", "/v1/topics/t", body)
		checkFuzzAnswer(t, req, w)
		after, err := e.log.DescribeTopic(context.Background(), "t")
		if err != nil {
			t.Fatal(err)
		}
		if after.Topic.Partitions < before.Topic.Partitions || (w.Code >= 400 && after.Topic.Partitions != before.Topic.Partitions) {
			t.Fatalf("%q (%d) moved the count %d -> %d", body, w.Code, before.Topic.Partitions, after.Topic.Partitions)
		}
		if w.Code >= 400 && after.Topic.RetentionPin != before.Topic.RetentionPin {
			t.Fatalf("%q (%d) moved the pin %s -> %s", body, w.Code, before.Topic.RetentionPin, after.Topic.RetentionPin)
		}
		if w.Code >= 400 && after.Topic.Retention != before.Topic.Retention {
			t.Fatalf("%q (%d) moved the retention %s -> %s", body, w.Code, before.Topic.Retention, after.Topic.Retention)
		}
		if w.Code >= 400 && after.Topic.CleanupSettings() != before.Topic.CleanupSettings() {
			t.Fatalf("%q (%d) moved the cleanup settings %+v -> %+v", body, w.Code, before.Topic.CleanupSettings(), after.Topic.CleanupSettings())
		}
		if before.Topic.Compacted() && !after.Topic.Compacted() {
			t.Fatalf("%q (%d) turned compaction off", body, w.Code)
		}
	})
}
