package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stratalog/strata/pkg/runtime"
)

// TestEveryCommandBothFormats runs every API command of the CLI as a process, in text
// and in JSON, checking its exit code, that text output has its header and JSON output
// parses, and for each a failing case's exit code and one-line error.
func TestEveryCommandBothFormats(t *testing.T) {
	url := startNode(t, runtime.Config{})
	run := func(stdin string, args ...string) (string, string, int) {
		return runBin(t, stdin, append([]string{"--url", url}, args...)...)
	}
	mustRun := func(stdin string, args ...string) string {
		t.Helper()
		out, errOut, code := run(stdin, args...)
		if code != 0 {
			t.Fatalf("strata %s: exit %d, stderr %q", strings.Join(args, " "), code, errOut)
		}
		return out
	}
	mustRun("", "topics", "create", "dlq")
	mustRun("", "topics", "create", "orders", "--partitions", "2")
	mustRun("", "topics", "create", "kv", "--partitions", "2", "--cleanup-policy", "compact", "--delete-retention", "1h")
	mustRun("", "produce", "kv", "--key", "o-42", "--value", "paid")
	mustRun("", "produce", "kv", "--key", "gone", "--value", "x")
	mustRun("", "produce", "kv", "--key", "gone", "--null-value")

	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
		// text is the first line of the text output; json a field the JSON output has.
		text, json string
	}{
		{"topics create", "", []string{"topics", "create", "t-%s", "--partitions", "1"}, "NAME PARTITIONS RETENTION", "retention_ms"},
		{"topics create --timestamp-type", "", []string{"topics", "create", "lat-%s", "--timestamp-type", "log-append-time"}, "NAME PARTITIONS RETENTION", "timestamp_type"},
		{"topics create --cleanup-policy", "", []string{"topics", "create", "c-%s", "--cleanup-policy", "compact,delete", "--min-compaction-lag", "1m"}, "NAME PARTITIONS RETENTION RETENTION_PIN CLEANUP", "cleanup_policy"},
		{"topics alter --cleanup-policy", "", []string{"topics", "alter", "c-%s", "--cleanup-policy", "compact", "--max-compaction-lag", "7d"}, "NAME PARTITIONS RETENTION RETENTION_PIN CLEANUP", "max_compaction_lag_ms"},
		{"get", "", []string{"get", "kv", "o-42"}, "PARTITION OFFSET TIMESTAMP HEADERS KEY VALUE", "value"},
		{"topics list", "", []string{"topics", "list"}, "NAME", "topics"},
		{"topics describe", "", []string{"topics", "describe", "orders"}, "NAME PARTITIONS RETENTION", "partition_info"},
		{"topics alter", "", []string{"topics", "alter", "t-%s", "--partitions", "3"}, "NAME PARTITIONS RETENTION", "partitions"},
		{"topics update --retention-pin", "", []string{"topics", "update", "t-%s", "--retention-pin", "6h"}, "NAME PARTITIONS RETENTION RETENTION_PIN", "retention_pin_ms"},
		{"topics describe (pinned)", "", []string{"topics", "describe", "t-%s"}, "NAME PARTITIONS RETENTION RETENTION_PIN", "retention_pin_ms"},
		{"produce", "a\nb\n", []string{"produce", "orders", "--partition", "0"}, "PARTITION OFFSET", "offset"},
		{"consume (read)", "", []string{"consume", "orders", "--partition", "0", "--offset", "0", "--until-caught-up"}, "PARTITION OFFSET KEY VALUE", "offset"},
		{"consume (group)", "", []string{"consume", "orders", "--group", "g-%s", "--until-caught-up"}, "PARTITION OFFSET KEY VALUE", "offset"},
		{"groups list", "", []string{"groups", "list"}, "GROUP", "groups"},
		{"groups describe", "", []string{"groups", "describe", "g-text"}, "TOPIC PARTITION COMMITTED HIGH_WATERMARK LAG LAG_SECONDS TO_DATA_LOSS LOST PARKED OWNER GENERATION LEASE_EXPIRES", "partitions"},
		{"groups reset", "", []string{"groups", "reset", "g-text", "--topic", "orders", "--to", "earliest", "--partition", "0", "--execute"}, "PARTITION CURRENT NEW", "partitions"},
		{"groups reset (plan)", "", []string{"groups", "reset", "g-text", "--topic", "orders", "--since", "-1h"}, "PARTITION CURRENT NEW", "executed"},
		{"groups settings (set)", "", []string{"groups", "settings", "g-%s", "--reset-policy", "latest", "--max-attempts", "3", "--dead-letter-topic", "dlq"}, "GROUP RESET_POLICY MAX_ATTEMPTS DEAD_LETTER_TOPIC ON_FAILURE", "reset_policy"},
		{"groups settings (show)", "", []string{"groups", "settings", "g-text"}, "GROUP RESET_POLICY MAX_ATTEMPTS DEAD_LETTER_TOPIC ON_FAILURE", "max_attempts"},
		{"groups settings (park)", "", []string{"groups", "settings", "p-%s", "--on-failure", "park"}, "GROUP RESET_POLICY MAX_ATTEMPTS DEAD_LETTER_TOPIC ON_FAILURE", "on_failure"},
		{"groups parked", "", []string{"groups", "parked", "p-text"}, "TOPIC PARTITION KEY FIRST_OFFSET RECORDS EXPIRED PARKED_AT RELEASE ERROR", "parked"},
		{"groups delete-offsets", "", []string{"groups", "delete-offsets", "g-%s", "--topic", "orders"}, "deleted the offsets of group", "deleted"},
		{"groups reset (create)", "", []string{"groups", "reset", "gd-%s", "--topic", "orders", "--to", "latest", "--create", "--execute"}, "PARTITION CURRENT NEW", "executed"},
		{"groups delete", "", []string{"groups", "delete", "gd-%s"}, "deleted group", "deleted"},
		{"topics delete", "", []string{"topics", "delete", "t-%s"}, "deleted topic", "deleted"},
	} {
		for _, format := range []string{"text", "json"} {
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				args[i] = strings.ReplaceAll(a, "%s", format)
			}
			if format == "json" {
				args = append(args, "--json")
			}
			out := mustRun(tc.stdin, args...)
			if format == "text" {
				if first := rows(out)[0]; !strings.HasPrefix(first, tc.text) {
					t.Errorf("%s: first line %q, want %q", tc.name, first, tc.text)
				}
				continue
			}
			dec := json.NewDecoder(strings.NewReader(out))
			n := 0
			for dec.More() {
				var v map[string]any
				if err := dec.Decode(&v); err != nil {
					t.Fatalf("%s --json: %v in %q", tc.name, err, out)
				}
				if _, ok := v[tc.json]; !ok {
					t.Errorf("%s --json: %v lacks %q", tc.name, v, tc.json)
				}
				n++
			}
			if n == 0 {
				t.Errorf("%s --json printed nothing", tc.name)
			}
		}
	}

	// Failing runs: exit 1, one line on stderr, nothing on stdout (2 for usage errors).
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"topics", "create", "orders"}, 1, "(HTTP 409 topic_exists)"},
		{[]string{"topics", "describe", "nope"}, 1, "(HTTP 404 not_found)"},
		{[]string{"topics", "create", "bad/name"}, 1, "(HTTP 400 invalid_request)"},
		{[]string{"produce", "nope", "--value", "x"}, 1, "(HTTP 404 not_found)"},
		{[]string{"consume", "orders", "--partition", "5", "--offset", "0"}, 1, "partition 5 does not exist"},
		{[]string{"consume", "orders", "--partition", "0", "--offset", "99"}, 1, "offset 99 is out of range on partition 0"},
		{[]string{"groups", "describe", "nope"}, 1, "(HTTP 404 not_found)"},
		{[]string{"groups", "reset", "g-text", "--topic", "orders", "--to", "99", "--execute"}, 1, "(HTTP 416 offset_out_of_range)"},
		{[]string{"groups", "reset", "g-text", "--topic", "orders", "--to", "99"}, 1, "offset 99 is out of range on partition 0"},
		{[]string{"groups", "reset", "nosuch", "--topic", "orders", "--to", "earliest", "--execute"}, 1, `group "nosuch" does not exist`},
		{[]string{"groups", "delete", "nosuch"}, 1, "(HTTP 404 not_found)"},
		{[]string{"groups", "reset", "g-text", "--topic", "orders", "--to", "banana"}, 2, "--to must be earliest, latest or a non-negative offset"},
		{[]string{"groups", "settings", "nope"}, 1, "(HTTP 404 not_found)"},
		{[]string{"groups", "settings", "g-text", "--reset-policy", "sideways"}, 2, "--reset-policy must be earliest, latest or fail"},
		{[]string{"groups", "settings", "g-text", "--on-failure", "retry"}, 1, "(HTTP 400 invalid_request)"},
		{[]string{"groups", "release", "p-text", "--topic", "orders", "--key", "o-1"}, 1, "(HTTP 404 not_found)"},
		{[]string{"groups", "release", "p-text", "--topic", "orders"}, 2, "--topic and --key are required"},
		{[]string{"groups", "delete-offsets", "nope", "--topic", "orders"}, 1, "(HTTP 404 not_found)"},
		{[]string{"groups", "delete-offsets", "g-text"}, 2, `required flag(s) "topic" not set`},
		{[]string{"groups", "list", "x"}, 2, "takes 0 argument(s)"},
		{[]string{"topics", "create"}, 2, "needs NAME"},
		{[]string{"topics", "create", "x", "--timestamp-type", "LogAppendTime"}, 2, "want create-time or log-append-time"},
		{[]string{"topics", "delete", "nope"}, 1, "(HTTP 404 not_found)"},
		{[]string{"topics", "alter", "orders", "--partitions", "1"}, 1, "(HTTP 400 invalid_request)"},
		{[]string{"topics", "alter", "orders"}, 2, "exactly one of --partitions, --retention, --retention-pin and the cleanup flags"},
		{[]string{"topics", "update", "orders", "--partitions", "3", "--retention-pin", "1h"}, 2, "exactly one of --partitions, --retention, --retention-pin and the cleanup flags"},
		{[]string{"topics", "alter", "kv", "--cleanup-policy", "delete"}, 1, "(HTTP 400 invalid_request)"},
		{[]string{"topics", "create", "x", "--cleanup-policy", "compacted"}, 1, "(HTTP 400 invalid_request)"},
		{[]string{"get", "kv", "never"}, 1, "(HTTP 404 not_found)"},
		{[]string{"get", "kv", "gone"}, 1, "(HTTP 404 key_deleted)"},
		{[]string{"get", "orders", "o-42"}, 1, "(HTTP 400 invalid_request)"},
		{[]string{"get", "kv"}, 2, "needs"},
		{[]string{"topics", "create", "pinned", "--retention", "1h", "--retention-pin", "-1h"}, 1, "(HTTP 400 invalid_request)"},
	} {
		for _, format := range []string{"text", "json"} {
			args := tc.args
			if format == "json" {
				args = append(append([]string(nil), args...), "--json")
			}
			out, errOut, code := run("", args...)
			msg := errOut
			if format == "json" {
				// --json failures are one JSON object on stderr.
				var j errorJSON
				if err := json.Unmarshal([]byte(errOut), &j); err != nil || j.Error.ExitCode != tc.code {
					t.Errorf("strata %s: stderr %q is not an error object with exit code %d (%v)", strings.Join(args, " "), errOut, tc.code, err)
				}
				msg = j.Error.Message
			}
			if code != tc.code || out != "" || !strings.Contains(msg, tc.want) || strings.Count(errOut, "\n") != 1 {
				t.Errorf("strata %s: exit %d, stdout %q, stderr %q; want exit %d and one line containing %q",
					strings.Join(args, " "), code, out, errOut, tc.code, tc.want)
			}
		}
	}
}
