package apigwtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/stratalog/strata/pkg/deploy"
)

// Limits API Gateway and Lambda impose.
const (
	// MaxRequestBody is API Gateway's HTTP API payload limit.
	MaxRequestBody = 10 << 20
	// DefaultMaxSkew is how far X-Amz-Date may be from the clock.
	DefaultMaxSkew = 5 * time.Minute
)

// Invoker runs the integration's function on one event payload and returns its answer
// (the signature of lambda.Handler, which *lambdafn.API implements). An error is a
// failed invocation (API Gateway answers 500).
type Invoker interface {
	Invoke(ctx context.Context, payload []byte) ([]byte, error)
}

// Route is one route of the API: Key is "METHOD /path" with {name} segments (a last
// {name+} takes the rest of the path) or "ANY /path", or "$default" for requests no
// other route matches. Public routes need no signature (an authorizer of NONE).
type Route struct {
	Key    string
	Public bool
}

// Authorization is what an Authorize hook decides on: the caller, the matched route and
// the execute-api resource ARN of the request
// (arn:aws:execute-api:region:account:api-id/stage/METHOD/path), or for a function URL
// the function's ARN (lambda:InvokeFunctionUrl has no finer resource).
type Authorization struct {
	Caller   Principal
	RouteKey string
	Method   string
	Path     string
	Resource string
}

// Config configures a Front.
type Config struct {
	// Region is the API's region; signatures must be scoped to it.
	Region string
	// Service is the signing name requests must be scoped to: Service (execute-api, API
	// Gateway; the default) or ServiceLambda, which makes the Front a Lambda function
	// URL with AuthType AWS_IAM: one $default route (Routes must be nil), every request
	// signed, Authorize asked about lambda:InvokeFunctionUrl on FunctionARN, and the same
	// payload format 2.0 event (routeKey $default, APIID the URL's id).
	Service string
	// FunctionARN is the function a function URL invokes (the Authorization's Resource).
	// Default: arn:aws:lambda:<Region>:<AccountID>:function:apigwtest.
	FunctionARN string
	// APIID, Stage ("" is "$default") and AccountID name the API in events and ARNs.
	APIID, Stage, AccountID string
	// Principals are the callers whose signatures verify, by access key.
	Principals []Principal
	// Routes are the API's routes; nil is one IAM-authorized $default route.
	Routes []Route
	// Authorize, when set, decides whether an authenticated caller may invoke the
	// route (execute-api:Invoke in its policy); a non-nil error is a 403 whose message
	// is the error's text.
	Authorize func(ctx context.Context, a Authorization) error
	// Invoker runs the function.
	Invoker Invoker
	// Clock is the time signatures are checked against (nil: time.Now); MaxSkew the
	// allowed difference (0: DefaultMaxSkew).
	Clock   func() time.Time
	MaxSkew time.Duration
}

// Front is the SigV4-checking API Gateway stand-in. It is safe for concurrent use (as
// far as its Invoker is).
type Front struct {
	cfg    Config
	v      *verifier
	routes []route
	def    *Route
	stats  struct{ accepted, refused, failed atomic.Int64 }
}

// Stats counts the requests a Front has answered.
type Stats struct {
	Accepted int64 // verified and forwarded to the function
	Refused  int64 // answered 403 (missing, bad or unauthorized signature)
	Failed   int64 // other answers of API Gateway's own (404, 413, 500)
}

