package main

import (
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/wire"
)

// envRequireBrowser makes the console test fail, instead of skipping, when no Chromium
// is on PATH (CI sets it after installing one: apt-get install -y chromium).
const envRequireBrowser = "STRATA_REQUIRE_BROWSER"

// findBrowser returns a headless-capable Chromium on PATH, or skips (fails with
// STRATA_REQUIRE_BROWSER=1). The test installs nothing itself.
func findBrowser(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv(envRequireBrowser) == "1" {
		t.Fatalf("%s=1 but no chromium, chromium-browser or google-chrome on PATH (apt-get install -y chromium)", envRequireBrowser)
	}
	t.Skipf("no Chromium on PATH: the console test needs one (apt-get install -y chromium; set %s=1 to make this a failure)", envRequireBrowser)
	return ""
}

// screenshotDir is where the console tests write their screenshots: $STRATA_SCREENSHOT_DIR
// when set (CI keeps it as an artifact), else the test's temporary directory.
func screenshotDir(t *testing.T) string {
	if d := os.Getenv("STRATA_SCREENSHOT_DIR"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// browse loads url in the headless Chromium tab p (a new document: a first load, as
// after a reload), waits until its script has rendered the summary (or its error) and
// the messages panel, and returns the DOM and a screenshot of the rendered page, which
// it keeps as name.png in screenshotDir and logs the path of.
func browse(t *testing.T, p *cdpPage, url, name string) (string, image.Image) {
	t.Helper()
	p.navigate(url)
	p.waitFor("the page to render", `document.body && document.body.dataset.ready && document.getElementById("tail").dataset.rendered`, 30*time.Second)
	dom := p.text("document.documentElement.outerHTML")
	f, err := os.Open(p.screenshot(name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	return dom, img
}

// inkRows counts the screenshot's pixel rows that are not all one colour: a page that
// rendered its tables has many, a blank or error-only page few.
func inkRows(img image.Image) int {
	b := img.Bounds()
	n := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		first := img.At(b.Min.X, y)
		for x := b.Min.X; x < b.Max.X; x += 2 {
			if img.At(x, y) != first {
				n++
				break
			}
		}
	}
	return n
}

// loginProxy serves target (strata dev: the console and the API) on an origin of its
// own, plus /login.html?token=T&next=PATH: a page that puts T in the tab's
// sessionStorage, as the console's Token field does, and opens PATH. The console takes
// its token from nowhere else, and a headless browser cannot type. seen, when not nil,
// is told of every request the proxy passes on.
func loginProxy(t *testing.T, target string, seen ...func(*http.Request)) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login.html", func(w http.ResponseWriter, r *http.Request) {
		token, _ := json.Marshal(r.URL.Query().Get("token"))
		next, _ := json.Marshal(r.URL.Query().Get("next"))
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><script>sessionStorage.setItem("strata-token", %s); location.replace(%s);</script>`, token, next)
	})
	upstream := httputil.NewSingleHostReverseProxy(u)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		for _, f := range seen {
			f(r)
		}
		upstream.ServeHTTP(w, r)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// loginURL is the address of loginProxy's page that logs in with token and opens path.
func loginURL(proxy, token, path string) string {
	return proxy + "/login.html?" + url.Values{"token": {token}, "next": {path}}.Encode()
}

// waitLagSamples polls the lag history of group until it holds at least n samples on
// some partition (the dev loop samples every --lag-sample-interval), with a generous
// deadline for a loaded machine.
func waitLagSamples(t *testing.T, url, token, group string, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		req, _ := http.NewRequest(http.MethodGet, url+"/v1/groups/"+group+"/lag-history", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var h wire.LagHistory
		err = json.NewDecoder(resp.Body).Decode(&h)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("lag history of %s: %d %v", group, resp.StatusCode, err)
		}
		for _, p := range h.Partitions {
			if len(p.Samples) >= n {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("lag history of %s never reached %d samples: %+v", group, n, h)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestConsolePage: the console `strata dev` serves renders, in headless Chromium, the
// topics (a summary row each, opened onto its partitions), the groups (settings,
// members, lag in records and seconds, and the lag chart drawn from the server's
// history on the first load: the history outlives the page), and the tail of a
// partition with its headers; with --auth it shows everything with a token, an error
// without one, and says why the lists are empty for a token that may read but not
// describe. Screenshots go to $STRATA_SCREENSHOT_DIR (or the test's temporary
// directory); their paths are logged.
func TestConsolePage(t *testing.T) {
	browser := findBrowser(t)
	auth := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(auth, []byte(`{"principals": {"admin-token-0123456789a": {"name": "admin", "allow": [
		{"resource": "topic:*", "ops": ["create", "describe", "append", "read"]},
		{"resource": "group:*", "ops": ["consume", "describe", "reset"]}]},
		"reader-token-0123456789": {"name": "reader", "allow": [{"resource": "topic:*", "ops": ["read"]}]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		args  []string
		token string
	}{
		{"open", nil, ""},
		{"auth", []string{"--auth", auth}, "admin-token-0123456789a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev := startDev(t, t.TempDir(), append([]string{"--lag-sample-interval", "200ms", "--access-log"}, tc.args...)...)
			api := func(stdin string, args ...string) {
				t.Helper()
				full := append([]string{"--url", dev.url}, args...)
				if tc.token != "" {
					full = append(full, "--token", tc.token)
				}
				if _, errOut, code := runBin(t, stdin, full...); code != 0 {
					t.Fatalf("strata %s: exit %d: %s", strings.Join(args, " "), code, errOut)
				}
			}
			api("", "topics", "create", "orders-console", "--partitions", "3")
			api("", "topics", "create", "audit-console")
			api("first\nsecond\n", "produce", "orders-console", "--partition", "1")
			api("", "consume", "orders-console", "--group", "billing-console", "--until-caught-up")
			api("third-value-in-tail\n", "produce", "orders-console", "--partition", "1", "--header", "trace-id=abc-123")
			api("", "groups", "settings", "shipping-console", "--reset-policy", "latest")
			api("", "groups", "reset", "shipping-console", "--topic", "orders-console", "--to", "earliest", "--execute")
			// A live member of shipping-console holds partition 2.
			req, _ := http.NewRequest(http.MethodPost, dev.url+"/v1/groups/shipping-console/topics/orders-console/partitions/2/lease",
				strings.NewReader(`{"member": "member-console-1", "ttl_ms": 300000}`))
			req.Header.Set("Content-Type", "application/json")
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("lease: %v %v", resp, err)
			}
			var lease struct {
				Generation int64 `json:"generation"`
			}
			err = json.NewDecoder(resp.Body).Decode(&lease)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			// Its owner parked one key there: the group view shows it on partition 2.
			req, _ = http.NewRequest(http.MethodPut, dev.url+"/v1/groups/shipping-console/topics/orders-console/partitions/2/parked",
				strings.NewReader(fmt.Sprintf(`{"member": "member-console-1", "generation": %d, "key": "b3JkZXItNw==", "first_offset": 0, "last_offset": 0,
					"records": 1, "error": "declined", "attempts": 3, "parked_at_ms": 1700000000000, "park_partition": 0, "park_offset": -1}`, lease.Generation)))
			req.Header.Set("Content-Type", "application/json")
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNoContent {
				t.Fatalf("park a key: %v %v", resp, err)
			}
			// And a heartbeating member of billing-console, which holds nothing there.
			req, _ = http.NewRequest(http.MethodPost, dev.url+"/v1/groups/billing-console/topics/audit-console/heartbeat",
				strings.NewReader(`{"member": "member-heartbeat-2", "ttl_ms": 300000, "held": []}`))
			req.Header.Set("Content-Type", "application/json")
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
				t.Fatalf("heartbeat: %v %v", resp, err)
			}
			// Two samples or more are on the server before the page is first loaded: the
			// chart can only show them if it reads the server's history.
			waitLagSamples(t, dev.url, tc.token, "billing-console", 2)

			// With a token, the page is opened logged in (loginProxy).
			open := func(path string) string { return dev.url + path }
			if tc.token != "" {
				proxy := loginProxy(t, dev.url)
				open = func(path string) string { return loginURL(proxy, tc.token, path) }
			}
			const page = "/console/?topic=orders-console&partition=1"
			tab := newCDPPage(t, browser)
			dom, img := browse(t, tab, open(page), "console-"+tc.name)
			for _, want := range []string{
				`data-ready="1"`, `class="summary" data-topic="orders-console"`, `data-topic="audit-console"`,
				`class="partition" data-topic="orders-console" data-partition="2"`,
				`data-group="billing-console"`, `data-group="shipping-console"`, "third-value-in-tail",
				"trace-id=abc-123", "Lag (time)", "reset policy latest", `data-member="member-console-1"`, `data-member="member-heartbeat-2"`,
				"<polyline", "— following the newest", "To data loss",
			} {
				if !strings.Contains(dom, want) {
					t.Errorf("the rendered page lacks %q:\n%s", want, dom)
				}
			}
			if m := regexp.MustCompile(`data-group="billing-console".*?data-samples="(\d+)"`).FindStringSubmatch(dom); m == nil || m[1] == "0" || m[1] == "1" {
				t.Errorf("billing-console's chart right after the load has %v samples, want the server's history (2 or more)", m)
			}
			// Parked keys per partition: shipping-console's key on partition 2, none elsewhere.
			if !strings.Contains(dom, "Parked keys") || !strings.Contains(dom, "1 key parked") ||
				!regexp.MustCompile(`data-group="shipping-console".*?<td>orders-console</td><td class="num">2</td>(?:<td[^>]*>[^<]*</td>){5}<td class="num parked" data-parked="1">1</td>`).MatchString(dom) ||
				len(regexp.MustCompile(`data-parked="[1-9]`).FindAllString(dom, -1)) != 1 {
				t.Errorf("the group view does not show shipping-console's parked key on orders-console/2 alone:\n%s", dom)
			}
			if b := img.Bounds(); b.Dx() != 1280 || b.Dy() < 1000 {
				t.Errorf("screenshot is %v, want 1280 wide", b)
			}
			full := inkRows(img)
			t.Logf("screenshot: %d rows with ink of %d", full, img.Bounds().Dy())
			if full < 150 {
				t.Errorf("the screenshot has %d rows with anything drawn: the tables did not render", full)
			}
			// Pinned to an offset, the tail starts there and does not follow.
			dom, _ = browse(t, tab, open(page+"&offset=1"), "console-"+tc.name+"-offset")
			if !strings.Contains(dom, "— from offset 1") || strings.Contains(dom, `data-offset="0"`) || !strings.Contains(dom, `data-offset="2"`) {
				t.Errorf("the tail from offset 1 shows otherwise:\n%s", dom)
			}
			// Picked by time, the tail starts at the first record at or after it.
			var third wire.PollResponse
			req, _ = http.NewRequest(http.MethodGet, dev.url+"/v1/topics/orders-console/partitions/1/records?offset=2&max_records=1", nil)
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err = http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			err = json.NewDecoder(resp.Body).Decode(&third)
			resp.Body.Close()
			if err != nil || len(third.Records) != 1 {
				t.Fatalf("poll of offset 2: %+v %v", third, err)
			}
			at := strconv.FormatInt(third.Records[0].TimestampMs, 10)
			dom, _ = browse(t, tab, open(page+"&time="+at), "console-"+tc.name+"-time")
			if !strings.Contains(dom, "— from offset 2") || strings.Contains(dom, `data-offset="1"`) || !strings.Contains(dom, `data-offset="2"`) {
				t.Errorf("the tail from time %s (offset 2's) shows otherwise:\n%s", at, dom)
			}
			if tc.token == "" {
				return
			}
			// Without the token the page says so and shows no data.
			dom, img = browse(t, tab, dev.url+"/console/", "console-no-token")
			if !strings.Contains(dom, `data-ready="error"`) || !strings.Contains(dom, "HTTP 401") || strings.Contains(dom, `data-topic="orders-console"`) {
				t.Errorf("without a token the page should show the 401 and no topics:\n%s", dom)
			}
			if empty := inkRows(img); empty >= full {
				t.Errorf("the page without a token has as much drawn (%d rows) as with one (%d)", empty, full)
			}
			// A token in the URL is not taken (it would stay in the history): the page
			// asks for one and shows no data.
			dom, _ = browse(t, tab, dev.url+"/console/#token="+tc.token, "console-token-in-url")
			if !strings.Contains(dom, `data-ready="error"`) || !strings.Contains(dom, "HTTP 401") || strings.Contains(dom, `data-topic="orders-console"`) {
				t.Errorf("with the token in the URL's fragment the page should ignore it, show the 401 and no topics:\n%s", dom)
			}
			dom, _ = browse(t, tab, dev.url+"/console/?token="+tc.token, "console-token-in-query")
			if !strings.Contains(dom, `data-ready="error"`) || !strings.Contains(dom, "HTTP 401") || strings.Contains(dom, `data-topic="orders-console"`) {
				t.Errorf("with the token in the URL's query the page should ignore it, show the 401 and no topics:\n%s", dom)
			}
			// A token that may read but not describe sees empty lists that say why.
			dom, _ = browse(t, tab, loginURL(loginProxy(t, dev.url), "reader-token-0123456789", "/console/"), "console-reader")
			if !strings.Contains(dom, "may read topics but not describe them") || strings.Contains(dom, `data-topic="orders-console"`) {
				t.Errorf("a read-only token's page should say why it lists no topics:\n%s", dom)
			}
			// dev printed the console's URL, and its access log has the page's calls
			// without the tokens.
			if err := dev.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			<-dev.exited
			if want := "console at " + dev.url + "/console/\n"; !strings.HasPrefix(dev.rest.String(), want) {
				t.Errorf("strata dev's second line is %q, want %q", dev.rest.String(), want)
			}
			logged := dev.stderr.String()
			if !regexp.MustCompile(`(?m) GET /v1/summary 200 \d+B \S+$`).MatchString(logged) ||
				strings.Contains(logged, "admin-token") || strings.Contains(logged, "reader-token") {
				t.Errorf("access log lacks the summary call or holds a token:\n%s", logged)
			}
		})
	}
}
