package main

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stratalog/strata/pkg/client"
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

// chainPrefix is an internal "package: " prefix of a wrapped error ("log: ", "store: ").
var chainPrefix = regexp.MustCompile(`^(strata|log|store|group|segment|httpapi|consumer|client|checkpoint): `)

// userMessage renders err as one line in the user's terms: the server's message
// without internal wrapping, with the HTTP status where it tells the user something,
// and without the "strata: " prefixes the SDK's errors carry (main adds one).
func userMessage(err error) string {
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

// cleanMessage strips internal package prefixes and the parenthesised causes they
// chain ("log: topic not found (store: not found)" becomes "topic not found"), keeping
// the first line only.
func cleanMessage(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	s = chainCause.ReplaceAllString(s, "")
	var out []string
	for _, part := range strings.Split(s, ": ") {
		if chainPrefix.MatchString(part + ": ") {
			continue
		}
		out = append(out, part)
	}
	return strings.Join(out, ": ")
}

// chainCause is a parenthesised internal cause: " (store: not found)".
var chainCause = regexp.MustCompile(` \((strata|log|store|group|segment|httpapi|consumer|client|checkpoint): [^()]*\)`)

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
