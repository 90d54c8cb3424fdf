package kafka

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/pkg/httpapi"
	"github.com/stratalog/strata/pkg/kafka/awsauth"
)

// SASL mechanisms the gateway offers.
const (
	MechanismPlain       = "PLAIN"
	MechanismOAuthBearer = "OAUTHBEARER"
)

const (
	saslHandshakeKey    int16 = 17
	saslAuthenticateKey int16 = 36
)

var (
	illegalSaslState         = kerr.IllegalSaslState.Code
	unsupportedSaslMechanism = kerr.UnsupportedSaslMechanism.Code
	saslAuthenticationFailed = kerr.SaslAuthenticationFailed.Code
)

// Grants is what an authenticated principal may do: op on "topic:NAME", "group:NAME"
// or "cluster", as the HTTP API's grants say (*httpapi.Principal).
type Grants interface {
	Allowed(op, resource string) bool
}

// AllowAll is the grants of a principal that may do everything.
type AllowAll struct{}

// Allowed reports true.
func (AllowAll) Allowed(string, string) bool { return true }

// Auth turns authentication on: every connection must authenticate with SASL (KIP-152
// framing: SaslHandshake v1, then SaslAuthenticate) before any request but ApiVersions,
// and each request is then authorized by the principal's grants, as the HTTP API
// authorizes its calls.
type Auth struct {
	// Tokens offers PLAIN with the tokens of `strata dev --auth`'s file: the password is
	// a token and the username the name of its principal.
	Tokens *httpapi.Authorizer
	// IAM offers OAUTHBEARER with awsauth tokens (a presigned sts:GetCallerIdentity).
	IAM *IAMAuth
}

// IAMAuth redeems OAUTHBEARER tokens at STS and maps the caller's ARN to grants.
type IAMAuth struct {
	// Verifier checks and redeems tokens; required.
	Verifier *awsauth.Verifier
	// Grants maps a caller's ARN to its grants (the api function's:
	// lambdafn.Principals.Principal); required.
	Grants func(arn string) Grants
	// KeyCaller is the identity a caller's appends are scoped by (lambdafn.KeyCaller:
	// every session of a role is one principal); nil: the ARN itself.
	KeyCaller func(arn string) string
}

func (a *Auth) mechanisms() []string {
	var ms []string
	if a.Tokens != nil {
		ms = append(ms, MechanismPlain)
	}
	if a.IAM != nil {
		ms = append(ms, MechanismOAuthBearer)
	}
	return ms
}

// identity is an authenticated connection's principal.
type identity struct {
	name     string // for messages: the token principal's name or the caller's ARN
	grants   Grants
	appendAs string // log.AppendOptions.Principal
}

// open is the identity of every connection when auth is off, the HTTP API's
// anonymous caller.
var open = &identity{name: "anonymous", grants: AllowAll{}, appendAs: httpapi.KeyPrincipal("", nil)}

type identityKey struct{}

