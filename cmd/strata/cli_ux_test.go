package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/runtime"
)

// runBin runs the built strata binary and returns its stdout, stderr and exit code.
func runBin(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(strataBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// TestUsageErrors: unknown commands and bad arguments exit 2 with one line on stderr
// naming the problem (and a suggestion when one is close), nothing on stdout.
func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"topcs"}, `unknown command "topcs" for "strata"`},
		{[]string{"topics", "describ", "x"}, `unknown command "describ" for "strata topics"; did you mean "describe"?`},
		{[]string{"topics", "delet", "x"}, `did you mean "delete"?`},
		{[]string{"groups", "lst"}, `did you mean "list"?`},
		{[]string{"groups", "nope"}, `unknown command "nope" for "strata groups" (see strata groups --help)`},
		{[]string{"produce"}, "strata produce needs TOPIC"},
		{[]string{"topics", "list", "extra"}, "takes 0 argument(s)"},
		{[]string{"consume", "t", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"consume", "t", "--format", "xml"}, "--format must be text or json"},
		{[]string{"produce", "t", "--header", "novalue"}, "--header must be NAME=VALUE"},
	} {
		out, errOut, code := runBin(t, "", tc.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 || strings.Contains(errOut, "strata: strata:") {
			t.Errorf("strata %s: exit %d, stdout %q, stderr %q; want exit 2 and one line containing %q", strings.Join(tc.args, " "), code, out, errOut, tc.want)
		}
	}
	// A parent command alone prints its help and succeeds.
	if out, _, code := runBin(t, "", "topics"); code != 0 || !strings.Contains(out, "Available Commands") {
		t.Errorf("strata topics: exit %d, %q", code, out)
	}
}

// TestHelpText: flag help reads as prose, without garbled value names or defaults.
func TestHelpText(t *testing.T) {
	out, _, code := runBin(t, "", "consume", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, bad := range []string{"--token strata", "int32Slice", "(default [])", "(default all)"} {
		if strings.Contains(out, bad) {
			t.Errorf("consume --help contains %q:\n%s", bad, out)
		}
	}
	for _, want := range []string{"--partition PARTITIONS", "--token string", "runs until Ctrl-C"} {
		if !strings.Contains(out, want) {
			t.Errorf("consume --help lacks %q:\n%s", want, out)
		}
	}
}

// TestRuntimeErrorsAreOneLine: server errors print as one line in the user's terms with
// the HTTP status, exit 1.
func TestRuntimeErrorsAreOneLine(t *testing.T) {
	url := startNode(t, runtime.Config{})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"produce", "missing", "--value", "x"}, `topic not found: missing (HTTP 404 not_found)`},
		{[]string{"topics", "describe", "missing"}, `topic not found: missing (HTTP 404 not_found)`},
		{[]string{"consume", "missing", "--group", "g"}, `(HTTP 404 not_found)`},
	} {
		_, errOut, code := runBin(t, "", append([]string{"--url", url}, tc.args...)...)
		if code != 1 || !strings.HasPrefix(errOut, "strata: ") || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 ||
			strings.Contains(errOut, "strata: strata:") || strings.Contains(errOut, "store:") || strings.Contains(errOut, "describe topic") {
			t.Errorf("strata %s: exit %d, stderr %q; want exit 1 and one line containing %q", strings.Join(tc.args, " "), code, errOut, tc.want)
		}
	}
}

