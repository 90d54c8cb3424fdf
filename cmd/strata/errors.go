package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/client/awsauth"
)

// usageError is a command line the tool cannot run: an unknown command or flag, a
// missing argument. It exits with status 2, as other tools' usage errors do.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// runParent is the RunE of a command that only groups subcommands (strata, strata
// topics, strata groups): without arguments it prints its help; with an unknown
// subcommand it fails with a suggestion instead of printing help and exiting 0.
func runParent(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf("; did you mean %q?", s[0])
	}
	return usagef("%s (see %s --help)", msg, cmd.CommandPath())
}

// exactArgs is cobra.ExactArgs as a usage error naming what is missing.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == len(names) {
			return nil
		}
		if len(args) < len(names) {
			return usagef("%s needs %s (see %s --help)", cmd.CommandPath(), strings.Join(names[len(args):], " "), cmd.CommandPath())
		}
		return usagef("%s takes %d argument(s), got %d: %s", cmd.CommandPath(), len(names), len(args), strings.Join(args, " "))
	}
}

// maxArgs accepts the optional arguments names, at most one each, as a usage error
// otherwise.
func maxArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) <= len(names) {
			return nil
		}
		return usagef("%s takes at most %d argument(s), got %d: %s", cmd.CommandPath(), len(names), len(args), strings.Join(args, " "))
	}
}

// exitCode is the process status of a failed command: 2 for usage errors, 1 otherwise.
func exitCode(err error) int {
	var u usageError
	if errors.As(err, &u) || isCobraUsage(err) {
		return 2
	}
	return 1
}

// isCobraUsage recognises the argument and flag errors cobra returns as plain errors.
func isCobraUsage(err error) bool {
	s := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "required flag", "if any flags in the group",
		"at least one of the flags", "accepts ", "requires at least", "invalid argument"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// internalPackages are the packages whose "name: " prefixes wrap errors on their way
// out; a person needs none of them.
const internalPackages = `strata|log|store|group|segment|httpapi|consumer|client|checkpoint|local|dynamo|s3|node|runtime|retention|httpconsumer`

// chainPrefix is an internal "package: " prefix of a wrapped error ("log: ", "store: ").
var chainPrefix = regexp.MustCompile(`^(` + internalPackages + `): `)

// subMillis is the sub-millisecond part of an RFC 3339 time: milliseconds are as much
// as anyone reads.
var subMillis = regexp.MustCompile(`(T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3})[0-9]+`)

// userMessage renders err as one line in the user's terms: the server's message
// without internal wrapping, with the HTTP status where it tells the user something,
// and without the "strata: " prefixes the SDK's errors carry (main adds one). baseURL
// is --url, for the errors that are about the server itself ("" when unknown).
func userMessage(err error, baseURL string) string {
	if msg, ok := reachMessage(err, baseURL); ok {
		return msg
	}
	var api *client.APIError
	if errors.As(err, &api) {
		msg := cleanMessage(api.Message)
		if hint := hintFor(api); hint != "" {
			msg += "; " + hint
		}
		if api.Code == "" {
			return fmt.Sprintf("%s (HTTP %d)", msg, api.Status)
		}
		return fmt.Sprintf("%s (HTTP %d %s)", msg, api.Status, api.Code)
	}
	return cleanMessage(err.Error())
}

// reachMessage explains the failures that are about reaching a Strata server at all: no
// server listening, a name that does not resolve, a timeout, and an answer from a
// server that is not Strata's (an HTML page, a 404 without the contract's error body).
func reachMessage(err error, baseURL string) (string, bool) {
	at := "the server"
	if baseURL != "" {
		at = "the server at " + baseURL
	}
	var api *client.APIError
	if errors.As(err, &api) && api.Code == "" && api.Status != http.StatusForbidden &&
		(strings.HasPrefix(api.Message, "<") || api.Status == http.StatusNotFound || api.Status == http.StatusMethodNotAllowed) {
		return fmt.Sprintf("%s is not a Strata server: it answered HTTP %d %q; check --url (or %s)", at, api.Status, firstWords(api.Message), envURL), true
	}
	if errors.Is(err, client.ErrBadResponse) {
		return fmt.Sprintf("%s is not a Strata server: its answer is not the API's JSON; check --url (or %s)", at, envURL), true
	}
	var (
		dns     *net.DNSError
		unknown x509.UnknownAuthorityError
		verify  *tls.CertificateVerificationError
		hostErr x509.HostnameError
		urlErr  *url.Error
	)
	switch {
	case errors.Is(err, awsauth.ErrConfig), errors.Is(err, awsauth.ErrCredentials):
		return awsCredentialsMessage(err), true
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Sprintf("cannot reach a Strata server: nothing listens at %s (connection refused); start one with strata dev, "+
			"or point --url (or %s) at a running one", orDefault(baseURL), envURL), true
	case errors.As(err, &dns):
		return fmt.Sprintf("cannot reach a Strata server: the host name %q does not resolve; check --url (or %s)", dns.Name, envURL), true
	case errors.Is(err, context.DeadlineExceeded) && !errors.As(err, &api):
		return fmt.Sprintf("cannot reach a Strata server: %s did not answer in time; check --url (or %s) and the network", at, envURL), true
	case errors.As(err, &unknown), errors.As(err, &verify), errors.As(err, &hostErr):
		return fmt.Sprintf("cannot reach Strata at %s: its TLS certificate is not trusted for that host; check --url (or %s)", orDefault(baseURL), envURL), true
	case errors.As(err, &urlErr) && strings.Contains(urlErr.Err.Error(), "server gave HTTP response to HTTPS client"):
		return fmt.Sprintf("cannot reach Strata at %s: the server speaks plain HTTP, not HTTPS; use an http:// --url (or %s)", orDefault(baseURL), envURL), true
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Sprintf("cannot reach Strata at %s: the connection was closed before an answer; is strata dev (or the server) running, and is --url (or %s) a Strata server?", orDefault(baseURL), envURL), true
	case errors.As(err, &urlErr) && !errors.As(err, &api):
		// Any other transport failure: the cause without Go's "Get \"URL\": " wrapping.
		return fmt.Sprintf("cannot reach Strata at %s: %s; is strata dev (or the server) running? check --url (or %s)", orDefault(baseURL), transportCause(urlErr.Err), envURL), true
	}
	return "", false
}

// transportCause is a transport error without the addresses Go's net errors prefix
// ("dial tcp 127.0.0.1:1: ", "read tcp a->b: ").
func transportCause(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err.Error()
	}
	return err.Error()
}