// New returns a Front for cfg.
func New(cfg Config) (*Front, error) {
	if cfg.Region == "" {
		return nil, errors.New("apigwtest: Config.Region is required")
	}
	if cfg.Invoker == nil {
		return nil, errors.New("apigwtest: Config.Invoker is required")
	}
	if cfg.MaxSkew == 0 {
		cfg.MaxSkew = DefaultMaxSkew
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Stage == "" {
		cfg.Stage = "$default"
	}
	if cfg.APIID == "" {
		cfg.APIID = "apigwtest"
	}
	if cfg.AccountID == "" {
		cfg.AccountID = "123456789012"
	}
	switch cfg.Service {
	case "":
		cfg.Service = Service
	case Service:
	case ServiceLambda:
		if cfg.Routes != nil {
			return nil, errors.New("apigwtest: a function URL (Service lambda) has no routes: Config.Routes must be nil")
		}
		if cfg.FunctionARN == "" {
			cfg.FunctionARN = fmt.Sprintf("arn:aws:lambda:%s:%s:function:apigwtest", cfg.Region, cfg.AccountID)
		}
	default:
		return nil, fmt.Errorf("apigwtest: Config.Service %q: want %s or %s", cfg.Service, Service, ServiceLambda)
	}
	f := &Front{cfg: cfg, v: &verifier{region: cfg.Region, service: cfg.Service, maxSkew: cfg.MaxSkew, now: cfg.Clock,
		keys: map[string]Principal{}, signer: v4.NewSigner()}}
	for _, p := range cfg.Principals {
		if p.AccessKeyID == "" || p.SecretAccessKey == "" {
			return nil, errors.New("apigwtest: a principal needs an access key and a secret")
		}
		if _, dup := f.v.keys[p.AccessKeyID]; dup {
			return nil, fmt.Errorf("apigwtest: access key %q given twice", p.AccessKeyID)
		}
		f.v.keys[p.AccessKeyID] = p
	}
	routes := cfg.Routes
	if routes == nil {
		routes = []Route{{Key: "$default"}}
	}
	for i, r := range routes {
		if r.Key == "$default" {
			f.def = &routes[i]
			continue
		}
		pr, err := parseRoute(r)
		if err != nil {
			return nil, err
		}
		f.routes = append(f.routes, pr)
	}
	return f, nil
}

// Stats returns the counts so far.
func (f *Front) Stats() Stats {
	return Stats{Accepted: f.stats.accepted.Load(), Refused: f.stats.refused.Load(), Failed: f.stats.failed.Load()}
}

// ServeHTTP authenticates r, invokes the function with its event and writes the answer.
func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	received := f.cfg.Clock()
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxRequestBody+1))
	if err != nil {
		f.fail(w, http.StatusBadRequest, "", "Bad Request")
		return
	}
	if len(body) > MaxRequestBody {
		f.fail(w, http.StatusRequestEntityTooLarge, "", "Request Entity Too Large")
		return
	}
	rt, params, ok := f.match(r.Method, r.URL.Path)
	if !ok {
		f.fail(w, http.StatusNotFound, "", "Not Found")
		return
	}
	ec := EventContext{RouteKey: rt.Key, PathParameters: params, APIID: f.cfg.APIID, Stage: f.cfg.Stage,
		AccountID: f.cfg.AccountID, Time: received}
	if !rt.Public {
		p, d := f.v.verify(ctx, r, body)
		if d != nil {
			f.stats.refused.Add(1)
			writeMessage(w, d.status, d.errType, d.message)
			return
		}
		if f.cfg.Authorize != nil {
			a := Authorization{Caller: p, RouteKey: rt.Key, Method: r.Method, Path: r.URL.Path,
				Resource: fmt.Sprintf("arn:aws:execute-api:%s:%s:%s/%s/%s%s", f.cfg.Region, f.cfg.AccountID, f.cfg.APIID, f.cfg.Stage, r.Method, r.URL.Path)}
			if f.cfg.Service == ServiceLambda {
				a.Resource = f.cfg.FunctionARN
			}
			if err := f.cfg.Authorize(ctx, a); err != nil {
				f.stats.refused.Add(1)
				writeMessage(w, http.StatusForbidden, "AccessDeniedException", err.Error())
				return
			}
		}
		ec.Caller = &p
	}
	payload, err := json.Marshal(NewEvent(r, body, ec))
	if err != nil {
		f.fail(w, http.StatusInternalServerError, "", "Internal Server Error")
		return
	}
	if len(payload) > deploy.MaxLambdaPayload {
		// Lambda refuses the invocation (RequestEntityTooLargeException).
		f.fail(w, http.StatusRequestEntityTooLarge, "", "Request Entity Too Large")
		return
	}
	out, err := f.cfg.Invoker.Invoke(ctx, payload)
	if err != nil || len(out) > deploy.MaxLambdaPayload {
		f.fail(w, http.StatusInternalServerError, "", "Internal Server Error")
		return
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		f.fail(w, http.StatusInternalServerError, "", "Internal Server Error")
		return
	}
	f.stats.accepted.Add(1)
	WriteResponse(w, resp)
}

func (f *Front) fail(w http.ResponseWriter, status int, errType, msg string) {
	f.stats.failed.Add(1)
	writeMessage(w, status, errType, msg)
}

// route is a parsed Route.
type route struct {
	Route
	method   string // "" for ANY
	segments []string
}

func parseRoute(r Route) (route, error) {
	method, path, ok := strings.Cut(r.Key, " ")
	if !ok || !strings.HasPrefix(path, "/") {
		return route{}, fmt.Errorf("apigwtest: route %q: want \"METHOD /path\" or \"$default\"", r.Key)
	}
	pr := route{Route: r, method: method, segments: strings.Split(strings.TrimPrefix(path, "/"), "/")}
	if method == "ANY" {
		pr.method = ""
	}
	for i, s := range pr.segments {
		if strings.HasSuffix(s, "+}") && i != len(pr.segments)-1 {
			return route{}, fmt.Errorf("apigwtest: route %q: a greedy parameter must be last", r.Key)
		}
	}
	return pr, nil
}

// match finds the route of a request as API Gateway does: the matching route with the
// most literal segments (a method beats ANY), else $default.
func (f *Front) match(method, path string) (Route, map[string]string, bool) {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	best, bestScore := -1, -1
	var bestParams map[string]string
	for i, r := range f.routes {
		if r.method != "" && r.method != method {
			continue
		}
		params, literals, ok := r.match(segs)
		if !ok {
			continue
		}
		score := literals * 2
		if r.method != "" {
			score++
		}
		if score > bestScore {
			best, bestScore, bestParams = i, score, params
		}
	}
	if best >= 0 {
		return f.routes[best].Route, bestParams, true
	}
	if f.def != nil {
		return *f.def, nil, true
	}
	return Route{}, nil, false
}

func (r route) match(segs []string) (map[string]string, int, bool) {
	params := map[string]string{}
	literals := 0
	for i, s := range r.segments {
		if name, ok := strings.CutPrefix(s, "{"); ok && strings.HasSuffix(name, "}") {
			name = strings.TrimSuffix(name, "}")
			if greedy, ok := strings.CutSuffix(name, "+"); ok {
				if i >= len(segs) {
					return nil, 0, false
				}
				params[greedy] = strings.Join(segs[i:], "/")
				return params, literals, true
			}
			if i >= len(segs) || segs[i] == "" {
				return nil, 0, false
			}
			params[name] = segs[i]
			continue
		}
		if i >= len(segs) || segs[i] != s {
			return nil, 0, false
		}
		literals++
	}
	if len(segs) != len(r.segments) {
		return nil, 0, false
	}
	return params, literals, true
}
