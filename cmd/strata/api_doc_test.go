package main

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/runtime"
)

// TestAPIDocCurl: every `curl` line of docs/API.md's "From any language" section runs,
// in order, against a local node (as strata dev serves it) and answers 2xx (the lines
// use curl -f); together they call every route of docs/openapi.yaml, and every awscurl
// line calls a route a curl line shows, so a service in another language can follow the
// page as written.
func TestAPIDocCurl(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	doc, err := os.ReadFile("../../docs/API.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "## From any language")
	if start < 0 {
		t.Fatal(`docs/API.md has no "From any language" section`)
	}
	section := text[start:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	var curls, awscurls []string
	for _, line := range strings.Split(section, "\n") {
		switch {
		case strings.HasPrefix(line, "curl "):
			curls = append(curls, line)
		case strings.HasPrefix(line, "awscurl "):
			awscurls = append(awscurls, line)
		}
	}
	routes := map[string]bool{}
	for _, l := range curls {
		routes[route(t, l)] = true
	}
	for _, l := range awscurls {
		if !routes[route(t, l)] {
			t.Errorf("awscurl line calls %s, which no curl line shows: %s", route(t, l), l)
		}
	}
	for _, want := range openAPIRoutes(t) {
		re := regexp.MustCompile("^" + regexp.MustCompile(`\\\{[a-z]+\\\}`).ReplaceAllString(regexp.QuoteMeta(want), `[^/]+`) + "$")
		found := false
		for r := range routes {
			found = found || re.MatchString(r)
		}
		if !found {
			t.Errorf("no curl example for %s (docs/openapi.yaml)", want)
		}
	}

	url := startNode(t, runtime.Config{})
	for _, line := range curls {
		if !strings.HasPrefix(line, "curl -fsS ") {
			t.Errorf("%s: want curl -fsS, which fails on an answer that is not 2xx", line)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, "sh", "-c", line)
		cmd.Env = append(os.Environ(), "STRATA_URL="+url)
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("%s\n%v: %s", line, err, out)
		}
	}
}

// route is "METHOD /path" of a curl or awscurl line of the doc.
func route(t *testing.T, line string) string {
	t.Helper()
	m := regexp.MustCompile(`"\$STRATA_URL(/[^"?]*)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no \"$STRATA_URL/...\" in %s", line)
	}
	method := "GET"
	if x := regexp.MustCompile(`-X ([A-Z]+)`).FindStringSubmatch(line); x != nil {
		method = x[1]
	}
	return method + " " + m[1]
}

// openAPIRoutes lists "METHOD /path" of every operation docs/openapi.yaml describes.
func openAPIRoutes(t *testing.T) []string {
	t.Helper()
	spec, err := os.ReadFile("../../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	path := ""
	for _, line := range strings.Split(string(spec), "\n") {
		if m := regexp.MustCompile(`^  (/\S*):$`).FindStringSubmatch(line); m != nil {
			path = m[1]
		} else if m := regexp.MustCompile(`^    (get|post|put|patch|delete):$`).FindStringSubmatch(line); m != nil && path != "" {
			out = append(out, strings.ToUpper(m[1])+" "+path)
		} else if line != "" && !strings.HasPrefix(line, " ") {
			path = ""
		}
	}
	if len(out) < 25 {
		t.Fatalf("found %d operations in docs/openapi.yaml, want every route", len(out))
	}
	return out
}
