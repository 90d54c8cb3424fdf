package peers

import "testing"

// FuzzParseProc: the /proc parsers never panic and never report negative CPU or memory.
func FuzzParseProc(f *testing.F) {
	f.Add("1234 (nats server) x) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 1")
	f.Add("VmHWM:\t52000 kB\nVmRSS:\t41000 kB\n")
	f.Add(")")
	f.Fuzz(func(t *testing.T, s string) {
		if cpu, err := parseStatCPU(s); err == nil && cpu < 0 {
			t.Fatalf("negative cpu %v", cpu)
		}
		if cur, peak, err := parseStatus(s); err == nil && (cur <= 0 || peak < 0) {
			t.Fatalf("bad memory %d %d", cur, peak)
		}
	})
}
