package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/client/awsauth"
)

// envAWS sets the default of --aws.
const envAWS = "STRATA_AWS"

// authHelp is the "Authentication" part of strata --help.
const authHelp = `Authentication:
  strata dev --auth FILE      pass --token (or STRATA_TOKEN): a bearer token of the file
  a deployment on AWS         requests are signed with AWS SigV4 (service execute-api for
                              API Gateway, lambda for a function URL; --aws-service),
                              with the AWS SDK's default credentials: AWS_ACCESS_KEY_ID /
                              AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, AWS_PROFILE or
                              --profile, SSO, web identity, container and instance roles

  The CLI signs when --aws is given (or STRATA_AWS=1), and by default when the URL is an
  API Gateway host (<api-id>.execute-api.<region>.amazonaws.com) or a function URL
  (<url-id>.lambda-url.<region>.on.aws), when --profile, --region or --aws-service is given, or when AWS credentials are configured (the variables above or
  ~/.aws/config, ~/.aws/credentials) and the URL is not a loopback address (strata dev
  never checks signatures). --token, or --aws=false, turns signing off; --token with
  --aws is an error. The region is --region, else the host's, else AWS_REGION or the
  profile's. The service is --aws-service, else lambda for a lambda-url host and
  execute-api for any other.`

// awsOptions are the signing flags.
type awsOptions struct {
	sign    bool // --aws
	signSet bool // --aws given, or STRATA_AWS set
	region  string
	profile string
	service string // --aws-service
}

func addAWSFlags(pf *pflag.FlagSet, a *awsOptions) {
	pf.BoolVar(&a.sign, "aws", false, "sign requests with AWS SigV4 for a deployment behind API Gateway or a function URL (env "+envAWS+"; when it is the default: strata --help)")
	pf.StringVar(&a.region, "region", "", "AWS `REGION` to sign for (default: the execute-api host's, else AWS_REGION or the profile's)")
	pf.StringVar(&a.service, "aws-service", "", "SigV4 `SERVICE` to sign for: execute-api (API Gateway) or lambda (a function URL; default: lambda for a lambda-url host, else execute-api)")
	pf.StringVar(&a.profile, "profile", "", "AWS shared configuration `PROFILE` for credentials and region (default: AWS_PROFILE, else default)")
}

// authMode is how the CLI authenticates its requests.
type authMode int

const (
	authNone  authMode = iota // no credential (strata dev without --auth)
	authToken                 // Authorization: Bearer (strata dev --auth)
	authSigV4                 // AWS SigV4 (API Gateway with IAM authorization)
)

// authInputs is what decideAuth decides on.
type authInputs struct {
	url       string
	token     string
	aws       *bool // --aws or STRATA_AWS; nil when neither is given
	explicit  bool  // --region, --profile or --aws-service given
	hasAWSEnv bool  // AWS credentials configured (variables or shared files)
}

// decideAuth chooses how to authenticate (the rules of authHelp).
func decideAuth(in authInputs) (authMode, error) {
	switch {
	case in.aws != nil && *in.aws && in.token != "":
		return 0, usagef("--aws signs requests with AWS credentials and --token sends a bearer token: give one of them")
	case in.aws != nil && *in.aws:
		return authSigV4, nil
	case in.token != "":
		return authToken, nil
	case in.aws != nil:
		return authNone, nil
	}
	host := ""
	if u, err := url.Parse(in.url); err == nil {
		host = u.Hostname()
	}
	switch {
	case awsauth.RegionFromHost(host) != "", in.explicit:
		return authSigV4, nil
	case in.hasAWSEnv && !isLoopback(host):
		return authSigV4, nil
	}
	return authNone, nil
}

// isLoopback reports whether host is localhost or a loopback address.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// awsConfigured reports whether the environment configures AWS credentials: one of the
// variables the SDK's default chain reads, or a shared config or credentials file.
func awsConfigured(getenv func(string) string, exists func(string) bool) bool {
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"} {
		if getenv(k) != "" {
			return true
		}
	}
	files := []string{getenv("AWS_CONFIG_FILE"), getenv("AWS_SHARED_CREDENTIALS_FILE")}
	if home, err := os.UserHomeDir(); err == nil {
		files = append(files, filepath.Join(home, ".aws", "config"), filepath.Join(home, ".aws", "credentials"))
	}
	for _, f := range files {
		if f != "" && exists(f) {
			return true
		}
	}
	return false
}

func fileExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir()
}

// authOptions returns the client options of the chosen authentication.
func (o *options) authOptions(ctx context.Context) ([]client.Option, error) {
	in := authInputs{url: o.url, token: o.token, explicit: o.aws.region != "" || o.aws.profile != "" || o.aws.service != "",
		hasAWSEnv: awsConfigured(os.Getenv, fileExists)}
	if o.aws.signSet {
		in.aws = &o.aws.sign
	} else if v := os.Getenv(envAWS); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, usagef("%s must be true or false, got %q", envAWS, v)
		}
		in.aws = &b
	}
	mode, err := decideAuth(in)
	if err != nil {
		return nil, err
	}
	switch mode {
	case authToken:
		return []client.Option{client.WithToken(o.token)}, nil
	case authSigV4:
		opt, err := awsauth.Option(ctx, o.url, awsauth.Options{Region: o.aws.region, Profile: o.aws.profile, Service: o.aws.service})
		if err != nil {
			return nil, fmt.Errorf("sign requests with AWS SigV4 (--aws=false sends them unsigned): %w", err)
		}
		return []client.Option{opt, client.WithToken("")}, nil
	}
	// No token: the CLI has read STRATA_TOKEN already, so --token "" sends none.
	return []client.Option{client.WithToken("")}, nil
}
