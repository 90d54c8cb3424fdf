// Package awsauth is the Kafka gateway's IAM authentication: a SASL OAUTHBEARER token
// that is a presigned sts:GetCallerIdentity request (the pattern of Kubernetes'
// aws-iam-authenticator). A client presigns the request with its own credentials
// (Token, or Mechanism for franz-go); the gateway checks the URL (Verifier.Check: the
// configured STS endpoint, the action, the signature's age) and redeems it at STS
// (Verifier.Verify), which answers the caller's ARN. No secret crosses the wire and
// the gateway needs no IAM permission of its own. docs/KAFKA.md, "Authentication",
// says how franz-go, librdkafka and the Java client send it.
package awsauth

import (
	"context"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
)

const (
	// TokenPrefix starts every token; the rest is the presigned URL in unpadded
	// base64url (aws-iam-authenticator's "k8s-aws-v1." with Strata's name).
	TokenPrefix = "strata-aws-v1."
	// AudienceHeader is signed into the presigned request with the gateway's audience
	// (Verifier.Audience, the same value on both sides), so a token made for another
	// service cannot be redeemed here, nor one made here elsewhere: STS refuses a
	// signature over a header value the redeemer does not send.
	AudienceHeader = "x-strata-audience"
	// DefaultAudience is the audience of `strata kafka --iam` unless --iam-audience
	// says otherwise.
	DefaultAudience = "strata"
	// DefaultExpiry is how long a token stays valid (X-Amz-Expires).
	DefaultExpiry = 60 * time.Second
	// MaxExpiry is the longest validity the gateway accepts (STS's own bound for a
	// presigned request is 15 minutes).
	MaxExpiry = 15 * time.Minute
	// maxTokenBytes bounds a token before it is decoded.
	maxTokenBytes = 8 << 10
	// maxAnswerBytes bounds STS's answer.
	maxAnswerBytes = 64 << 10
	// clockSkew is how far ahead of the gateway's clock a signature date may be.
	clockSkew = 5 * time.Minute
)

// ErrToken is returned for a token the gateway refuses before redeeming it (not one
// of these tokens, another endpoint, action or audience, expired); ErrRefused when STS
// refuses it.
var (
	ErrToken   = errors.New("awsauth: bad token")
	ErrRefused = errors.New("awsauth: STS refused the token")
)

// Options configure Token.
type Options struct {
	// Audience is the gateway's audience (Verifier.Audience).
	Audience string
	// Expiry is the token's validity (default DefaultExpiry, at most MaxExpiry).
	Expiry time.Duration
	// STS configures the STS client (an endpoint for a test emulator, say).
	STS []func(*sts.Options)
}

// Token presigns sts:GetCallerIdentity with cfg's credentials and region and returns
// it as a gateway token. A token is valid for Options.Expiry; make a new one per
// connection (Mechanism does).
func Token(ctx context.Context, cfg aws.Config, o Options) (string, error) {
	exp := o.Expiry
	if exp <= 0 {
		exp = DefaultExpiry
	}
	if exp > MaxExpiry {
		return "", fmt.Errorf("awsauth: expiry %s is over %s", exp, MaxExpiry)
	}
	pc := sts.NewPresignClient(sts.NewFromConfig(cfg, o.STS...))
	req, err := pc.PresignGetCallerIdentity(ctx, &sts.GetCallerIdentityInput{}, func(po *sts.PresignOptions) {
		po.ClientOptions = append(po.ClientOptions, func(so *sts.Options) {
			so.APIOptions = append(so.APIOptions, smithyhttp.AddHeaderValue(AudienceHeader, o.Audience), addExpires(exp))
		})
	})
	if err != nil {
		return "", fmt.Errorf("awsauth: presign GetCallerIdentity: %w", err)
	}
	return TokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(req.URL)), nil
}

