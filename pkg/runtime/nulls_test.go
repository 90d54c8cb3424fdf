package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
)

// TestNullValuesAndHeaderListContract: on the assembled server, an append takes
// "value": null (a tombstone) and headers as an array of {key, value} entries (in order,
// repeated names, null values); a JSON poll answers null values as null, and adds
// "header_list" exactly where the "headers" object loses something, while the object
// form is unchanged; the SDK's JSON append, its Producer's blocks and its poll keep the
// same records apart.
func TestNullValuesAndHeaderListContract(t *testing.T) {
	ctx := context.Background()
	rt, err := runtime.New(ctx, runtime.Config{Node: node.Config{DataDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	for _, name := range []string{"t", "sdk"} {
		if _, err := rt.Log().CreateTopic(ctx, name, 1, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
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
	code, body := do("POST", "/v1/topics/t/records", `{"records": [
		{"key": "aw==", "value": null},
		{"key": "aw==", "value": ""},
		{"value": "dg==", "headers": [{"key": "z", "value": null}, {"key": "a", "value": ""}, {"key": "z", "value": "Mg=="}]},
		{"value": "dg==", "headers": {"b": "MQ==", "a": "Mg=="}},
		{"value": "dg==", "headers": [{"key": "a", "value": "MQ=="}, {"key": "b", "value": "Mg=="}]}]}`)
	if code != 200 {
		t.Fatalf("append: %d %s", code, body)
	}
	code, body = do("GET", "/v1/topics/t/partitions/0/records?offset=0", "")
	if code != 200 {
		t.Fatalf("poll: %d %s", code, body)
	}
	var got struct {
		Records []map[string]json.RawMessage `json:"records"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	want := []map[string]string{
		{"value": `null`, "headers": `{}`},
		{"value": `""`, "headers": `{}`},
		{"value": `"dg=="`, "headers": `{"a":"","z":"Mg=="}`,
			"header_list": `[{"key":"z","value":null},{"key":"a","value":""},{"key":"z","value":"Mg=="}]`},
		{"value": `"dg=="`, "headers": `{"a":"Mg==","b":"MQ=="}`},
		{"value": `"dg=="`, "headers": `{"a":"MQ==","b":"Mg=="}`},
	}
	if len(got.Records) != len(want) {
		t.Fatalf("%d records, want %d: %s", len(got.Records), len(want), body)
	}
	for i, w := range want {
		r := got.Records[i]
		for _, m := range []string{"value", "headers", "header_list"} {
			if g, ok := r[m]; string(g) != w[m] || ok != (w[m] != "") {
				t.Errorf("record %d: %s = %s, want %s", i, m, g, w[m])
			}
		}
	}

	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	hl := []client.Header{{Key: "z", Value: nil}, {Key: "a", Value: []byte{}}, {Key: "z", Value: []byte("2")}}
	sent := []client.Record{
		{Key: []byte("k"), Value: nil},
		{Key: []byte("k"), Value: []byte{}},
		{Value: []byte("v"), HeaderList: hl},
	}
	if _, err := c.Append(ctx, "sdk", sent, client.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := client.NewProducer(ctx, c, "sdk", client.ProducerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range sent {
		if _, err := p.Send(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := c.Poll(ctx, "sdk", 0, 0, client.PollOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != 2*len(sent) {
		t.Fatalf("%d records, want %d", len(res.Records), 2*len(sent))
	}
	eq := func(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }
	for i, r := range res.Records {
		w := sent[i%len(sent)]
		if !eq(r.Value, w.Value) || len(r.HeaderList) != len(w.HeaderList) {
			t.Fatalf("record %d: %+v, want %+v", i, r, w)
		}
		for j, hd := range w.HeaderList {
			if g := r.HeaderList[j]; g.Key != hd.Key || !eq(g.Value, hd.Value) {
				t.Fatalf("record %d header %d: %q=%q (nil %v), want %q=%q", i, j, g.Key, g.Value, g.Value == nil, hd.Key, hd.Value)
			}
		}
	}
}
