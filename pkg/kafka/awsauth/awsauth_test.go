package awsauth_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/stratalog/strata/internal/ststest"
	"github.com/stratalog/strata/pkg/kafka/awsauth"
	"github.com/stratalog/strata/pkg/store/awstest"
)

// emulatorConfig is an AWS configuration for the emulator's STS with static test
// credentials.
func emulatorConfig(ep string, creds aws.CredentialsProvider) aws.Config {
	if creds == nil {
		creds = credentials.NewStaticCredentialsProvider("test", "test", "")
	}
	return aws.Config{Region: "us-east-1", Credentials: creds, BaseEndpoint: aws.String(ep)}
}

// TestVerifyOnEmulator: a token presigned by Token is redeemed at the emulator's STS
// (through ststest.Relay) and names the caller; an assumed role's session names its assumed-role ARN.
func TestVerifyOnEmulator(t *testing.T) {
	ctx := context.Background()
	ep := ststest.Relay(t)
	cfg := emulatorConfig(ep, nil)
	v := &awsauth.Verifier{Endpoint: ep, Audience: "strata-test"}
	tok, err := awsauth.Token(ctx, cfg, awsauth.Options{Audience: "strata-test"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := v.Verify(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.ARN, "arn:aws:") || c.Account == "" {
		t.Fatalf("caller %+v", c)
	}

	out, err := sts.NewFromConfig(cfg, func(o *sts.Options) { o.BaseEndpoint = aws.String(awstest.Endpoint(t)) }).AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: aws.String("arn:aws:iam::123456789012:role/billing"), RoleSessionName: aws.String("s1")})
	if err != nil {
		t.Fatal(err)
	}
	role := emulatorConfig(ep, credentials.NewStaticCredentialsProvider(*out.Credentials.AccessKeyId, *out.Credentials.SecretAccessKey, *out.Credentials.SessionToken))
	tok, err = awsauth.Token(ctx, role, awsauth.Options{Audience: "strata-test"})
	if err != nil {
		t.Fatal(err)
	}
	if c, err = v.Verify(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if c.ARN != "arn:aws:sts::123456789012:assumed-role/billing/s1" {
		t.Fatalf("assumed role's caller %q", c.ARN)
	}
}

// presigned is a well-formed token's URL at host, signed at date for secs seconds.
func presigned(host string, date time.Time, secs string, edit func(url.Values)) string {
	q := url.Values{}
	q.Set("Action", "GetCallerIdentity")
	q.Set("Version", "2011-06-15")
	q.Set("X-Amz-Algorithm", "AWS4-HMAC-SHA256")
	q.Set("X-Amz-Credential", "AKID/20261202/us-east-1/sts/aws4_request")
	q.Set("X-Amz-Date", date.UTC().Format("20060102T150405Z"))
	q.Set("X-Amz-Expires", secs)
	q.Set("X-Amz-SignedHeaders", "host;"+awsauth.AudienceHeader)
	q.Set("X-Amz-Signature", "abc")
	if edit != nil {
		edit(q)
	}
	return awsauth.TokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(host+"/?"+q.Encode()))
}

// TestCheckRefuses: every token that is not a live presigned GetCallerIdentity at the
// configured endpoint, signed over the audience header, is refused before anything is
// sent (no server-side request forgery: the gateway only ever requests its own STS).
func TestCheckRefuses(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	now := time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)
	v := &awsauth.Verifier{Endpoint: "https://sts.us-east-1.amazonaws.com", Now: func() time.Time { return now }}
	good := "https://sts.us-east-1.amazonaws.com"
	if _, err := v.Check(presigned(good, now.Add(-10*time.Second), "60", nil)); err != nil {
		t.Fatalf("a good token: %v", err)
	}
	cases := map[string]string{
		"no prefix":            strings.TrimPrefix(presigned(good, now, "60", nil), awsauth.TokenPrefix),
		"not base64":           awsauth.TokenPrefix + "%%%",
		"other host":           presigned(srv.URL, now, "60", nil),
		"other host, userinfo": presigned("https://sts.us-east-1.amazonaws.com@evil.example", now, "60", nil),
		"http":                 presigned("http://sts.us-east-1.amazonaws.com", now, "60", nil),
		"other action":         presigned(good, now, "60", func(q url.Values) { q.Set("Action", "AssumeRole") }),
		"action twice":         presigned(good, now, "60", func(q url.Values) { q["Action"] = []string{"GetCallerIdentity", "AssumeRole"} }),
		"unsigned":             presigned(good, now, "60", func(q url.Values) { q.Del("X-Amz-Signature") }),
		"no audience signed":   presigned(good, now, "60", func(q url.Values) { q.Set("X-Amz-SignedHeaders", "host") }),
		"expired":              presigned(good, now.Add(-61*time.Second), "60", nil),
		"too long":             presigned(good, now, "901", nil),
		"no expiry":            presigned(good, now, "", nil),
		"future":               presigned(good, now.Add(time.Hour), "60", nil),
		"huge":                 awsauth.TokenPrefix + strings.Repeat("A", 9000),
	}
	for name, tok := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := v.Verify(context.Background(), tok); !errors.Is(err, awsauth.ErrToken) {
				t.Fatalf("Verify: %v, want ErrToken", err)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("%d requests reached a host the token chose", n)
	}
}
