package stackrun_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/stratalog/strata/internal/apigwtest"
	"github.com/stratalog/strata/internal/stackrun"
	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/client/awsauth"
)

// signedLambda is the SDK's SigV4 transport signing for the service lambda (a function URL).
func signedLambda(p apigwtest.Principal) http.RoundTripper {
	creds := credentials.NewStaticCredentialsProvider(p.AccessKeyID, p.SecretAccessKey, p.SessionToken)
	return awsauth.NewTransport(creds, stackrun.Region, http.DefaultTransport).WithService(awsauth.ServiceLambda)
}

// TestFunctionURLOnTheSynthesizedStack (issue 20 item 3): the stack synthesized with
// strata:frontDoor=function-url has no HTTP API; its api function's URL (AWS_IAM) is
// served behind a front checking signatures for the service lambda and the caller's
// lambda:InvokeFunctionUrl and lambda:InvokeFunction rights. The CLI (--aws-service
// lambda) creates a topic, the SDK's producer (signed for lambda) appends and a signed
// poll reads the records back; a request signed for execute-api, an unsigned one and one
// from a principal without the rights are refused with 403.
func TestFunctionURLOnTheSynthesizedStack(t *testing.T) {
	if testing.Short() {
		t.Skip("the synthesized stack takes minutes: not in -short")
	}
	st := stackrun.Start(t, stackrun.Options{
		Context: map[string]string{"strata:frontDoor": "function-url", "strata:apiGrants": operatorGrants},
		Callers: []stackrun.Caller{
			{Principal: operator, Statements: []stackrun.Statement{{Effect: "Allow",
				Actions: []string{"lambda:InvokeFunctionUrl", "lambda:InvokeFunction"}, Resources: []string{"{function}"}}}},
			{Principal: stranger},
		},
		Instances: 1,
	})
	defer func() { t.Logf("stack run summary:\n%s", st.Summary()) }()
	if st.Front != nil || st.APIURL != "" || st.FunctionURL == "" {
		t.Fatalf("front door: HTTP API %q, function URL %q; want the function URL alone", st.APIURL, st.FunctionURL)
	}
	ctx := context.Background()

	cli := newCLI(t, st.FunctionURL)
	cli.flags = []string{"--aws-service", "lambda"}
	cli.run(t, "topics", "create", "furl", "--partitions", "1")

	c := sdk(t, st.FunctionURL, signedLambda(operator))
	p, err := client.NewProducer(ctx, c, "furl", client.ProducerConfig{Linger: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var futures []*client.Future
	for i := range 5 {
		f, err := p.Send(ctx, client.Record{Key: []byte("k"), Value: fmt.Appendf(nil, "order-%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		futures = append(futures, f)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for i, f := range futures {
		if _, err := f.Wait(ctx); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	res, err := c.Poll(ctx, "furl", 0, 0, client.PollOptions{})
	if err != nil || len(res.Records) != 5 || string(res.Records[4].Value) != "order-4" {
		t.Fatalf("poll through the function URL: %v, %+v; want the 5 records", err, res)
	}

	var apiErr *client.APIError
	for _, tc := range []struct {
		name string
		rt   http.RoundTripper
	}{
		{"signed for execute-api", signed(operator, nil)},
		{"unsigned", http.DefaultTransport},
		{"no lambda:InvokeFunctionUrl", signedLambda(stranger)},
	} {
		_, err := sdk(t, st.FunctionURL, tc.rt).DescribeTopic(ctx, "furl")
		if !errors.As(err, &apiErr) || apiErr.Status != http.StatusForbidden {
			t.Errorf("%s: %v, want 403", tc.name, err)
		}
	}
	if s := st.URLFront.Stats(); s.Refused != 3 {
		t.Errorf("the URL front refused %d requests, want 3", s.Refused)
	}
	for _, d := range stackrun.DistinctDenials(st.Denials()) {
		t.Errorf("IAM denied a function's request: %s", d)
	}
}
