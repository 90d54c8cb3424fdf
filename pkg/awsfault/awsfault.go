// Package awsfault injects AWS faults into aws-sdk-go-v2 clients, for tests and soaks:
// at a configurable rate, an S3 or DynamoDB request attempt is answered by throttling,
// by an HTTP 500, or by a timeout, either BEFORE it reaches the service (nothing was
// applied) or AFTER the service applied it (its answer is lost). The faults are real
// HTTP answers and transport errors below the SDK's deserializers and retryer, so the
// SDK classifies and retries them exactly as it would the service's own, and the
// stores' error mapping sees what it would see in production.
//
// It is a testing aid: `strata dev --backend aws` installs it when STRATA_FAULT_RATE is
// set (see FromEnv); nothing installs it otherwise.
package awsfault

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Kind is a kind of injected fault.
type Kind string

// The fault kinds. Throttle answers with the service's throttling error (DynamoDB
// ThrottlingException, HTTP 400; S3 SlowDown, HTTP 503); Status500 with its internal
// error (HTTP 500); Timeout with a transport timeout (no HTTP answer at all).
const (
	Throttle  Kind = "throttle"
	Status500 Kind = "500"
	Timeout   Kind = "timeout"
)

// Phase says whether a fault strikes before the request reaches the service or after
// the service applied it.
type Phase string

// The phases.
const (
	Before Phase = "before"
	After  Phase = "after"
)

// Fault is one kind in one phase.
type Fault struct {
	Kind  Kind
	Phase Phase
}

func (f Fault) String() string { return string(f.Phase) + "/" + string(f.Kind) }

// AllFaults are the faults AWS can really produce: every kind before the request, and
// a 500 or a timeout after the service applied it. A throttling answer after the
// request was applied is not among them: S3 and DynamoDB throttle only requests they
// did not apply, and callers rely on it (a throttled sequencer add is sent again), so
// that fault would model a service that does not exist. Config.Faults can still ask
// for it ("after/throttle") to show what such a lie would do.
var AllFaults = []Fault{
	{Throttle, Before}, {Status500, Before}, {Timeout, Before},
	{Status500, After}, {Timeout, After},
}

// Environment variables read by FromEnv.
const (
	// EnvRate is the probability in [0, 1] that a request attempt gets a fault.
	EnvRate = "STRATA_FAULT_RATE"
	// EnvSeed seeds the choice of attempts and faults (default: random).
	EnvSeed = "STRATA_FAULT_SEED"
	// EnvFaults restricts the faults, comma-separated "phase/kind" (e.g.
	// "after/500,before/throttle"; default AllFaults).
	EnvFaults = "STRATA_FAULT_KINDS"
	// EnvServices restricts the services by SDK service id, comma-separated (e.g.
	// "DynamoDB"; default S3, DynamoDB and DynamoDB Streams).
	EnvServices = "STRATA_FAULT_SERVICES"
)

// DefaultServices are the SDK service ids faults are injected into by default.
var DefaultServices = []string{"S3", "DynamoDB", "DynamoDB Streams"}

// Config configures an Injector.
type Config struct {
	// Rate is the probability in [0, 1] that one request attempt gets a fault.
	Rate float64
	// Faults to choose from, uniformly (default AllFaults).
	Faults []Fault
	// Services are the SDK service ids to inject into (default DefaultServices).
	Services []string
	// Operations, when set, restricts faults to these "Service.Operation" names (e.g.
	// "DynamoDB.UpdateItem").
	Operations []string
	// Seed makes the choices reproducible (with the same sequence of requests).
	Seed uint64
	// Limit, when positive, stops injecting after that many faults (e.g. 1: only the
	// first attempt fails, and the SDK's retry meets the effect of the lost one).
	Limit int64
}

// Injector injects faults into the requests of the SDK clients it is installed in. It
// is safe for concurrent use; one Injector may serve many clients.
type Injector struct {
	cfg      Config
	services map[string]bool
	ops      map[string]bool

	mu       sync.Mutex
	disabled bool
	rng      *rand.Rand
	requests int64
	injected int64
	counts   map[string]int64 // "Service.Operation phase/kind" → faults injected
}

