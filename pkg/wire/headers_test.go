package wire

import (
	"errors"
	"math"
	"strconv"
	"testing"
	"time"
)

// malformedDecimals are header values that both decimal headers (Strata-Attempt and
// Strata-Retry-Elapsed-Ms, read by one parser) refuse whatever their bounds: no value,
// leading zeros, a sign, spaces, a fraction or exponent, too many digits, two values.
var malformedDecimals = [][]string{
	{""}, {"00"}, {"01"}, {"-1"}, {"+1"}, {" 1"}, {"1 "}, {"1.0"}, {"1.5"}, {"1e3"},
	{"99999999999999999999"}, {"0", "1"},
}

// TestParseAttempt: one decimal number in [0, MaxAttempt] is read; anything else is
// ErrAttempt, and no header is "not present".
func TestParseAttempt(t *testing.T) {
	type attemptCase struct {
		in      []string
		want    int
		present bool
		bad     bool
	}
	cases := []attemptCase{
		{in: nil},
		{in: []string{"0"}, want: 0, present: true},
		{in: []string{"1"}, want: 1, present: true},
		{in: []string{"17"}, want: 17, present: true},
		{in: []string{strconv.Itoa(MaxAttempt)}, want: MaxAttempt, present: true},
		{in: []string{strconv.Itoa(MaxAttempt + 1)}, bad: true},
	}
	for _, in := range malformedDecimals {
		cases = append(cases, attemptCase{in: in, bad: true})
	}
	for _, tc := range cases {
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

// countHeaders are the answers' headers of one bounded decimal count, with their
// parsers' bounds.
var countHeaders = []struct {
	name   string
	parse  func(string) int
	lo, hi int
}{
	{HeaderMaxBody, ParseMaxBody, minMaxBody, 1 << 30},
	{HeaderPartitions, func(v string) int { return int(ParsePartitions(v)) }, 1, MaxPartitions},
}

// TestParseCounts: a decimal count within a header's bounds is read; anything else is
// 0, nothing learnt.
func TestParseCounts(t *testing.T) {
	for _, c := range []struct {
		header string
		in     map[string]int
	}{
		{HeaderMaxBody, map[string]int{
			"4194304": 4 << 20, "65536": 64 << 10, "1073741824": 1 << 30,
			"": 0, "65535": 0, "1073741825": 0, "04194304": 0, "-4194304": 0, "4194304 ": 0, "4e6": 0, "99999999999": 0,
		}},
		{HeaderPartitions, map[string]int{
			"1": 1, "8": 8, "1024": MaxPartitions, "1025": 0, "0": 0, "08": 0, "-1": 0, "+2": 0,
			" 2": 0, "2 ": 0, "": 0, "99999": 0, "1e3": 0, "٣": 0,
		}},
	} {
		for _, h := range countHeaders {
			if h.name != c.header {
				continue
			}
			for in, want := range c.in {
				if got := h.parse(in); got != want {
					t.Errorf("%s %q: %d, want %d", h.name, in, got, want)
				}
			}
		}
	}
}

// FuzzParseCounts: any answer's header value parses without panicking, by each count
// header's parser, to 0 or a count within its bounds that prints back as the value.
func FuzzParseCounts(f *testing.F) {
	for _, s := range []string{"4194304", "0", "65536", "1073741825", "-1", " 1", "8", "1024", "1025"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, h := range countHeaders {
			n := h.parse(s)
			if n != 0 && (n < h.lo || n > h.hi || strconv.Itoa(n) != s) {
				t.Fatalf("%s %q: %d", h.name, s, n)
			}
		}
	})
}

// TestParseRetryElapsed: one decimal number of milliseconds in [0, MaxRetryElapsed] is
// read; anything else is ErrRetryElapsed, and no header is "not present".
func TestParseRetryElapsed(t *testing.T) {
	maxMs := strconv.FormatInt(MaxRetryElapsed.Milliseconds(), 10)
	type elapsedCase struct {
		in      []string
		want    time.Duration
		present bool
		bad     bool
	}
	cases := []elapsedCase{
		{in: nil},
		{in: []string{"0"}, want: 0, present: true},
		{in: []string{"1"}, want: time.Millisecond, present: true},
		{in: []string{"1500"}, want: 1500 * time.Millisecond, present: true},
		{in: []string{maxMs}, want: MaxRetryElapsed, present: true},
		{in: []string{strconv.FormatInt(MaxRetryElapsed.Milliseconds()+1, 10)}, bad: true},
		{in: []string{"9999999"}, bad: true},
	}
	for _, in := range malformedDecimals {
		cases = append(cases, elapsedCase{in: in, bad: true})
	}
	for _, tc := range cases {
		got, present, err := ParseRetryElapsed(tc.in)
		if tc.bad {
			if !errors.Is(err, ErrRetryElapsed) || present {
				t.Errorf("ParseRetryElapsed(%q) = %v, %v, %v; want ErrRetryElapsed", tc.in, got, present, err)
			}
			continue
		}
		if err != nil || got != tc.want || present != tc.present {
			t.Errorf("ParseRetryElapsed(%q) = %v, %v, %v; want %v, %v", tc.in, got, present, err, tc.want, tc.present)
		}
	}
}

// FuzzParseRetryElapsed: any header value parses without panicking, to a whole number of
// milliseconds within bounds that prints back as the value, or to ErrRetryElapsed.
func FuzzParseRetryElapsed(f *testing.F) {
	for _, s := range []string{"0", "1", "300000", "300001", "00", "-0", "", " 3", "٣", "1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, present, err := ParseRetryElapsed([]string{s})
		if err != nil {
			if !errors.Is(err, ErrRetryElapsed) || present {
				t.Fatalf("ParseRetryElapsed(%q): %v, present %v", s, err, present)
			}
			return
		}
		if !present || d < 0 || d > MaxRetryElapsed || d%time.Millisecond != 0 || FormatRetryElapsed(d) != s {
			t.Fatalf("ParseRetryElapsed(%q) = %v, %v", s, d, present)
		}
	})
}

