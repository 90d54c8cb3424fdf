package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// cdpPage drives one headless Chromium page over the DevTools protocol on a pipe
// (--remote-debugging-pipe: the browser reads commands on its fd 3 and writes answers
// and events on its fd 4, each one JSON message ended by a NUL byte), so a test can
// click, type and read the page as a user would, with nothing but Chromium installed.
type cdpPage struct {
	t       *testing.T
	w       *os.File
	mu      sync.Mutex
	next    int
	pending map[int]chan cdpAnswer
	session string
}

type cdpAnswer struct {
	ID     int             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// newCDPPage starts browser headless with a fresh profile and attaches to its page.
func newCDPPage(t *testing.T, browser string) *cdpPage {
	t.Helper()
	toBrowser, cmdIn, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmdOut, fromBrowser, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-default-apps",
		"--user-data-dir="+filepath.Join(t.TempDir(), "profile"), "--window-size=1280,1600", "--remote-debugging-pipe", "about:blank")
	cmd.ExtraFiles = []*os.File{toBrowser, fromBrowser} // fd 3 and fd 4
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	toBrowser.Close()
	fromBrowser.Close()
	p := &cdpPage{t: t, w: cmdIn, pending: map[int]chan cdpAnswer{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		r := bufio.NewReaderSize(cmdOut, 1<<20)
		for {
			msg, err := r.ReadBytes(0)
			if err != nil {
				return
			}
			var a cdpAnswer
			if json.Unmarshal(msg[:len(msg)-1], &a) != nil || a.ID == 0 {
				continue // an event
			}
			p.mu.Lock()
			ch := p.pending[a.ID]
			delete(p.pending, a.ID)
			p.mu.Unlock()
			if ch != nil {
				ch <- a
			}
		}
	}()
	t.Cleanup(func() {
		cmdIn.Close()
		cancel()
		_ = cmd.Wait()
		cmdOut.Close()
		<-done
		if t.Failed() {
			var keep []string
			for _, l := range strings.Split(stderr.String(), "\n") {
				if !strings.Contains(l, "dbus") {
					keep = append(keep, l)
				}
			}
			t.Logf("chromium stderr:\n%s", strings.Join(keep, "\n"))
		}
	})
	var targets struct {
		TargetInfos []struct {
			TargetID string `json:"targetId"`
			Type     string `json:"type"`
		} `json:"targetInfos"`
	}
	p.call("", "Target.getTargets", nil, &targets)
	for _, ti := range targets.TargetInfos {
		if ti.Type == "page" {
			var att struct {
				SessionID string `json:"sessionId"`
			}
			p.call("", "Target.attachToTarget", map[string]any{"targetId": ti.TargetID, "flatten": true}, &att)
			p.session = att.SessionID
			break
		}
	}
	if p.session == "" {
		t.Fatalf("chromium has no page target: %+v", targets)
	}
	p.call(p.session, "Page.enable", nil, nil)
	p.call(p.session, "Runtime.enable", nil, nil)
	return p
}

// call sends one command (to the page's session when session is set) and decodes its
// result into out; an error fails the test.
func (p *cdpPage) call(session, method string, params any, out any) {
	p.t.Helper()
	res, err := p.send(session, method, params)
	if err == nil && out != nil {
		err = json.Unmarshal(res, out)
	}
	if err != nil {
		p.t.Fatalf("cdp %s: %v", method, err)
	}
}

// send sends one command and returns its result or its error.
func (p *cdpPage) send(session, method string, params any) (json.RawMessage, error) {
	p.mu.Lock()
	p.next++
	id := p.next
	ch := make(chan cdpAnswer, 1)
	p.pending[id] = ch
	p.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	b, _ := json.Marshal(msg)
	if _, err := p.w.Write(append(b, 0)); err != nil {
		return nil, err
	}
	select {
	case a := <-ch:
		if a.Error != nil {
			return nil, errors.New(a.Error.Message)
		}
		return a.Result, nil
	case <-time.After(30 * time.Second):
		return nil, errors.New("no answer in 30 s")
	}
}

// navigate opens url in a new document (by way of about:blank, so that a link that
// differs only in its fragment loads the page again) and waits until it has replaced
// the one shown, so that no later wait is answered by the page before.
func (p *cdpPage) navigate(url string) {
	p.t.Helper()
	for _, u := range []string{"about:blank", url} {
		_, _ = p.send(p.session, "Runtime.evaluate", map[string]any{"expression": "window.strataTestOld = true"})
		p.call(p.session, "Page.navigate", map[string]any{"url": u}, nil)
		p.waitFor("a new document", "!window.strataTestOld", 30*time.Second)
	}
}

// eval runs a JavaScript expression in the page (awaiting a promise) and decodes its
// value into out (when not nil); an exception fails the test.
func (p *cdpPage) eval(expr string, out any) {
	p.t.Helper()
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	p.call(p.session, "Runtime.evaluate", map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true}, &res)
	if res.ExceptionDetails != nil {
		p.t.Fatalf("eval %s: %s %s", expr, res.ExceptionDetails.Text, res.ExceptionDetails.Exception.Description)
	}
	if out != nil && len(res.Result.Value) > 0 {
		if err := json.Unmarshal(res.Result.Value, out); err != nil {
			p.t.Fatalf("eval %s: %v (%s)", expr, err, res.Result.Value)
		}
	}
}

