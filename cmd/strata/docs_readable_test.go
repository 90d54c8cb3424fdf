package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// maxDocTableLine is the longest markdown table line, in characters, the user docs may hold: a row past it
// no longer reads as a row of a table on a screen, so its detail belongs in prose below.
const maxDocTableLine = 400

// builderWords matches what speaks to the people building Strata rather than to a user:
// tracker references and the task's own wording.
var builderWords = regexp.MustCompile(`(?i)\bissue \d+|\bthe brief\b|brief's`)

// TestDocsReadable: DESIGN.md and TRADEOFFS.md keep their tables short enough to read
// (the generated tables of BENCHMARKS.md are held by pkg/cost instead), the three docs
// carry no tracker references or task wording outside code, and every in-page link of
// DESIGN.md and TRADEOFFS.md lands on a heading or an anchor of the page.
func TestDocsReadable(t *testing.T) {
	for _, name := range []string{"DESIGN.md", "TRADEOFFS.md"} {
		doc := readDoc(t, name)
		for i, line := range strings.Split(doc, "\n") {
			if n := utf8.RuneCountInString(line); strings.HasPrefix(line, "|") && n > maxDocTableLine {
				t.Errorf("docs/%s:%d: table line of %d characters (at most %d): move the detail into prose under the table",
					name, i+1, n, maxDocTableLine)
			}
		}
		anchors := docAnchors(doc)
		for _, m := range regexp.MustCompile(`\]\(#([^)]+)\)`).FindAllStringSubmatch(proseOnly(doc), -1) {
			if !anchors[m[1]] {
				t.Errorf("docs/%s: link to #%s, which no heading or anchor of the page defines", name, m[1])
			}
		}
	}
	for _, name := range []string{"DESIGN.md", "TRADEOFFS.md", "BENCHMARKS.md"} {
		for i, line := range strings.Split(proseOnly(readDoc(t, name)), "\n") {
			if m := builderWords.FindString(line); m != "" {
				t.Errorf("docs/%s:%d: %q speaks to the builders, not to a user: say what the thing is", name, i+1, m)
			}
		}
	}
}

func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../../docs/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// proseOnly blanks fenced code blocks and inline code spans, keeping the line count, so
// test names and commands quoted in code are not read as prose.
func proseOnly(doc string) string {
	lines := strings.Split(doc, "\n")
	inFence := false
	span := regexp.MustCompile("`[^`]*`")
	for i, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			lines[i] = ""
			continue
		}
		if inFence {
			lines[i] = ""
			continue
		}
		lines[i] = span.ReplaceAllString(line, "``")
	}
	return strings.Join(lines, "\n")
}

// docAnchors gives the anchors a page defines: GitHub's slug of every heading and every
// explicit `<a id="...">`.
func docAnchors(doc string) map[string]bool {
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`<a id="([^"]+)"`).FindAllStringSubmatch(doc, -1) {
		out[m[1]] = true
	}
	for _, line := range strings.Split(proseOnly(doc), "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		out[headingSlug(strings.TrimLeft(line, "#"))] = true
	}
	return out
}

// headingSlug is GitHub's anchor for a heading: lower case, spaces to hyphens, every
// character that is not a letter, digit, hyphen or underscore dropped.
func headingSlug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127 && isLetter(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isLetter(r rune) bool { return strings.ToUpper(string(r)) != strings.ToLower(string(r)) }

// TestBuilderWordsOutsideCode: the check catches tracker references and the task's wording
// in prose and leaves code (a test name, a quoted command) alone.
func TestBuilderWordsOutsideCode(t *testing.T) {
	for _, c := range []struct {
		text string
		hit  bool
	}{
		{"as issue 20 asked", true},
		{"the brief's workload", true},
		{"per The Brief", true},
		{"`TestCompactionCostAtTheIssueWorkload`", false},
		{"`see issue 20`", false},
		{"```\nissue 20\n```", false},
		{"an issue with the network", false},
		{"a brief pause", false},
	} {
		if got := builderWords.MatchString(proseOnly(c.text)); got != c.hit {
			t.Errorf("%q: match %v, want %v", c.text, got, c.hit)
		}
	}
	if got := headingSlug(" The sequencer: an atomic add (per topic)"); got != "the-sequencer-an-atomic-add-per-topic" {
		t.Errorf("slug %q", got)
	}
}
