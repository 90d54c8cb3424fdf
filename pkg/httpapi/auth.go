package httpapi

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/wire"
)

// Operations a grant may allow (docs/API.md, "Authorization").
const (
	OpCreate   = "create"
	OpDescribe = "describe"
	OpAppend   = "append"
	OpRead     = "read"
	OpConsume  = "consume"
	OpReset    = "reset"
	// OpDelete deletes a topic (and with it every group's positions on it) or a group,
	// and OpAlter changes a topic (more partitions): neither is implied by create.
	OpDelete = "delete"
	OpAlter  = "alter"
	// OpMetrics on ResourceCluster lets a principal read /metrics, which names every
	// topic and group and their lags.
	OpMetrics = "metrics"
)

// ResourceCluster is the resource of node-wide operations (OpMetrics).
const ResourceCluster = "cluster"

// knownOps are the operations a grant on a topic or a group may allow.
var knownOps = map[string]bool{OpCreate: true, OpDescribe: true, OpAppend: true, OpRead: true, OpConsume: true, OpReset: true,
	OpDelete: true, OpAlter: true}

// MinTokenLength is the shortest token an auth file may hold: 22 characters of base64
// carry about 128 bits, beyond guessing even without the failure rate limit.
const MinTokenLength = 22

// Authorizer maps Bearer tokens to principals and their grants, loaded from the JSON
// file of `strata dev --auth`. It is immutable and safe for concurrent use.
type Authorizer struct {
	// byToken is keyed by the SHA-256 of the token, so a lookup's timing says nothing
	// about how much of a guessed token matched.
	byToken map[[sha256.Size]byte]*Principal
}

// Principal is an authenticated caller and what it may do.
type Principal struct {
	Name  string
	all   bool // the anonymous principal of an open server
	allow []grant
}

type grant struct {
	resource string // "topic:orders", or the prefix of a wildcard ("topic:ord" for "topic:ord*")
	prefix   bool
	ops      map[string]bool
}

// Lookup returns the principal token names, as a Bearer token would (the Kafka
// gateway's SASL/PLAIN password is such a token).
func (a *Authorizer) Lookup(token string) (*Principal, bool) {
	p, ok := a.byToken[sha256.Sum256([]byte(token))]
	return p, ok
}

// anonymous is the principal of every call when auth is off: it may do anything.
var anonymous = &Principal{Name: "", all: true}

// Allowed reports whether p may do op on resource ("topic:NAME", "group:NAME" or
// "cluster").
func (p *Principal) Allowed(op, resource string) bool {
	if p.all {
		return true
	}
	for _, g := range p.allow {
		if !g.ops[op] {
			continue
		}
		if g.resource == resource || (g.prefix && strings.HasPrefix(resource, g.resource)) {
			return true
		}
	}
	return false
}

// authFile is the file format; unknown fields are refused so a typo never silently
// grants or withholds.
type authFile struct {
	Principals map[string]struct {
		Name  string `json:"name"`
		Allow []struct {
			Resource string   `json:"resource"`
			Ops      []string `json:"ops"`
		} `json:"allow"`
	} `json:"principals"`
}

// LoadAuth reads and validates an auth file:
//
//	{"principals": {"<token>": {"name": "billing-svc", "allow": [
//	  {"resource": "topic:orders", "ops": ["create", "describe", "append", "read"]},
//	  {"resource": "group:billing", "ops": ["consume", "describe", "reset"]}]}}}
func LoadAuth(path string) (*Authorizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("httpapi: read auth file: %w", err)
	}
	a, err := ParseAuth(data)
	if err != nil {
		return nil, fmt.Errorf("httpapi: auth file %s: %w", path, err)
	}
	return a, nil
}

// ParseAuth validates the JSON of an auth file (see LoadAuth).
func ParseAuth(data []byte) (*Authorizer, error) {
	var f authFile
	if err := decodeStrict(data, &f); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if f.Principals == nil {
		return nil, errors.New(`missing "principals"`)
	}
	a := &Authorizer{byToken: make(map[[sha256.Size]byte]*Principal, len(f.Principals))}
	for token, pf := range f.Principals {
		// authenticate trims Unicode spaces and a header cannot carry control characters,
		// so a token holding either could never be presented.
		if token == "" || strings.IndexFunc(token, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
			return nil, fmt.Errorf("principal %q: a token must be non-empty without whitespace or control characters", pf.Name)
		}
		if n := utf8.RuneCountInString(token); n < MinTokenLength {
			return nil, fmt.Errorf("principal %q: its token has %d characters, at least %d are required (e.g. openssl rand -base64 24)", pf.Name, n, MinTokenLength)
		}
		if pf.Name == "" {
			return nil, errors.New("a principal has no name")
		}
		p := &Principal{Name: pf.Name}
		for _, al := range pf.Allow {
			g, err := parseGrant(al.Resource, al.Ops)
			if err != nil {
				return nil, fmt.Errorf("principal %q: %w", pf.Name, err)
			}
			p.allow = append(p.allow, g)
		}
		a.byToken[sha256.Sum256([]byte(token))] = p
	}
	return a, nil
}

