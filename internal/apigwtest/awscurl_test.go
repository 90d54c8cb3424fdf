package apigwtest_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/apigwtest"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
)

// TestAwscurlAccepted: requests signed by awscurl (a SigV4 signer nobody here wrote,
// STRATA_AWSCURL; scripts/awscurl.sh installs a pinned one and runs this) pass the front
// and reach the api handler: JSON bodies, queries, temporary credentials; a wrong secret
// is refused.
func TestAwscurlAccepted(t *testing.T) {
	bin := os.Getenv("STRATA_AWSCURL")
	if bin == "" {
		if os.Getenv("STRATA_REQUIRE_AWSCURL") == "1" {
			t.Fatal("STRATA_REQUIRE_AWSCURL=1 but STRATA_AWSCURL is not set")
		}
		t.Skip("STRATA_AWSCURL is not set (scripts/awscurl.sh installs awscurl and runs this test)")
	}
	rt, err := runtime.New(context.Background(), runtime.Config{Node: node.Config{DataDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	f, err := apigwtest.New(apigwtest.Config{Region: region, Principals: []apigwtest.Principal{producer, temporary},
		Invoker: apigwtest.InProcess(rt.Handler(), nil)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(f)
	defer srv.Close()

	// awscurl runs it and returns "2xx" or "error" (its exit status 22 for an HTTP
	// error) and the answer's body.
	awscurl := func(p apigwtest.Principal, args ...string) (status, body string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		full := []string{"--fail-with-body", "--service", "execute-api", "--region", region, "--access_key", p.AccessKeyID, "--secret_key", p.SecretAccessKey}
		if p.SessionToken != "" {
			full = append(full, "--session_token", p.SessionToken)
		}
		cmd := exec.CommandContext(ctx, bin, append(full, args...)...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		var exit *exec.ExitError
		switch {
		case err == nil:
			status = "2xx"
		case errors.As(err, &exit) && exit.ExitCode() == 22: // --fail-with-body: an HTTP error
			status = "error"
		default:
			t.Fatalf("awscurl %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
		}
		return status, strings.TrimSpace(string(out))
	}
	for _, tc := range []struct {
		name   string
		p      apigwtest.Principal
		args   []string
		status string
		body   string
	}{
		{"create topic", producer, []string{"-X", "POST", "-H", "Content-Type: application/json", "-d", `{"name":"orders","partitions":1}`, srv.URL + "/v1/topics"}, "2xx", `"name":"orders"`},
		{"append JSON", producer, []string{"-X", "POST", "-H", "Content-Type: application/json", "-H", "Idempotency-Key: awscurl-1",
			"-d", `{"records":[{"value":"aGVsbG8="}]}`, srv.URL + "/v1/topics/orders/records"}, "2xx", `"offset":0`},
		{"poll with a query", temporary, []string{srv.URL + "/v1/topics/orders/partitions/0/records?offset=0&max_records=10"}, "2xx", `"value":"aGVsbG8="`},
		{"list topics", temporary, []string{srv.URL + "/v1/topics"}, "2xx", `"orders"`},
		{"wrong secret", apigwtest.Principal{AccessKeyID: producer.AccessKeyID, SecretAccessKey: "guessed"}, []string{srv.URL + "/v1/topics"},
			"error", "The request signature we calculated does not match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := awscurl(tc.p, tc.args...)
			if status != tc.status || !strings.Contains(strings.ReplaceAll(body, " ", ""), strings.ReplaceAll(tc.body, " ", "")) {
				t.Errorf("status %s body %s, want %s with %s", status, body, tc.status, tc.body)
			}
		})
	}
	if st := f.Stats(); st.Accepted != 4 || st.Refused != 1 {
		t.Errorf("front stats %+v, want 4 accepted and 1 refused", st)
	}
}
