// Package awsauth signs the Strata SDK's requests with AWS Signature Version 4 for a
// deployment behind API Gateway, whose routes require IAM authorization: a
// client.Option (or an http.RoundTripper) that signs every request with aws-sdk-go-v2's
// v4 signer for the service execute-api, over the SHA-256 of the body (JSON or binary),
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

// Service is the signing name of API Gateway's execute-api.
const Service = "execute-api"

// ErrNoRegion is returned when no region is given, configured or in the endpoint's host.
var ErrNoRegion = errors.New("awsauth: no region: pass one, set AWS_REGION (or a profile's region) or use an execute-api URL")

// Options configure Load.
type Options struct {
	// Region signs for this region. Empty: the region of an execute-api host
	// (<api-id>.execute-api.<region>.amazonaws.com), else the AWS configuration's
	// (AWS_REGION, the profile's region).
	Region string
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
		return nil, fmt.Errorf("awsauth: load the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, ErrNoRegion
	}
	if cfg.Credentials == nil {
		return nil, errors.New("awsauth: no credential provider configured")
	}
	return NewTransport(cfg.Credentials, cfg.Region, o.Base), nil
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
// <api-id>-<vpce-id>.execute-api.<region>.vpce.amazonaws.com), "" for any other host.
func RegionFromHost(host string) string {
	labels := strings.Split(strings.ToLower(host), ".")
	for i := 1; i+2 < len(labels); i++ {
		if labels[i] == "execute-api" && labels[i+1] != "" && slices.Contains(labels[i+2:], "amazonaws") {
			return labels[i+1]
		}
	}
	return ""
}

// Transport is an http.RoundTripper that signs each request with SigV4 (execute-api)
// and sends it with Base. It is safe for concurrent use.
type Transport struct {
	creds  aws.CredentialsProvider
	region string
	base   http.RoundTripper
	signer *v4.Signer
	now    func() time.Time
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
	return &Transport{creds: creds, region: region, base: base, signer: v4.NewSigner(), now: time.Now}
}

// Region is the region the Transport signs for.
func (t *Transport) Region() string { return t.region }

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
// sends it. The body is read whole to hash it; the copy carries it as a rewindable body.
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
		return nil, fmt.Errorf("awsauth: retrieve AWS credentials: %w", err)
	}
	out := req.Clone(ctx)
	out.Header.Del("Authorization")
	out.ContentLength = int64(len(body))
	if body == nil {
		out.Body, out.GetBody = http.NoBody, nil
	} else {
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	sum := sha256.Sum256(body)
	if err := t.signer.SignHTTP(ctx, creds, out, hex.EncodeToString(sum[:]), Service, t.region, t.now()); err != nil {
		return nil, fmt.Errorf("awsauth: sign: %w", err)
	}
	return t.base.RoundTrip(out)
}