func withIdentity(ctx context.Context, id *identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// appendPrincipal is the principal a request's appends are made as: its connection's
// (never "", pkg/log's in-process principal).
func appendPrincipal(ctx context.Context) string {
	if id, _ := ctx.Value(identityKey{}).(*identity); id != nil {
		return id.appendAs
	}
	return open.appendAs
}

// phase is where a connection is in authentication.
type phase uint8

const (
	phaseStart      phase = iota // nothing yet: ApiVersions and SaslHandshake only
	phaseHandshaken              // a mechanism chosen: SaslAuthenticate only
	phaseAuthorized              // authenticated (or auth off): anything
)

// session is one connection's authentication state.
type session struct {
	phase phase
	mech  string
	id    *identity
}

func (s *Server) newSession() *session {
	if s.cfg.Auth == nil {
		return &session{phase: phaseAuthorized, id: open}
	}
	return &session{phase: phaseStart, id: nobody}
}

// nobody is a connection's identity before it authenticates: only ApiVersions and the
// SASL steps reach the handlers then (admit), and it may do nothing else.
var nobody = &identity{name: "(not authenticated)", grants: denyAll{}, appendAs: open.appendAs}

// verdict is what admit decides for a request.
type verdict uint8

const (
	admitPass   verdict = iota // serve it (authorized per request when authenticated)
	admitSASL                  // a SASL step: the session handles it
	admitRefuse                // answer ILLEGAL_SASL_STATE and close the connection
)

// admit decides whether a request of key may be served in phase p, as Kafka's SASL
// server does: before authentication only ApiVersions and the SASL steps in their
// order; once authenticated a SASL step is answered ILLEGAL_SASL_STATE (there is no
// re-authentication) but the connection stays.
func admit(p phase, key int16) verdict {
	sasl := key == saslHandshakeKey || key == saslAuthenticateKey
	switch p {
	case phaseStart:
		switch key {
		case apiVersionsKey:
			return admitPass
		case saslHandshakeKey:
			return admitSASL
		}
		return admitRefuse
	case phaseHandshaken:
		if key == saslAuthenticateKey {
			return admitSASL
		}
		return admitRefuse
	}
	if sasl {
		return admitSASL
	}
	return admitPass
}

// saslStep answers a SaslHandshake or SaslAuthenticate and moves the session; a
// non-nil error closes the connection after the answer, as Kafka closes it after a
// failed authentication.
func (s *Server) saslStep(ctx context.Context, ss *session, req kmsg.Request) (kmsg.Response, error) {
	switch r := req.(type) {
	case *kmsg.SASLHandshakeRequest:
		resp := kmsg.NewPtrSASLHandshakeResponse()
		resp.SetVersion(r.Version)
		if s.cfg.Auth == nil || ss.phase == phaseAuthorized {
			resp.ErrorCode = illegalSaslState
			return resp, nil
		}
		resp.SupportedMechanisms = s.cfg.Auth.mechanisms()
		for _, m := range resp.SupportedMechanisms {
			if m == r.Mechanism {
				ss.phase, ss.mech = phaseHandshaken, m
				return resp, nil
			}
		}
		resp.ErrorCode = unsupportedSaslMechanism
		return resp, fmt.Errorf("%w: SASL mechanism %q is not offered", errClose, r.Mechanism)
	case *kmsg.SASLAuthenticateRequest:
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		resp.SetVersion(r.Version)
		if ss.phase != phaseHandshaken {
			resp.ErrorCode = illegalSaslState
			resp.ErrorMessage = kmsg.StringPtr("the connection is already authenticated")
			return resp, nil
		}
		id, err := s.authenticate(ctx, ss.mech, r.SASLAuthBytes)
		if err != nil {
			resp.ErrorCode = saslAuthenticationFailed
			resp.ErrorMessage = kmsg.StringPtr(err.Error())
			return resp, fmt.Errorf("%w: %s authentication failed: %w", errClose, ss.mech, err)
		}
		ss.phase, ss.id = phaseAuthorized, id
		return resp, nil
	}
	return nil, fmt.Errorf("%w: %s is not a SASL step", errClose, kmsg.NameForKey(req.Key()))
}

// errAuth is an authentication's refusal; its message goes to the client.
var errAuth = errors.New("authentication failed")

func (s *Server) authenticate(ctx context.Context, mech string, msg []byte) (*identity, error) {
	switch mech {
	case MechanismPlain:
		_, user, pass, err := parsePlain(msg)
		if err != nil {
			return nil, err
		}
		p, ok := s.cfg.Auth.Tokens.Lookup(pass)
		if !ok || p.Name != user {
			// One answer for both, so a username says nothing about the tokens.
			return nil, fmt.Errorf("%w: unknown username or token", errAuth)
		}
		return &identity{name: p.Name, grants: p, appendAs: httpapi.KeyPrincipal("", p)}, nil
	case MechanismOAuthBearer:
		tok, err := parseOAuthBearer(msg)
		if err != nil {
			return nil, err
		}
		iam := s.cfg.Auth.IAM
		caller, err := iam.Verifier.Verify(ctx, tok)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errAuth, err)
		}
		key := caller.ARN
		if iam.KeyCaller != nil {
			key = iam.KeyCaller(caller.ARN)
		}
		g := iam.Grants(caller.ARN)
		if g == nil {
			g = denyAll{}
		}
		return &identity{name: caller.ARN, grants: g, appendAs: httpapi.KeyPrincipal(key, nil)}, nil
	}
	return nil, fmt.Errorf("%w: mechanism %q", errAuth, mech)
}

type denyAll struct{}

func (denyAll) Allowed(string, string) bool { return false }

// parsePlain splits a PLAIN message (RFC 4616): authzid NUL authcid NUL passwd. An
// authorization identity, when given, must be the user itself (Kafka's rule).
func parsePlain(msg []byte) (authzid, user, pass string, err error) {
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 || len(parts[1]) == 0 || len(parts[2]) == 0 {
		return "", "", "", fmt.Errorf("%w: a PLAIN message is authzid NUL username NUL password with both of the last non-empty", errAuth)
	}
	authzid, user, pass = string(parts[0]), string(parts[1]), string(parts[2])
	if authzid != "" && authzid != user {
		return "", "", "", fmt.Errorf("%w: the authorization identity must be empty or the username", errAuth)
	}
	return authzid, user, pass, nil
}

// parseOAuthBearer returns the bearer token of an OAUTHBEARER client's first message
// (RFC 7628): "n,[a=authzid]," then kvpairs separated by 0x01, one of them
// "auth=Bearer <token>", ended by 0x01 0x01.
func parseOAuthBearer(msg []byte) (string, error) {
	s := string(msg)
	gs2, rest, ok := strings.Cut(s, "\x01")
	if !ok || !strings.HasPrefix(gs2, "n,") || !strings.HasSuffix(gs2, ",") {
		return "", fmt.Errorf("%w: an OAUTHBEARER message starts with the GS2 header \"n,,\" (no channel binding)", errAuth)
	}
	body, ok := strings.CutSuffix(rest, "\x01\x01")
	if !ok && rest != "\x01" {
		return "", fmt.Errorf("%w: an OAUTHBEARER message ends with 0x01 0x01", errAuth)
	}
	token := ""
	for _, kv := range strings.Split(body, "\x01") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return "", fmt.Errorf("%w: OAUTHBEARER key-value %q has no =", errAuth, kv)
		}
		if k == "auth" {
			scheme, t, ok := strings.Cut(v, " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") || t == "" || token != "" {
				return "", fmt.Errorf("%w: OAUTHBEARER needs one auth=Bearer <token>", errAuth)
			}
			token = t
		}
	}
	if token == "" {
		return "", fmt.Errorf("%w: OAUTHBEARER needs auth=Bearer <token>", errAuth)
	}
	return token, nil
}
