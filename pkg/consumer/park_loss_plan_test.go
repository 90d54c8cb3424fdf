package consumer

import (
	"testing"

	"github.com/stratalog/strata/pkg/group"
)

// TestPlanReplayLoss: a completed replay counts as lost the parked records it did not
// handle — none when it found them all, all when the row never learnt where they lie —
// never a negative count.
func TestPlanReplayLoss(t *testing.T) {
	for _, c := range []struct {
		name     string
		records  int64
		replayed int64
		want     int64
	}{
		{"all found", 3, 3, 0},
		{"the first two taken by retention", 3, 1, 2},
		{"all taken", 3, 0, 3},
		{"more handled than counted (a row written before its count)", 2, 3, 0},
	} {
		if got := planReplayLoss(group.Parked{Records: c.records}, c.replayed); got != c.want {
			t.Errorf("%s: planReplayLoss(%d parked, %d replayed) = %d, want %d", c.name, c.records, c.replayed, got, c.want)
		}
	}
}
