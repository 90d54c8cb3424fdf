// Package lambdafn adapts Strata's handlers to the events AWS Lambda delivers: the api
// function's API Gateway HTTP API requests (payload format 2.0), the dispatch function's
// DynamoDB stream and scheduled events, and the retention function's schedule. It holds
// the Lambda-facing logic (principals from the IAM request context, the payload limits,
// stream record decoding) so that the mains under functions/ only read configuration,
// assemble through pkg/runtime and call lambda.Start, and so that tests drive every
// handler with real event payloads (testdata/).
package lambdafn

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/httpapi"
	"github.com/stratalog/strata/pkg/metrics/emf"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/wire"
)

// API serves the HTTP contract behind API Gateway: it is a lambda.Handler over the same
// http.Handler `strata dev` serves (pkg/runtime builds both).
type API struct {
	adapter    *httpadapter.HandlerAdapterV2
	principals *Principals
	metrics    *emf.Sink
}

// WithMetrics makes every invocation end with metrics.FlushIfDue: the handler's
// aggregating sink (emf.NewAggregated) writes what it holds once an interval has
// passed, and never more than an interval waits in an environment Lambda freezes.
func (a *API) WithMetrics(metrics *emf.Sink) *API {
	a.metrics = metrics
	return a
}

// NewAPI wraps h. With principals (grants configured), h must have been built with
// principals.Authorizer() (runtime.Config.Auth); nil principals means every caller API
// Gateway admitted may do everything.
func NewAPI(h http.Handler, principals *Principals) *API {
	return &API{adapter: httpadapter.NewV2(restoreHeaders(h)), principals: principals}
}

// unsplitHeaders are the headers whose value the handler must see exactly as API
// Gateway delivered it: the proxy splits every header it does not know as single-valued
// at its commas, which would turn an Idempotency-Key holding a comma into two.
var unsplitHeaders = []string{"Idempotency-Key"}

type eventHeadersKey struct{}

// restoreHeaders sets the unsplit headers from the event's own header map, which Serve
// puts in the request's context.
func restoreHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if raw, ok := r.Context().Value(eventHeadersKey{}).(map[string]string); ok {
			for _, name := range unsplitHeaders {
				for k, v := range raw {
					if strings.EqualFold(k, name) {
						r.Header.Set(name, v)
					}
				}
			}
		}
		h.ServeHTTP(w, r)
	})
}

// Invoke implements lambda.Handler. A payload that is not an API Gateway v2 event is an
// error (the invocation fails); every request gets an HTTP answer, a too-large body
// the contract's 413.
func (a *API) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	var req events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(payload, &req); err != nil {
		return nil, fmt.Errorf("lambdafn: not an API Gateway HTTP API event: %w", err)
	}
	if req.Version != "2.0" || req.RequestContext.HTTP.Method == "" {
		return nil, errors.New("lambdafn: not an API Gateway HTTP API event (payload format 2.0)")
	}
	resp := a.Serve(ctx, req)
	if a.metrics != nil {
		a.metrics.FlushIfDue()
	}
	out, err := json.Marshal(resp)
	if err != nil {
		return nil, fmt.Errorf("lambdafn: encode response: %w", err)
	}
	if len(out) > deploy.MaxLambdaPayload {
		// The contract keeps answers well below (poll max_bytes ≤ 3 MiB); an answer
		// this large is a server bug, so say so rather than let Lambda fail opaquely.
		out, _ = json.Marshal(errorResponse(http.StatusInternalServerError, "internal", "the answer exceeds Lambda's response limit"))
	}
	return out, nil
}

// Serve answers one request. Every answer says the largest body the function takes
// (wire.HeaderMaxBody), so that the SDK's producer sizes its requests by it.
func (a *API) Serve(ctx context.Context, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	resp := a.serve(ctx, req)
	if resp.Headers == nil {
		resp.Headers = map[string]string{}
	}
	resp.Headers[wire.HeaderMaxBody] = strconv.Itoa(deploy.MaxAPIBody)
	return resp
}