// New checks cfg and returns an Injector.
func New(cfg Config) (*Injector, error) {
	if !(cfg.Rate >= 0 && cfg.Rate <= 1) {
		return nil, fmt.Errorf("awsfault: rate %v outside [0, 1]", cfg.Rate)
	}
	if len(cfg.Faults) == 0 {
		cfg.Faults = AllFaults
	}
	for _, f := range cfg.Faults {
		if !valid(f) {
			return nil, fmt.Errorf("awsfault: unknown fault %q", f)
		}
	}
	if len(cfg.Services) == 0 {
		cfg.Services = DefaultServices
	}
	in := &Injector{cfg: cfg, services: set(cfg.Services), ops: set(cfg.Operations),
		rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)), counts: map[string]int64{}}
	return in, nil
}

func valid(f Fault) bool {
	return (f.Kind == Throttle || f.Kind == Status500 || f.Kind == Timeout) && (f.Phase == Before || f.Phase == After)
}

func set(xs []string) map[string]bool {
	if len(xs) == 0 {
		return nil
	}
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// ParseFaults parses a comma-separated list of "phase/kind" (e.g. "after/500").
func ParseFaults(s string) ([]Fault, error) {
	var out []Fault
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		phase, kind, ok := strings.Cut(part, "/")
		f := Fault{Kind: Kind(kind), Phase: Phase(phase)}
		if !ok || !valid(f) {
			return nil, fmt.Errorf("awsfault: fault %q is not phase/kind with phase before|after and kind throttle|500|timeout", part)
		}
		out = append(out, f)
	}
	return out, nil
}

// FromEnv returns the Injector STRATA_FAULT_RATE (and STRATA_FAULT_SEED,
// STRATA_FAULT_KINDS, STRATA_FAULT_SERVICES) describe in getenv (pkg/node passes the
// environment it reads), or nil when STRATA_FAULT_RATE is unset or empty. Values are
// trimmed; a malformed variable is an error.
func FromEnv(getenv func(string) string) (*Injector, error) {
	get := func(name string) string { return strings.TrimSpace(getenv(name)) }
	raw := get(EnvRate)
	if raw == "" {
		return nil, nil
	}
	rate, err := strconv.ParseFloat(raw, 64)
	if err != nil {
		return nil, fmt.Errorf("awsfault: %s=%q: %w", EnvRate, raw, err)
	}
	cfg := Config{Rate: rate, Seed: rand.Uint64()}
	if s := get(EnvSeed); s != "" {
		if cfg.Seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			return nil, fmt.Errorf("awsfault: %s=%q: %w", EnvSeed, s, err)
		}
	}
	if s := get(EnvFaults); s != "" {
		if cfg.Faults, err = ParseFaults(s); err != nil {
			return nil, err
		}
	}
	if s := get(EnvServices); s != "" {
		for _, svc := range strings.Split(s, ",") {
			if svc = strings.TrimSpace(svc); svc != "" {
				cfg.Services = append(cfg.Services, svc)
			}
		}
	}
	return New(cfg)
}

// Middleware installs the injector in a client's stack, innermost in the deserialize
// step: below the retryer (every attempt may get a fault) and below the deserializers
// (an injected error answer is parsed like a real one). Add it with
// cfg.APIOptions = append(cfg.APIOptions, in.Middleware).
func (in *Injector) Middleware(stack *middleware.Stack) error {
	return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("strataFaultInjector", in.handle), middleware.After)
}

