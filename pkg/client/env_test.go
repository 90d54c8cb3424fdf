package client_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
)

// TestNewReadsTheEnvironment: New takes STRATA_URL for an empty URL (a bare host:port on
// loopback as http, as the CLI does) and STRATA_TOKEN without WithToken, against a real
// server with auth on; an explicit URL or WithToken, even WithToken(""), wins.
func TestNewReadsTheEnvironment(t *testing.T) {
	ctx := context.Background()
	const good = "env-token-0123456789abcdef"
	authFile := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(authFile, []byte(`{"principals": {"`+good+`": {"name": "svc", "allow": [
		{"resource": "topic:*", "ops": ["create", "describe"]}]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(ctx, runtime.Config{Node: node.Config{DataDir: t.TempDir()}, AuthFile: authFile, RetentionInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	srv := httptest.NewServer(rt.Handler())
	t.Cleanup(srv.Close)
	const dead = "http://127.0.0.1:1"
	for _, tc := range []struct {
		name             string
		envURL, envToken string
		url              string
		opts             []client.Option
		wantNew          string // a part of New's error; "" when New succeeds
		want             error  // ListTopics' error
	}{
		{name: "url and token from env", envURL: srv.URL, envToken: good},
		{name: "env url without scheme", envURL: strings.TrimPrefix(srv.URL, "http://"), envToken: good},
		{name: "explicit url wins", envURL: dead, envToken: good, url: srv.URL},
		{name: "explicit token wins", envURL: srv.URL, envToken: "wrong-0123456789abcdefghij", opts: []client.Option{client.WithToken(good)}},
		{name: "WithToken empty sends none", envURL: srv.URL, envToken: good, opts: []client.Option{client.WithToken("")}, want: client.ErrUnauthorized},
		{name: "no token anywhere", envURL: srv.URL, want: client.ErrUnauthorized},
		{name: "no url anywhere", envToken: good, wantNew: client.EnvURL},
		{name: "bad env url", envURL: "ftp://x", wantNew: "want http(s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(client.EnvURL, tc.envURL)
			t.Setenv(client.EnvToken, tc.envToken)
			c, err := client.New(tc.url, tc.opts...)
			if tc.wantNew != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantNew) {
					t.Fatalf("New: %v, want an error naming %q", err, tc.wantNew)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.ListTopics(ctx); !errors.Is(err, tc.want) {
				t.Fatalf("ListTopics: %v, want %v", err, tc.want)
			}
		})
	}
}
