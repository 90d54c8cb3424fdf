package peers

import (
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	tests := []struct {
		line string
		want float64
		ok   bool
	}{
		// utime 250 + stime 50 ticks = 3 s; the name holds a space and a ')'.
		{"1234 (nats server) x) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 1", 3.0, true},
		{"1 (redis-server) R 0 0 0 0 0 0 0 0 0 0 7 3 0 0", 0.1, true},
		{"garbage", 0, false},
		{"1 (x) S 1 2", 0, false},
		{"1 (x) S 1 2 3 4 5 6 7 8 9 10 a b", 0, false},
	}
	for _, tt := range tests {
		got, err := parseStatCPU(tt.line)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseStatCPU(%q) = %v, %v; want %v, ok=%t", tt.line, got, err, tt.want, tt.ok)
		}
	}
}

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	for _, tt := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 5}, {0.99, 10}, {0.1, 1}, {0, 1}, {1, 10}} {
		if got := percentile(append([]time.Duration(nil), ds...), tt.q); got != tt.want {
			t.Errorf("percentile(%v) = %v, want %v", tt.q, got, tt.want)
		}
	}
	if percentile(nil, 0.5) != 0 {
		t.Error("empty percentile is not 0")
	}
}

func TestMedians(t *testing.T) {
	runs := []Run{
		{System: "a", Producers: 1, RecordsPerSec: 10, CPUPer100k: 3, AckP50: 1, AckP99: 9},
		{System: "a", Producers: 1, RecordsPerSec: 30, CPUPer100k: 1, AckP50: 3, AckP99: 7},
		{System: "a", Producers: 1, RecordsPerSec: 20, CPUPer100k: 2, AckP50: 2, AckP99: 8},
		{System: "a", Producers: 4, Err: "boom"},
		{System: "b", Producers: 1, RecordsPerSec: 10},
		{System: "b", Producers: 1, RecordsPerSec: 20},
	}
	m := Medians(runs)
	if len(m) != 3 {
		t.Fatalf("%d medians, want 3", len(m))
	}
	if m[0].RecordsPerSec != 20 || m[0].CPUPer100k != 2 || m[0].AckP50 != 2 || m[0].AckP99 != 8 || m[0].Runs != 3 {
		t.Errorf("a/1 = %+v", m[0])
	}
	if m[1].Runs != 0 || len(m[1].Errors) != 1 {
		t.Errorf("a/4 = %+v, want the error and no runs", m[1])
	}
	if m[2].RecordsPerSec != 15 {
		t.Errorf("b/1 median of two = %v, want 15", m[2].RecordsPerSec)
	}
}

func TestSplit(t *testing.T) {
	total := 0
	for i := range 3 {
		total += split(10, 3, i)
	}
	if total != 10 || split(10, 3, 0) != 4 || split(10, 3, 2) != 3 {
		t.Errorf("split(10, 3) does not add up: total %d", total)
	}
}

func TestParseStatus(t *testing.T) {
	cur, peak, err := parseStatus("Name:\tstrata\nVmHWM:\t  52000 kB\nVmRSS:\t   41000 kB\nThreads: 9\n")
	if err != nil || cur != 41000 || peak != 52000 {
		t.Errorf("parseStatus = %d, %d, %v; want 41000, 52000", cur, peak, err)
	}
	if _, _, err := parseStatus("Name: x\n"); err == nil {
		t.Error("no VmRSS: no error")
	}
	if _, _, err := parseStatus("VmRSS: lots kB\n"); err == nil {
		t.Error("malformed VmRSS: no error")
	}
}
