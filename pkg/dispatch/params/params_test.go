package params_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/dispatch/params"
	"github.com/stratalog/strata/pkg/store/awstest"
)

func param(name, value string) types.Parameter {
	return types.Parameter{Name: aws.String(name), Value: aws.String(value), Type: types.ParameterTypeString}
}

func TestDecode(t *testing.T) {
	const path = "/strata/T-/subscriptions"
	good := param(path+"/orders/bill", `{"topic":"orders","group":"bill","function":"billFn"}`)
	tests := []struct {
		name     string
		in       []types.Parameter
		want     []deploy.Subscription
		problems []string
	}{
		{"none", nil, nil, nil},
		{"one", []types.Parameter{good}, []deploy.Subscription{{Topic: "orders", Group: "bill", Function: "billFn"}}, nil},
		{"malformed skipped, the rest kept",
			[]types.Parameter{param(path+"/orders/ship", `{"topic":`), good},
			[]deploy.Subscription{{Topic: "orders", Group: "bill", Function: "billFn"}},
			[]string{path + "/orders/ship"}},
		{"claims another name",
			[]types.Parameter{param(path+"/orders/ship", `{"topic":"orders","group":"bill","function":"f"}`)},
			nil, []string{"its name must be " + path + "/orders/bill"}},
		{"secure string skipped",
			[]types.Parameter{{Name: good.Name, Value: good.Value, Type: types.ParameterTypeSecureString}},
			nil, []string{"want String"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, problems := params.Decode(path, tc.in)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if len(problems) != len(tc.problems) {
				t.Fatalf("problems %v, want %d", problems, len(tc.problems))
			}
			for i, p := range problems {
				if !strings.Contains(p.Error(), tc.problems[i]) {
					t.Errorf("problem %q does not say %q", p, tc.problems[i])
				}
			}
		})
	}
}

func TestNewRefuses(t *testing.T) {
	client := ssm.New(ssm.Options{Region: "us-east-1"})
	for _, path := range []string{"", "/", "strata/x"} {
		if _, err := params.New(params.Config{Client: client, Path: path}); err == nil {
			t.Errorf("path %q accepted", path)
		}
	}
	if _, err := params.New(params.Config{Path: "/p"}); err == nil {
		t.Error("no client accepted")
	}
}

// counting counts the calls reaching Parameter Store.
type counting struct {
	params.API
	calls atomic.Int32
}

func (c *counting) GetParametersByPath(ctx context.Context, in *ssm.GetParametersByPathInput, opts ...func(*ssm.Options)) (*ssm.GetParametersByPathOutput, error) {
	c.calls.Add(1)
	return c.API.GetParametersByPath(ctx, in, opts...)
}

// TestSourceOnEmulator: the parameters a CDK app writes (more than one page of them,
// nested two levels under the path, beside one of another deployment) are read, kept
// for the TTL, and read again after it.
func TestSourceOnEmulator(t *testing.T) {
	ctx := context.Background()
	client := ssm.NewFromConfig(awstest.Config(ctx, t))
	path := fmt.Sprintf("/strata/t%d-/subscriptions", time.Now().UnixNano())
	put := func(name, value string) {
		t.Helper()
		if _, err := client.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(name), Value: aws.String(value), Type: types.ParameterTypeString, Overwrite: aws.Bool(true)}); err != nil {
			t.Fatal(err)
		}
	}
	var want []deploy.Subscription
	for i := range 12 { // two pages of 10
		s := deploy.Subscription{Topic: fmt.Sprintf("t%02d", i), Group: "g", Function: "fn"}
		v, err := deploy.EncodeSubscriptionParameter(s)
		if err != nil {
			t.Fatal(err)
		}
		put(deploy.SubscriptionParameterName(path, s.Topic, s.Group), v)
		want = append(want, s)
	}
	put(path+"x/t00/g", `{"topic":"t00","group":"g","function":"other-deployment"}`)

	now := time.Unix(1000, 0)
	c := &counting{API: client}
	src, err := params.New(params.Config{Client: c, Path: path + "/", TTL: time.Minute, Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	got, err := src.Subscriptions(ctx)
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %+v, %v; want %+v", got, err, want)
	}
	reads := c.calls.Load()
	if reads < 2 {
		t.Errorf("%d calls for 12 parameters: want every page read", reads)
	}

	put(path+"/t00/late", `{"topic":"t00","group":"late","function":"fn"}`)
	now = now.Add(59 * time.Second)
	if got, err := src.Subscriptions(ctx); err != nil || len(got) != 12 || c.calls.Load() != reads {
		t.Fatalf("within the TTL: %d subscriptions, %v, %d calls (want the kept list, no call)", len(got), err, c.calls.Load()-reads)
	}
	now = now.Add(time.Second)
	got, err = src.Subscriptions(ctx)
	if err != nil || len(got) != 13 || c.calls.Load() == reads {
		t.Fatalf("after the TTL: %d subscriptions, %v (want 13, read again)", len(got), err)
	}
}

