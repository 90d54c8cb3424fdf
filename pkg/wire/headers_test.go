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

// TestParseMaxBody: a decimal byte count in [64 KiB, 1 GiB] is read; anything else is 0.
func TestParseMaxBody(t *testing.T) {
	for in, want := range map[string]int{
		"4194304": 4 << 20, "65536": 64 << 10, "1073741824": 1 << 30,
		"": 0, "65535": 0, "1073741825": 0, "04194304": 0, "-4194304": 0, "4194304 ": 0, "4e6": 0, "99999999999": 0,
	} {
		if got := ParseMaxBody(in); got != want {
			t.Errorf("ParseMaxBody(%q) = %d, want %d", in, got, want)
		}
	}
}

// FuzzParseMaxBody: any answer's header value parses without panicking, to 0 or a
// limit within bounds that prints back as the value.
func FuzzParseMaxBody(f *testing.F) {
	for _, s := range []string{"4194304", "0", "65536", "1073741825", "-1", " 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := ParseMaxBody(s)
		if n != 0 && (n < minMaxBody || n > 1<<30 || strconv.Itoa(n) != s) {
			t.Fatalf("ParseMaxBody(%q) = %d", s, n)
		}
	})
}
