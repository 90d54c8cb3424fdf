package wire

import (
	"errors"
	"strconv"
	"testing"
)

// TestParseAttempt: one decimal number in [0, MaxAttempt] is read; anything else is
// ErrAttempt, and no header is "not present".
func TestParseAttempt(t *testing.T) {
	for _, tc := range []struct {
		in      []string
		want    int
		present bool
		bad     bool
	}{
		{in: nil},
		{in: []string{"0"}, want: 0, present: true},
		{in: []string{"1"}, want: 1, present: true},
		{in: []string{"17"}, want: 17, present: true},
		{in: []string{strconv.Itoa(MaxAttempt)}, want: MaxAttempt, present: true},
		{in: []string{strconv.Itoa(MaxAttempt + 1)}, bad: true},
		{in: []string{""}, bad: true},
		{in: []string{"00"}, bad: true},
		{in: []string{"01"}, bad: true},
		{in: []string{"-1"}, bad: true},
		{in: []string{"+1"}, bad: true},
		{in: []string{" 1"}, bad: true},
		{in: []string{"1.0"}, bad: true},
		{in: []string{"99999999999999999999"}, bad: true},
		{in: []string{"0", "1"}, bad: true},
	} {
		got, present, err := ParseAttempt(tc.in)
		if tc.bad {
			if !errors.Is(err, ErrAttempt) {
				t.Errorf("ParseAttempt(%q) = %d, %v, %v; want ErrAttempt", tc.in, got, present, err)
			}
			continue
		}
		if err != nil || got != tc.want || present != tc.present {
			t.Errorf("ParseAttempt(%q) = %d, %v, %v; want %d, %v", tc.in, got, present, err, tc.want, tc.present)
		}
	}
}

// FuzzParseAttempt: any header value parses without panicking, to a number within
// bounds that prints back as the value, or to ErrAttempt.
func FuzzParseAttempt(f *testing.F) {
	for _, s := range []string{"0", "1", "65536", "65537", "00", "-0", "", " 3", "٣"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, present, err := ParseAttempt([]string{s})
		if err != nil {
			if !errors.Is(err, ErrAttempt) || present {
				t.Fatalf("ParseAttempt(%q): %v, present %v", s, err, present)
			}
			return
		}
		if !present || n < 0 || n > MaxAttempt || strconv.Itoa(n) != s {
			t.Fatalf("ParseAttempt(%q) = %d, %v", s, n, present)
		}
	})
}
