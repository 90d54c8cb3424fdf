// Package awsauth signs the Strata SDK's requests with AWS Signature Version 4 for a
// deployment behind API Gateway or the api function's URL, both with IAM authorization:
// a client.Option (or an http.RoundTripper) that signs every request with aws-sdk-go-v2's
// v4 signer for the service execute-api (API Gateway) or lambda (a function URL,
// <url-id>.lambda-url.<region>.on.aws), over the SHA-256 of the body (JSON or binary),
// with credentials from the SDK's default chain (environment, shared config and
// credentials files and profiles, SSO, web identity, container and instance roles)
// behind the SDK's credentials cache, so expiring credentials are refreshed.
//
// Each request is signed when it is sent, so a retry (the Producer resends the same
// bytes) carries a fresh signature and date, and a long poll is signed like any other
// request. It lives apart from pkg/client so that the SDK itself needs nothing of the
// AWS SDK.
package awsauth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/stratalog/strata/pkg/client"
)

// Signing names of the two front doors.
const (
	// Service is the signing name of API Gateway's execute-api.
	Service = "execute-api"
	// ServiceLambda is the signing name of a Lambda function URL.
	ServiceLambda = "lambda"
)

// ErrNoRegion is returned when no region is given, configured or in the endpoint's host.
var ErrNoRegion = errors.New("awsauth: no region: pass one, set AWS_REGION (or a profile's region) or use an execute-api or lambda-url URL")

// ErrConfig is returned when the AWS configuration cannot be loaded (a profile that
// does not exist, a malformed config file).
var ErrConfig = errors.New("awsauth: load the AWS configuration")

// ErrCredentials is returned when no AWS credentials can be retrieved to sign a request
// (none configured, an expired SSO session).
var ErrCredentials = errors.New("awsauth: retrieve AWS credentials")

// ErrService is returned for a signing name other than Service and ServiceLambda.
var ErrService = errors.New("awsauth: the service must be execute-api (API Gateway) or lambda (a function URL)")

// Options configure Load.
type Options struct {
	// Region signs for this region. Empty: the region of an execute-api host
	// (<api-id>.execute-api.<region>.amazonaws.com) or a function URL's host
	// (<url-id>.lambda-url.<region>.on.aws), else the AWS configuration's (AWS_REGION,
	// the profile's region).
	Region string
	// Service is the signing name, Service or ServiceLambda. Empty: ServiceFromHost of
	// the endpoint (lambda for a lambda-url host, execute-api otherwise); set it for a
	// function URL behind another name (CloudFront, a custom domain, a test front).
	Service string
	// Profile selects a shared configuration profile (empty: AWS_PROFILE or default).
	Profile string
	// Credentials replaces the default credential chain (it is cached as the chain is).
	Credentials aws.CredentialsProvider
	// Base is the transport that sends the signed requests (nil: a clone of
	// http.DefaultTransport).
	Base http.RoundTripper
}

// Load resolves region and credentials as Options say for requests to endpoint (the
// Strata base URL) and returns the signing transport. Credentials are not retrieved
// until the first request.
func Load(ctx context.Context, endpoint string, o Options) (*Transport, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, fmt.Errorf("awsauth: endpoint: %w", err)
	}
	region := o.Region
	if region == "" {
		region = RegionFromHost(u.Hostname())
	}
	service := o.Service
	if service == "" {
		service = ServiceFromHost(u.Hostname())
	}
	if service != Service && service != ServiceLambda {
		return nil, fmt.Errorf("%w, got %q", ErrService, service)
	}
	var loadOpts []func(*config.LoadOptions) error
	if o.Profile != "" {
		loadOpts = append(loadOpts, config.WithSharedConfigProfile(o.Profile))
	}
	if region != "" {
		loadOpts = append(loadOpts, config.WithRegion(region))
	}
	if o.Credentials != nil {
		loadOpts = append(loadOpts, config.WithCredentialsProvider(o.Credentials))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if cfg.Region == "" {
		return nil, ErrNoRegion
	}
	if cfg.Credentials == nil {
		return nil, errors.New("awsauth: no credential provider configured")
	}
	return NewTransport(cfg.Credentials, cfg.Region, o.Base).WithService(service), nil
}

// Option is Load's transport as a client.Option: the Client's requests go through it.
func Option(ctx context.Context, endpoint string, o Options) (client.Option, error) {
	t, err := Load(ctx, endpoint, o)
	if err != nil {
		return nil, err
	}
	return t.Option(), nil
}

