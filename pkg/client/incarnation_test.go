package client_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/client"
)

// TestMemberCallsSendLeaseIncarnation: a member call given a TopicRef sends the name in
// the path and the incarnation beside it (body member or query parameter); given a bare
// name it sends no incarnation at all, so servers that predate the field (which refuse
// unknown members) answer as before.
func TestMemberCallsSendLeaseIncarnation(t *testing.T) {
	type seen struct{ path, query, incarnation string }
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(b, &body)
		inc, _ := body["incarnation"].(string)
		if _, ok := body["incarnation"]; ok && inc == "" {
			inc = "<present but not a string>"
		}
		mu.Lock()
		got = append(got, seen{r.URL.EscapedPath(), r.URL.RawQuery, inc})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/lease") && r.Method == http.MethodPost:
			_, _ = io.WriteString(w, `{"generation": 1, "lease_expires_at_ms": 1, "committed_offset": null, "incarnation": "abc"}`)
		case strings.HasSuffix(r.URL.Path, "/commit"):
			_, _ = io.WriteString(w, `{"committed_offset": 1}`)
		case strings.HasSuffix(r.URL.Path, "/records"):
			_, _ = io.WriteString(w, `{"records": [], "next_offset": 0, "high_watermark": 0, "log_start_offset": 0}`)
		case r.Method == http.MethodGet:
			_, _ = io.WriteString(w, `{"parked": []}`)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	defer srv.Close()
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct{ topic, want string }{{client.TopicRef("t", "abc"), "abc"}, {client.TopicRef("t", ""), ""}} {
		got = nil
		l, err := c.RenewLease(ctx, "g", tc.topic, 0, "m", 1, time.Second)
		if err != nil || l.Incarnation != "abc" {
			t.Fatalf("renew: %+v, %v; want the answer's incarnation", l, err)
		}
		calls := []error{
			c.Release(ctx, "g", tc.topic, 0, "m", 1),
			func() error { _, err := c.Commit(ctx, "g", tc.topic, 0, "m", 1, 1); return err }(),
			c.PutParked(ctx, "g", tc.topic, 0, "m", 1, client.ParkedRow{Key: []byte("k"), Records: 1, ParkOffset: -1}),
			c.Unpark(ctx, "g", tc.topic, 0, "m", 1, []byte("k")),
			func() error { _, err := c.PartitionParked(ctx, "g", tc.topic, 0); return err }(),
			func() error { _, err := c.Poll(ctx, tc.topic, 0, 0, client.PollOptions{}); return err }(),
		}
		for i, err := range calls {
			if err != nil {
				t.Fatalf("call %d on %q: %v", i, tc.topic, err)
			}
		}
		for _, s := range got {
			if strings.Contains(s.path, "%23") || strings.Contains(s.path, "#") {
				t.Errorf("%s: the path names the incarnation", s.path)
			}
			inc := s.incarnation
			if q := s.query; strings.Contains(q, "incarnation=") {
				inc = q[strings.Index(q, "incarnation=")+len("incarnation="):]
				inc, _, _ = strings.Cut(inc, "&")
			}
			if inc != tc.want {
				t.Errorf("%s?%s sent incarnation %q, want %q", s.path, s.query, inc, tc.want)
			}
		}
		if len(got) != 7 {
			t.Fatalf("%d requests, want 7", len(got))
		}
	}
}