func parseGrant(resource string, ops []string) (grant, error) {
	if resource == ResourceCluster {
		if len(ops) == 0 {
			return grant{}, fmt.Errorf("resource %q: no ops", resource)
		}
		for _, op := range ops {
			if op != OpMetrics {
				return grant{}, fmt.Errorf("resource %q: unknown op %q (known: metrics)", resource, op)
			}
		}
		return grant{resource: resource, ops: map[string]bool{OpMetrics: true}}, nil
	}
	kind, name, ok := strings.Cut(resource, ":")
	if !ok || (kind != "topic" && kind != "group") {
		return grant{}, fmt.Errorf("resource %q must be topic:NAME, group:NAME or cluster", resource)
	}
	g := grant{resource: resource, ops: map[string]bool{}}
	if rest, wild := strings.CutSuffix(name, "*"); wild {
		if strings.Trim(rest, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") != "" {
			return grant{}, fmt.Errorf("resource %q: a wildcard is a name prefix followed by one final *", resource)
		}
		g.resource, g.prefix = kind+":"+rest, true
	} else if kind == "topic" && !log.ValidName(name) || kind == "group" && !wire.ValidGroup(name) {
		return grant{}, fmt.Errorf("resource %q: bad name", resource)
	}
	if len(ops) == 0 {
		return grant{}, fmt.Errorf("resource %q: no ops", resource)
	}
	for _, op := range ops {
		if !knownOps[op] {
			return grant{}, fmt.Errorf("resource %q: unknown op %q (known: create, describe, append, read, consume, reset, delete, alter)", resource, op)
		}
		g.ops[op] = true
	}
	return g, nil
}

// authenticate returns the caller's principal: anonymous when auth is off, the token's
// principal otherwise, or a 401.
func (s *server) authenticate(r *http.Request) (*Principal, *apiError) {
	if s.auth == nil {
		return anonymous, nil
	}
	h := r.Header.Get("Authorization")
	scheme, token, _ := strings.Cut(h, " ")
	token = strings.TrimSpace(token)
	if h == "" {
		return nil, unauthorized("missing Authorization: Bearer token")
	}
	// The token is looked up first: a valid one is answered whatever failed before it
	// from its address. A wrong one that failed too often, or from an address that
	// did, is 429 rather than 401 until its bucket refills.
	if strings.EqualFold(scheme, "Bearer") && token != "" {
		if p, ok := s.auth.byToken[sha256.Sum256([]byte(token))]; ok {
			return p, nil
		}
	}
	sum := sha256.Sum256([]byte(h))
	credential, client, now := "credential:"+string(sum[:]), "address:"+clientOf(r), time.Now()
	if s.now != nil {
		now = s.now()
	}
	if e := s.failures.blocked(credential, "this credential", now); e != nil {
		return nil, e
	}
	if e := s.failures.blocked(client, "this address", now); e != nil {
		return nil, e
	}
	s.failures.fail(credential, now)
	s.failures.fail(client, now)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		return nil, unauthorized("Authorization must be a Bearer token")
	}
	return nil, unauthorized("unknown token")
}

// callerKey carries, in a request's context, the caller's identity as the front that
// authenticated it says (WithCaller).
type callerKey struct{}

// WithCaller returns ctx saying the request's caller is id, as authenticated by the
// front before this handler (the IAM principal's ARN behind API Gateway or a function
// URL). Appends scope their idempotency keys by it (keyPrincipal) instead of the
// token's principal, which many callers may share through one grant.
func WithCaller(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, callerKey{}, id)
}

// keyPrincipal is the principal an append's idempotency key is scoped by
// (log.AppendOptions.Principal): the caller the front authenticated (WithCaller), else
// the token's principal, else, with auth off, one fixed name shared by every caller.
// It is never empty, the in-process principal of pkg/log (consumers' dead-letter and
// parking appends), so no HTTP caller can claim, fence or answer their keys.
func keyPrincipal(r *http.Request, p *Principal) string {
	id, _ := r.Context().Value(callerKey{}).(string)
	return KeyPrincipal(id, p)
}

// KeyPrincipal is keyPrincipal for a caller id the front authenticated (WithCaller;
// "" for none) and a token's principal p (nil for none), so another front (the Kafka
// gateway) scopes the same caller's appends as the HTTP API does.
func KeyPrincipal(caller string, p *Principal) string {
	if caller != "" {
		return "caller:" + caller
	}
	if p != nil && !p.all && p.Name != "" {
		return "token:" + p.Name
	}
	return "anonymous"
}

func unauthorized(msg string) *apiError {
	return &apiError{status: http.StatusUnauthorized, code: codeUnauthorized, message: msg,
		header: map[string]string{"WWW-Authenticate": `Bearer realm="strata"`}}
}

// need is one permission a request requires.
type need struct{ op, resource string }

func onTopic(op, topic string) need { return need{op, "topic:" + topic} }
func onGroup(op, g string) need     { return need{op, "group:" + g} }

// authorize returns a 403 unless p has every permission.
// principal authenticates the request and checks that its principal has every need.
func (s *server) principal(r *http.Request, needs ...need) (*Principal, *apiError) {
	p, e := s.authenticate(r)
	if e == nil {
		e = authorize(p, needs...)
	}
	return p, e
}

// allow is principal for a handler: on failure it writes the error and reports false.
func (s *server) allow(w http.ResponseWriter, r *http.Request, needs ...need) (*Principal, bool) {
	p, e := s.principal(r, needs...)
	if e != nil {
		writeError(w, e)
		return nil, false
	}
	return p, true
}

func authorize(p *Principal, needs ...need) *apiError {
	for _, n := range needs {
		if !p.Allowed(n.op, n.resource) {
			return &apiError{status: http.StatusForbidden, code: codeForbidden,
				message: fmt.Sprintf("principal %q may not %s %s", p.Name, n.op, n.resource)}
		}
	}
	return nil
}
