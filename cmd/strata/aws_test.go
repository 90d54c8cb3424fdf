package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stratalog/strata/internal/apigwtest"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
)

// TestDecideAuth: the CLI's choice between no credential, a bearer token and SigV4.
func TestDecideAuth(t *testing.T) {
	yes, no := true, false
	const api = "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com"
	for _, tc := range []struct {
		name string
		in   authInputs
		want authMode
		err  bool
	}{
		{"strata dev", authInputs{url: "http://127.0.0.1:4580"}, authNone, false},
		{"strata dev --auth", authInputs{url: "http://127.0.0.1:4580", token: "t"}, authToken, false},
		{"strata dev with AWS credentials around", authInputs{url: "http://localhost:4580", hasAWSEnv: true}, authNone, false},
		{"loopback IPv6 with AWS credentials", authInputs{url: "http://[::1]:4580", hasAWSEnv: true}, authNone, false},
		{"--aws on loopback (a test front)", authInputs{url: "http://127.0.0.1:9999", aws: &yes}, authSigV4, false},
		{"execute-api host", authInputs{url: api}, authSigV4, false},
		{"execute-api host and a token", authInputs{url: api, token: "t"}, authToken, false},
		{"execute-api host, --aws=false", authInputs{url: api, aws: &no}, authNone, false},
		{"custom domain with AWS credentials", authInputs{url: "https://strata.example.com", hasAWSEnv: true}, authSigV4, false},
		{"custom domain without credentials", authInputs{url: "https://strata.example.com"}, authNone, false},
		{"--region, --profile or --aws-service", authInputs{url: "http://127.0.0.1:9999", explicit: true}, authSigV4, false},
		{"function URL host", authInputs{url: "https://abcdefghij.lambda-url.eu-west-1.on.aws"}, authSigV4, false},
		{"--aws=false and a token", authInputs{url: api, aws: &no, token: "t"}, authToken, false},
		{"--aws and --token", authInputs{url: api, aws: &yes, token: "t"}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decideAuth(tc.in)
			if (err != nil) != tc.err || got != tc.want {
				t.Fatalf("decideAuth(%+v) = %v, %v; want %v (error %v)", tc.in, got, err, tc.want, tc.err)
			}
			if err != nil && exitCode(err) != 2 {
				t.Errorf("exit code %d, want 2 (usage)", exitCode(err))
			}
		})
	}
}

func TestAWSConfigured(t *testing.T) {
	none := func(string) bool { return false }
	for _, tc := range []struct {
		name   string
		env    map[string]string
		exists func(string) bool
		want   bool
	}{
		{"nothing", nil, none, false},
		{"access key", map[string]string{"AWS_ACCESS_KEY_ID": "AKID"}, none, true},
		{"profile", map[string]string{"AWS_PROFILE": "ops"}, none, true},
		{"web identity", map[string]string{"AWS_WEB_IDENTITY_TOKEN_FILE": "/t"}, none, true},
		{"a config file", map[string]string{"AWS_CONFIG_FILE": "/etc/aws"}, func(p string) bool { return p == "/etc/aws" }, true},
		{"the home credentials file", nil, func(p string) bool { return strings.HasSuffix(p, filepath.Join(".aws", "credentials")) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := awsConfigured(func(k string) string { return tc.env[k] }, tc.exists); got != tc.want {
				t.Errorf("awsConfigured = %v, want %v", got, tc.want)
			}
		})
	}
}

var cliPrincipal = apigwtest.Principal{AccessKeyID: "AKIDCLI", SecretAccessKey: "cli-secret", ARN: "arn:aws:iam::123456789012:user/cli"}

// signingFront serves the api handler on the embedded backend behind the SigV4-checking
// front and returns its URL; the environment holds cliPrincipal's credentials and no
// shared AWS files.
func signingFront(t *testing.T) (*apigwtest.Front, string) {
	t.Helper()
	return signingFrontFor(t, "")
}

