package httpapi_test

import (
	"encoding/json"
	"net/http"
	"testing"
)

// FuzzHeartbeatRequest: any body gets a documented answer and never a panic; a refused
// one changes no lease, and an accepted one never gives the member a partition another
// member holds live.
func FuzzHeartbeatRequest(f *testing.F) {
	e := newEnv(f)
	e.createTopic("t", 4)
	e.call("POST", gp+"0/lease", lease("other", "ttl_ms", 300000)).want(f, 200)
	for _, seed := range []string{
		`{"member": "m"}`,
		`{"member": "m", "ttl_ms": 3000, "held": [{"partition": 1, "generation": 1}]}`,
		`{"member": "m", "held": [{"partition": 0, "generation": 1}]}`,
		`{"member": "m", "held": [{"partition": 9, "generation": 1}]}`,
		`{"member": "m", "held": [{"partition": 1, "generation": 1}, {"partition": 1, "generation": 1}]}`,
		`{"member": "m", "held": [{"partition": 1}]}`,
		`{"member": "m", "ttl_ms": 50}`,
		`{"member": "", "ttl_ms": 3000}`,
		`{"member": "m", "held": null}`,
		`{"Member": "m"}`,
		`{"member": "m"}{}`,
		`null`,
		``,
	} {
		f.Add([]byte(seed))
	}
	for _, seed := range withIncarnations(e, "t", `{"partition": 1, "generation": 1}`) {
		f.Add([]byte(`{"member": "m", "held": [` + seed + `]}`))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		before := groupState(t, e, "g")
		req, w := serveFuzz(e, "POST", "/v1/groups/g/topics/t/heartbeat", body)
		checkFuzzAnswer(t, req, w)
		if w.Code >= 400 {
			if after := groupState(t, e, "g"); after != before {
				t.Fatalf("rejected heartbeat (%d) changed the group:\n%s\n->\n%s", w.Code, before, after)
			}
			return
		}
		if w.Code != http.StatusOK {
			t.Fatalf("heartbeat answered %d %q", w.Code, w.Body.Bytes())
		}
		var res struct {
			Acquired []struct {
				Partition int32 `json:"partition"`
			} `json:"acquired"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &res); err != nil {
			t.Fatal(err)
		}
		for _, a := range res.Acquired {
			if a.Partition == 0 {
				t.Fatalf("heartbeat %q took partition 0, held live by another member", body)
			}
		}
	})
}

// FuzzLeaveRequest: any body gets a documented answer and never a panic.
func FuzzLeaveRequest(f *testing.F) {
	e := newEnv(f)
	e.createTopic("t", 1)
	for _, seed := range []string{`{"member": "m"}`, `{"member": ""}`, `{}`, `{"member": 1}`, `null`, ``, `{"member": "m", "x": 1}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, w := serveFuzz(e, "DELETE", "/v1/groups/g/members", body)
		checkFuzzAnswer(t, req, w)
		if w.Code < 400 && (w.Code != http.StatusNoContent || w.Body.Len() != 0) {
			t.Fatalf("leave answered %d %q", w.Code, w.Body.Bytes())
		}
	})
}

// FuzzSettingsRequest: any body gets a documented answer and never a panic; a refused
// one leaves the settings as they were.
func FuzzSettingsRequest(f *testing.F) {
	e := newEnv(f)
	e.createTopic("dlq", 1)
	e.call("PUT", "/v1/groups/g/settings", map[string]any{"reset_policy": "earliest", "max_attempts": 5}).want(f, 200)
	for _, seed := range []string{
		`{"reset_policy": "latest", "max_attempts": 3}`,
		`{"reset_policy": "fail", "max_attempts": 1, "dead_letter_topic": "dlq"}`,
		`{"reset_policy": "fail", "max_attempts": 1, "dead_letter_topic": null}`,
		`{"reset_policy": "fail", "max_attempts": 1, "dead_letter_topic": "nope"}`,
		`{"reset_policy": "x", "max_attempts": 1}`,
		`{"reset_policy": "latest", "max_attempts": 1, "on_failure": "park"}`,
		`{"reset_policy": "latest", "max_attempts": 1, "on_failure": "dead_letter"}`,
		`{"reset_policy": "latest", "max_attempts": 1, "on_failure": "retry"}`,
		`{"reset_policy": "latest", "max_attempts": 1, "on_failure": null}`,
		`{"reset_policy": "latest", "max_attempts": 1e3}`,
		`{"Reset_Policy": "latest", "max_attempts": 1}`,
		`null`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		get := func() string {
			_, w := serveFuzz(e, "GET", "/v1/groups/g/settings", nil)
			return w.Body.String()
		}
		before := get()
		req, w := serveFuzz(e, "PUT", "/v1/groups/g/settings", body)
		checkFuzzAnswer(t, req, w)
		if w.Code >= 400 {
			if after := get(); after != before {
				t.Fatalf("rejected settings (%d) changed them: %s -> %s", w.Code, before, after)
			}
		}
	})
}
