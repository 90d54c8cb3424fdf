package stackrun_test

import (
	"net/http"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/stratalog/strata/internal/apigwtest"
	"github.com/stratalog/strata/internal/stackrun"
	"github.com/stratalog/strata/pkg/client/awsauth"
)

// signed is the SDK's SigV4 transport (pkg/client/awsauth) with p's credentials; tamper,
// when set, changes each request after it is signed, before it is sent.
func signed(p apigwtest.Principal, tamper func(*http.Request)) http.RoundTripper {
	var base http.RoundTripper = http.DefaultTransport
	if tamper != nil {
		base = tampering{tamper}
	}
	creds := credentials.NewStaticCredentialsProvider(p.AccessKeyID, p.SecretAccessKey, p.SessionToken)
	return awsauth.NewTransport(creds, stackrun.Region, base)
}

type tampering struct{ f func(*http.Request) }

func (t tampering) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	t.f(r)
	return http.DefaultTransport.RoundTrip(r)
}