// addExpires sets X-Amz-Expires on the request before it is presigned.
func addExpires(d time.Duration) func(*middleware.Stack) error {
	return func(st *middleware.Stack) error {
		return st.Build.Add(middleware.BuildMiddlewareFunc("strataExpires", func(ctx context.Context, in middleware.BuildInput, next middleware.BuildHandler) (middleware.BuildOutput, middleware.Metadata, error) {
			if r, ok := in.Request.(*smithyhttp.Request); ok {
				q := r.URL.Query()
				q.Set("X-Amz-Expires", strconv.Itoa(int(d/time.Second)))
				r.URL.RawQuery = q.Encode()
			}
			return next.HandleBuild(ctx, in)
		}), middleware.After)
	}
}

// Mechanism is franz-go's SASL OAUTHBEARER mechanism sending a fresh Token for every
// connection: kgo.SASL(awsauth.Mechanism(cfg, o)).
func Mechanism(cfg aws.Config, o Options) sasl.Mechanism {
	return oauth.Oauth(func(ctx context.Context) (oauth.Auth, error) {
		tok, err := Token(ctx, cfg, o)
		return oauth.Auth{Token: tok}, err
	})
}

// Caller is who STS says presigned a token.
type Caller struct {
	ARN, Account, UserID string
}

// Verifier redeems tokens at one STS endpoint. Its fields are read-only once in use.
type Verifier struct {
	// Endpoint is the STS endpoint tokens must name and are redeemed at
	// (https://sts.<region>.amazonaws.com; an emulator's URL in tests). A token for any
	// other scheme, host or path is refused unsent, so the gateway never requests a
	// URL a client chose.
	Endpoint string
	// Audience is sent as AudienceHeader, which every token must have signed.
	Audience string
	// Client sends the requests (nil: a client with a 10 s timeout). Redirects are
	// never followed.
	Client *http.Client
	// Now is the clock expiry is checked by (nil: time.Now).
	Now func() time.Time
}

// Check parses a token and checks, without sending anything, that it is a presigned
// GetCallerIdentity at v.Endpoint, signed over AudienceHeader, and not expired. It
// returns the URL to redeem.
func (v *Verifier) Check(token string) (*url.URL, error) {
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	return checkToken(token, v.Endpoint, now())
}

