package main

import (
	"strings"
	"testing"
	"time"
)

// FuzzParseTime: --since and --retention values never panic, a relative time is never
// after now, and an accepted duration is positive or zero.
func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"-1h", "-7d", "-1d12h", "2026-12-01", "2026-12-01T08:00:00Z", "-", "7d", "99999999999d", "100000d2562047h", "-9223372036854775807ns", "1.5d"} {
		f.Add(s)
	}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseTime(s, now)
		if err == nil && strings.HasPrefix(strings.TrimSpace(s), "-") && got.After(now) {
			t.Fatalf("parseTime(%q) = %v, after now", s, got)
		}
		if d, err := parseDays(s); err == nil && d < 0 && !strings.Contains(s, "-") {
			t.Fatalf("parseDays(%q) = %v", s, d)
		}
	})
}
