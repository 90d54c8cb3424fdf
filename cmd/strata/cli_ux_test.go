package main

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

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
