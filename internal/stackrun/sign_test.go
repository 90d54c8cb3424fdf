package stackrun_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/stratalog/strata/internal/apigwtest"
	"github.com/stratalog/strata/internal/stackrun"
)

// signer signs requests for execute-api with a principal's credentials (what the SDK's
// and the CLI's SigV4 options do; the harness's callers use it until they sign
// themselves).
type signer struct {
	p    apigwtest.Principal
	base http.RoundTripper
	// tamper, when set, changes the request after it is signed.
	tamper func(*http.Request)
}

func (s *signer) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		_ = r.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	r = r.Clone(r.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: s.p.AccessKeyID, SecretAccessKey: s.p.SecretAccessKey, SessionToken: s.p.SessionToken}
	if err := v4.NewSigner().SignHTTP(r.Context(), creds, r, hex.EncodeToString(sum[:]), "execute-api", stackrun.Region, time.Now()); err != nil {
		return nil, err
	}
	if s.tamper != nil {
		s.tamper(r)
	}
	base := s.base
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(r)
}

// signingProxy is a reverse proxy that signs each request it forwards to target with
// p's credentials, as aws-sigv4-proxy does for a client that cannot sign.
func signingProxy(target string, p apigwtest.Principal) http.Handler {
	u, _ := url.Parse(target)
	rp := httputil.NewSingleHostReverseProxy(u)
	director := rp.Director
	rp.Director = func(r *http.Request) {
		director(r)
		r.Host = u.Host
	}
	rp.Transport = &signer{p: p}
	return rp
}
