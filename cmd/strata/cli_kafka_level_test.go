package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stratalog/strata/pkg/runtime"
)

// TestConsumePrintHeadersTimestampMaxMessages: --print-headers and --print-timestamp
// add Kafka's print.headers / print.timestamp columns, and --max-messages N exits
// after N records, without a group and with one (which commits exactly those N).
func TestConsumePrintHeadersTimestampMaxMessages(t *testing.T) {
	url := startNode(t, runtime.Config{})
	cli(t, url, "", "topics", "create", "h", "--partitions", "1")
	cli(t, url, "a\nb\nc\nd\ne\n", "produce", "h", "--header", "src=cli", "--header", "n=1")

	out := cli(t, url, "", "consume", "h", "--print-headers", "--print-timestamp", "--max-messages", "3")
	got := rows(out)
	if len(got) != 4 || got[0] != "PARTITION OFFSET TIMESTAMP HEADERS KEY VALUE" {
		t.Fatalf("consume --print-headers --print-timestamp --max-messages 3:\n%s", out)
	}
	for i, r := range got[1:] {
		f := strings.Fields(r)
		if len(f) != 6 || f[1] != string(rune('0'+i)) || !strings.HasSuffix(f[2], "Z") || f[3] != "n:1,src:cli" || f[5] != string(rune('a'+i)) {
			t.Fatalf("row %d: %q", i, r)
		}
	}
	if out := cli(t, url, "", "consume", "h", "--max-messages", "2"); len(rows(out)) != 3 {
		t.Fatalf("consume --max-messages 2:\n%s", out)
	}

	out = cli(t, url, "", "consume", "h", "--group", "g", "--max-messages", "3")
	if got := rows(out); len(got) != 4 || got[3] != "0 2 - c" {
		t.Fatalf("consume --group --max-messages 3:\n%s", out)
	}
	out = cli(t, url, "", "consume", "h", "--group", "g", "--until-caught-up")
	if got := rows(out); len(got) != 3 || got[1] != "0 3 - d" || got[2] != "0 4 - e" {
		t.Fatalf("the group resumes after the 3 records it printed:\n%s", out)
	}
}

// TestConsumeStartFlagsConflict: two ways to say where to start are a usage error
// (exit code 2), not silently one of them.
func TestConsumeStartFlagsConflict(t *testing.T) {
	url := startNode(t, runtime.Config{})
	cli(t, url, "", "topics", "create", "c")
	for _, args := range [][]string{
		{"--offset", "3", "--from", "latest"},
		{"--offset", "0", "--from", "earliest"},
		{"--since", "-1h", "--from", "latest"},
		{"--since", "-1h", "--offset", "0"},
		{"--max-messages", "-1"},
	} {
		err := cliErr(t, url, append([]string{"consume", "c"}, args...)...)
		var u usageError
		if !errors.As(err, &u) || exitCode(err) != 2 {
			t.Errorf("consume c %v: %v (exit %d), want a usage error", args, err, exitCode(err))
		}
	}
}

// TestProduceKeySeparatorRefusesUnkeyedLine: with --key-separator a line without the
// separator is refused with its line number (as Kafka's parse.key=true), the other
// lines are appended, and --allow-unkeyed sends it without a key instead.
func TestProduceKeySeparatorRefusesUnkeyedLine(t *testing.T) {
	url := startNode(t, runtime.Config{})
	cli(t, url, "", "topics", "create", "k", "--partitions", "1")
	_, _, err := cliCtx(context.Background(), "a:1\n\nno-key-here\nb:2\n", "--url", url, "produce", "k", "--key-separator", ":")
	if err == nil || exitCode(err) != 1 || !strings.Contains(userMessage(err, url), `line 3 has no key separator ":"`) {
		t.Fatalf("produce with an unkeyed line: %v", err)
	}
	out := cli(t, url, "", "consume", "k", "--until-caught-up")
	if got := rows(out); len(got) != 3 || got[1] != "0 0 a 1" || got[2] != "0 1 b 2" {
		t.Fatalf("the keyed lines are appended, the unkeyed one is not:\n%s", out)
	}
	cli(t, url, "no-key-here\n", "produce", "k", "--key-separator", ":", "--allow-unkeyed")
	out = cli(t, url, "", "consume", "k", "--until-caught-up", "--offset", "2")
	if got := rows(out); len(got) != 2 || got[1] != "0 2 - no-key-here" {
		t.Fatalf("--allow-unkeyed:\n%s", out)
	}
	for _, args := range [][]string{{"--allow-unkeyed"}, {"--key-separator", ":", "--key", "x"}} {
		if err := cliErr(t, url, append([]string{"produce", "k", "--value", "v"}, args...)...); exitCode(err) != 2 {
			t.Errorf("produce %v: %v, want a usage error", args, err)
		}
	}
}