func checkToken(token, endpoint string, now time.Time) (*url.URL, error) {
	if len(token) > maxTokenBytes {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrToken, len(token), maxTokenBytes)
	}
	rest, ok := strings.CutPrefix(token, TokenPrefix)
	if !ok {
		return nil, fmt.Errorf("%w: it does not start with %q", ErrToken, TokenPrefix)
	}
	raw, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return nil, fmt.Errorf("%w: not base64url: %w", ErrToken, err)
	}
	u, err := url.Parse(string(raw))
	if err != nil {
		return nil, fmt.Errorf("%w: not a URL: %w", ErrToken, err)
	}
	want, err := url.Parse(endpoint)
	if err != nil || want.Host == "" {
		return nil, fmt.Errorf("%w: the gateway's STS endpoint %q is not a URL", ErrToken, endpoint)
	}
	wantPath := want.Path
	if wantPath == "" {
		wantPath = "/"
	}
	path := u.Path
	if path == "" {
		path = "/"
	}
	switch {
	case u.Scheme != want.Scheme || !strings.EqualFold(u.Host, want.Host):
		return nil, fmt.Errorf("%w: it is for %s://%s, the gateway redeems at %s://%s only", ErrToken, u.Scheme, u.Host, want.Scheme, want.Host)
	case u.User != nil || u.Fragment != "" || u.Opaque != "":
		return nil, fmt.Errorf("%w: the URL has user information, a fragment or an opaque part", ErrToken)
	case path != wantPath:
		return nil, fmt.Errorf("%w: path %q, want %q", ErrToken, path, wantPath)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("%w: query: %w", ErrToken, err)
	}
	for k, vs := range q {
		if len(vs) != 1 {
			return nil, fmt.Errorf("%w: query parameter %q given %d times", ErrToken, k, len(vs))
		}
	}
	if q.Get("Action") != "GetCallerIdentity" {
		return nil, fmt.Errorf("%w: action %q, only GetCallerIdentity is redeemed", ErrToken, q.Get("Action"))
	}
	if q.Get("X-Amz-Algorithm") != "AWS4-HMAC-SHA256" || q.Get("X-Amz-Credential") == "" || q.Get("X-Amz-Signature") == "" {
		return nil, fmt.Errorf("%w: not a SigV4-presigned request", ErrToken)
	}
	signed := strings.Split(q.Get("X-Amz-SignedHeaders"), ";")
	hasHost, hasAudience := false, false
	for _, h := range signed {
		hasHost = hasHost || h == "host"
		hasAudience = hasAudience || h == AudienceHeader
	}
	if !hasHost || !hasAudience {
		return nil, fmt.Errorf("%w: the signature must cover host and %s", ErrToken, AudienceHeader)
	}
	date, err := time.Parse("20060102T150405Z", q.Get("X-Amz-Date"))
	if err != nil {
		return nil, fmt.Errorf("%w: X-Amz-Date: %w", ErrToken, err)
	}
	secs, err := strconv.Atoi(q.Get("X-Amz-Expires"))
	if err != nil || secs <= 0 || time.Duration(secs)*time.Second > MaxExpiry {
		return nil, fmt.Errorf("%w: X-Amz-Expires %q must be 1–%d seconds", ErrToken, q.Get("X-Amz-Expires"), int(MaxExpiry/time.Second))
	}
	switch {
	case date.After(now.Add(clockSkew)):
		return nil, fmt.Errorf("%w: signed at %s, in the future", ErrToken, date.Format(time.RFC3339))
	case !now.Before(date.Add(time.Duration(secs) * time.Second)):
		return nil, fmt.Errorf("%w: expired at %s", ErrToken, date.Add(time.Duration(secs)*time.Second).Format(time.RFC3339))
	}
	return u, nil
}

// Verify checks token (Check) and redeems it at STS: the caller whose credentials
// presigned it. ErrToken and ErrRefused say which side refused it.
func (v *Verifier) Verify(ctx context.Context, token string) (Caller, error) {
	u, err := v.Check(token)
	if err != nil {
		return Caller{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Caller{}, fmt.Errorf("%w: %w", ErrToken, err)
	}
	req.Header.Set(AudienceHeader, v.Audience)
	hc := http.Client{Timeout: 10 * time.Second}
	if v.Client != nil {
		hc = *v.Client
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := hc.Do(req)
	if err != nil {
		return Caller{}, fmt.Errorf("awsauth: redeem at STS: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return Caller{}, fmt.Errorf("awsauth: read STS's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return Caller{}, fmt.Errorf("%w: HTTP %d: %s", ErrRefused, resp.StatusCode, stsError(body))
	}
	var out struct {
		Result struct {
			Arn     string `xml:"Arn"`
			Account string `xml:"Account"`
			UserID  string `xml:"UserId"`
		} `xml:"GetCallerIdentityResult"`
	}
	if err := xml.Unmarshal(body, &out); err != nil || !strings.HasPrefix(out.Result.Arn, "arn:") {
		return Caller{}, fmt.Errorf("awsauth: STS's answer names no caller ARN")
	}
	return Caller{ARN: out.Result.Arn, Account: out.Result.Account, UserID: out.Result.UserID}, nil
}

// stsError is the message of STS's error answer, or its status alone.
func stsError(body []byte) string {
	var e struct {
		Error struct {
			Code    string `xml:"Code"`
			Message string `xml:"Message"`
		} `xml:"Error"`
	}
	if xml.Unmarshal(body, &e) == nil && e.Error.Code != "" {
		return e.Error.Code + ": " + e.Error.Message
	}
	return "no error message"
}