// signingFrontFor is signingFront checking signatures for service ("" is execute-api;
// apigwtest.ServiceLambda is a function URL).
func signingFrontFor(t *testing.T, service string) (*apigwtest.Front, string) {
	t.Helper()
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": cliPrincipal.AccessKeyID, "AWS_SECRET_ACCESS_KEY": cliPrincipal.SecretAccessKey,
		"AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "",
		"AWS_CONFIG_FILE": filepath.Join(dir, "none"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "none"),
		"AWS_EC2_METADATA_DISABLED": "true", envAWS: "", envToken: "", envURL: "",
	} {
		t.Setenv(k, v)
	}
	rt, err := runtime.New(context.Background(), runtime.Config{Node: node.Config{DataDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	f, err := apigwtest.New(apigwtest.Config{Region: "eu-west-1", Principals: []apigwtest.Principal{cliPrincipal},
		Service: service, Invoker: apigwtest.InProcess(rt.Handler(), nil)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

// TestCLISignedThroughFront: with --aws the CLI's requests pass API Gateway's SigV4
// check: it creates a topic, produces (the binary append), consumes as a group and
// commits, and describes the group's committed position.
func TestCLISignedThroughFront(t *testing.T) {
	f, url := signingFront(t)
	run := func(stdin string, args ...string) string {
		t.Helper()
		out, errOut, err := cliCtx(context.Background(), stdin, append([]string{"--url", url, "--aws"}, args...)...)
		if err != nil {
			t.Fatalf("strata %s: %v\nstderr: %s", strings.Join(args, " "), userMessage(err, ""), errOut)
		}
		return out
	}
	run("", "topics", "create", "orders", "--partitions", "1")
	run("order-1\norder-2\norder-3\n", "produce", "orders", "--key", "customer-1")
	out := run("", "consume", "orders", "--group", "billing", "--until-caught-up")
	for _, v := range []string{"order-1", "order-2", "order-3"} {
		if !strings.Contains(out, v) {
			t.Errorf("consume printed %q, want %s", out, v)
		}
	}
	if out := run("", "--json", "groups", "describe", "billing"); !strings.Contains(out, `"committed_offset": 3`) {
		t.Errorf("groups describe: %s, want committed offset 3", out)
	}
	if st := f.Stats(); st.Refused != 0 || st.Accepted == 0 {
		t.Errorf("front stats %+v", st)
	}
}

// TestCLISignedThroughFunctionURL: with --aws-service lambda the CLI's
// requests pass a function URL's SigV4 check (service lambda); without it they are
// signed for execute-api and refused; an unknown service is an error.
func TestCLISignedThroughFunctionURL(t *testing.T) {
	f, url := signingFrontFor(t, apigwtest.ServiceLambda)
	if out, errOut, err := cliCtx(context.Background(), "", "--url", url, "--aws-service", "lambda", "topics", "create", "orders", "--partitions", "1"); err != nil {
		t.Fatalf("topics create, signed for lambda: %v\n%s%s", userMessage(err, ""), out, errOut)
	}
	if _, _, err := cliCtx(context.Background(), "", "--url", url, "--aws", "topics", "describe", "orders"); err == nil {
		t.Error("signed for execute-api: a function URL accepted it")
	}
	if _, _, err := cliCtx(context.Background(), "", "--url", url, "--aws-service", "s3", "topics", "describe", "orders"); err == nil ||
		!strings.Contains(userMessage(err, ""), "execute-api") {
		t.Errorf("--aws-service s3: %v, want an error naming the services", err)
	}
	if st := f.Stats(); st.Accepted != 1 || st.Refused != 1 {
		t.Errorf("front stats %+v, want 1 accepted, 1 refused", st)
	}
}

// TestCLIUnsignedAndTamperedRefused: unsigned, wrongly signed and tampered requests of
// the CLI get API Gateway's 403, reported with a hint about AWS credentials.
func TestCLIUnsignedAndTamperedRefused(t *testing.T) {
	f, front := signingFront(t)
	if _, errOut, err := cliCtx(context.Background(), "", "--url", front, "--aws", "topics", "create", "orders", "--partitions", "1"); err != nil {
		t.Fatalf("create: %v %s", err, errOut)
	}
	// tampering is a proxy that changes the records' body after the CLI signed it.
	target, _ := url.Parse(front)
	proxy := httputil.NewSingleHostReverseProxy(target)
	tampering := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/records") {
			b, _ := io.ReadAll(r.Body)
			if len(b) > 0 {
				b[len(b)-1] ^= 0x01
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		r.Host = target.Host
		proxy.ServeHTTP(w, r)
	}))
	defer tampering.Close()
	for _, tc := range []struct {
		name    string
		env     map[string]string
		args    []string
		message string
	}{
		{"unsigned", nil, []string{"--url", front, "produce", "orders", "--value", "x"}, "Forbidden; API Gateway"},
		{"wrong secret", map[string]string{"AWS_SECRET_ACCESS_KEY": "guessed"}, []string{"--url", front, "--aws", "produce", "orders", "--value", "x"},
			"The request signature we calculated does not match"},
		{"unknown key", map[string]string{"AWS_ACCESS_KEY_ID": "AKIDNOBODY"}, []string{"--url", front, "--aws", "topics", "list"},
			"The security token included in the request is invalid."},
		{"wrong region", nil, []string{"--url", front, "--region", "us-east-1", "topics", "list"}, "Credential should be scoped to a valid region"},
		{"tampered body", nil, []string{"--url", tampering.URL, "--aws", "produce", "orders", "--value", "x"},
			"The request signature we calculated does not match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			before := f.Stats().Refused
			_, errOut, err := cliCtx(context.Background(), "", tc.args...)
			msg := errOut
			if err != nil {
				msg += userMessage(err, "")
			}
			if !strings.Contains(msg, tc.message) || !strings.Contains(msg, "API Gateway refused the request") {
				t.Errorf("strata %s: %q, want %q and the hint", strings.Join(tc.args, " "), msg, tc.message)
			}
			if f.Stats().Refused <= before {
				t.Errorf("the front refused nothing: %+v", f.Stats())
			}
		})
	}
	out, _, err := cliCtx(context.Background(), "", "--url", front, "--aws", "--json", "topics", "describe", "orders")
	if err != nil || !strings.Contains(out, `"high_watermark": 0`) {
		t.Errorf("after refused appends: %s %v, want high watermark 0", out, err)
	}
	if _, _, err := cliCtx(context.Background(), "", "--url", front, "--aws", "--token", "t", "topics", "list"); err == nil || exitCode(err) != 2 {
		t.Errorf("--aws with --token: %v, want a usage error", err)
	}
}
