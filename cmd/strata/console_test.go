package main

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// browse loads url in headless Chromium, lets its script run, and returns the DOM and a
// screenshot of the rendered page.
func browse(t *testing.T, browser, url string) (string, image.Image) {
	t.Helper()
	dir := t.TempDir()
	shot := filepath.Join(dir, "page.png")
	common := []string{"--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-default-apps",
		"--user-data-dir=" + filepath.Join(dir, "profile"), "--window-size=1280,1600", "--virtual-time-budget=8000"}
	run := func(args ...string) []byte {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, browser, append(common, args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", browser, strings.Join(args, " "), err, stderr.String())
		}
		return out
	}
	dom := run("--dump-dom", url)
	run("--screenshot="+shot, url)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if os.Getenv("STRATA_KEEP_SCREENSHOT") != "" {
		data, _ := os.ReadFile(shot)
		_ = os.WriteFile(os.Getenv("STRATA_KEEP_SCREENSHOT"), data, 0o644)
	}
	return string(dom), img
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

// TestConsolePage: the console `strata dev` serves renders, in headless Chromium, the
// topics (with each partition's bounds), the groups (with owner, generation and lag,
// and the lag chart) and the tail of a partition it is given; and with --auth it shows
// everything with a token and an error without one.
func TestConsolePage(t *testing.T) {
	browser := findBrowser(t)
	auth := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(auth, []byte(`{"principals": {"admin-token-0123456789a": {"name": "admin", "allow": [
		{"resource": "topic:*", "ops": ["create", "describe", "append", "read"]},
		{"resource": "group:*", "ops": ["consume", "describe", "reset"]}]}}}`), 0o600); err != nil {
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
			dev := startDev(t, t.TempDir(), tc.args...)
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
			api("first\nsecond\nthird-value-in-tail\n", "produce", "orders-console", "--partition", "1")
			api("", "consume", "orders-console", "--group", "billing-console", "--until-caught-up")
			api("", "groups", "settings", "shipping-console", "--reset-policy", "latest")
			api("", "groups", "reset", "shipping-console", "--topic", "orders-console", "--to", "earliest")

			page := dev.url + "/console/?topic=orders-console&partition=1"
			if tc.token != "" {
				page += "#token=" + tc.token
			}
			dom, img := browse(t, browser, page)
			for _, want := range []string{
				`data-ready="1"`, `data-topic="orders-console"`, `data-topic="audit-console"`,
				`data-group="billing-console"`, `data-group="shipping-console"`, "third-value-in-tail",
				"lag, last 10 minutes", "<polyline",
			} {
				if !strings.Contains(dom, want) {
					t.Errorf("the rendered page lacks %q:\n%s", want, dom)
				}
			}
			if b := img.Bounds(); b.Dx() != 1280 || b.Dy() < 1000 {
				t.Errorf("screenshot is %v, want 1280 wide", b)
			}
			full := inkRows(img)
			t.Logf("screenshot: %d rows with ink of %d", full, img.Bounds().Dy())
			if full < 150 {
				t.Errorf("the screenshot has %d rows with anything drawn: the tables did not render", full)
			}
			if tc.token == "" {
				return
			}
			// Without the token the page says so and shows no data.
			dom, img = browse(t, browser, dev.url+"/console/")
			if !strings.Contains(dom, `data-ready="error"`) || !strings.Contains(dom, "HTTP 401") || strings.Contains(dom, `data-topic="orders-console"`) {
				t.Errorf("without a token the page should show the 401 and no topics:\n%s", dom)
			}
			if empty := inkRows(img); empty >= full {
				t.Errorf("the page without a token has as much drawn (%d rows) as with one (%d)", empty, full)
			}
		})
	}
}
