package client_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
)

// TestHeaderListRoundTrips: a record with a repeated header name and a null header
// value, appended through the SDK (JSON Append and the Producer's binary blocks), reads
// back identical, in order, through the SDK's Poll and through a raw HTTP JSON poll's
// "header_list" on the assembled server.
func TestHeaderListRoundTrips(t *testing.T) {
	ctx := context.Background()
	rt, err := runtime.New(ctx, runtime.Config{Node: node.Config{DataDir: t.TempDir()}, RetentionInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	srv := httptest.NewServer(rt.Handler())
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL, client.WithToken(""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, "h", client.TopicConfig{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	want := []client.Header{{Key: "trace", Value: []byte("1")}, {Key: "trace", Value: nil}, {Key: "a", Value: []byte{}}, {Key: "trace", Value: []byte("3")}}
	rec := client.Record{Key: []byte("k"), Value: []byte("v"), HeaderList: want}
	if _, err := c.Append(ctx, "h", []client.Record{rec}, client.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := client.NewProducer(ctx, c, "h", client.ProducerConfig{Linger: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Send(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}

	same := func(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }
	res, err := c.Poll(ctx, "h", 0, 0, client.PollOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != 2 {
		t.Fatalf("SDK poll: %d records, want 2", len(res.Records))
	}
	for i, r := range res.Records {
		if len(r.HeaderList) != len(want) {
			t.Fatalf("SDK poll record %d: headers %+v, want %+v", i, r.HeaderList, want)
		}
		for j, h := range want {
			if g := r.HeaderList[j]; g.Key != h.Key || !same(g.Value, h.Value) {
				t.Errorf("SDK poll record %d header %d: %q=%q (nil %v), want %q=%q (nil %v)", i, j, g.Key, g.Value, g.Value == nil, h.Key, h.Value, h.Value == nil)
			}
		}
		if got := string(r.Headers["trace"]); got != "3" {
			t.Errorf("SDK poll record %d: Headers[trace] = %q, want the last value 3", i, got)
		}
	}

	req, err := http.NewRequestWithContext(ctx, "GET", srv.URL+"/v1/topics/h/partitions/0/records?offset=0", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("raw poll: %d %s", resp.StatusCode, body)
	}
	var raw struct {
		Records []struct {
			HeaderList []struct {
				Key   string  `json:"key"`
				Value *string `json:"value"`
			} `json:"header_list"`
		} `json:"records"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw.Records) != 2 {
		t.Fatalf("raw poll: %d records, want 2: %s", len(raw.Records), body)
	}
	for i, r := range raw.Records {
		if len(r.HeaderList) != len(want) {
			t.Fatalf("raw poll record %d: header_list %s", i, body)
		}
		for j, h := range want {
			g := r.HeaderList[j]
			var v []byte
			if g.Value != nil {
				if v, err = base64.StdEncoding.DecodeString(*g.Value); err != nil {
					t.Fatal(err)
				}
				if v == nil {
					v = []byte{}
				}
			}
			if g.Key != h.Key || !same(v, h.Value) {
				t.Errorf("raw poll record %d header %d: %q=%v, want %q=%q (nil %v)", i, j, g.Key, g.Value, h.Key, h.Value, h.Value == nil)
			}
		}
	}
}
