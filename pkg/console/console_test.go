package console

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// TestConsoleIgnoresTokenInURL: the page takes its token only from its Token field
// and the tab's sessionStorage, never from the URL, where it would stay in the
// history, be sent in a Referer or land in a log: the script served is the one checked
// here, it reads no fragment and no "token" parameter, and it clears any fragment an
// old link still carries without looking at it. (cmd/strata's TestConsolePage loads a
// #token= link in Chromium and sees the page ask for a token.)
func TestConsoleIgnoresTokenInURL(t *testing.T) {
	js, err := fs.ReadFile(static, "static/console.js")
	if err != nil {
		t.Fatal(err)
	}
	src := string(js)
	if strings.Contains(src, "token=") {
		t.Error(`console.js mentions "token=": the token is never read from the URL`)
	}
	const clear = `if (location.hash) history.replaceState(null, "", location.pathname + location.search);`
	if n := strings.Count(src, "location.hash"); n != 1 || !strings.Contains(src, clear) {
		t.Errorf("console.js reads location.hash %d times, want once, only to clear it: %s", n, clear)
	}
	for _, banned := range []string{"location.href", "location.toString", "document.URL", "document.referrer", "localStorage"} {
		if strings.Contains(src, banned) {
			t.Errorf("console.js reads %s", banned)
		}
	}
	for _, m := range regexp.MustCompile(`params\.(?:get|has|getAll)\("([^"]*)"\)`).FindAllStringSubmatch(src, -1) {
		switch m[1] {
		case "topic", "partition", "offset", "time", "refresh":
		default:
			t.Errorf("console.js reads the query parameter %q; only topic, partition, offset, time and refresh are read", m[1])
		}
	}
	if regexp.MustCompile(`params\.[a-zA-Z]+\([^"]`).MatchString(src) {
		t.Error("console.js reads a query parameter it does not name")
	}
	sources := map[string]bool{}
	for _, m := range regexp.MustCompile(`state\.token = ([^;]+);`).FindAllStringSubmatch(src, -1) {
		sources[m[1]] = true
	}
	want := map[string]bool{`sessionStorage.getItem("strata-token") || ""`: true, `document.getElementById("token").value.trim()`: true}
	if len(sources) != len(want) {
		t.Errorf("the token is set from %v, want only sessionStorage and the Token field", sources)
	}
	for s := range sources {
		if !want[s] {
			t.Errorf("the token is set from %s, want only sessionStorage and the Token field", s)
		}
	}

	// The page served loads that script, and the script served is that one.
	srv := httptest.NewServer(Handler())
	t.Cleanup(srv.Close)
	get := func(path string) string {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		return string(b)
	}
	if page := get(Prefix); len(regexp.MustCompile(`<script`).FindAllString(page, -1)) != 1 || !strings.Contains(page, `<script src="console.js" defer></script>`) {
		t.Errorf("the page's scripts are not console.js alone:\n%s", page)
	}
	if served := get(Prefix + "console.js"); served != src {
		t.Error("the console.js served is not the one checked")
	}
	if page := get(Prefix); !strings.Contains(page, `<link rel="icon" href="favicon.svg" type="image/svg+xml">`) || !strings.HasPrefix(get(Prefix+"favicon.svg"), "<svg") {
		t.Error("the page has no favicon.svg, or it is not served")
	}
}
