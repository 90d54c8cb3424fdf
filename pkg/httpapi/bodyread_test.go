package httpapi_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/httpapi"
)

// TestSlowBodyAnswered408: on every route that takes a body, a body that stops
// arriving one byte short is answered 408 with the contract's error body (code
// unavailable) once its idle bound passes, and the connection is closed; a body that
// arrives whole on the same server is answered as usual.
func TestSlowBodyAnswered408(t *testing.T) {
	e := newEnv(t, func(c *httpapi.Config) { c.BodyRead = httpapi.BodyReadLimit{Idle: 100 * time.Millisecond} })
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	for _, rt := range everyDocumentedRoute {
		if rt.body == nil {
			continue
		}
		body, err := json.Marshal(rt.body)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", rt.method, rt.path, len(body)+1, body)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s %s: %v", rt.method, rt.path, err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var got struct {
			Error struct{ Code, Message string }
		}
		if resp.StatusCode != http.StatusRequestTimeout || json.Unmarshal(raw, &got) != nil || got.Error.Code != "unavailable" ||
			!strings.Contains(got.Error.Message, "did not arrive in time") || !resp.Close {
			t.Errorf("%s %s with a stalled body: %d (close %v) %s, want 408 unavailable and the connection closed", rt.method, rt.path, resp.StatusCode, resp.Close, raw)
		}
		_ = conn.Close()
	}
	resp, err := http.Post(srv.URL+"/v1/topics", "application/json", strings.NewReader(`{"name": "whole", "partitions": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("a whole body on the same server: %d, want 201", resp.StatusCode)
	}
}
