package strata

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/stratalog/strata/pkg/deploy"
)

// FrontDoor is how callers reach the api function: through the HTTP API (API Gateway,
// IAM authorization per route), through the function's own URL (IAM authorization, no
// per-request charge beyond Lambda's), or both. Both deliver the same payload format
// 2.0 event; the trade-offs are in docs/TRADEOFFS.md.
type FrontDoor string

const (
	// FrontDoorAPIGateway is the HTTP API alone (the default).
	FrontDoorAPIGateway FrontDoor = "apigateway"
	// FrontDoorFunctionURL is the api function's URL alone (AuthType AWS_IAM): no HTTP
	// API is created.
	FrontDoorFunctionURL FrontDoor = "function-url"
	// FrontDoorBoth creates the HTTP API and the function URL.
	FrontDoorBoth FrontDoor = "both"
)

// FrontDoors lists the valid values.
var FrontDoors = []FrontDoor{FrontDoorAPIGateway, FrontDoorFunctionURL, FrontDoorBoth}

func (f FrontDoor) apiGateway() bool  { return f == FrontDoorAPIGateway || f == FrontDoorBoth }
func (f FrontDoor) functionURL() bool { return f == FrontDoorFunctionURL || f == FrontDoorBoth }

// NoHTTPAPI is the HttpApiId a deployment without an HTTP API (FrontDoorFunctionURL)
// exports: an attached app's route grants name an API that does not exist then (a valid
// ARN granting nothing) beside its function URL grants (Attributes.APIFunctionArn).
const NoHTTPAPI = "none"

// accountRE is a 12-digit AWS account id.
var accountRE = regexp.MustCompile(`^[0-9]{12}$`)

// urlPrincipal is who a grant pattern lets invoke the function URL in the function's
// resource policy: the exact IAM user or role of a pattern without wildcards, else the
// pattern's account (whose principals then also need lambda:InvokeFunctionUrl in their
// own policies, as cross-account IAM always does). The api's grants (STRATA_GRANTS) still
// decide what each caller may do; the URL has no routes to confine them by.
func urlPrincipal(pattern string) (awsiam.IPrincipal, string, error) {
	parts := strings.SplitN(pattern, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || !accountRE.MatchString(parts[4]) {
		return nil, "", fmt.Errorf("strata: Props.APIGrants principal %q: a function URL's resource policy needs an ARN pattern with a literal 12-digit account", pattern)
	}
	if parts[2] == "iam" && !strings.ContainsAny(pattern, "*?") &&
		(strings.HasPrefix(parts[5], "role/") || strings.HasPrefix(parts[5], "user/")) {
		return awsiam.NewArnPrincipal(jsii.String(pattern)), pattern, nil
	}
	return awsiam.NewAccountPrincipal(jsii.String(parts[4])), parts[4], nil
}

// urlPrincipals are the distinct principals of grants' patterns, in grant order.
func urlPrincipals(rawGrants string) ([]awsiam.IPrincipal, []string, error) {
	gs, err := deploy.ParseGrants(rawGrants)
	if err != nil {
		return nil, nil, err
	}
	var ps []awsiam.IPrincipal
	var keys []string
	seen := map[string]bool{}
	for _, g := range gs {
		p, key, err := urlPrincipal(g.Principal)
		if err != nil {
			return nil, nil, err
		}
		if !seen[key] {
			seen[key] = true
			ps, keys = append(ps, p), append(keys, key)
		}
	}
	return ps, keys, nil
}

// newFunctionURL gives the api function its URL with IAM authorization, and lets the
// principals of Props.APIGrants invoke it (lambda:InvokeFunctionUrl, and
// lambda:InvokeFunction through the URL only, which AWS requires beside it). Principals
// of the stack's own account need nothing here: their identity policies suffice
// (GrantProduce, GrantConsume).
func (s *Strata) newFunctionURL() {
	fn := s.Functions[deploy.FunctionAPI]
	s.FunctionURL = fn.AddFunctionUrl(&awslambda.FunctionUrlOptions{
		AuthType:   awslambda.FunctionUrlAuthType_AWS_IAM,
		InvokeMode: awslambda.InvokeMode_BUFFERED,
	})
	for i, p := range s.urlPrincipals {
		fn.AddPermission(jsii.String(fmt.Sprintf("UrlInvoke%d", i)), &awslambda.Permission{
			Principal:           p,
			Action:              jsii.String("lambda:InvokeFunctionUrl"),
			FunctionUrlAuthType: awslambda.FunctionUrlAuthType_AWS_IAM,
		})
		fn.AddPermission(jsii.String(fmt.Sprintf("UrlInvokeFunction%d", i)), &awslambda.Permission{
			Principal:             p,
			Action:                jsii.String("lambda:InvokeFunction"),
			InvokedViaFunctionUrl: jsii.Bool(true),
		})
	}
}

// grantURL lets grantee call the api function's URL: lambda:InvokeFunctionUrl with
// IAM authorization, and lambda:InvokeFunction through a function URL only.
func grantURL(grantee awsiam.IGrantable, fnArn *string) awsiam.Grant {
	g := awsiam.Grant_AddToPrincipal(&awsiam.GrantOnPrincipalOptions{
		Grantee:      grantee,
		Actions:      jsii.Strings("lambda:InvokeFunctionUrl"),
		ResourceArns: &[]*string{fnArn},
		Conditions: &map[string]*map[string]any{
			"StringEquals": {"lambda:FunctionUrlAuthType": "AWS_IAM"},
		},
	})
	return g.Combine(awsiam.Grant_AddToPrincipal(&awsiam.GrantOnPrincipalOptions{
		Grantee:      grantee,
		Actions:      jsii.Strings("lambda:InvokeFunction"),
		ResourceArns: &[]*string{fnArn},
		Conditions: &map[string]*map[string]any{
			"Bool": {"lambda:InvokedViaFunctionUrl": "true"},
		},
	}))
}
