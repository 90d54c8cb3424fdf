package awsauth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/stratalog/strata/internal/apigwtest"
	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/client/awsauth"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
)

const region = "eu-west-1"

var (
	alice = apigwtest.Principal{AccessKeyID: "AKIDALICE", SecretAccessKey: "alice-secret", ARN: "arn:aws:iam::123456789012:user/alice"}
	bob   = apigwtest.Principal{AccessKeyID: "ASIABOB", SecretAccessKey: "bob-secret", SessionToken: "bob-token",
		ARN: "arn:aws:sts::123456789012:assumed-role/consumer/bob"}
)

// stack is the api handler on the embedded backend behind the SigV4-checking front.
type stack struct {
	front *apigwtest.Front
	url   string
	// fault, when set, answers an invocation instead of the function (nil: invoke it).
	fault func(payload []byte) []byte
	mu    sync.Mutex
	auths []string // "METHOD path Authorization" of each request the front received, in order
}

func newStack(t *testing.T, principals ...apigwtest.Principal) *stack {
	t.Helper()
	rt, err := runtime.New(context.Background(), runtime.Config{Node: node.Config{DataDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	api := apigwtest.InProcess(rt.Handler(), nil)
	s := &stack{}
	inv := apigwtest.InvokerFunc(func(ctx context.Context, payload []byte) ([]byte, error) {
		s.mu.Lock()
		fault := s.fault
		s.mu.Unlock()
		if fault != nil {
			if out := fault(payload); out != nil {
				return out, nil
			}
		}
		return api.Invoke(ctx, payload)
	})
	s.front, err = apigwtest.New(apigwtest.Config{Region: region, Principals: principals, Invoker: inv,
		Routes: []apigwtest.Route{{Key: "GET /v1/health", Public: true}, {Key: "$default"}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.auths = append(s.auths, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		s.mu.Unlock()
		s.front.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

func static(p apigwtest.Principal) aws.CredentialsProvider {
	return aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: p.AccessKeyID, SecretAccessKey: p.SecretAccessKey, SessionToken: p.SessionToken, Source: "test"}, nil
	})
}

func signedClient(t *testing.T, s *stack, p apigwtest.Principal) *client.Client {
	t.Helper()
	opt, err := awsauth.Option(context.Background(), s.url, awsauth.Options{Region: region, Credentials: static(p)})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(s.url, opt)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSignedSDKThroughFront: the SDK with the signing option creates a topic, produces
// binary (Producer) and JSON (Append) records, polls them back and commits, all through
// the SigV4-checking front in front of the api handler; temporary credentials (a
// session token) work too.
func TestSignedSDKThroughFront(t *testing.T) {
	ctx := context.Background()
	s := newStack(t, alice, bob)
	c := signedClient(t, s, alice)
	if _, err := c.CreateTopic(ctx, "orders", client.TopicConfig{Partitions: 1}); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	p, err := client.NewProducer(ctx, c, "orders", client.ProducerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var futs []*client.Future
	for i := range 5 {
		f, err := p.Send(ctx, client.Record{Key: []byte("k"), Value: []byte{byte(i), 0xff, 0}})
		if err != nil {
			t.Fatal(err)
		}
		futs = append(futs, f)
	}
	for _, f := range futs {
		if _, err := f.Wait(ctx); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Requests == 0 {
		t.Fatalf("producer stats %+v: no request", st)
	}
	if _, err := c.Append(ctx, "orders", []client.Record{{Value: []byte(`{"id":5}`)}}, client.AppendOptions{IdempotencyKey: "json-1"}); err != nil {
		t.Fatalf("append JSON: %v", err)
	}

	consumer := signedClient(t, s, bob)
	res, err := consumer.Poll(ctx, "orders", 0, 0, client.PollOptions{Wait: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("poll: %v", err)
	}
	if len(res.Records) != 6 || !bytes.Equal(res.Records[2].Value, []byte{2, 0xff, 0}) || string(res.Records[5].Value) != `{"id":5}` {
		t.Fatalf("polled %d records %+v, want the 5 binary and the JSON one", len(res.Records), res.Records)
	}
	// A long poll at the high watermark is signed like any request and waits.
	if res, err := consumer.Poll(ctx, "orders", 0, 6, client.PollOptions{Wait: 100 * time.Millisecond}); err != nil || len(res.Records) != 0 {
		t.Fatalf("poll at the high watermark: %v %+v", err, res)
	}
	l, err := consumer.Lease(ctx, "billing", "orders", 0, "m-1", 0)
	if err != nil {
		t.Fatalf("lease: %v", err)
	}
	if got, err := consumer.Commit(ctx, "billing", "orders", 0, "m-1", l.Generation, res.NextOffset); err != nil || got != 6 {
		t.Fatalf("commit: %d %v", got, err)
	}
	if st := s.front.Stats(); st.Refused != 0 || st.Accepted < 7 {
		t.Errorf("front stats %+v", st)
	}
}

// tamper is a transport that changes a request after it was signed.
type tamper struct {
	base http.RoundTripper
	fn   func(*http.Request)
}

func (t tamper) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if r.GetBody != nil {
		r.Body, _ = r.GetBody()
	}
	t.fn(r)
	return t.base.RoundTrip(r)
}

// TestUnsignedAndTamperedRefused: without the option, with unknown credentials, or with
// the body, a header, the path or the query changed after signing, the SDK's call fails
// with a 403 and nothing is appended.
func TestUnsignedAndTamperedRefused(t *testing.T) {
	ctx := context.Background()
	s := newStack(t, alice)
	admin := signedClient(t, s, alice)
	if _, err := admin.CreateTopic(ctx, "orders", client.TopicConfig{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	recs := []client.Record{{Value: []byte("v")}}
	cases := []struct {
		name string
		c    func(t *testing.T) *client.Client
	}{
		{"unsigned", func(t *testing.T) *client.Client {
			c, err := client.New(s.url)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}},
		{"unknown credentials", func(t *testing.T) *client.Client {
			return signedClient(t, s, apigwtest.Principal{AccessKeyID: "AKIDMALLORY", SecretAccessKey: "m"})
		}},
	}
	for _, tc := range []struct {
		name string
		fn   func(*http.Request)
	}{
		{"tampered body", func(r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			b = bytes.Replace(b, []byte(`"dg=="`), []byte(`"dw=="`), 1)
			r.Body = io.NopCloser(bytes.NewReader(b))
		}},
		{"tampered header", func(r *http.Request) { r.Header.Set("Idempotency-Key", "other") }},
		{"tampered path", func(r *http.Request) { r.URL.Path = strings.Replace(r.URL.Path, "orders", "orderz", 1) }},
		{"tampered query", func(r *http.Request) { r.URL.RawQuery = "x=1" }},
	} {
		cases = append(cases, struct {
			name string
			c    func(t *testing.T) *client.Client
		}{tc.name, func(t *testing.T) *client.Client {
			tr := awsauth.NewTransport(static(alice), region, tamper{base: http.DefaultTransport, fn: tc.fn})
			c, err := client.New(s.url, tr.Option())
			if err != nil {
				t.Fatal(err)
			}
			return c
		}})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := s.front.Stats().Refused
			_, err := tc.c(t).Append(ctx, "orders", recs, client.AppendOptions{IdempotencyKey: "k-" + strings.ReplaceAll(tc.name, " ", "-")})
			var apiErr *client.APIError
			if !errors.As(err, &apiErr) || apiErr.Status != http.StatusForbidden {
				t.Fatalf("append: %v, want a 403", err)
			}
			if s.front.Stats().Refused != before+1 {
				t.Errorf("front stats %+v", s.front.Stats())
			}
		})
	}
	top, err := admin.DescribeTopic(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if hw := top.PartitionInfo[0].HighWatermark; hw != 0 {
		t.Errorf("high watermark %d after refused appends, want 0", hw)
	}
	// The public health route needs no signature.
	c, _ := client.New(s.url)
	if err := c.Health(ctx); err != nil {
		t.Errorf("unsigned health: %v", err)
	}
}

// TestRetryResigned: the Producer's retry after a 503 sends the same bytes with a new
// signature of a later date, which the front verifies again.
func TestRetryResigned(t *testing.T) {
	ctx := context.Background()
	s := newStack(t, alice)
	var clock atomic.Int64
	start := time.Now().Add(-time.Minute)
	tr := awsauth.NewTransport(static(alice), region, nil).WithClock(func() time.Time {
		return start.Add(time.Duration(clock.Add(1)) * time.Second)
	})
	c, err := client.New(s.url, tr.Option())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, "orders", client.TopicConfig{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	var failed atomic.Bool
	var bodies [][]byte
	s.mu.Lock()
	s.fault = func(payload []byte) []byte {
		var ev events.APIGatewayV2HTTPRequest
		if json.Unmarshal(payload, &ev) != nil || ev.RequestContext.HTTP.Method != http.MethodPost || !strings.HasSuffix(ev.RawPath, "/records") {
			return nil
		}
		bodies = append(bodies, []byte(ev.Body))
		if failed.Swap(true) {
			return nil
		}
		out, _ := json.Marshal(events.APIGatewayV2HTTPResponse{StatusCode: 503, Headers: map[string]string{"Content-Type": "application/json"},
			Body: `{"error":{"code":"unavailable","message":"try again"}}`})
		return out
	}
	s.auths = nil
	s.mu.Unlock()
	p, err := client.NewProducer(ctx, c, "orders", client.ProducerConfig{Backoff: time.Millisecond, MaxBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	f, err := p.Send(ctx, client.Record{Value: []byte("once")})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := f.Wait(ctx); err != nil || res.Offset != 0 {
		t.Fatalf("send: %+v %v", res, err)
	}
	_ = p.Close(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(bodies) != 2 || !bytes.Equal(bodies[0], bodies[1]) {
		t.Fatalf("appends %d, want the same body twice", len(bodies))
	}
	var appends []string
	for _, a := range s.auths {
		if rest, ok := strings.CutPrefix(a, "POST /v1/topics/orders/records "); ok {
			appends = append(appends, rest)
		}
	}
	if len(appends) != 2 || appends[0] == appends[1] {
		t.Fatalf("append authorization headers %q, want two different signatures", appends)
	}
	if st := p.Stats(); st.Retries != 1 {
		t.Errorf("producer stats %+v, want 1 retry", st)
	}
}

// TestCredentialsRefreshed: credentials are retrieved through the SDK's cache: once while
// they are valid, again each time they have expired (here: a rotating provider whose
// credentials are already expired, so every request takes the next key).
func TestCredentialsRefreshed(t *testing.T) {
	ctx := context.Background()
	carol := apigwtest.Principal{AccessKeyID: "ASIACAROL", SecretAccessKey: "carol-secret", SessionToken: "carol-token"}
	s := newStack(t, alice, bob, carol)
	var calls atomic.Int64
	rotating := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		p := []apigwtest.Principal{bob, carol}[calls.Add(1)%2]
		return aws.Credentials{AccessKeyID: p.AccessKeyID, SecretAccessKey: p.SecretAccessKey, SessionToken: p.SessionToken,
			CanExpire: true, Expires: time.Now().Add(-time.Hour)}, nil
	})
	c, err := client.New(s.url, awsauth.NewTransport(rotating, region, nil).Option())
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := c.ListTopics(ctx); err != nil {
			t.Fatalf("list topics: %v", err)
		}
	}
	if calls.Load() != 3 {
		t.Errorf("expired credentials retrieved %d times for 3 requests, want 3", calls.Load())
	}

	calls.Store(0)
	valid := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		calls.Add(1)
		return aws.Credentials{AccessKeyID: alice.AccessKeyID, SecretAccessKey: alice.SecretAccessKey, CanExpire: true, Expires: time.Now().Add(time.Hour)}, nil
	})
	c, err = client.New(s.url, awsauth.NewTransport(valid, region, nil).Option())
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := c.ListTopics(ctx); err != nil {
			t.Fatalf("list topics: %v", err)
		}
	}
	if calls.Load() != 1 {
		t.Errorf("valid credentials retrieved %d times for 3 requests, want 1 (cached)", calls.Load())
	}
}

// TestLoadRegionAndProfile: the region is the option's, else an execute-api host's, else
// the configuration's; a profile's credentials and region come from the shared files.
func TestLoadRegionAndProfile(t *testing.T) {
	dir := t.TempDir()
	cfgFile, credFile := filepath.Join(dir, "config"), filepath.Join(dir, "credentials")
	if err := os.WriteFile(cfgFile, []byte("[default]\nregion = us-east-2\n[profile ops]\nregion = ap-south-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(credFile, []byte("[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = d\n[ops]\naws_access_key_id = AKIDOPS\naws_secret_access_key = o\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"} {
		t.Setenv(k, "")
		_ = os.Unsetenv(k)
	}
	t.Setenv("AWS_CONFIG_FILE", cfgFile)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", credFile)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	const apiURL = "https://a1b2c3d4e5.execute-api.eu-central-1.amazonaws.com"
	for _, tc := range []struct {
		name, url, region, profile string
		wantRegion, wantKey        string
	}{
		{"default profile", "http://127.0.0.1:4580", "", "", "us-east-2", "AKIDDEFAULT"},
		{"execute-api host", apiURL, "", "", "eu-central-1", "AKIDDEFAULT"},
		{"explicit region", apiURL, "sa-east-1", "", "sa-east-1", "AKIDDEFAULT"},
		{"profile", "http://127.0.0.1:4580", "", "ops", "ap-south-1", "AKIDOPS"},
		{"profile and execute-api host", apiURL, "", "ops", "eu-central-1", "AKIDOPS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				got = r.Header.Get("Authorization")
				return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(`{"topics":[]}`)), Header: http.Header{}}, nil
			})
			tr, err := awsauth.Load(context.Background(), tc.url, awsauth.Options{Region: tc.region, Profile: tc.profile, Base: base})
			if err != nil {
				t.Fatal(err)
			}
			if tr.Region() != tc.wantRegion {
				t.Errorf("region %q, want %q", tr.Region(), tc.wantRegion)
			}
			c, err := client.New(tc.url, tr.Option())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.ListTopics(context.Background()); err != nil {
				t.Fatal(err)
			}
			want := "Credential=" + tc.wantKey + "/"
			if !strings.Contains(got, want) || !strings.Contains(got, "/"+tc.wantRegion+"/execute-api/aws4_request") {
				t.Errorf("authorization %q, want %s… scoped to %s/execute-api", got, want, tc.wantRegion)
			}
		})
	}
	t.Run("no region", func(t *testing.T) {
		t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "absent"))
		if _, err := awsauth.Load(context.Background(), "http://127.0.0.1:4580", awsauth.Options{}); !errors.Is(err, awsauth.ErrNoRegion) {
			t.Errorf("load: %v, want ErrNoRegion", err)
		}
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestRegionFromHost(t *testing.T) {
	for host, want := range map[string]string{
		"a1b2c3d4e5.execute-api.us-east-1.amazonaws.com":                             "us-east-1",
		"A1B2C3D4E5.EXECUTE-API.EU-WEST-1.AMAZONAWS.COM":                             "eu-west-1",
		"a1b2c3d4e5.execute-api.cn-north-1.amazonaws.com.cn":                         "cn-north-1",
		"a1b2c3d4e5-vpce-0123456789abcdef0.execute-api.us-west-2.vpce.amazonaws.com": "us-west-2",
		"abcdefghij0123456789klmnop.lambda-url.eu-west-3.on.aws":                     "eu-west-3",
		"x.lambda-url.us-east-1.on.aws.example.com":                                  "",
		"api.example.com":                     "",
		"127.0.0.1":                           "",
		"execute-api.us-east-1.amazonaws.com": "",
		"a.execute-api.us-east-1.example.com": "",
		"":                                    "",
	} {
		if got := awsauth.RegionFromHost(host); got != want {
			t.Errorf("RegionFromHost(%q) = %q, want %q", host, got, want)
		}
	}
}

func TestServiceFromHost(t *testing.T) {
	for host, want := range map[string]string{
		"abcdefghij0123456789klmnop.lambda-url.eu-west-3.on.aws": awsauth.ServiceLambda,
		"ABC.LAMBDA-URL.US-EAST-1.ON.AWS":                        awsauth.ServiceLambda,
		"a1b2c3d4e5.execute-api.us-east-1.amazonaws.com":         awsauth.Service,
		"lambda-url.us-east-1.on.aws":                            awsauth.Service,
		"x.lambda-url.us-east-1.on.aws.example.com":              awsauth.Service,
		"127.0.0.1": awsauth.Service,
	} {
		if got := awsauth.ServiceFromHost(host); got != want {
			t.Errorf("ServiceFromHost(%q) = %q, want %q", host, got, want)
		}
	}
}

// TestSignedSDKThroughFunctionURL (issue 20 item 3): the SDK signs for the service
// lambda when told (Options.Service; a lambda-url host says so by itself) and its calls
// pass a function-URL front, which refuses the execute-api signature; Load names the
// service it chose and refuses an unknown one.
func TestSignedSDKThroughFunctionURL(t *testing.T) {
	ctx := context.Background()
	rt, err := runtime.New(ctx, runtime.Config{Node: node.Config{DataDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	front, err := apigwtest.New(apigwtest.Config{Region: region, Service: apigwtest.ServiceLambda,
		Principals: []apigwtest.Principal{alice}, Invoker: apigwtest.InProcess(rt.Handler(), nil)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(front)
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		service string
		ok      bool
	}{{awsauth.ServiceLambda, true}, {"", false}} {
		tr, err := awsauth.Load(ctx, srv.URL, awsauth.Options{Region: region, Service: tc.service, Credentials: static(alice)})
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]string{true: awsauth.ServiceLambda, false: awsauth.Service}[tc.ok]; tr.Service() != want {
			t.Errorf("service %q: transport signs for %q, want %q", tc.service, tr.Service(), want)
		}
		c, err := client.New(srv.URL, tr.Option())
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.CreateTopic(ctx, "orders-"+tr.Service(), client.TopicConfig{Partitions: 1})
		var apiErr *client.APIError
		switch {
		case tc.ok && err != nil:
			t.Errorf("signed for lambda: %v", err)
		case !tc.ok && (!errors.As(err, &apiErr) || apiErr.Status != http.StatusForbidden):
			t.Errorf("signed for execute-api at a function URL: %v, want 403", err)
		}
	}
	if tr, err := awsauth.Load(ctx, "https://abc.lambda-url.eu-west-3.on.aws", awsauth.Options{Credentials: static(alice)}); err != nil ||
		tr.Service() != awsauth.ServiceLambda || tr.Region() != "eu-west-3" {
		t.Errorf("lambda-url host: %v, want service lambda in eu-west-3", err)
	}
	if _, err := awsauth.Load(ctx, srv.URL, awsauth.Options{Region: region, Service: "s3", Credentials: static(alice)}); !errors.Is(err, awsauth.ErrService) {
		t.Errorf("service s3: %v, want ErrService", err)
	}
}

// rewindable records whether each request it is given can be resent (GetBody set) and
// answers 200 without a network.
type rewindable struct{ got []bool }

func (r *rewindable) RoundTrip(req *http.Request) (*http.Response, error) {
	r.got = append(r.got, req.GetBody != nil)
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("{}")), Header: http.Header{}, Request: req}, nil
}

// TestSignedBodyKeepsRewindability (issue 20): the signed copy of a request is
// rewindable (GetBody) exactly when the request was, so that a producer request's
// attempt the SDK made not resendable (the transport must not deliver it twice) stays
// so once signed.
func TestSignedBodyKeepsRewindability(t *testing.T) {
	base := &rewindable{}
	tr := awsauth.NewTransport(static(alice), region, base)
	for _, rewind := range []bool{true, false} {
		req, err := http.NewRequest(http.MethodPost, "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/v1/topics/t/records",
			bytes.NewReader([]byte(`{"records":[]}`)))
		if err != nil {
			t.Fatal(err)
		}
		if !rewind {
			req.GetBody = nil
		}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if len(base.got) != 2 || !base.got[0] || base.got[1] {
		t.Fatalf("signed copies rewindable %v, want [true false]", base.got)
	}
}
