package awstest

import (
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/stratalog/strata/pkg/deploy"
)

// recorder is a testing.TB that records Skipf and Fatalf and stops the calling goroutine's
// Endpoint call by panicking, as the real methods stop the test.
type recorder struct {
	testing.TB
	skipped, failed string
}

type stopped struct{}

func (r *recorder) Helper() {}
func (r *recorder) Skipf(format string, args ...any) {
	r.skipped = fmt.Sprintf(format, args...)
	panic(stopped{})
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	panic(stopped{})
}

func runEndpoint(t *testing.T) (ep string, r *recorder) {
	r = &recorder{TB: t}
	defer func() {
		if v := recover(); v != nil {
			if _, ok := v.(stopped); !ok {
				panic(v)
			}
		}
	}()
	return Endpoint(r), r
}

func TestEndpoint(t *testing.T) {
	// A listener that accepts, and a port where nothing listens (closed right away).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()

	for _, tc := range []struct {
		name, endpoint, require string
		wantOK, wantSkip        bool
		wantFail                string
	}{
		{name: "answering", endpoint: "http://" + ln.Addr().String(), wantOK: true},
		{name: "unset skips", endpoint: "", wantSkip: true},
		{name: "unset required fails", endpoint: "", require: "1", wantFail: "required"},
		{name: "silent skips", endpoint: "http://" + deadAddr, wantSkip: true},
		{name: "silent required fails", endpoint: "http://" + deadAddr, require: "1", wantFail: "nothing answers"},
		{name: "not loopback", endpoint: "http://192.0.2.1:4566", wantFail: "loopback"},
		{name: "real AWS", endpoint: "https://dynamodb.us-east-1.amazonaws.com", wantFail: "loopback"},
		{name: "not a URL", endpoint: "127.0.0.1:4566", wantFail: "URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvEndpoint, tc.endpoint)
			t.Setenv(deploy.EnvEndpointAlias, "")
			t.Setenv(EnvRequire, tc.require)
			ep, r := runEndpoint(t)
			switch {
			case tc.wantOK && (ep != tc.endpoint || r.skipped != "" || r.failed != ""):
				t.Fatalf("Endpoint = %q, skipped %q, failed %q; want %q", ep, r.skipped, r.failed, tc.endpoint)
			case tc.wantSkip && (r.skipped == "" || r.failed != ""):
				t.Fatalf("skipped %q, failed %q; want a skip", r.skipped, r.failed)
			case tc.wantFail != "" && !strings.Contains(r.failed, tc.wantFail):
				t.Fatalf("skipped %q, failed %q; want a failure mentioning %q", r.skipped, r.failed, tc.wantFail)
			}
		})
	}
}
