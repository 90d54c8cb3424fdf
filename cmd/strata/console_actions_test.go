package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/wire"
)

// consoleAPI calls the API of dev as token and decodes a JSON answer into out (when not
// nil); it returns the status.
func consoleAPI(t *testing.T, url, token, method, path string, body, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
	return resp.StatusCode
}

// mustAPI is consoleAPI that fails the test on any status but want.
func mustAPI(t *testing.T, url, token, method, path string, body, out any, want int) {
	t.Helper()
	if got := consoleAPI(t, url, token, method, path, body, out); got != want {
		t.Fatalf("%s %s: %d, want %d", method, path, got, want)
	}
}

// The console's tokens in its Chromium tests: one granted every action, one that may
// only look.
const consoleAdmin, consoleViewer = "admin-token-0123456789a", "viewer-token-0123456789"

// startLoadedDev starts `strata dev --auth` with the console's two tokens and 20 topics
// and 20 groups (each a topic of 2 partitions with a record, and a group committed on
// it), and returns it with a function calling its API as the admin.
func startLoadedDev(t *testing.T) (*devProc, func(method, path string, body, out any, want int)) {
	t.Helper()
	auth := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(auth, []byte(`{"principals": {"`+consoleAdmin+`": {"name": "admin", "allow": [
		{"resource": "topic:*", "ops": ["create", "describe", "append", "read", "alter", "delete"]},
		{"resource": "group:*", "ops": ["consume", "describe", "reset", "delete"]}]},
		"`+consoleViewer+`": {"name": "viewer", "allow": [{"resource": "topic:*", "ops": ["describe", "read"]}, {"resource": "group:*", "ops": ["describe"]}]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	dev := startDev(t, t.TempDir(), "--auth", auth)
	api := func(method, path string, body, out any, want int) {
		t.Helper()
		mustAPI(t, dev.url, consoleAdmin, method, path, body, out, want)
	}
	for i := range 20 {
		topic := fmt.Sprintf("load-%02d", i)
		api("POST", "/v1/topics", map[string]any{"name": topic, "partitions": 2}, nil, http.StatusCreated)
		api("POST", "/v1/topics/"+topic+"/records", map[string]any{"records": []map[string]any{{"value": "eA==", "partition": 0}}}, nil, http.StatusOK)
		g := fmt.Sprintf("/v1/groups/load-group-%02d/topics/%s/partitions/0", i, topic)
		api("POST", g+"/lease", map[string]any{"member": "m", "ttl_ms": 300000}, nil, http.StatusOK)
		api("POST", g+"/commit", map[string]any{"member": "m", "generation": 1, "next_offset": 1}, nil, http.StatusOK)
	}
	return dev, api
}

// TestConsoleIdleTab: an idle console tab on `strata dev` with 20 topics and 20 groups,
// at the default refresh of 2 s, makes one GET /v1/summary per refresh and nothing else
// for 60 s: at most 31 requests (one per interval, plus one for an interval cut by the
// window), whatever the number of topics and groups. The page before the summary made,
// per refresh, four requests per group, one per topic and one per partition.
func TestConsoleIdleTab(t *testing.T) {
	t.Parallel()
	browser := findBrowser(t)
	dev, _ := startLoadedDev(t)
	var mu sync.Mutex
	requests := map[string]int{}
	proxy := loginProxy(t, dev.url, func(r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/") {
			mu.Lock()
			requests[r.Method+" "+r.URL.Path]++
			mu.Unlock()
		}
	})
	p := newCDPPage(t, browser)
	p.navigate(loginURL(proxy, consoleAdmin, "/console/"))
	p.waitFor("the first summary", `document.body.dataset.ready === "1" && document.querySelectorAll("tr.summary").length === 20 && document.querySelectorAll(".group").length === 20`, 20*time.Second)
	mu.Lock()
	requests = map[string]int{}
	mu.Unlock()
	const window = 60 * time.Second
	time.Sleep(window)
	mu.Lock()
	idle := requests
	mu.Unlock()
	n := idle["GET /v1/summary"]
	t.Logf("idle tab, 20 topics and 20 groups, default refresh: %v in %v", idle, window)
	if n < 25 || n > 31 || len(idle) != 1 {
		t.Errorf("an idle tab made %v in %v at the default 2 s refresh, want 25 to 31 GET /v1/summary and nothing else", idle, window)
	}
	p.screenshot("console-idle")
}

// TestConsoleActions drives the console in headless Chromium (the DevTools protocol,
// cdpPage) against `strata dev --auth` with 20 topics and 20 groups, and checks each
// action's result through the API: create a topic (its plan first), browse its
// records by offset with paging both ways, as pretty JSON and hex, copy one, search a
// key server-side, follow the partition while a record arrives, alter partitions,
// retention and pin, reset a group by shift-by with the plan per partition, set its
// on_failure, list a parked key with its records and error, release it and see the
// replay's outcome, delete the topic (typed confirmation) and the group; a token that
// may only look is offered none of it and the server refuses it. It first watches the
// tab idle for 6 s at a 1 s refresh: one GET /v1/summary per interval (TestConsoleIdleTab
// watches 60 s at the default).
// Screenshots go to $STRATA_SCREENSHOT_DIR as console-actions-*.png.
func TestConsoleActions(t *testing.T) {
	t.Parallel()
	browser := findBrowser(t)
	const admin, viewer = consoleAdmin, consoleViewer
	begin := time.Now()
	dev, api := startLoadedDev(t)

	var mu sync.Mutex
	requests := map[string]int{}
	proxy := loginProxy(t, dev.url, func(r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/") {
			mu.Lock()
			requests[r.Method+" "+r.URL.Path]++
			mu.Unlock()
		}
	})
	counted := func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := requests
		requests = map[string]int{}
		return out
	}
	setup := time.Since(begin)
	p := newCDPPage(t, browser)
	p.navigate(loginURL(proxy, admin, "/console/?refresh=1"))
	p.waitFor("the first summary", `document.body.dataset.ready === "1" && document.querySelectorAll("tr.summary").length === 20 && document.querySelectorAll(".group").length === 20`, 20*time.Second)
	if icon := p.text(`document.querySelector("link[rel=icon]").href`); !strings.HasSuffix(icon, "/console/favicon.svg") {
		t.Errorf("the page's icon is %q", icon)
	}

	// An idle tab: one summary per refresh interval, nothing else.
	counted()
	time.Sleep(6 * time.Second)
	idle := counted()
	n := idle["GET /v1/summary"]
	if n < 3 || n > 7 || len(idle) != 1 {
		t.Errorf("an idle tab made %v in 6 s at a 1 s refresh, want 3 to 7 GET /v1/summary and nothing else", idle)
	}
	t.Logf("idle tab, 20 topics and 20 groups, refresh 1 s: %v in 6 s", idle)
	p.screenshot("console-actions-idle")

	// Create: the plan first, then the topic exists as planned.
	p.fill("#new-topic", "made-in-console")
	p.fill("#new-partitions", "3")
	p.fill("#new-retention", "7d 6h")
	p.eval(`document.getElementById("create-topic").requestSubmit()`, nil)
	plan := planOf(p, "the create plan")
	if !strings.Contains(plan, "create topic made-in-console") || !strings.Contains(plan, "partitions: 3") || !strings.Contains(plan, "retention: 7d 6h") {
		t.Errorf("create plan:\n%s", plan)
	}
	if consoleAPI(t, dev.url, admin, "GET", "/v1/topics/made-in-console", nil, nil) != http.StatusNotFound {
		t.Error("the topic exists before the plan was applied")
	}
	p.screenshot("console-actions-create-plan")
	applyPlan(p, "the create to be done")
	var topic wire.Topic
	api("GET", "/v1/topics/made-in-console", nil, &topic, http.StatusOK)
	if topic.Partitions != 3 || topic.RetentionMs != (7*24+6)*3600*1000 {
		t.Errorf("created %+v, want 3 partitions and 7d 6h of retention", topic)
	}

	// Produce (through the API) 30 records on partition 0, key "needle" at 5 and 25.
	var recs []map[string]any
	for i := range 30 {
		key := fmt.Sprintf("k%d", i)
		if i == 5 || i == 25 {
			key = "needle"
		}
		recs = append(recs, map[string]any{"key": b64(key), "value": b64(fmt.Sprintf(`{"n":%d}`, i)), "partition": 0, "headers": map[string]string{"trace": b64(fmt.Sprint("t-", i))}})
	}
	api("POST", "/v1/topics/made-in-console/records", map[string]any{"records": recs}, nil, http.StatusOK)
	p.waitFor("the new topic's row", `document.querySelector('tr.summary[data-topic="made-in-console"]')`, 5*time.Second)

	// Open the topic: one stats request per partition, and partition 0's bytes cell shows
	// a non-zero size; refreshes while it stays open fetch no more (checked below).
	counted()
	p.click(`tr.summary[data-topic="made-in-console"] button[aria-expanded]`)
	p.waitFor("partition 0's bytes", `/^[1-9][0-9.]* (B|KiB)$/.test(document.querySelector('tr.partition[data-topic="made-in-console"][data-partition="0"] td.size').textContent)`, 5*time.Second)
	p.waitFor("partition 2's bytes", `document.querySelector('tr.partition[data-topic="made-in-console"][data-partition="2"] td.size').textContent === "0 B"`, 5*time.Second)
	p0 := p.text(`document.querySelector('tr.partition[data-topic="made-in-console"][data-partition="0"] td.size').textContent`)
	if total := p.text(`document.querySelector('tr.summary[data-topic="made-in-console"] td.size').textContent`); total != p0 {
		t.Errorf("the topic's bytes show %q, want partition 0's %q (the others hold none)", total, p0)
	}
	if c := counted(); c["GET /v1/topics/made-in-console/partitions/0/stats"] != 1 || c["GET /v1/topics/made-in-console/partitions/2/stats"] != 1 {
		t.Errorf("opening the topic made %v, want one stats request per partition", c)
	}
	p.screenshot("console-actions-bytes")

	// Browse from offset 0, page forward and back.
	p.fill("#tail-topic", "made-in-console")
	p.fill("#tail-partition", "0")
	p.fill("#tail-offset", "0")
	p.fill("#tail-follow", "false")
	p.eval(`document.getElementById("tail-controls").requestSubmit()`, nil)
	p.waitFor("offsets 0–19", `document.querySelector('#tail tr[data-offset="0"]') && document.querySelector('#tail tr[data-offset="19"]') && !document.querySelector('#tail tr[data-offset="20"]')`, 5*time.Second)
	p.click("#tail-newer")
	p.waitFor("offsets 20–29", `document.querySelector('#tail tr[data-offset="20"]') && document.querySelector('#tail tr[data-offset="29"]') && !document.querySelector('#tail tr[data-offset="0"]')`, 5*time.Second)
	p.click("#tail-older")
	p.waitFor("offsets 0–19 again", `document.querySelector('#tail tr[data-offset="0"]') && !document.querySelector('#tail tr[data-offset="20"]')`, 5*time.Second)
	if h := p.text(`document.querySelector('#tail tr[data-offset="3"]').innerText`); !strings.Contains(h, "trace=t-3") || !strings.Contains(h, "k3") {
		t.Errorf("offset 3 shows %q, want its key and header", h)
	}
	p.fill("#tail-format", "json")
	if v := p.text(`document.querySelector('#tail tr[data-offset="2"] td:nth-child(4)').textContent`); v != "{\n  \"n\": 2\n}" {
		t.Errorf("offset 2 as JSON: %q", v)
	}
	p.screenshot("console-actions-browse-json", "#tail-controls")
	p.fill("#tail-format", "hex")
	if v := p.text(`document.querySelector('#tail tr[data-offset="2"] td:nth-child(4)').textContent`); v != "7b 22 6e 22 3a 32 7d" {
		t.Errorf("offset 2 as hex: %q", v)
	}
	p.fill("#tail-format", "text")
	p.click(`#tail tr[data-offset="4"] button[data-action="copy"]`)
	p.waitFor("the copy", `document.querySelector('#tail tr[data-offset="4"] button[data-action="copy"]').dataset.copied`, 5*time.Second)
	if c := p.text(`document.querySelector('#tail tr[data-offset="4"] button[data-action="copy"]').dataset.copied`); !strings.Contains(c, `"offset":4`) || !strings.Contains(c, `"value":"{\"n\":4}"`) {
		t.Errorf("copied %s", c)
	}

	// Search a key, server-side.
	counted()
	p.fill("#tail-key", "needle")
	p.eval(`document.getElementById("tail-controls").requestSubmit()`, nil)
	p.waitFor("the key's records", `document.getElementById("tail-title").textContent.includes("key needle") && document.querySelectorAll("#tail tr[data-offset]").length === 2`, 5*time.Second)
	if got := p.text(`[...document.querySelectorAll("#tail tr[data-offset]")].map((r) => r.dataset.offset).join(",")`); got != "5,25" {
		t.Errorf("search for needle shows offsets %s, want 5,25", got)
	}
	if c := counted(); c["GET /v1/topics/made-in-console/partitions/0/search"] != 1 || c["GET /v1/topics/made-in-console/partitions/0/records"] != 0 || c["GET /v1/topics/made-in-console/partitions/0/stats"] != 0 {
		t.Errorf("the search made %v, want one search request, no poll and no stats while the topic stays open", c)
	}
	p.screenshot("console-actions-search", "#tail-controls")

	// Follow: a record appended now shows up without a reload or a refresh's help.
	p.fill("#tail-key", "")
	p.fill("#tail-offset", "")
	p.fill("#tail-follow", "true")
	p.eval(`document.getElementById("tail-controls").requestSubmit()`, nil)
	p.waitFor("the follow to wait", `document.getElementById("tail-follow-state").dataset.next === "30"`, 5*time.Second)
	api("POST", "/v1/topics/made-in-console/records", map[string]any{"records": []map[string]any{{"value": b64("arrived-while-following"), "partition": 0}}}, nil, http.StatusOK)
	p.waitFor("the followed record", `document.querySelector('#tail tr[data-offset="30"]') && document.getElementById("tail").innerText.includes("arrived-while-following")`, 5*time.Second)
	p.screenshot("console-actions-follow", "#tail-controls")

	// Alter partitions, retention and pin: the plan, then the topic as planned.
	p.click(`button[data-action="alter"][data-topic="made-in-console"]`)
	formPlan(p, "#alter-plan", []string{"#alter-partitions", "4", "#alter-retention", "3d", "#alter-pin", "1d 12h"},
		"partitions 3 → 4", "retention 7d 6h → 3d", "retention pin none → 1d 12h")
	applyPlan(p, "the alter to be done")
	api("GET", "/v1/topics/made-in-console", nil, &topic, http.StatusOK)
	if topic.Partitions != 4 || topic.RetentionMs != 3*24*3600*1000 || topic.RetentionPinMs != 36*3600*1000 {
		t.Errorf("altered %+v, want 4 partitions, 3d retention, 1d 12h pin", topic)
	}

	// Reset with the plan per partition: shift-by -10 from the committed 30.
	g := "/v1/groups/console-group/topics/made-in-console/partitions/0"
	var lease wire.Lease
	api("POST", g+"/lease", map[string]any{"member": "m-1", "ttl_ms": 300000}, &lease, http.StatusOK)
	api("POST", g+"/commit", map[string]any{"member": "m-1", "generation": lease.Generation, "next_offset": 30}, nil, http.StatusOK)
	api("DELETE", g+"/lease", map[string]any{"member": "m-1", "generation": lease.Generation}, nil, http.StatusNoContent)
	p.waitFor("the group", `document.querySelector('button[data-action="reset"][data-group="console-group"]')`, 5*time.Second)
	p.click(`button[data-action="reset"][data-group="console-group"]`)
	formPlan(p, "#reset-plan", []string{"#reset-topic", "made-in-console", "#reset-mode", "shift-by", "#reset-value", "-10"},
		"partition 0: 30 → 20 (lag 11 records)", "partition 1: none → 0", "partition 3: none → 0")
	var before wire.Group
	api("GET", "/v1/groups/console-group", nil, &before, http.StatusOK)
	if c := before.Partitions[0].CommittedOffset; c == nil || *c != 30 {
		t.Errorf("committed %v before the plan was applied, want 30", c)
	}
	p.screenshot("console-actions-reset-plan")
	applyPlan(p, "the reset to be done")
	// Settings: on_failure park, the plan naming the change.
	p.click(`button[data-action="settings"][data-group="console-group"]`)
	formPlan(p, "#settings-plan", []string{"#settings-on-failure", "park", "#settings-max-attempts", "3"}, "on_failure: dead_letter → park", "max_attempts: 5 → 3")
	applyPlan(p, "the settings to be saved")
	var st wire.GroupSettings
	api("GET", "/v1/groups/console-group/settings", nil, &st, http.StatusOK)
	if st.OnFailure != "park" || st.MaxAttempts != 3 {
		t.Errorf("settings after the console saved them: %+v, want on_failure park and 3 attempts", st)
	}
	var after wire.Group
	api("GET", "/v1/groups/console-group", nil, &after, http.StatusOK)
	committed := map[int32]int64{}
	for _, gp := range after.Partitions {
		if gp.CommittedOffset != nil {
			committed[gp.Partition] = *gp.CommittedOffset
		}
	}
	if fmt.Sprint(committed) != "map[0:20 1:0 2:0 3:0]" {
		t.Errorf("committed after the reset: %v, want partition 0 at 20 and the others at 0", committed)
	}

	// Park: the owner of partition 0 parks "needle" (offsets 5 and 25); the page lists it
	// with its error and shows its records.
	api("POST", g+"/lease", map[string]any{"member": "m-park", "ttl_ms": 300000}, &lease, http.StatusOK)
	api("PUT", "/v1/groups/console-group/topics/made-in-console/partitions/0/parked", map[string]any{"member": "m-park", "generation": lease.Generation,
		"key": b64("needle"), "first_offset": 5, "last_offset": 25, "records": 2, "error": "declined by the handler", "attempts": 3,
		"parked_at_ms": time.Now().UnixMilli(), "park_partition": 0, "park_offset": -1}, nil, http.StatusNoContent)
	p.waitFor("the parked key", `document.querySelector('.group[data-group="console-group"] tr.parked-key[data-key="needle"]')`, 5*time.Second)
	if row := p.text(`document.querySelector('.group[data-group="console-group"] tr.parked-key[data-key="needle"]').innerText`); !strings.Contains(row, "declined by the handler") {
		t.Errorf("parked row: %q", row)
	}
	p.click(`.group[data-group="console-group"] tr.parked-key[data-key="needle"] button[data-action="parked-records"]`)
	p.waitFor("the parked key's records", `document.getElementById("tail-title").textContent.includes("key needle") && [...document.querySelectorAll("#tail tr[data-offset]")].map((r) => r.dataset.offset).join(",") === "5,25"`, 5*time.Second)
	p.screenshot("console-actions-parked", ".group[data-group=\"console-group\"]")

	// Release: the plan, the request, then the replay's outcome once the owner unparks.
	p.click(`.group[data-group="console-group"] tr.parked-key[data-key="needle"] button[data-action="release"]`)
	planOf(p, "the release plan")
	applyPlan(p, "the release to be asked")
	var parked wire.ParkedList
	api("GET", "/v1/groups/console-group/parked", nil, &parked, http.StatusOK)
	if len(parked.Parked) != 1 || parked.Parked[0].ReleaseRequestedAtMs == nil {
		t.Fatalf("after the release: %+v, want the key with its release requested", parked)
	}
	p.waitFor("the release to wait for the owner", `document.querySelector('tr.parked-key[data-key="needle"] td.outcome').textContent.includes("waiting for the owner of partition 0")`, 5*time.Second)
	api("POST", "/v1/groups/console-group/topics/made-in-console/partitions/0/parked/unpark", map[string]any{"member": "m-park", "generation": lease.Generation, "key": b64("needle")}, nil, http.StatusNoContent)
	p.waitFor("the replay's outcome", `document.querySelector('.group[data-group="console-group"] tr.released[data-key="needle"]') && !document.querySelector('tr.parked-key[data-key="needle"]')`, 5*time.Second)
	p.screenshot("console-actions-released", ".group[data-group=\"console-group\"]")
	api("DELETE", g+"/lease", map[string]any{"member": "m-park", "generation": lease.Generation}, nil, http.StatusNoContent)

	// Delete the topic: Apply stays disabled until its name is typed.
	p.click(`button[data-action="delete"][data-topic="made-in-console"]`)
	planOf(p, "the delete plan")
	p.fill("#confirm-typed", "made-in")
	var disabled bool
	p.eval(`document.getElementById("confirm-apply").disabled`, &disabled)
	if !disabled {
		t.Error("Apply is enabled before the topic's name was typed whole")
	}
	p.click("#confirm-apply")
	if consoleAPI(t, dev.url, admin, "GET", "/v1/topics/made-in-console", nil, nil) != http.StatusOK {
		t.Fatal("the topic went before its name was typed")
	}
	p.fill("#confirm-typed", "made-in-console")
	p.screenshot("console-actions-delete-typed")
	applyPlan(p, "the delete to be done")
	if s := consoleAPI(t, dev.url, admin, "GET", "/v1/topics/made-in-console", nil, nil); s != http.StatusNotFound {
		t.Errorf("after the delete the topic answers %d, want 404", s)
	}
	// And the group.
	p.waitFor("the group's delete button", `document.querySelector('button[data-action="delete-group"][data-group="console-group"]')`, 5*time.Second)
	p.click(`button[data-action="delete-group"][data-group="console-group"]`)
	p.fill("#confirm-typed", "console-group")
	applyPlan(p, "the group's delete to be done")
	if s := consoleAPI(t, dev.url, admin, "GET", "/v1/groups/console-group", nil, nil); s != http.StatusNotFound {
		t.Errorf("after the delete the group answers %d, want 404", s)
	}

	// A token that may only look is offered no action, and the server refuses one.
	p.navigate(loginURL(proxy, viewer, "/console/?refresh=1"))
	// 20 load topics and console-group's parking topic; 20 load groups.
	p.waitFor("the viewer's summary", `document.body.dataset.ready === "1" && document.getElementById("status").textContent.includes("as viewer") && document.querySelectorAll("tr.summary").length === 21 && document.querySelectorAll(".group").length === 20`, 20*time.Second)
	var offered int
	p.eval(`document.querySelectorAll('[data-action="alter"], [data-action="delete"], [data-action="reset"], [data-action="settings"], [data-action="delete-group"], [data-action="release"]').length`, &offered)
	var hidden bool
	p.eval(`document.getElementById("create-topic").hidden`, &hidden)
	if offered != 0 || !hidden {
		t.Errorf("the viewer is offered %d actions (create form hidden: %v), want none", offered, hidden)
	}
	var status int
	p.eval(`fetch("/v1/topics/load-00", {method: "DELETE", headers: {"Authorization": "Bearer "+sessionStorage.getItem("strata-token")}}).then((r) => r.status)`, &status)
	if status != http.StatusForbidden || consoleAPI(t, dev.url, admin, "GET", "/v1/topics/load-00", nil, nil) != http.StatusOK {
		t.Errorf("the viewer's delete from the page: %d, want 403 and the topic kept", status)
	}
	p.screenshot("console-actions-viewer")
	t.Logf("setup (dev, 20 topics, 20 groups) %v, in the browser %v", setup.Round(time.Millisecond), (time.Since(begin) - setup).Round(time.Millisecond))
}

// planOf waits for the console's confirm step to show a plan and returns its text.
func planOf(p *cdpPage, what string) string {
	p.t.Helper()
	p.waitFor(what, `document.getElementById("confirm").dataset.state === "plan"`, 5*time.Second)
	return p.text(`document.getElementById("confirm-plan").innerText`)
}

// formPlan fills a form's fields (selector, value pairs), presses its Plan button and
// checks that the plan shown holds every line of want.
func formPlan(p *cdpPage, button string, fields []string, want ...string) {
	p.t.Helper()
	for i := 0; i+1 < len(fields); i += 2 {
		p.fill(fields[i], fields[i+1])
	}
	p.click(button)
	plan := planOf(p, "the plan of "+button)
	for _, w := range want {
		if !strings.Contains(plan, w) {
			p.t.Errorf("the plan of %s lacks %q:\n%s", button, w, plan)
		}
	}
}

// applyPlan confirms the plan shown, waits for the action to be done and closes the
// confirm step.
func applyPlan(p *cdpPage, what string) {
	p.t.Helper()
	p.click("#confirm-apply")
	p.waitFor(what, `document.getElementById("confirm").dataset.state === "done"`, 5*time.Second)
	p.click("#confirm-cancel")
}

// b64 is s as standard base64.
func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