func TestCleanMessage(t *testing.T) {
	for in, want := range map[string]string{
		`log: topic not found (store: not found): "x"`:       `topic not found: "x"`,
		`strata: describe topic "x": strata: unavailable`:    `describe topic "x": unavailable`,
		"first line\nsecond":                                 "first line",
		`offset 5 out of range (log start 0, hw 3)`:          `offset 5 out of range (log start 0, hw 3)`,
		`group: reset g on "t" to 9: store: group is active`: `reset g on "t" to 9: group is active`,
	} {
		if got := cleanMessage(in); got != want {
			t.Errorf("cleanMessage(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestProduceLines: blank lines are skipped (and said so), a line over the record limit
// fails with the record-size error while the others are appended, headers and the
// partition flag apply, and the header row lines up with the rows.
func TestProduceLines(t *testing.T) {
	url := startNode(t, runtime.Config{})
	cli(t, url, "", "topics", "create", "t", "--partitions", "2")
	long := strings.Repeat("x", 1<<20+1)
	out, errOut, code := runBin(t, "a\n\n  \n"+long+"\nb\r\n", "--url", url, "produce", "t", "--partition", "1", "--header", "src=cli", "--header", "k=v=w")
	if code != 1 || !strings.Contains(errOut, "line 4 is 1048577 bytes, over the 1048576-byte record limit") ||
		!strings.Contains(errOut, "skipped 2 blank line(s)") || strings.Contains(errOut, "token too long") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if out != "PARTITION  OFFSET\n1          0\n1          1\n" {
		t.Fatalf("stdout %q", out)
	}
	recs := consumed(t, cli(t, url, "", "consume", "t", "--partition", "1", "--offset", "0", "--until-caught-up", "--format", "json"))
	if len(recs) != 2 || *recs[1].Value != "b" || recs[0].Headers["src"] != "cli" || recs[0].Headers["k"] != "v=w" {
		t.Fatalf("records %+v", recs)
	}
}

// TestResetRefusesUnknownGroup: a mistyped group is not created by a
// reset; --create creates it.
func TestResetRefusesUnknownGroup(t *testing.T) {
	url := startNode(t, runtime.Config{})
	cli(t, url, "", "topics", "create", "orders")
	_, errOut, code := runBin(t, "", "--url", url, "groups", "reset", "nosuch", "--topic", "orders", "--to", "earliest", "--execute")
	if code != 1 || !strings.Contains(errOut, `group "nosuch" does not exist`) || !strings.Contains(errOut, "--create") {
		t.Fatalf("reset of an unknown group: exit %d, %q", code, errOut)
	}
	if out := cli(t, url, "", "groups", "list"); strings.Contains(out, "nosuch") {
		t.Fatalf("the refused reset created the group:\n%s", out)
	}
	cli(t, url, "", "groups", "reset", "nosuch", "--topic", "orders", "--to", "earliest", "--execute", "--create")
	if out := cli(t, url, "", "groups", "list"); !strings.Contains(out, "nosuch") {
		t.Fatalf("--create did not create the group:\n%s", out)
	}
}

// TestResetShowsPlan: without --execute a reset prints each
// partition's current and new offset and changes nothing; with it, it applies them.
func TestResetShowsPlan(t *testing.T) {
	url := startNode(t, runtime.Config{})
	cli(t, url, "", "topics", "create", "orders", "--partitions", "2")
	cli(t, url, "a\nb\nc\n", "produce", "orders", "--partition", "0")
	cli(t, url, "", "consume", "orders", "--group", "billing", "--until-caught-up")
	out, errOut, code := runBin(t, "", "--url", url, "groups", "reset", "billing", "--topic", "orders", "--to", "earliest")
	if code != 0 || strings.Join(rows(out), "|") != "PARTITION CURRENT NEW|0 3 0|1 0 0" || !strings.Contains(errOut, "add --execute to apply it") {
		t.Fatalf("plan: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if got := rows(cli(t, url, "", "groups", "describe", "billing"))[1]; !strings.HasPrefix(got, "orders 0 3 ") {
		t.Fatalf("the plan changed the position: %q", got)
	}
	// A plan from a time is resolved by the server too; an hour ago is the start.
	if got := rows(cli(t, url, "", "groups", "reset", "billing", "--topic", "orders", "--since", "-1h")); strings.Join(got, "|") != "PARTITION CURRENT NEW|0 3 0|1 0 0" {
		t.Fatalf("plan --since -1h: %v", got)
	}
	out = cli(t, url, "", "groups", "reset", "billing", "--topic", "orders", "--to", "earliest", "--execute")
	if strings.Join(rows(out), "|") != "PARTITION CURRENT NEW|0 3 0|1 0 0" {
		t.Fatalf("execute: %q", out)
	}
	if got := rows(cli(t, url, "", "groups", "describe", "billing"))[1]; !strings.HasPrefix(got, "orders 0 0 ") {
		t.Fatalf("--execute did not move the position: %q", got)
	}
}

// TestGroupsDelete: a stray group can be deleted once stopped; it
// leaves the list and /metrics.
func TestGroupsDelete(t *testing.T) {
	url := startNode(t, runtime.Config{})
	cli(t, url, "", "topics", "create", "orders")
	cli(t, url, "x\n", "produce", "orders")
	cli(t, url, "", "groups", "reset", "stray", "--topic", "orders", "--to", "earliest", "--execute", "--create")
	metrics := func() string {
		resp, err := http.Get(url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if m := metrics(); !strings.Contains(m, `strata_consumer_lag_records{group="stray"`) {
		t.Fatalf("no lag for the stray group in /metrics")
	}
	// A member holding a lease keeps the group.
	c, err := client.New(url)
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.Lease(context.Background(), "stray", "orders", 0, "m", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runBin(t, "", "--url", url, "groups", "delete", "stray")
	if code != 1 || !strings.Contains(errOut, "stop the group's consumers") {
		t.Fatalf("delete of an active group: exit %d, %q", code, errOut)
	}
	if err := c.Release(context.Background(), "stray", "orders", 0, "m", l.Generation); err != nil {
		t.Fatal(err)
	}
	if out := cli(t, url, "", "groups", "delete", "stray"); out != "deleted group stray\n" {
		t.Fatalf("delete: %q", out)
	}
	if out := cli(t, url, "", "groups", "list"); strings.Contains(out, "stray") {
		t.Fatalf("deleted group still listed:\n%s", out)
	}
	if m := metrics(); strings.Contains(m, `strata_consumer_lag_records{group="stray"`) {
		t.Fatalf("deleted group's lag still in /metrics")
	}
	_, errOut, code = runBin(t, "", "--url", url, "groups", "delete", "stray")
	if code != 1 || !strings.Contains(errOut, "(HTTP 404 not_found)") {
		t.Fatalf("delete twice: exit %d, %q", code, errOut)
	}
}

// TestParseTime: the TIME values --since accepts, and only those.
func TestParseTime(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"-1h", now.Add(-time.Hour), true},
		{"-30m", now.Add(-30 * time.Minute), true},
		{"-7d", now.Add(-7 * 24 * time.Hour), true},
		{"-1d12h", now.Add(-36 * time.Hour), true},
		{"2026-12-01", time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), true},
		{"2026-12-01T08:00:00Z", time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC), true},
		{"2026-12-01T08:00:00.5+01:00", time.Date(2026, 12, 1, 7, 0, 0, 5e8, time.UTC), true},
		{"yesterday", time.Time{}, false},
		{"-", time.Time{}, false},
		{"-0s", time.Time{}, false},
		{"1h", time.Time{}, false},
		{"-xd", time.Time{}, false},
		{"2026-13-01", time.Time{}, false},
	} {
		got, err := parseTime(tc.in, now)
		if (err == nil) != tc.ok || (tc.ok && !got.Equal(tc.want)) {
			t.Errorf("parseTime(%q) = %v, %v; want %v (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
	for in, want := range map[string]time.Duration{"7d": 7 * 24 * time.Hour, "1d12h": 36 * time.Hour, "36h": 36 * time.Hour, "90m": 90 * time.Minute} {
		if got, err := parseDays(in); err != nil || got != want {
			t.Errorf("parseDays(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"7", "d", "7dd", "1.5d", "2147483647d", "100000d2562047h"} {
		if got, err := parseDays(in); err == nil {
			t.Errorf("parseDays(%q) = %v, want an error", in, got)
		}
	}
}

// TestConsumeSinceSeeksOnServer: --since asks the server where each
// partition's first record at or after the time is, reads from there, and takes a
// relative time; --retention takes days.
func TestConsumeSinceSeeksOnServer(t *testing.T) {
	url := startNode(t, runtime.Config{})
	out := cli(t, url, "", "topics", "create", "orders", "--partitions", "1", "--retention", "7d", "--json")
	if !strings.Contains(out, `"retention_ms": 604800000`) {
		t.Fatalf("--retention 7d: %s", out)
	}
	cli(t, url, "old-1\nold-2\n", "produce", "orders")
	mark := time.Now()
	for !time.Now().After(mark.Add(2 * time.Millisecond)) {
		time.Sleep(time.Millisecond) // the next append is at a later millisecond than mark
	}
	cli(t, url, "new\n", "produce", "orders")
	recs := consumed(t, cli(t, url, "", "consume", "orders", "--since", mark.Add(time.Millisecond).Format(time.RFC3339Nano), "--until-caught-up", "--json"))
	if len(recs) != 1 || *recs[0].Value != "new" || recs[0].Offset != 2 {
		t.Fatalf("--since the mark: %+v", recs)
	}
	if recs := consumed(t, cli(t, url, "", "consume", "orders", "--since", "-1h", "--until-caught-up", "--json")); len(recs) != 3 {
		t.Fatalf("--since -1h: %d records", len(recs))
	}
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	m, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(m), `route="GET /v1/topics/{topic}/offsets"`) {
		t.Fatalf("consume --since did not ask the server for the offsets")
	}
	_, errOut, code := runBin(t, "", "--url", url, "consume", "orders", "--since", "yesterday")
	if code != 2 || !strings.Contains(errOut, "-1h") {
		t.Fatalf("--since yesterday: exit %d, %q", code, errOut)
	}
}

// TestNotAStrataServer: an answer from another server says so and
// what to check, instead of quoting its HTML.
func TestNotAStrataServer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
	}{
		{"html 404", http.StatusNotFound, "<!DOCTYPE HTML>\n<html><body>Not Found</body></html>"},
		{"plain 404", http.StatusNotFound, "404 page not found"},
		{"html 200", http.StatusOK, "<html>hello</html>"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(tc.status)
			io.WriteString(w, tc.body)
		}))
		_, errOut, code := runBin(t, "", "--url", srv.URL, "topics", "list")
		srv.Close()
		if code != 1 || !strings.Contains(errOut, "the server at "+srv.URL+" is not a Strata server") || !strings.Contains(errOut, "STRATA_URL") ||
			strings.Contains(errOut, "<html>") || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%s: exit %d, %q", tc.name, code, errOut)
		}
	}
}

// TestConnectionRefusedHint: nothing listening says how to start a
// server or where to point the CLI.
func TestConnectionRefusedHint(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, errOut, code := runBin(t, "", "--url", "http://"+addr, "topics", "list")
	if code != 1 || !strings.Contains(errOut, "nothing listens at http://"+addr) || !strings.Contains(errOut, "strata dev") || !strings.Contains(errOut, "STRATA_URL") {
		t.Fatalf("exit %d, %q", code, errOut)
	}
}

// TestURLWithoutScheme: --url 127.0.0.1:PORT means http.
func TestURLWithoutScheme(t *testing.T) {
	url := startNode(t, runtime.Config{})
	cli(t, url, "", "topics", "create", "orders")
	out, errOut, code := runBin(t, "", "--url", strings.TrimPrefix(url, "http://"), "topics", "list")
	if code != 0 || !strings.Contains(out, "orders") {
		t.Fatalf("exit %d, %q %q", code, out, errOut)
	}
	for in, want := range map[string]string{
		"127.0.0.1:4580":          "http://127.0.0.1:4580",
		"localhost:4580":          "http://localhost:4580",
		"[::1]:4580":              "http://[::1]:4580",
		"abc.execute-api.aws/v1":  "https://abc.execute-api.aws/v1",
		"http://10.0.0.1:4580":    "http://10.0.0.1:4580",
		"https://example.com:443": "https://example.com:443",
	} {
		if got := client.CompleteURL(in); got != want {
			t.Errorf("client.CompleteURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestMessagesWithoutInternals: no package prefixes from the server
// side, no nanoseconds.
func TestMessagesWithoutInternals(t *testing.T) {
	for in, want := range map[string]string{
		`group: delete "x": local: group "x": not found`: `delete "x": group "x": not found`,
		`log: topic exists`: `topic exists`,
		`lease held by "m" until 2026-12-01T08:18:26.139329071Z`:                `lease held by "m" until 2026-12-01T08:18:26.139Z`,
		`dynamo: delete group g: member "m" is live until 2026-12-01T08:18:26Z`: `delete group g: member "m" is live until 2026-12-01T08:18:26Z`,
	} {
		if got := cleanMessage(in); got != want {
			t.Errorf("cleanMessage(%q) = %q, want %q", in, got, want)
		}
	}
	url := startNode(t, runtime.Config{})
	cli(t, url, "", "topics", "create", "orders")
	for _, args := range [][]string{{"groups", "delete", "x"}, {"topics", "create", "orders"}, {"groups", "describe", "x"}} {
		_, errOut, _ := runBin(t, "", append([]string{"--url", url}, args...)...)
		if regexp.MustCompile(`\b(local|log|store|group|dynamo): `).MatchString(strings.TrimPrefix(errOut, "strata: ")) {
			t.Errorf("strata %s: %q carries an internal prefix", strings.Join(args, " "), errOut)
		}
	}
}

// TestJSONErrors: with --json a failure is one JSON object on stderr
// with the message, the HTTP status and code, and the exit code.
func TestJSONErrors(t *testing.T) {
	url := startNode(t, runtime.Config{})
	out, errOut, code := runBin(t, "", "--url", url, "topics", "describe", "nope", "--json")
	var j errorJSON
	if err := json.Unmarshal([]byte(errOut), &j); err != nil || code != 1 || out != "" ||
		j.Error.Status != 404 || j.Error.Code != "not_found" || j.Error.ExitCode != 1 || !strings.Contains(j.Error.Message, "topic not found") {
		t.Fatalf("exit %d, stdout %q, stderr %q (%v)", code, out, errOut, err)
	}
	_, errOut, code = runBin(t, "", "--url", url, "groups", "reset", "g", "--topic", "t", "--to", "banana", "--json")
	if err := json.Unmarshal([]byte(errOut), &j); err != nil || code != 2 || j.Error.ExitCode != 2 {
		t.Fatalf("usage error: exit %d, stderr %q (%v)", code, errOut, err)
	}
}

// TestExitCodeTable: one case per row of the README's exit-code table.
func TestExitCodeTable(t *testing.T) {
	url := startNode(t, runtime.Config{})
	for _, tc := range []struct {
		row  string
		args []string
		code int
	}{
		{"0 success", []string{"topics", "list"}, 0},
		{"1 the server refused or failed", []string{"topics", "describe", "nope"}, 1},
		{"1 no server could be reached", []string{"--url", "http://127.0.0.1:1", "topics", "list"}, 1},
		{"2 usage error", []string{"groups", "reset", "g", "--topic", "t", "--to", "banana"}, 2},
		{"2 usage error (unknown flag)", []string{"topics", "list", "--bogus"}, 2},
	} {
		if _, errOut, code := runBin(t, "", append([]string{"--url", url}, tc.args...)...); code != tc.code {
			t.Errorf("%s: strata %s exited %d (%q)", tc.row, strings.Join(tc.args, " "), code, errOut)
		}
	}
}

// TestVersion: strata version and --version print the module
// version, the revision when the build recorded one, and the Go version.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, _, code := runBin(t, "", args...)
		if code != 0 || !strings.HasPrefix(out, "strata version ") || !strings.Contains(out, "go1.") {
			t.Errorf("strata %s: exit %d, %q", strings.Join(args, " "), code, out)
		}
	}
	info := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.3.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}
	if got := versionOf(info); got != "v0.3.0 (revision 0123456789ab+modified), go1.26.0" {
		t.Errorf("versionOf = %q", got)
	}
	if got := versionOf(&debug.BuildInfo{GoVersion: "go1.26.0"}); got != "(devel), go1.26.0" {
		t.Errorf("versionOf without VCS = %q", got)
	}
}

// TestConsumerStatusLines: a member without partitions says
// it waits for a share, with the partition count; a member whose server went away says
// so once after repeated failures instead of printing nothing.
func TestConsumerStatusLines(t *testing.T) {
	dev := startDev(t, t.TempDir())
	cli(t, dev.url, "", "topics", "create", "orders", "--partitions", "1")
	a := startConsume(t, dev.url, "orders", "billing", "a", time.Second)
	waitLine(t, a, "holding partitions [0] of 1")
	b := startConsume(t, dev.url, "orders", "billing", "b", time.Second)
	waitLine(t, b, "holding no partitions of 1 (waiting for a share)")

	if err := dev.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waitLine(t, a, "still retrying")
	if line := a.stderr.String(); !strings.Contains(line, "nothing listens at "+dev.url) || !strings.Contains(line, "strata dev") {
		t.Fatalf("the notice does not say what failed:\n%s", line)
	}
	if n := strings.Count(a.stderr.String(), "still retrying"); n != 1 {
		t.Fatalf("%d notices, want one:\n%s", n, a.stderr.String())
	}
}

// TestCompletionOffersNames: shell completion asks the server for
// topic and group names where a command takes one.
func TestCompletionOffersNames(t *testing.T) {
	url := startNode(t, runtime.Config{})
	cli(t, url, "", "topics", "create", "orders")
	cli(t, url, "", "topics", "create", "audit")
	cli(t, url, "", "groups", "reset", "billing", "--topic", "orders", "--to", "earliest", "--create", "--execute")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"topics", "describe", ""}, []string{"audit", "orders"}},
		{[]string{"consume", ""}, []string{"audit", "orders"}},
		{[]string{"consume", "orders", "--group", ""}, []string{"billing"}},
		{[]string{"groups", "delete", ""}, []string{"billing"}},
		{[]string{"groups", "reset", "billing", "--topic", ""}, []string{"audit", "orders"}},
		{[]string{"groups", "delete", "billing", ""}, nil},
	} {
		out, errOut, code := runBin(t, "", append([]string{"__complete", "--url", url}, tc.args...)...)
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if l != "" && !strings.HasPrefix(l, ":") {
				got = append(got, l)
			}
		}
		if code != 0 || strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("complete %v: exit %d, %q (%q), want %v", tc.args, code, got, errOut, tc.want)
		}
	}
}
