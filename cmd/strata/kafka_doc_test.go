package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestKafkaDocCommands: every `strata ...` command docs/KAFKA.md shows names a real
// command (a leaf, not a parent that would only print its help) and flags it accepts
// with values of their type, and every command of its side-by-side table runs against a
// node and does what its row says (runKafkaDocTable), so the page cannot drift from the
// CLI.
func TestKafkaDocCommands(t *testing.T) {
	doc, err := os.ReadFile("../../docs/KAFKA.md")
	if err != nil {
		t.Fatal(err)
	}
	spans := regexp.MustCompile("`(strata [^`]+)`").FindAllStringSubmatch(string(doc), -1)
	if len(spans) < 10 {
		t.Fatalf("docs/KAFKA.md shows %d strata commands, want its side-by-side table", len(spans))
	}
	for _, m := range spans {
		line := m[1]
		words := strings.Fields(line)[1:]
		root := newRootCmd()
		cmd, rest, err := root.Find(words)
		if err != nil {
			t.Errorf("%q: %v", line, err)
			continue
		}
		if cmd == root || cmd.HasSubCommands() {
			t.Errorf("%q: %q is not a command that runs (has subcommands or is unknown)", line, cmd.CommandPath())
			continue
		}
		for _, w := range rest {
			name, _, _ := strings.Cut(strings.TrimPrefix(w, "--"), "=")
			if strings.HasPrefix(w, "--") && cmd.Flags().Lookup(name) == nil && cmd.InheritedFlags().Lookup(name) == nil {
				t.Errorf("%q: %s has no flag --%s", line, cmd.CommandPath(), name)
			}
		}
		if n := len(rest); n > 0 && strings.HasPrefix(rest[n-1], "--") && !strings.Contains(rest[n-1], "=") {
			rest = rest[:len(rest)-1] // prose naming a flag without a value
		}
		if err := cmd.ParseFlags(rest); err != nil {
			t.Errorf("%q: %s refuses its flags: %v", line, cmd.CommandPath(), err)
		}
	}
	t.Run("table", runKafkaDocTable)
}
