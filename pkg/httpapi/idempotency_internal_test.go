package httpapi

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// TestSupersededIs409 (issue 20): a producer request's attempt that a later one fenced,
// as the log or the store beneath it says (wrapped, as the log returns it), is answered
// 409 superseded, the code the SDK retries.
func TestSupersededIs409(t *testing.T) {
	for _, err := range []error{
		log.ErrSuperseded,
		fmt.Errorf("append to t: %w", log.ErrSuperseded),
		fmt.Errorf("append to t: %w", store.ErrSuperseded),
	} {
		e := mapError(err)
		if e.status != http.StatusConflict || e.code != wire.CodeSuperseded {
			t.Errorf("mapError(%v) = %d %s, want 409 %s", err, e.status, e.code, wire.CodeSuperseded)
		}
	}
}

// TestAppendOptions (issue 20): an append's idempotency headers become the log's
// options: a producer request's attempt, elapsed time and first-attempt hint; a claimed
// key's hint alone; and each header out of bounds or missing for a producer request is
// a 400 naming it.
func TestAppendOptions(t *testing.T) {
	const (
		key     = "Idempotency-Key"
		attempt = wire.HeaderAttempt
		idem    = wire.HeaderIdempotency
		elapsed = wire.HeaderRetryElapsed
		floor   = wire.HeaderBatchFloor
	)
	for _, tc := range []struct {
		name  string
		hdr   map[string][]string
		want  log.AppendOptions
		floor *wire.BatchMark // want's BatchFloor
		bad   string          // the header a 400 names
	}{
		{name: "none"},
		{name: "claimed key", hdr: map[string][]string{key: {"k"}}, want: log.AppendOptions{IdempotencyKey: "k"}},
		{name: "claimed first attempt", hdr: map[string][]string{key: {"k"}, attempt: {"0"}},
			want: log.AppendOptions{IdempotencyKey: "k", FirstAttempt: true}},
		{name: "claimed key ignores a well-formed elapsed", hdr: map[string][]string{key: {"k"}, attempt: {"2"}, elapsed: {"5"}},
			want: log.AppendOptions{IdempotencyKey: "k"}},
		{name: "producer first attempt", hdr: map[string][]string{key: {"p.0"}, attempt: {"0"}, idem: {"producer"}},
			want: log.AppendOptions{IdempotencyKey: "p.0", FirstAttempt: true, Producer: true}},
		{name: "producer first attempt with elapsed", hdr: map[string][]string{key: {"p.0"}, attempt: {"0"}, idem: {"producer"}, elapsed: {"0"}},
			want: log.AppendOptions{IdempotencyKey: "p.0", FirstAttempt: true, Producer: true}},
		{name: "producer retry", hdr: map[string][]string{key: {"p.0"}, attempt: {"2"}, idem: {"producer"}, elapsed: {"1500"}, floor: {"7@tc01x"}},
			want:  log.AppendOptions{IdempotencyKey: "p.0", Producer: true, Attempt: 2, RetryElapsed: 1500 * time.Millisecond},
			floor: &wire.BatchMark{Batch: 7, Incarnation: "tc01x"}},
		{name: "producer retry at the bound", hdr: map[string][]string{key: {"p.0"}, attempt: {"65536"}, idem: {"producer"}, elapsed: {"300000"}, floor: {"0"}},
			want:  log.AppendOptions{IdempotencyKey: "p.0", Producer: true, Attempt: 65536, RetryElapsed: wire.MaxRetryElapsed},
			floor: &wire.BatchMark{}},
		{name: "producer first attempt with its floor", hdr: map[string][]string{key: {"p.0"}, attempt: {"0"}, idem: {"producer"}, floor: {"3@a"}},
			want:  log.AppendOptions{IdempotencyKey: "p.0", FirstAttempt: true, Producer: true},
			floor: &wire.BatchMark{Batch: 3, Incarnation: "a"}},
		{name: "producer retry without floor", hdr: map[string][]string{key: {"p.0"}, attempt: {"1"}, idem: {"producer"}, elapsed: {"1"}}, bad: floor},
		{name: "bad floor", hdr: map[string][]string{key: {"p.0"}, attempt: {"1"}, idem: {"producer"}, elapsed: {"1"}, floor: {"7"}}, bad: floor},
		{name: "two floors", hdr: map[string][]string{key: {"p.0"}, attempt: {"1"}, idem: {"producer"}, elapsed: {"1"}, floor: {"0", "0"}}, bad: floor},
		{name: "producer without key", hdr: map[string][]string{attempt: {"0"}, idem: {"producer"}}, bad: key},
		{name: "producer without attempt", hdr: map[string][]string{key: {"p.0"}, idem: {"producer"}}, bad: attempt},
		{name: "producer retry without elapsed", hdr: map[string][]string{key: {"p.0"}, attempt: {"1"}, idem: {"producer"}}, bad: elapsed},
		{name: "other mode", hdr: map[string][]string{key: {"p.0"}, attempt: {"0"}, idem: {"fenced"}}, bad: idem},
		{name: "bad elapsed", hdr: map[string][]string{key: {"p.0"}, attempt: {"1"}, idem: {"producer"}, elapsed: {"+1"}}, bad: elapsed},
		{name: "bad attempt", hdr: map[string][]string{key: {"p.0"}, attempt: {"65537"}, idem: {"producer"}, elapsed: {"1"}}, bad: attempt},
	} {
		h := http.Header{}
		for k, vs := range tc.hdr {
			for _, v := range vs {
				h.Add(k, v)
			}
		}
		got, e := appendOptions(h)
		gotFloor := got.BatchFloor
		got.BatchFloor = nil
		switch {
		case tc.bad != "":
			if e == nil || e.status != http.StatusBadRequest || !strings.Contains(e.message, tc.bad) {
				t.Errorf("%s: %+v, %v; want a 400 naming %s", tc.name, got, e, tc.bad)
			}
		case (gotFloor == nil) != (tc.floor == nil) || gotFloor != nil && *gotFloor != *tc.floor:
			t.Errorf("%s: floor %v, want %v", tc.name, gotFloor, tc.floor)
		case e != nil || !reflect.DeepEqual(got, tc.want): // a Gate (a func) never set here: nil on both sides
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, e, tc.want)
		}
	}
}