// awsCredentialsMessage explains a request that could not be signed for lack of AWS
// credentials or configuration, naming how a person provides them.
func awsCredentialsMessage(err error) string {
	cause := err.Error()
	for _, s := range []error{awsauth.ErrCredentials, awsauth.ErrConfig} {
		if i := strings.Index(cause, s.Error()+": "); i >= 0 {
			cause = cause[i+len(s.Error())+2:]
		}
	}
	if i := strings.Index(cause, ", operation error"); i >= 0 {
		cause = cause[:i]
	}
	return "no AWS credentials to sign the request with (--aws): set AWS_PROFILE (or --profile) to a profile of ~/.aws/config " +
		"and run `aws sso login` if it uses SSO, or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (" + cause + ")"
}

func orDefault(u string) string {
	if u == "" {
		return defaultURL
	}
	return u
}

// firstWords is the start of a body, for quoting a foreign answer in one line.
func firstWords(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}

// cleanMessage strips internal package prefixes and the parenthesised causes they
// chain ("log: topic not found (store: not found)" becomes "topic not found"), and
// sub-millisecond digits of times, keeping the first line only.
func cleanMessage(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	s = subMillis.ReplaceAllString(s, "$1")
	s = chainCause.ReplaceAllString(s, "")
	s = incarnationID.ReplaceAllString(s, "$1")
	var kept []string
	for _, part := range strings.Split(s, ": ") {
		if chainPrefix.MatchString(part + ": ") {
			continue
		}
		kept = append(kept, part)
	}
	// A context each layer adds again ("group \"g\": group \"g\": not found") is said
	// once; so is a bare name the next part repeats ("\"g\": group \"g\"").
	var out []string
	for i, part := range kept {
		if i+1 < len(kept) {
			if next := kept[i+1]; next == part || (isQuoted(part) && strings.Contains(next, part)) {
				continue
			}
		}
		out = append(out, part)
	}
	return strings.Join(out, ": ")
}

// isQuoted reports whether s is one quoted name ("\"orders\"").
func isQuoted(s string) bool {
	return len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' && !strings.Contains(s[1:len(s)-1], `"`)
}

// incarnationID is a topic's internal incarnation id after its name ("orders#tc01j…"):
// a person knows the topic by its name.
var incarnationID = regexp.MustCompile(`([A-Za-z0-9._-])#[0-9a-z]{20,64}\b`)

// chainCause is a parenthesised internal cause: " (store: not found)".
var chainCause = regexp.MustCompile(` \((` + internalPackages + `): [^()]*\)`)

// hintFor suggests the next step for the errors a new user meets most.
func hintFor(e *client.APIError) string {
	switch {
	case e.Status == http.StatusForbidden && e.Code == "":
		// API Gateway's own refusal, not Strata's: the signature or the IAM policy.
		return "API Gateway refused the request: check the AWS credentials (--profile, AWS_PROFILE), " +
			"the region (--region), the clock, and that the caller may execute-api:Invoke (see strata --help)"
	case e.Is(client.ErrUnauthorized):
		return "pass --token or set STRATA_TOKEN"
	case e.Is(client.ErrForbidden):
		return "the caller lacks a grant for this (strata dev: the --auth file; on AWS: the deployment's grants, strata:apiGrants)"
	case e.Is(client.ErrGroupActive):
		return "stop the group's consumers (or wait for their leases to expire) first"
	}
	return ""
}

// errorJSON is a failure as --json prints it on stderr: one JSON object on one line.
type errorJSON struct {
	Error struct {
		Message  string `json:"message"`
		Status   int    `json:"status,omitempty"`
		Code     string `json:"code,omitempty"`
		ExitCode int    `json:"exit_code"`
	} `json:"error"`
}

// printError writes err to w as "strata: message", or as errorJSON with --json.
func printError(w io.Writer, err error, baseURL string, asJSON bool) {
	msg := userMessage(err, baseURL)
	if !asJSON {
		fmt.Fprintln(w, "strata:", msg)
		return
	}
	var j errorJSON
	j.Error.Message, j.Error.ExitCode = msg, exitCode(err)
	var api *client.APIError
	if errors.As(err, &api) {
		j.Error.Status, j.Error.Code = api.Status, api.Code
	}
	b, _ := json.Marshal(j)
	fmt.Fprintln(w, string(b))
}
