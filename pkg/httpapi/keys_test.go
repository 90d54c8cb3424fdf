package httpapi_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/stratalog/strata/pkg/store"
)

// SetCleanup of the wrapped store, failing while it is down.
func (f *faultyMeta) SetCleanup(ctx context.Context, name string, c store.TopicCleanup) (store.Topic, error) {
	if err := f.fail(); err != nil {
		return store.Topic{}, err
	}
	return f.MetaStore.(store.CleanupStore).SetCleanup(ctx, name, c)
}

// PutKey of the wrapped store, failing while it is down.
func (f *faultyMeta) PutKey(ctx context.Context, e store.KeyEntry) (bool, bool, error) {
	if err := f.fail(); err != nil {
		return false, false, err
	}
	return f.MetaStore.(store.KeyIndexStore).PutKey(ctx, e)
}

// GetKey of the wrapped store, failing while it is down.
func (f *faultyMeta) GetKey(ctx context.Context, topic string, partition int32, key []byte) (store.KeyEntry, error) {
	if err := f.fail(); err != nil {
		return store.KeyEntry{}, err
	}
	return f.MetaStore.(store.KeyIndexStore).GetKey(ctx, topic, partition, key)
}

// DeleteKey of the wrapped store, failing while it is down.
func (f *faultyMeta) DeleteKey(ctx context.Context, topic string, partition int32, key []byte, offset int64) (bool, error) {
	if err := f.fail(); err != nil {
		return false, err
	}
	return f.MetaStore.(store.KeyIndexStore).DeleteKey(ctx, topic, partition, key, offset)
}

// TestKeyLookup: GET /v1/topics/{topic}/keys/{key} answers a compacted topic's key's
// latest record, 404 key_deleted for a tombstone, 404 not_found for a key never
// written or an unknown topic, 400 for a topic that is not compacted or a bad
// parameter, 403 without read on the topic and 503 while the store is down.
func TestKeyLookup(t *testing.T) {
	e := newEnv(t)
	e.call("POST", "/v1/topics", map[string]any{"name": "kv", "partitions": 2, "cleanup_policy": "compact"}).want(t, 201)
	e.createTopic("plain", 1)
	key := base64.StdEncoding.EncodeToString([]byte("o-42"))
	for _, v := range []string{"bmV3", "cGFpZA=="} {
		e.call("POST", "/v1/topics/kv/records", map[string]any{"records": []any{map[string]any{"key": key, "value": v}}}).want(t, 200)
		r := e.call("GET", "/v1/topics/kv/keys/o-42", nil).want(t, 200)
		if r.body["value"] != v || r.body["key"] != key {
			t.Fatalf("lookup: %s, want value %s", r.raw, v)
		}
	}
	e.call("POST", "/v1/topics/kv/records", map[string]any{"records": []any{map[string]any{"key": key, "value": nil}}}).want(t, 200)
	r := e.call("GET", "/v1/topics/kv/keys/o-42", nil).want(t, 404, "key_deleted")
	if errObj, _ := r.body["error"].(map[string]any); errObj["offset"] != float64(2) {
		t.Fatalf("tombstone answer %s, want offset 2", r.raw)
	}
	e.call("GET", "/v1/topics/kv/keys/o-7", nil).want(t, 404, "not_found")
	e.call("GET", "/v1/topics/nope/keys/o-7", nil).want(t, 404, "not_found")
	e.call("GET", "/v1/topics/plain/keys/o-7", nil).want(t, 400, "invalid_request")
	e.call("GET", "/v1/topics/kv/keys/o-42?partition=x", nil).want(t, 400, "invalid_request")
	e.call("GET", "/v1/topics/kv/keys/o@@?encoding=base64", nil).want(t, 400, "invalid_request")
	e.call("POST", "/v1/topics/kv/records", map[string]any{"records": []any{map[string]any{"value": "eA=="}}}).want(t, 400, "invalid_request")
	e.meta.down.Store(true)
	e.call("GET", "/v1/topics/kv/keys/o-42", nil).want(t, 503, "unavailable")

	a := authEnv(t)
	a.call("GET", "/v1/topics/orders/keys/o-42", nil, bearer("none-token")...).want(t, 403, "forbidden")
}

// FuzzKeyLookup: any key segment and query on the key lookup is answered with a
// contract answer, never a panic, and changes nothing.
func FuzzKeyLookup(f *testing.F) {
	e := newEnv(f)
	e.call("POST", "/v1/topics", map[string]any{"name": "kv", "partitions": 2, "cleanup_policy": "compact"}).want(f, 201)
	e.call("POST", "/v1/topics/kv/records", map[string]any{"records": []any{map[string]any{"key": "aw==", "value": "dg=="}}}).want(f, 200)
	for _, seed := range []string{"k", "k?partition=1", "aw?encoding=base64", "aw==?encoding=base64", "%00", "a%2Fb", "k?partition=-1", "k?encoding=", "k?partition=1&partition=2"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, tail string) {
		if strings.ContainsAny(tail, " #") {
			return
		}
		if _, err := url.ParseRequestURI("/v1/topics/kv/keys/" + tail); err != nil {
			return
		}
		before, err := e.log.DescribeTopic(context.Background(), "kv")
		if err != nil {
			t.Fatal(err)
		}
		req, w := serveFuzz(e, "GET", "/v1/topics/kv/keys/"+tail, nil)
		checkFuzzAnswer(t, req, w)
		after, err := e.log.DescribeTopic(context.Background(), "kv")
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(before.Partitions) != fmt.Sprint(after.Partitions) {
			t.Fatalf("a key lookup changed the partitions %v -> %v", before.Partitions, after.Partitions)
		}
	})
}