// TestSourceKeepsListWhenReadFails: after a failed read the previous list is served
// with the error, and the read is tried again after Retry, not on every call.
func TestSourceKeepsListWhenReadFails(t *testing.T) {
	ctx := context.Background()
	cfg := awstest.Config(ctx, t)
	client := ssm.NewFromConfig(cfg)
	path := fmt.Sprintf("/strata/f%d-/subscriptions", time.Now().UnixNano())
	if _, err := client.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(path + "/orders/bill"),
		Value: aws.String(`{"topic":"orders","group":"bill","function":"f"}`), Type: types.ParameterTypeString}); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	dead := cfg.Copy()
	dead.BaseEndpoint = aws.String("http://127.0.0.1:1") // nothing listens: connection refused
	sw := &switching{up: client, down: ssm.NewFromConfig(dead, func(o *ssm.Options) { o.RetryMaxAttempts = 1 })}
	c := &counting{API: sw}
	src, err := params.New(params.Config{Client: c, Path: path, TTL: time.Minute, Retry: 10 * time.Second, Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := src.Subscriptions(ctx); err != nil || len(got) != 1 {
		t.Fatalf("%+v, %v", got, err)
	}
	sw.broken.Store(true)
	now = now.Add(time.Minute)
	got, err := src.Subscriptions(ctx)
	if err == nil || len(got) != 1 {
		t.Fatalf("failed read: %+v, %v; want the previous list and the error", got, err)
	}
	calls := c.calls.Load()
	now = now.Add(9 * time.Second)
	if _, err := src.Subscriptions(ctx); err != nil || c.calls.Load() != calls {
		t.Fatalf("before Retry: %v, %d new calls", err, c.calls.Load()-calls)
	}
	sw.broken.Store(false)
	now = now.Add(time.Second)
	if got, err := src.Subscriptions(ctx); err != nil || len(got) != 1 || c.calls.Load() == calls {
		t.Fatalf("after Retry: %+v, %v", got, err)
	}
}

// switching sends calls to down while broken, else to up (both real clients).
type switching struct {
	up, down params.API
	broken   atomic.Bool
}

func (s *switching) GetParametersByPath(ctx context.Context, in *ssm.GetParametersByPathInput, opts ...func(*ssm.Options)) (*ssm.GetParametersByPathOutput, error) {
	if s.broken.Load() {
		return s.down.GetParametersByPath(ctx, in, opts...)
	}
	return s.up.GetParametersByPath(ctx, in, opts...)
}

// TestSourcePagesAndNeverDropsEverySubscription: the parameters are read a small page
// at a time (MaxResults 2: 4 pages for 7), every page of them; more parameters than the
// Source's bound serves the first ones with an error, never none (one app too many must
// not disable every attached subscription).
func TestSourcePagesAndNeverDropsEverySubscription(t *testing.T) {
	ctx := context.Background()
	client := ssm.NewFromConfig(awstest.Config(ctx, t))
	path := fmt.Sprintf("/strata/p%d-/subscriptions", time.Now().UnixNano())
	var want []deploy.Subscription
	for i := range 7 {
		s := deploy.Subscription{Topic: fmt.Sprintf("t%02d", i), Group: "g", Function: "fn"}
		v, err := deploy.EncodeSubscriptionParameter(s)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(deploy.SubscriptionParameterName(path, s.Topic, s.Group)),
			Value: aws.String(v), Type: types.ParameterTypeString}); err != nil {
			t.Fatal(err)
		}
		want = append(want, s)
	}
	c := &counting{API: client}
	src, err := params.New(params.Config{Client: c, Path: path, PageSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	got, err := src.Subscriptions(ctx)
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) || c.calls.Load() != 4 {
		t.Errorf("pages of 2: %v, %d calls, %+v; want the 7 subscriptions in 4 calls", err, c.calls.Load(), got)
	}

	bounded, err := params.New(params.Config{Client: client, Path: path, PageSize: 2, MaxParameters: 5})
	if err != nil {
		t.Fatal(err)
	}
	got, err = bounded.Subscriptions(ctx)
	if err == nil || !strings.Contains(err.Error(), "more than 5 parameters") {
		t.Errorf("7 parameters over a bound of 5: error %v, want one saying so", err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want[:5]) {
		t.Errorf("7 parameters over a bound of 5: served %+v, want the first 5 (never none)", got)
	}
}
