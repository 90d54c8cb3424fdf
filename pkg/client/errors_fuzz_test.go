package client

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"
)

// FuzzDecodeAPIError: any status, Retry-After and body decode without panic into an
// *APIError that keeps the status, has a message, never a negative Retry-After, and
// matches the sentinel of a contract code it carries.
func FuzzDecodeAPIError(f *testing.F) {
	f.Add(416, "", `{"error":{"code":"offset_out_of_range","message":"m","log_start_offset":3,"high_watermark":9}}`)
	f.Add(409, "", `{"error":{"code":"lease_held","message":"m","owner":"m-1","lease_expires_at_ms":1.5e12}}`)
	f.Add(429, "3", `{"error":{"code":"rate_limited","message":"slow down"}}`)
	f.Add(429, "Wed, 21 Oct 2015 07:28:00 GMT", `{"error":{"code":"rate_limited"}}`)
	f.Add(503, "-1", `{"error":{"code":"unavailable"},"results":[{"partition":0,"offset":1},{"partition":1,"error":{"code":"unavailable"}}]}`)
	f.Add(503, "", `{"error":{"code":"unavailable"},"blocks":[{"partition":0,"count":1,"error":{"code":"unavailable"}}]}`)
	f.Add(502, "", `<html>bad gateway</html>`)
	f.Add(400, "", `{"error":null}`)
	f.Add(400, "", `{"error":{"code":7,"message":["x"]}}`)
	f.Add(500, "99999999999999999999", ``)
	f.Fuzz(func(t *testing.T, status int, retryAfter, body string) {
		h := http.Header{}
		h.Set("Retry-After", retryAfter)
		e, extra := decodeAPIError(status, h, []byte(body))
		if e.Status != status || e.Message == "" && http.StatusText(status) != "" {
			t.Fatalf("decoded %+v from status %d", e, status)
		}
		if e.RetryAfter < 0 || e.RetryAfter > maxRetryAfter {
			t.Fatalf("RetryAfter %v", e.RetryAfter)
		}
		_ = e.Error()
		_, _ = e.LogStartOffset()
		_, _ = e.HighWatermark()
		_, _ = e.Owner()
		_, _ = e.LeaseExpiresAt()
		_ = fromWireResults(extra.Results)
		_, _ = blockResults(extra.Blocks, 0, 1)
		// The error object is read as a map, as the client does: its member "code" is
		// matched exactly, never "Code" (which a struct tag would match too).
		var w struct {
			Error map[string]any `json:"error"`
		}
		if json.Unmarshal([]byte(body), &w) == nil {
			code, _ := w.Error["code"].(string)
			if s := sentinelForCode(code); s != nil && !errors.Is(e, s) {
				t.Fatalf("code %q does not match its sentinel", code)
			}
		}
	})
}

// TestParseRetryAfter covers both forms of the header and bad values.
func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0}, {"0", 0}, {"-3", 0}, {"2", 2 * time.Second}, {" 5 ", 5 * time.Second},
		{"abc", 0}, {"1.5", 0}, {"999999999999", 24 * time.Hour},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
	} {
		if got := parseRetryAfter(tc.in, now); got != tc.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
