package main

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// timeHelp describes the TIME values --since accepts.
const timeHelp = "a `TIME`: relative (-1h, -30m, -7d), a UTC date (2026-12-01) or RFC 3339 (2026-12-01T08:00:00Z)"

// parseTime reads a --since value: a negative duration before now (days allowed: -7d,
// -1d12h), a calendar date (midnight UTC), or an RFC 3339 time.
func parseTime(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, "-"); ok {
		d, err := parseDays(rest)
		if err != nil || d <= 0 {
			return time.Time{}, fmt.Errorf("%q is not a time: a relative time is a duration before now, such as -1h, -30m or -7d", s)
		}
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is not a time: give -1h, -7d, 2026-12-01 or 2026-12-01T08:00:00Z", s)
}

var daysPrefix = regexp.MustCompile(`^([0-9]+)d(.*)$`)

// maxDays keeps a duration in days within time.Duration (about 292 years).
const maxDays = 100_000

// parseDays is time.ParseDuration that also takes days (7d, 1d12h): retentions and
// look-backs are said in days.
func parseDays(s string) (time.Duration, error) {
	var days time.Duration
	if m := daysPrefix.FindStringSubmatch(s); m != nil {
		n, err := strconv.ParseInt(m[1], 10, 32)
		if err != nil || n > maxDays {
			return 0, fmt.Errorf("bad number of days in %q (at most %d)", s, maxDays)
		}
		days, s = time.Duration(n)*24*time.Hour, m[2]
		if s == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (such as 7d, 36h or 90m)", s)
	}
	if d > math.MaxInt64-days || d < 0 && days > 0 {
		return 0, fmt.Errorf("%q is out of range", s)
	}
	return days + d, nil
}

// daysValue is a duration flag that also takes days (--retention 7d).
type daysValue struct{ d *time.Duration }

func (v daysValue) String() string {
	if v.d == nil || *v.d == 0 {
		return ""
	}
	return v.d.String()
}

func (v daysValue) Set(s string) error {
	d, err := parseDays(s)
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}

func (daysValue) Type() string { return "duration" }
