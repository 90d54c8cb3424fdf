package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// lagSeconds matches the fields of a state read that move by themselves with the clock
// (lag and time to data loss).
var lagSeconds = regexp.MustCompile(`"(lag_seconds|seconds_to_data_loss)":[0-9.e+-]+`)

// dumpDOM loads url in headless Chromium with extra flags and returns the DOM after its
// scripts ran.
func dumpDOM(t *testing.T, browser, url string, extra ...string) string {
	t.Helper()
	dir := t.TempDir()
	args := append([]string{"--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-default-apps",
		"--user-data-dir=" + filepath.Join(dir, "profile"), "--virtual-time-budget=8000"}, extra...)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, browser, append(args, "--dump-dom", url)...).Output()
	if err != nil {
		t.Fatalf("%s %s: %v", browser, url, err)
	}
	return string(out)
}

// attackPage is a page on another origin that tries, as a page a developer opens in
// the browser beside `strata dev` could, to create a topic, append a forged record and
// skip a group past its unconsumed records: "simple" text/plain fetches (no preflight),
// the same as JSON (which needs a preflight the server never grants), and a text/plain
// form whose body is shaped as JSON. It writes what it sent into data-done.
const attackPage = `<!doctype html><html><body>
<iframe name="sink" style="display:none"></iframe>
<form id="f" method="POST" action="TARGET/v1/topics" enctype="text/plain" target="sink">
<input name='{"name": "evil-form", "partitions": 1, "x": "' value='"}'></form>
<script>
const T = "TARGET";
async function attack() {
  const out = [];
  const shots = [
    ["create", T + "/v1/topics", '{"name": "evil", "partitions": 1}'],
    ["append", T + "/v1/topics/orders/records", '{"records": [{"value": "Zm9yZ2Vk"}]}'],
    ["reset", T + "/v1/groups/billing/topics/orders/reset", '{"to": "latest"}'],
  ];
  for (const [name, url, body] of shots) {
    try { await fetch(url, {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body}); out.push(name + ":simple-sent"); }
    catch (e) { out.push(name + ":simple-failed"); }
    try { await fetch(url, {method: "POST", headers: {"Content-Type": "application/json"}, body}); out.push(name + ":json-sent"); }
    catch (e) { out.push(name + ":json-blocked"); }
  }
  document.getElementById("f").submit();
  await new Promise(r => setTimeout(r, 500));
  document.body.setAttribute("data-done", out.join(" "));
}
attack();
</script></body></html>`

// TestBrowserCrossSiteAttack: in headless Chromium, a page on
// another origin can no longer create a topic, append or reset a group on `strata dev`
// without --auth; and a page reached through a rebound DNS name cannot read the log
// through the console.
func TestBrowserCrossSiteAttack(t *testing.T) {
	browser := findBrowser(t)
	dev := startDev(t, t.TempDir())
	api := func(stdin string, args ...string) {
		t.Helper()
		if _, errOut, code := runBin(t, stdin, append([]string{"--url", dev.url}, args...)...); code != 0 {
			t.Fatalf("strata %s: exit %d: %s", strings.Join(args, " "), code, errOut)
		}
	}
	api("", "topics", "create", "orders")
	api("a\nb\nc\n", "produce", "orders")
	api("", "groups", "reset", "billing", "--topic", "orders", "--to", "earliest", "--create", "--execute")
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(dev.url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return lagSeconds.ReplaceAllString(string(b), "")
	}
	before := get("/v1/topics") + get("/v1/topics/orders") + get("/v1/groups/billing")

	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, strings.ReplaceAll(attackPage, "TARGET", dev.url))
	}))
	defer evil.Close()
	dom := dumpDOM(t, browser, evil.URL)
	if !strings.Contains(dom, `data-done="create:`) {
		t.Fatalf("the attack page did not run:\n%s", dom)
	}
	t.Logf("attack page: %s", dom[strings.Index(dom, "data-done="):][:200])
	if after := get("/v1/topics") + get("/v1/topics/orders") + get("/v1/groups/billing"); after != before {
		t.Fatalf("a page on another origin changed the log:\n%s\n->\n%s", before, after)
	}

	// DNS rebinding: the browser resolves a foreign name to the developer's loopback.
	port := dev.url[strings.LastIndexByte(dev.url, ':')+1:]
	dom = dumpDOM(t, browser, fmt.Sprintf("http://rebound.test:%s/console/", port), "--host-resolver-rules=MAP rebound.test 127.0.0.1")
	if strings.Contains(dom, `data-topic="orders"`) || strings.Contains(dom, `data-ready="1"`) {
		t.Fatalf("the console answered a rebound name and showed the log:\n%s", dom)
	}
	// The console on its own origin still works.
	if dom = dumpDOM(t, browser, dev.url+"/console/"); !strings.Contains(dom, `data-topic="orders"`) {
		t.Fatalf("the console on its own origin lacks the topics:\n%s", dom)
	}
}

// TestDevWarnsBeyondLoopback: `strata dev` listening beyond loopback
// without --auth says so on stderr; on loopback, or with --auth, it does not.
func TestDevWarnsBeyondLoopback(t *testing.T) {
	auth := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(auth, []byte(`{"principals": {"a-token-of-22-characters": {"name": "a", "allow": []}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		addr string
		args []string
		warn bool
	}{
		{"0.0.0.0:0", nil, true},
		{"127.0.0.1:0", nil, false},
		{"0.0.0.0:0", []string{"--auth", auth}, false},
	} {
		cmd := exec.Command(strataBin, append([]string{"dev", "--addr", tc.addr, "--data-dir", t.TempDir(), "--retention-interval", "1h"}, tc.args...)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if !strings.HasPrefix(line, "listening on http://") {
			t.Fatalf("%s %v: printed %q first (stderr %q)", tc.addr, tc.args, line, stderr.String())
		}
		if got := strings.Contains(stderr.String(), "beyond loopback without --auth"); got != tc.warn {
			t.Errorf("%s %v: warning %v, want %v (stderr %q)", tc.addr, tc.args, got, tc.warn, stderr.String())
		}
	}
}