// RegionFromHost returns the region of an API Gateway host
// (<api-id>.execute-api.<region>.amazonaws.com[.cn], or a VPC endpoint's
// <api-id>-<vpce-id>.execute-api.<region>.vpce.amazonaws.com) or of a function URL's
// host (<url-id>.lambda-url.<region>.on.aws), "" for any other host.
func RegionFromHost(host string) string {
	labels := strings.Split(strings.ToLower(host), ".")
	for i := 1; i+2 < len(labels); i++ {
		if labels[i] == "execute-api" && labels[i+1] != "" && slices.Contains(labels[i+2:], "amazonaws") {
			return labels[i+1]
		}
	}
	if i := lambdaURLLabel(labels); i > 0 {
		return labels[i+1]
	}
	return ""
}

// ServiceFromHost returns the signing name for host: ServiceLambda for a function URL's
// host (<url-id>.lambda-url.<region>.on.aws), Service (execute-api) for any other.
func ServiceFromHost(host string) string {
	if lambdaURLLabel(strings.Split(strings.ToLower(host), ".")) > 0 {
		return ServiceLambda
	}
	return Service
}

// lambdaURLLabel is the index of "lambda-url" in the labels of a function URL's host
// <url-id>.lambda-url.<region>.on.aws, or -1.
func lambdaURLLabel(labels []string) int {
	n := len(labels)
	if n == 5 && labels[0] != "" && labels[1] == "lambda-url" && labels[2] != "" && labels[3] == "on" && labels[4] == "aws" {
		return 1
	}
	return -1
}

// Transport is an http.RoundTripper that signs each request with SigV4 (execute-api
// unless WithService says lambda) and sends it with Base. It is safe for concurrent use.
type Transport struct {
	creds   aws.CredentialsProvider
	region  string
	service string
	base    http.RoundTripper
	signer  *v4.Signer
	now     func() time.Time
}

// NewTransport signs for region with creds, cached with aws.NewCredentialsCache unless
// it already is a cache; base nil is a clone of http.DefaultTransport.
func NewTransport(creds aws.CredentialsProvider, region string, base http.RoundTripper) *Transport {
	if _, cached := creds.(*aws.CredentialsCache); !cached {
		creds = aws.NewCredentialsCache(creds)
	}
	if base == nil {
		base = http.DefaultTransport.(*http.Transport).Clone()
	}
	return &Transport{creds: creds, region: region, service: Service, base: base, signer: v4.NewSigner(), now: time.Now}
}

// Region is the region the Transport signs for.
func (t *Transport) Region() string { return t.region }

// Service is the signing name the Transport signs for.
func (t *Transport) Service() string { return t.service }

// WithService makes the Transport sign for service: Service (API Gateway) or
// ServiceLambda (a function URL). Any other name is kept as given, for tests of
// refusals; Load checks it.
func (t *Transport) WithService(service string) *Transport {
	c := *t
	c.service = service
	return &c
}

// WithClock makes the Transport sign with now's times (tests of expiry and retries).
func (t *Transport) WithClock(now func() time.Time) *Transport {
	c := *t
	c.now = now
	return &c
}

// Option is a client.Option sending the Client's requests through t, with no timeout
// of its own (contexts bound each call, so long polls still work).
func (t *Transport) Option() client.Option {
	return client.WithHTTPClient(&http.Client{Transport: t})
}

// RoundTrip signs a copy of req (an Authorization header it carries is replaced) and
// sends it. The body is read whole to hash it; the copy carries it as a rewindable body
// if req's was (GetBody set): a request whose body the caller made not rewindable (a
// producer request's attempt, which must not be resent by the transport) stays so.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("awsauth: read the request body: %w", err)
		}
		body = b
	}
	ctx := req.Context()
	creds, err := t.creds.Retrieve(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCredentials, err)
	}
	out := req.Clone(ctx)
	out.Header.Del("Authorization")
	out.ContentLength = int64(len(body))
	if body == nil {
		out.Body, out.GetBody = http.NoBody, nil
	} else {
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.GetBody = nil
		if req.GetBody != nil {
			out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		}
	}
	sum := sha256.Sum256(body)
	if err := t.signer.SignHTTP(ctx, creds, out, hex.EncodeToString(sum[:]), t.service, t.region, t.now()); err != nil {
		return nil, fmt.Errorf("awsauth: sign: %w", err)
	}
	return t.base.RoundTrip(out)
}