// Counts returns the faults injected so far, keyed "Service.Operation phase/kind", and
// the keys sorted.
func (in *Injector) Counts() (map[string]int64, []string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := make(map[string]int64, len(in.counts))
	keys := make([]string, 0, len(in.counts))
	for k, v := range in.counts {
		out[k] = v
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return out, keys
}

// ByFault returns the faults injected so far by fault ("phase/kind"), over all
// operations, and the number of request attempts seen by the services it injects into.
func (in *Injector) ByFault() (map[string]int64, int64) {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := map[string]int64{}
	for k, v := range in.counts {
		out[k[strings.LastIndexByte(k, ' ')+1:]] += v
	}
	return out, in.requests
}

// SetEnabled turns injection on (the default) or off, e.g. off while a test sets up or
// audits through the same clients.
func (in *Injector) SetEnabled(on bool) {
	in.mu.Lock()
	in.disabled = !on
	in.mu.Unlock()
}

// pick decides whether this attempt of service.op gets a fault, and which.
func (in *Injector) pick(service, op string) (Fault, bool) {
	if !in.services[service] || (in.ops != nil && !in.ops[service+"."+op]) {
		return Fault{}, false
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.disabled {
		return Fault{}, false
	}
	in.requests++
	if in.cfg.Rate == 0 || (in.cfg.Limit > 0 && in.injected >= in.cfg.Limit) || in.rng.Float64() >= in.cfg.Rate {
		return Fault{}, false
	}
	in.injected++
	f := in.cfg.Faults[in.rng.IntN(len(in.cfg.Faults))]
	in.counts[service+"."+op+" "+f.String()]++
	return f, true
}

func (in *Injector) handle(ctx context.Context, req middleware.DeserializeInput, next middleware.DeserializeHandler) (
	middleware.DeserializeOutput, middleware.Metadata, error) {
	service, op := awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx)
	f, ok := in.pick(service, op)
	if !ok {
		return next.HandleDeserialize(ctx, req)
	}
	var md middleware.Metadata
	if f.Phase == After {
		out, m, err := next.HandleDeserialize(ctx, req)
		if err != nil {
			return out, m, err // the request failed by itself; nothing to lose
		}
		md = m
		if resp, ok := out.RawResponse.(*smithyhttp.Response); ok && resp.Body != nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
	}
	if f.Kind == Timeout {
		op := "read"
		if f.Phase == Before {
			op = "dial"
		}
		return middleware.DeserializeOutput{}, md, &smithyhttp.RequestSendError{
			Err: &net.OpError{Op: op, Net: "tcp", Err: timeoutError{f}}}
	}
	hreq, _ := req.Request.(*smithyhttp.Request)
	return middleware.DeserializeOutput{RawResponse: errorResponse(service, f, hreq)}, md, nil
}

// timeoutError is the injected transport timeout.
type timeoutError struct{ f Fault }

func (e timeoutError) Error() string   { return "awsfault: injected i/o timeout (" + e.f.String() + ")" }
func (e timeoutError) Timeout() bool   { return true }
func (e timeoutError) Temporary() bool { return false }

var _ net.Error = timeoutError{}

// errorResponse is the service's own error answer for the fault: JSON for the
// DynamoDB protocols, XML for S3.
func errorResponse(service string, f Fault, req *smithyhttp.Request) *smithyhttp.Response {
	msg := "injected by awsfault (" + f.String() + ")"
	var status int
	var body, code string
	hdr := http.Header{}
	if service == "S3" {
		status, code = http.StatusInternalServerError, "InternalError"
		if f.Kind == Throttle {
			status, code = http.StatusServiceUnavailable, "SlowDown"
		}
		hdr.Set("Content-Type", "application/xml")
		body = fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message><RequestId>awsfault</RequestId></Error>`, code, msg)
	} else {
		status, code = http.StatusInternalServerError, "InternalServerError"
		if f.Kind == Throttle {
			status, code = http.StatusBadRequest, "ThrottlingException"
		}
		hdr.Set("Content-Type", "application/x-amz-json-1.0")
		hdr.Set("X-Amzn-Errortype", code)
		body = fmt.Sprintf(`{"__type":"com.amazonaws.dynamodb.v20120810#%s","message":%q}`, code, msg)
		// The DynamoDB client checks this checksum of every body, as DynamoDB sends it.
		hdr.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body))), 10))
	}
	hdr.Set("X-Amzn-Requestid", "awsfault")
	r := &http.Response{
		Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), StatusCode: status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: hdr,
		Body: io.NopCloser(bytes.NewReader([]byte(body))), ContentLength: int64(len(body)),
	}
	if req != nil {
		r.Request = req.Request
	}
	return &smithyhttp.Response{Response: r}
}

// IsInjected reports whether err carries an injected fault that produced no HTTP answer
// (a timeout); injected error answers are indistinguishable from the service's own,
// except by their message.
func IsInjected(err error) bool {
	var te timeoutError
	return errors.As(err, &te) || (err != nil && strings.Contains(err.Error(), "injected by awsfault"))
}
