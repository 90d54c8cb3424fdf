package kafka

import (
	"testing"

	"github.com/stratalog/strata/pkg/kgroup"
)

// TestSyncOutcome: a SyncGroup whose wait ended in another generation is told to join
// again (REBALANCE_IN_PROGRESS) even when that generation dropped the member, as Kafka
// answers the members awaiting sync; UNKNOWN_MEMBER_ID is only for a member its own
// generation no longer has.
func TestSyncOutcome(t *testing.T) {
	stable := kgroup.State{Generation: 3, Phase: kgroup.Stable, Members: []kgroup.Member{{ID: "a", Assignment: []byte("pa")}}}
	completing := stable
	completing.Phase = kgroup.Completing
	later := kgroup.State{Generation: 4, Phase: kgroup.Completing, Members: []kgroup.Member{{ID: "b"}}}
	cases := []struct {
		name   string
		st     kgroup.State
		member string
		gen    int32
		want   int16
	}{
		{"stable, its generation", stable, "a", 3, 0},
		{"another generation that dropped the member", later, "a", 3, rebalanceInProgress},
		{"another generation that kept it", kgroup.State{Generation: 4, Phase: kgroup.Stable, Members: []kgroup.Member{{ID: "a"}}}, "a", 3, rebalanceInProgress},
		{"its generation no longer has it", stable, "x", 3, unknownMemberID},
		{"assignment still missing", completing, "a", 3, rebalanceInProgress},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, code := syncOutcome(c.st, c.member, c.gen)
			if code != c.want {
				t.Fatalf("code %d, want %d", code, c.want)
			}
			if code == 0 && string(m.Assignment) != "pa" {
				t.Fatalf("assignment %q, want the member's", m.Assignment)
			}
		})
	}
}
