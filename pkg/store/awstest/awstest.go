// Package awstest points tests of AWS-facing code at a local emulator (the moto launcher
// in localstack/, or LocalStack) and skips or fails them, as the environment asks, when
// none answers. It only ever talks to a loopback address.
package awstest

import (
	"context"
	"net"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/stratalog/strata/pkg/deploy"
)

const (
	// EnvEndpoint names the variable holding the emulator's URL, e.g.
	// http://127.0.0.1:4566: the SDK's own, as `strata dev` reads it; the test scripts'
	// STRATA_AWS_ENDPOINT is its alias (deploy.Endpoint reconciles the two).
	EnvEndpoint = deploy.EnvEndpoint
	// EnvRequire names the variable that, set to 1, turns a missing emulator from a skip
	// into a failure (CI sets it so emulator tests can never silently not run).
	EnvRequire = "STRATA_REQUIRE_EMULATOR"
	// Region is the region every test client uses.
	Region = "us-east-1"
)

// Endpoint returns the emulator URL from AWS_ENDPOINT_URL (or its alias
// STRATA_AWS_ENDPOINT) after checking that it is a loopback address that accepts
// connections. When it is unset or nothing answers, the
// test is skipped, or failed when STRATA_REQUIRE_EMULATOR=1. A non-loopback endpoint
// always fails the test: tests must never reach a real AWS account.
func Endpoint(t testing.TB) string {
	t.Helper()
	return endpoint(context.Background(), t)
}

func endpoint(ctx context.Context, t testing.TB) string {
	t.Helper()
	raw := deploy.Endpoint(os.Getenv)
	if raw == "" {
		unavailable(t, EnvEndpoint+" is not set (run `bash localstack/start.sh` and export "+
			EnvEndpoint+"=http://127.0.0.1:4566)")
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		t.Fatalf("awstest: %s=%q is not an http(s) URL", EnvEndpoint, raw)
	}
	if !isLoopback(u.Hostname()) {
		t.Fatalf("awstest: %s=%q is not a loopback address; tests only talk to a local emulator", EnvEndpoint, raw)
	}
	hostport := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		hostport = net.JoinHostPort(u.Hostname(), port)
	}
	dialCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(dialCtx, "tcp", hostport)
	if err != nil {
		unavailable(t, "nothing answers at "+EnvEndpoint+"="+raw+" ("+err.Error()+"); start it with `bash localstack/start.sh`")
		return ""
	}
	_ = conn.Close()
	return raw
}

func unavailable(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv(EnvRequire) == "1" {
		t.Fatalf("awstest: emulator required (%s=1) but %s", EnvRequire, msg)
	}
	t.Skipf("awstest: skipping, no AWS emulator: %s", msg)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Config returns an aws.Config for the emulator at Endpoint: static test credentials,
// region us-east-1, BaseEndpoint set for every client, and a standard retryer with short
// backoff and no client-side retry quota (so a burst of conflicts in a test cannot
// exhaust it). It reads no shared AWS config files or profiles.
func Config(ctx context.Context, t testing.TB) aws.Config {
	t.Helper()
	ep := endpoint(ctx, t)
	return aws.Config{
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(ep),
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = 5
				o.MaxBackoff = 500 * time.Millisecond
				o.RateLimiter = ratelimit.None
			})
		},
	}
}

// S3Client returns an S3 client for the emulator, with path-style addressing (the
// emulator cannot resolve bucket.host virtual-host names on 127.0.0.1).
func S3Client(ctx context.Context, t testing.TB) *s3.Client {
	t.Helper()
	return s3.NewFromConfig(Config(ctx, t), func(o *s3.Options) { o.UsePathStyle = true })
}

// StreamsClient returns a DynamoDB Streams client for the emulator.
func StreamsClient(ctx context.Context, t testing.TB) *dynamodbstreams.Client {
	t.Helper()
	return dynamodbstreams.NewFromConfig(Config(ctx, t))
}

// DynamoDBClient returns a DynamoDB client for the emulator.
func DynamoDBClient(ctx context.Context, t testing.TB) *dynamodb.Client {
	t.Helper()
	return dynamodb.NewFromConfig(Config(ctx, t))
}
