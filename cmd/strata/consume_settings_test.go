package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stratalog/strata/pkg/runtime"
)

// TestConsumeAppliesGroupSettings: `strata consume --group` starts a new group where
// the group's stored reset policy says (latest: nothing printed), and --from overrides
// it, saying so on stderr.
func TestConsumeAppliesGroupSettings(t *testing.T) {
	url := startNode(t, runtime.Config{})
	cli(t, url, "", "topics", "create", "events", "--partitions", "1")
	cli(t, url, "a\nb\n", "produce", "events")
	for _, g := range []string{"late", "late2"} {
		cli(t, url, "", "groups", "settings", g, "--reset-policy", "latest", "--max-attempts", "3")
	}
	out, errOut, err := cliCtx(context.Background(), "", "--url", url, "consume", "events", "--group", "late", "--until-caught-up", "--partition", "0")
	if err != nil || strings.Count(out, "\n") != 1 { // the header only
		t.Fatalf("group with reset policy latest printed %q (stderr %q, %v); want no records", out, errOut, err)
	}
	out, errOut, err = cliCtx(context.Background(), "", "--url", url, "consume", "events", "--group", "late2", "--from", "earliest",
		"--until-caught-up", "--partition", "0")
	if err != nil || strings.Count(out, "\n") != 3 {
		t.Fatalf("--from earliest printed %q (stderr %q, %v); want both records", out, errOut, err)
	}
	if !strings.Contains(errOut, "--from earliest overrides group late2's reset policy latest") {
		t.Fatalf("override not announced: stderr %q", errOut)
	}
}
