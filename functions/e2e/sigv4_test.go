package e2e

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/stratalog/strata/internal/apigwtest"
	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/client/awsauth"
)

// TestSignedSDKThroughFrontAndRIE: the SDK, signing with awsauth, drives the built api
// bootstrap under the Runtime Interface Emulator through the SigV4-checking front
// (apigwtest.RIE): create a topic, a binary append (the Producer), a JSON append, a
// binary poll (base64 through the event and back), a lease and a commit; an unsigned
// request gets the front's 403 and never reaches the function.
func TestSignedSDKThroughFrontAndRIE(t *testing.T) {
	d := newDeployment(t)
	api := startRIE(t, "api", d.env())
	front, err := apigwtest.New(apigwtest.Config{Region: "us-east-1", Principals: []apigwtest.Principal{caller0},
		Routes:  []apigwtest.Route{{Key: "GET /v1/health", Public: true}, {Key: "$default"}},
		Invoker: &apigwtest.RIE{URL: api.url}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(front)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	creds := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: caller0.AccessKeyID, SecretAccessKey: caller0.SecretAccessKey, SessionToken: caller0.SessionToken}, nil
	})
	c, err := client.New(srv.URL, awsauth.NewTransport(creds, "us-east-1", nil).Option())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, "orders", client.TopicConfig{Partitions: 1}); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	p, err := client.NewProducer(ctx, c, "orders", client.ProducerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := p.Send(ctx, client.Record{Key: []byte("k"), Value: []byte{0, 0xff, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Wait(ctx); err != nil {
		t.Fatalf("produce: %v", err)
	}
	_ = p.Close(ctx)
	if _, err := c.Append(ctx, "orders", []client.Record{{Value: []byte(`{"id":1}`)}}, client.AppendOptions{IdempotencyKey: "a,1"}); err != nil {
		t.Fatalf("append JSON: %v", err)
	}
	res, err := c.Poll(ctx, "orders", 0, 0, client.PollOptions{})
	if err != nil {
		t.Fatalf("poll: %v", err)
	}
	if len(res.Records) != 2 || !bytes.Equal(res.Records[0].Value, []byte{0, 0xff, 1}) || string(res.Records[1].Value) != `{"id":1}` {
		t.Fatalf("polled %+v", res.Records)
	}
	l, err := c.Lease(ctx, "billing", "orders", 0, "m-1", 0)
	if err != nil {
		t.Fatalf("lease: %v", err)
	}
	if got, err := c.Commit(ctx, "billing", "orders", 0, "m-1", l.Generation, res.NextOffset); err != nil || got != 2 {
		t.Fatalf("commit: %d %v", got, err)
	}

	accepted := front.Stats().Accepted
	unsigned, _ := client.New(srv.URL)
	_, err = unsigned.ListTopics(ctx)
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusForbidden || apiErr.Message != "Forbidden" {
		t.Fatalf("unsigned list: %v, want API Gateway's 403", err)
	}
	if st := front.Stats(); st.Accepted != accepted || st.Refused != 1 {
		t.Errorf("front stats %+v after the unsigned request", st)
	}
	if err := unsigned.Health(ctx); err != nil {
		t.Errorf("unsigned health (a public route): %v", err)
	}
}

// caller0 is the e2e caller with credentials, for the signing front.
var caller0 = func() apigwtest.Principal {
	p := caller
	p.SecretAccessKey, p.SessionToken = "e2e-secret", "e2e-session-token"
	return p
}()