// TestFormatRetryElapsed: a duration goes out as whole milliseconds rounded up, clamped
// to [0, MaxRetryElapsed], and parses back.
func TestFormatRetryElapsed(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0", time.Nanosecond: "1", time.Millisecond: "1", 1500*time.Microsecond + 1: "2",
		2 * time.Second: "2000", -time.Second: "0", MaxRetryElapsed: "300000", time.Hour: "300000",
	} {
		got := FormatRetryElapsed(d)
		if got != want {
			t.Errorf("FormatRetryElapsed(%v) = %q, want %q", d, got, want)
		}
		if _, _, err := ParseRetryElapsed([]string{got}); err != nil {
			t.Errorf("FormatRetryElapsed(%v) = %q does not parse: %v", d, got, err)
		}
	}
}

// TestParseIdempotency: exactly "producer" is the producer mode, no header the claim
// mode; any other value (another case, spaces, empty) or more than one is
// ErrIdempotency.
func TestParseIdempotency(t *testing.T) {
	for _, tc := range []struct {
		in       []string
		producer bool
		bad      bool
	}{
		{in: nil},
		{in: []string{"producer"}, producer: true},
		{in: []string{"Producer"}, bad: true},
		{in: []string{"producer "}, bad: true},
		{in: []string{""}, bad: true},
		{in: []string{"claim"}, bad: true},
		{in: []string{"producer", "producer"}, bad: true},
	} {
		got, err := ParseIdempotency(tc.in)
		if tc.bad {
			if !errors.Is(err, ErrIdempotency) || got {
				t.Errorf("ParseIdempotency(%q) = %v, %v; want ErrIdempotency", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.producer {
			t.Errorf("ParseIdempotency(%q) = %v, %v; want %v", tc.in, got, err, tc.producer)
		}
	}
}

// FuzzParseIdempotency: any header value parses without panicking, to the producer mode
// exactly for IdempotencyProducer, else to ErrIdempotency.
func FuzzParseIdempotency(f *testing.F) {
	for _, s := range []string{"producer", "PRODUCER", "", "producer,producer", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		producer, err := ParseIdempotency([]string{s})
		if (s == IdempotencyProducer) != (producer && err == nil) || (err != nil && !errors.Is(err, ErrIdempotency)) {
			t.Fatalf("ParseIdempotency(%q) = %v, %v", s, producer, err)
		}
	})
}

// TestProducerRequestKey: the key of a ULID's request fits the Idempotency-Key limit at
// the largest sequence number.
func TestProducerRequestKey(t *testing.T) {
	id := "01JDQ3Z7W2V8X9Y0A1B2C3D4E5"
	if got := ProducerRequestKey(id, 7); got != id+".7" {
		t.Errorf("ProducerRequestKey = %q", got)
	}
	if n := len(ProducerRequestKey(id, math.MaxUint64)); n > MaxIdempotencyKey {
		t.Errorf("the longest producer key is %d characters, MaxIdempotencyKey %d", n, MaxIdempotencyKey)
	}
}

// TestParseBatchMark: "<number>@<incarnation>" and "0" are marks, and format back to
// themselves; anything else is ErrBatchMark.
func TestParseBatchMark(t *testing.T) {
	good := map[string]BatchMark{
		"0":                  {},
		"0@tc01abc":          {Batch: 0, Incarnation: "tc01abc"},
		"17@tc01abc":         {Batch: 17, Incarnation: "tc01abc"},
		"9007199254740991@z": {Batch: MaxBatchNumber, Incarnation: "z"},
	}
	for v, want := range good {
		got, err := ParseBatchMark(v)
		if err != nil || got != want || got.String() != v {
			t.Errorf("ParseBatchMark(%q) = %+v, %v; want %+v formatting back", v, got, err, want)
		}
	}
	bad := []string{"", "17", "@tc", "17@", "17@TC", "17@tc#1", "17@tc/1", "-1@tc", "01@tc", "1 @tc", "9007199254740992@tc",
		"17@" + string(make([]byte, 65)), "17@tc@tc", "1.5@tc"}
	for _, in := range malformedDecimals {
		if len(in) == 1 && in[0] != "" {
			bad = append(bad, in[0]+"@tc")
		}
	}
	for _, v := range bad {
		if _, err := ParseBatchMark(v); !errors.Is(err, ErrBatchMark) {
			t.Errorf("ParseBatchMark(%q): %v, want ErrBatchMark", v, err)
		}
	}
	if _, present, err := ParseBatchFloor(nil); present || err != nil {
		t.Errorf("no header: present %v, %v", present, err)
	}
	if _, _, err := ParseBatchFloor([]string{"1@a", "2@a"}); !errors.Is(err, ErrBatchMark) {
		t.Errorf("two headers: %v, want ErrBatchMark", err)
	}
	if m, present, err := ParseBatchFloor([]string{"3@a"}); !present || err != nil || m != (BatchMark{3, "a"}) {
		t.Errorf("one header: %+v %v %v", m, present, err)
	}
}

// FuzzParseBatchMark: a value is either refused with ErrBatchMark or read as a mark
// within the bounds that formats back to the very same value.
func FuzzParseBatchMark(f *testing.F) {
	for _, s := range []string{"0", "17@tc01abc", "01@tc", "17", "@", "9007199254740992@a", "1@A"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		m, err := ParseBatchMark(v)
		if err != nil {
			if !errors.Is(err, ErrBatchMark) {
				t.Fatalf("%q: %v, want ErrBatchMark", v, err)
			}
			return
		}
		if m.Batch < 0 || m.Batch > MaxBatchNumber || m.String() != v || (m.Incarnation == "" && m.Batch != 0) {
			t.Fatalf("%q read as %+v", v, m)
		}
	})
}
