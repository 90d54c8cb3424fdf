package runtime_test

import (
	"bytes"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestAccessLog: one line per request with method, path, status, bytes and duration,
// refused requests included, and neither the token nor the query in it.
func TestAccessLog(t *testing.T) {
	var log lockedBuffer
	rt, _, _ := start(t, runtime.Config{Node: node.Config{DataDir: t.TempDir()}, AccessLog: &log, Console: true})
	for _, c := range []struct{ method, path, token string }{
		{"GET", "/v1/health", "secret-token-0123456789"},
		{"GET", "/v1/topics/nosuch/partitions/0/records?offset=5&secret=hunter2", ""},
		{"GET", "/console/", ""},
	} {
		req, _ := http.NewRequest(c.method, rt.URL()+c.path, nil)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	out := log.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := []*regexp.Regexp{
		regexp.MustCompile(`^\S+Z GET /v1/health 200 [1-9]\d*B \S+s$`),
		regexp.MustCompile(`^\S+Z GET /v1/topics/nosuch/partitions/0/records 400 [1-9]\d*B \S+s$`),
		regexp.MustCompile(`^\S+Z GET /console/ 200 [1-9]\d*B \S+s$`),
	}
	if len(lines) != len(want) {
		t.Fatalf("access log has %d lines, want %d:\n%s", len(lines), len(want), out)
	}
	for i, re := range want {
		if !re.MatchString(lines[i]) {
			t.Errorf("line %d %q does not match %s", i, lines[i], re)
		}
	}
	for _, secret := range []string{"secret-token", "hunter2", "offset=5"} {
		if strings.Contains(out, secret) {
			t.Errorf("the access log holds %q:\n%s", secret, out)
		}
	}
}
