package cost

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestCompactionCostAtTheIssueWorkload: compaction of 1,000,000 live keys updated 10%
// an hour is priced line by line; the figures follow from the workload (the key index
// puts are one WRU per update, the swaps 2 WRU per transaction item), the trigger asks
// for a pass when the superseded records equal the live ones, and the ceilings are the
// passes' swap bound and the read within the timeout. It prints the table
// docs/BENCHMARKS.md quotes.
func TestCompactionCostAtTheIssueWorkload(t *testing.T) {
	w := IssueCompactionWorkload()
	e := CompactionCost(w, USEast1())
	t.Logf("compaction at %v:\n%s", w, e.Report())
	line := func(prefix string) CompactionLine {
		t.Helper()
		for _, l := range e.Lines {
			if strings.HasPrefix(l.Name, prefix) {
				return l
			}
		}
		t.Fatalf("no line %q", prefix)
		return CompactionLine{}
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > want*1e-9 {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	near("key index WRU", line("key index puts").Quantity, 1e5*730)
	near("key index USD", line("key index puts").USD, 1e5*730*0.625/1e6)
	near("counter WRU (1,000 requests an hour, 8 partitions each)", line("dirty counter").Quantity, 1000*8*730)
	near("swap WRU", line("swaps").Quantity, 1e5*730*1.9*2)
	near("triggered passes", e.TriggeredPassesPerHour, 0.1) // 12,500 updates an hour on 125,000 live keys a partition
	near("removable ceiling", e.RemovableCeilingPerHour, 12.1*16*1000/19)
	near("read ceiling", e.ReadCeilingRecords, 3e6)
	near("fewest partitions (100,000 updates an hour over ~10,105 a partition)", e.MinPartitions, 10)
	if e.USD() <= 0 || fmt.Sprintf("%.2f", e.USD()) == "0.00" {
		t.Errorf("total %v", e.USD())
	}
	// An hourly schedule (the trigger covering the dirty ratio) cuts the passes' reads
	// twelvefold and leaves the rewrites as they are.
	hourly := w
	hourly.ScheduledPassesPerHour = 1
	h := CompactionCost(hourly, USEast1())
	get := func(e CompactionEstimate, prefix string) float64 {
		for _, l := range e.Lines {
			if strings.HasPrefix(l.Name, prefix) {
				return l.USD
			}
		}
		return math.NaN()
	}
	if r := get(e, "pass index reads") / get(h, "pass index reads"); r < 10 || r > 12.1 {
		t.Errorf("5-minute over hourly index reads = %.2f, want ~11 (12.1 passes an hour over 1.1)", r)
	}
	if get(e, "swaps") != get(h, "swaps") {
		t.Error("the rewrites' cost depends on the schedule: it should follow the updates only")
	}
}