func (a *API) serve(ctx context.Context, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	if n := bodySize(req); n > deploy.MaxAPIBody {
		return errorAnswer(http.StatusRequestEntityTooLarge, wire.CodePayloadTooLarge,
			fmt.Sprintf("the request body is %d bytes; behind API Gateway and Lambda at most %d bytes are accepted (docs/API.md)", n, deploy.MaxAPIBody),
			map[string]any{"max_body_bytes": deploy.MaxAPIBody})
	}
	if _, err := decodeBody(req); err != nil {
		return errorResponse(http.StatusBadRequest, wire.CodeInvalidRequest, "the body is flagged base64 but is not valid base64")
	}
	// The caller's own Authorization header (a SigV4 signature behind IAM
	// authorization) is never a Strata credential.
	req.Headers = withoutAuthorization(req.Headers)
	if a.principals != nil {
		req.Headers["authorization"] = "Bearer " + a.principals.token(callerARN(req))
	}
	if arn := callerARN(req); arn != "" {
		// Idempotency keys are the IAM principal's, whichever grant it matched.
		ctx = httpapi.WithCaller(ctx, keyCaller(arn))
	}
	resp, err := a.adapter.ProxyWithContext(context.WithValue(ctx, eventHeadersKey{}, req.Headers), req)
	if err != nil {
		return errorResponse(http.StatusInternalServerError, "internal", "the request could not be served")
	}
	return resp
}

// callerARN is the IAM principal API Gateway authenticated, "" when none.
func callerARN(req events.APIGatewayV2HTTPRequest) string {
	if az := req.RequestContext.Authorizer; az != nil && az.IAM != nil {
		return az.IAM.UserARN
	}
	return ""
}

// keyCaller is the identity an IAM caller's idempotency keys are scoped by: its ARN,
// without the session name of an assumed role's session
// (arn:aws:sts::<account>:assumed-role/<role>/<session> → …/<role>), so every session
// of a role — a producer whose credentials were refreshed between a request and its
// retry, the members of a consumer group on several instances — is one principal.
func keyCaller(arn string) string {
	head, res, ok := strings.Cut(arn, ":assumed-role/")
	if !ok || !strings.HasPrefix(head, "arn:") {
		return arn
	}
	if role, _, ok := strings.Cut(res, "/"); ok && role != "" {
		return head + ":assumed-role/" + role
	}
	return arn
}

func bodySize(req events.APIGatewayV2HTTPRequest) int {
	if req.IsBase64Encoded {
		return len(req.Body) / 4 * 3
	}
	return len(req.Body)
}

func decodeBody(req events.APIGatewayV2HTTPRequest) ([]byte, error) {
	if !req.IsBase64Encoded {
		return nil, nil
	}
	return base64.StdEncoding.DecodeString(req.Body)
}

func withoutAuthorization(h map[string]string) map[string]string {
	out := make(map[string]string, len(h)+1)
	for k, v := range h {
		if !strings.EqualFold(k, "authorization") {
			out[k] = v
		}
	}
	return out
}

// errorResponse is the contract's error body (docs/API.md, "Errors").
func errorResponse(status int, code, msg string) events.APIGatewayV2HTTPResponse {
	return errorAnswer(status, code, msg, nil)
}

// errorAnswer is errorResponse with extra members beside "error".
func errorAnswer(status int, code, msg string, extra map[string]any) events.APIGatewayV2HTTPResponse {
	body := map[string]any{"error": map[string]string{"code": code, "message": msg}}
	for k, v := range extra {
		body[k] = v
	}
	var b bytes.Buffer
	_ = json.NewEncoder(&b).Encode(body)
	return events.APIGatewayV2HTTPResponse{
		StatusCode: status,
		Headers:    map[string]string{"Content-Type": "application/json"},
		Body:       b.String(),
	}
}

// Principals maps IAM principal ARNs to the permissions of deploy.Grants: each grant
// gets a random bearer token of an Authorizer built from the grants, and callers no
// grant matches get one with no permissions. The tokens never leave the process; the
// handler sees them as if the caller had presented them.
type Principals struct {
	grants  []deploy.Grant
	tokens  []string
	nomatch string
	auth    *httpapi.Authorizer
}