// TestRetryLimitIs429: a producer retry refused at its principal's or its request's
// fence limit, as the log says (wrapped), is 429 rate_limited with a Retry-After and a
// message saying it appended nothing.
func TestRetryLimitIs429(t *testing.T) {
	err := fmt.Errorf("append to t: %w", fmt.Errorf("%w: attempt 3 of \"p.1\" could not fence its earlier attempts, so it appended nothing: %w",
		log.ErrRetryLimit, store.ErrFenceLimit))
	e := mapError(err)
	if e.status != http.StatusTooManyRequests || e.code != wire.CodeRateLimited || e.header["Retry-After"] == "" ||
		!strings.Contains(e.message, "appended nothing") {
		t.Errorf("mapError(%v) = %d %s %q (headers %v), want 429 %s with Retry-After saying it appended nothing",
			err, e.status, e.code, e.message, e.header, wire.CodeRateLimited)
	}
}

// TestKeyPrincipal: an append's key is scoped by the caller a front authenticated, else
// the token's principal, else one fixed name with auth off; never "", the in-process
// principal, and a token principal's name never passes for a front's caller.
func TestKeyPrincipal(t *testing.T) {
	r := func(caller string) *http.Request {
		req, _ := http.NewRequest(http.MethodPost, "/v1/topics/t/records", nil)
		if caller != "" {
			req = req.WithContext(WithCaller(req.Context(), caller))
		}
		return req
	}
	alice := &Principal{Name: "alice"}
	for _, tc := range []struct {
		name string
		req  *http.Request
		p    *Principal
		want string
	}{
		{"auth off", r(""), anonymous, "anonymous"},
		{"a token's principal", r(""), alice, "token:alice"},
		{"a front's caller", r("arn:aws:iam::1:user/u"), alice, "caller:arn:aws:iam::1:user/u"},
		{"a front's caller, auth off", r("arn:aws:iam::1:user/u"), anonymous, "caller:arn:aws:iam::1:user/u"},
	} {
		if got := keyPrincipal(tc.req, tc.p); got != tc.want {
			t.Errorf("%s: keyPrincipal = %q, want %q", tc.name, got, tc.want)
		}
	}
}