// text is the value of a JavaScript expression that yields a string.
func (p *cdpPage) text(expr string) string {
	p.t.Helper()
	var s string
	p.eval(expr, &s)
	return s
}

// waitFor polls a JavaScript condition until it is true, failing after timeout with
// what the page's body then said.
func (p *cdpPage) waitFor(what, cond string, timeout time.Duration) {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		// The page may still be loading (no body yet, or a redirect replacing it): an
		// exception or a lost evaluation is a no.
		res, err := p.send(p.session, "Runtime.evaluate", map[string]any{"returnByValue": true,
			"expression": "(() => { try { return !!(" + cond + "); } catch { return false; } })()"})
		var v struct {
			Result struct {
				Value bool `json:"value"`
			} `json:"result"`
		}
		if err == nil && json.Unmarshal(res, &v) == nil && v.Result.Value {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("waited %v for %s (%s); the page says:\n%s", timeout, what, cond, p.text("document.body.innerText"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// click clicks the element selector finds (failing when there is none).
func (p *cdpPage) click(selector string) {
	p.t.Helper()
	sel, _ := json.Marshal(selector)
	var ok bool
	p.eval(fmt.Sprintf(`(() => { const e = document.querySelector(%s); if (!e) return false; e.click(); return true; })()`, sel), &ok)
	if !ok {
		p.t.Fatalf("no element %s to click; the page says:\n%s", selector, p.text("document.body.innerText"))
	}
}

// fill sets the value of the input or select selector finds and fires its input and
// change events, as typing or choosing would.
func (p *cdpPage) fill(selector, value string) {
	p.t.Helper()
	sel, _ := json.Marshal(selector)
	val, _ := json.Marshal(value)
	var ok bool
	p.eval(fmt.Sprintf(`(() => { const e = document.querySelector(%s); if (!e) return false; if (e.type === "checkbox") e.checked = %s === "true"; else e.value = %s;
		e.dispatchEvent(new Event("input", {bubbles: true})); e.dispatchEvent(new Event("change", {bubbles: true})); return true; })()`, sel, val, val), &ok)
	if !ok {
		p.t.Fatalf("no element %s to fill", selector)
	}
}

// screenshot keeps a PNG of the page's viewport as name.png in screenshotDir, logs its
// path and returns it; with a selector, the element it finds is scrolled into view
// first.
func (p *cdpPage) screenshot(name string, selector ...string) string {
	p.t.Helper()
	for _, s := range selector {
		sel, _ := json.Marshal(s)
		p.eval(fmt.Sprintf(`(() => { const e = document.querySelector(%s); if (e) e.scrollIntoView({block: "start"}); })()`, sel), nil)
	}
	var res struct {
		Data string `json:"data"`
	}
	p.call(p.session, "Page.captureScreenshot", map[string]any{"format": "png"}, &res)
	b, err := base64.StdEncoding.DecodeString(res.Data)
	if err != nil {
		p.t.Fatal(err)
	}
	path := filepath.Join(screenshotDir(p.t), name+".png")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		p.t.Fatal(err)
	}
	p.t.Logf("screenshot: %s", path)
	return path
}