// NewPrincipals checks the grants' resources and operations as the auth file's loader
// does. No grants refuses every caller: authorization on AWS denies by default, and the
// stack opts out only explicitly (deploy.EnvEveryPrincipalAdmin, a nil *Principals).
func NewPrincipals(grants []deploy.Grant) (*Principals, error) {
	type allow struct {
		Resource string   `json:"resource"`
		Ops      []string `json:"ops"`
	}
	type principal struct {
		Name  string  `json:"name"`
		Allow []allow `json:"allow,omitempty"` // the auth format refuses null
	}
	file := map[string]map[string]principal{"principals": {}}
	p := &Principals{grants: grants, nomatch: newToken()}
	for _, g := range grants {
		tok := newToken()
		p.tokens = append(p.tokens, tok)
		pr := principal{Name: g.Name}
		for _, a := range g.Allow {
			pr.Allow = append(pr.Allow, allow(a))
		}
		file["principals"][tok] = pr
	}
	file["principals"][p.nomatch] = principal{Name: "(no grant matches the caller)"}
	raw, err := json.Marshal(file)
	if err != nil {
		return nil, err
	}
	if p.auth, err = httpapi.ParseAuth(raw); err != nil {
		return nil, fmt.Errorf("lambdafn: %s: %w", deploy.EnvGrants, err)
	}
	return p, nil
}

// APIPrincipals is the api function's authorization from its configuration
// (node.FromEnv): the grants' Principals, which refuse every caller when there are
// none, or nil (every admitted principal may do everything) when the stack set
// deploy.EnvEveryPrincipalAdmin.
func APIPrincipals(f node.FunctionSettings) (*Principals, error) {
	if f.EveryPrincipalAdmin {
		return nil, nil
	}
	return NewPrincipals(f.Grants)
}

// PrincipalsFromEnv is APIPrincipals of the configuration node.FromEnv reads from getenv.
func PrincipalsFromEnv(getenv func(string) string) (*Principals, error) {
	cfg, err := node.FromEnv(getenv)
	if err != nil {
		return nil, err
	}
	return APIPrincipals(cfg.Function)
}

// Authorizer is what the HTTP handler must be built with (nil for nil Principals).
func (p *Principals) Authorizer() *httpapi.Authorizer {
	if p == nil {
		return nil
	}
	return p.auth
}

// Principal returns the grants of the caller arn, those of the first grant matching it
// (none when no grant does): what the api function gives it, for the Kafka gateway's
// IAM callers.
func (p *Principals) Principal(arn string) *httpapi.Principal {
	pr, _ := p.auth.Lookup(p.token(arn))
	return pr
}

// KeyCaller is the identity an IAM caller's idempotency keys are scoped by (keyCaller),
// for another front that authenticates IAM callers itself.
func KeyCaller(arn string) string { return keyCaller(arn) }

// token returns the token of the first grant matching arn.
func (p *Principals) token(arn string) string {
	if arn == "" {
		return p.nomatch
	}
	for i, g := range p.grants {
		if MatchPrincipal(g.Principal, arn) {
			return p.tokens[i]
		}
	}
	return p.nomatch
}

func newToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// MatchPrincipal reports whether arn matches pattern (deploy.Grant): "**" matches any
// run of characters, "/" included; "*" any run without "/", so a wildcard for a role
// name cannot stretch across the rest of an ARN's path.
func MatchPrincipal(pattern, arn string) bool {
	return matchGlob(pattern, arn)
}

// matchGlob matches s against pattern by backtracking over its wildcards. Patterns are
// at most 2 KiB (deploy.ParseGrants), ARNs a few hundred bytes, and each wildcard
// position is tried once per starting point, so the cost stays small.
func matchGlob(pattern, s string) bool {
	for len(pattern) > 0 {
		if pattern[0] != '*' {
			if len(s) == 0 || s[0] != pattern[0] {
				return false
			}
			pattern, s = pattern[1:], s[1:]
			continue
		}
		deep := strings.HasPrefix(pattern, "**")
		rest := strings.TrimLeft(pattern, "*")
		for i := 0; i <= len(s); i++ {
			if matchGlob(rest, s[i:]) {
				return true
			}
			if i < len(s) && s[i] == '/' && !deep {
				return false
			}
		}
		return false
	}
	return len(s) == 0
}
