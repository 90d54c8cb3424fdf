package apigwtest

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Signing names: API Gateway's execute-api and a Lambda function URL's lambda.
const (
	Service       = "execute-api"
	ServiceLambda = "lambda"
)

// Principal is one test caller: its credentials and the identity API Gateway reports for
// it in requestContext.authorizer.iam.
type Principal struct {
	AccessKeyID     string
	SecretAccessKey string
	// SessionToken, when set, must come as X-Amz-Security-Token (temporary credentials).
	SessionToken string
	// ARN is the caller's principal ARN (userArn), e.g.
	// "arn:aws:sts::123456789012:assumed-role/producer/session".
	ARN string
	// AccountID, UserID and CallerID fill accountId, userId and callerId (UserID and
	// CallerID default to AccessKeyID, AccountID to the Front's).
	AccountID, UserID, CallerID string
	PrincipalOrgID              string
}

// amzDateFormat is the layout of X-Amz-Date.
const amzDateFormat = "20060102T150405Z"

// authHeader is a parsed "AWS4-HMAC-SHA256 Credential=…, SignedHeaders=…, Signature=…".
type authHeader struct {
	accessKey, date, region, service, terminator string
	signedHeaders                                string
	signature                                    string
}

// parseAuthorization parses a SigV4 Authorization header value.
func parseAuthorization(v string) (authHeader, error) {
	const alg = "AWS4-HMAC-SHA256"
	var a authHeader
	rest, ok := strings.CutPrefix(v, alg+" ")
	if !ok {
		return a, fmt.Errorf("Authorization header requires the %s algorithm", alg)
	}
	var cred string
	var seenCred, seenSH, seenSig bool
	for part := range strings.SplitSeq(rest, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return a, fmt.Errorf("Authorization header parameter %q is not key=value", strings.TrimSpace(part))
		}
		switch k {
		case "Credential":
			cred, seenCred = val, true
		case "SignedHeaders":
			a.signedHeaders, seenSH = val, true
		case "Signature":
			a.signature, seenSig = val, true
		default:
			return a, fmt.Errorf("Authorization header has the unknown parameter %q", k)
		}
	}
	var missing []string
	for _, m := range []struct {
		seen bool
		name string
	}{{seenCred, "Credential"}, {seenSig, "Signature"}, {seenSH, "SignedHeaders"}} {
		if !m.seen {
			missing = append(missing, fmt.Sprintf("Authorization header requires '%s' parameter.", m.name))
		}
	}
	if len(missing) > 0 {
		return a, fmt.Errorf("%s", strings.Join(missing, " "))
	}
	parts := strings.Split(cred, "/")
	if len(parts) != 5 || parts[0] == "" {
		return a, fmt.Errorf("Credential %q is not access-key/date/region/service/aws4_request", cred)
	}
	a.accessKey, a.date, a.region, a.service, a.terminator = parts[0], parts[1], parts[2], parts[3], parts[4]
	if a.signedHeaders == "" || a.signature == "" {
		return a, fmt.Errorf("Authorization header has an empty SignedHeaders or Signature")
	}
	return a, nil
}

// denial is a refused request: API Gateway's status, x-amzn-ErrorType and message.
type denial struct {
	status  int
	errType string
	message string
}

func (d *denial) Error() string { return d.message }

var errForbidden = &denial{http.StatusForbidden, "ForbiddenException", "Forbidden"}

func incomplete(msg string) *denial {
	return &denial{http.StatusForbidden, "IncompleteSignatureException", msg}
}

func invalidSignature(msg string) *denial {
	return &denial{http.StatusForbidden, "InvalidSignatureException", msg}
}

var (
	errMismatch = invalidSignature("The request signature we calculated does not match the signature you provided. " +
		"Check your AWS Secret Access Key and signing method. Consult the service documentation for details.")
	errUnknownKey = &denial{http.StatusForbidden, "UnrecognizedClientException", "The security token included in the request is invalid."}
)

// verifier checks SigV4 signatures of requests scoped to service.
type verifier struct {
	region  string
	service string
	maxSkew time.Duration
	now     func() time.Time
	keys    map[string]Principal
	signer  *v4.Signer
}

// verify checks r's signature over body and returns the caller.
func (v *verifier) verify(ctx context.Context, r *http.Request, body []byte) (Principal, *denial) {
	authz := r.Header.Values("Authorization")
	if len(authz) == 0 {
		return Principal{}, errForbidden
	}
	if len(authz) > 1 {
		return Principal{}, incomplete("The request carries more than one Authorization header.")
	}
	a, err := parseAuthorization(authz[0])
	if err != nil {
		return Principal{}, incomplete(err.Error())
	}
	p, ok := v.keys[a.accessKey]
	if !ok {
		return Principal{}, errUnknownKey
	}
	amzDate := r.Header.Get("X-Amz-Date")
	if amzDate == "" {
		return Principal{}, incomplete("Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.")
	}
	signed, err := time.Parse(amzDateFormat, amzDate)
	if err != nil {
		return Principal{}, incomplete(fmt.Sprintf("X-Amz-Date %q is not in the ISO-8601 basic format %s.", amzDate, amzDateFormat))
	}
	switch {
	case a.date != signed.Format("20060102"):
		return Principal{}, invalidSignature(fmt.Sprintf("Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '%s' != '%s', from 'X-Amz-Date'.", a.date, signed.Format("20060102")))
	case a.region != v.region:
		return Principal{}, invalidSignature(fmt.Sprintf("Credential should be scoped to a valid region, not '%s'.", a.region))
	case a.service != v.service:
		return Principal{}, invalidSignature(fmt.Sprintf("Credential should be scoped to correct service: '%s'.", v.service))
	case a.terminator != "aws4_request":
		return Principal{}, invalidSignature("Credential should be scoped with a valid terminator: 'aws4_request', not '" + a.terminator + "'.")
	}
	now := v.now().UTC()
	if signed.Before(now.Add(-v.maxSkew)) {
		return Principal{}, invalidSignature(fmt.Sprintf("Signature expired: %s is now earlier than %s (%s - %s.)",
			amzDate, now.Add(-v.maxSkew).Format(amzDateFormat), now.Format(amzDateFormat), skewText(v.maxSkew)))
	}
	if signed.After(now.Add(v.maxSkew)) {
		return Principal{}, invalidSignature(fmt.Sprintf("Signature not yet current: %s is still later than %s (%s + %s.)",
			amzDate, now.Add(v.maxSkew).Format(amzDateFormat), now.Format(amzDateFormat), skewText(v.maxSkew)))
	}
	if tok := r.Header.Get("X-Amz-Security-Token"); tok != p.SessionToken {
		return Principal{}, errUnknownKey
	}
	sum := sha256.Sum256(body)
	payloadHash := hex.EncodeToString(sum[:])
	if h := r.Header.Get("X-Amz-Content-Sha256"); h != "" && h != payloadHash {
		return Principal{}, errMismatch
	}
	names := strings.Split(a.signedHeaders, ";")
	if !slices.IsSorted(names) || !slices.Contains(names, "host") {
		return Principal{}, errMismatch
	}
	scheme := "https"
	if r.TLS == nil {
		scheme = "http"
	}
	re := &http.Request{
		Method: r.Method,
		URL:    &url.URL{Scheme: scheme, Host: r.Host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery},
		Host:   r.Host,
		Header: http.Header{},
	}
	for _, n := range names {
		switch n {
		case "host":
		case "content-length":
			re.ContentLength = int64(len(body))
		default:
			vals := r.Header.Values(n)
			if len(vals) == 0 {
				return Principal{}, errMismatch
			}
			re.Header[http.CanonicalHeaderKey(n)] = vals
		}
	}
	creds := aws.Credentials{AccessKeyID: p.AccessKeyID, SecretAccessKey: p.SecretAccessKey, SessionToken: p.SessionToken}
	if err := v.signer.SignHTTP(ctx, creds, re, payloadHash, v.service, v.region, signed); err != nil {
		return Principal{}, invalidSignature("the signature could not be computed: " + err.Error())
	}
	want, err := parseAuthorization(re.Header.Get("Authorization"))
	if err != nil || want.signedHeaders != a.signedHeaders ||
		subtle.ConstantTimeCompare([]byte(want.signature), []byte(a.signature)) != 1 {
		return Principal{}, errMismatch
	}
	return p, nil
}

// skewText is how API Gateway writes the allowed skew ("5 min").
func skewText(d time.Duration) string {
	if d%time.Minute == 0 {
		return fmt.Sprintf("%d min", int(d/time.Minute))
	}
	return d.String()
}
