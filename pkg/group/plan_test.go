package group

import (
	"slices"
	"testing"
)

// TestPlanBalance is the balancer's decision as tables of scenarios, with no store:
// the fair share, what to try to take (scan order from the member's start, skipping
// its own and other members' live partitions) and which extras to hand back.
func TestPlanBalance(t *testing.T) {
	cases := []struct {
		name string
		v    balanceView
		want balancePlan
	}{
		{"alone, nothing held: take all from start",
			balanceView{Partitions: 4, Start: 2, LiveMembers: 1},
			balancePlan{LiveMembers: 1, Share: 4, Take: []int32{2, 3, 0, 1}}},
		{"no live member seen yet counts itself",
			balanceView{Partitions: 3, Start: 0, LiveMembers: 0},
			balancePlan{LiveMembers: 1, Share: 3, Take: []int32{0, 1, 2}}},
		{"two members, other holds two: take the free ones",
			balanceView{Partitions: 4, Start: 0, LiveMembers: 2, Busy: []int32{0, 1}},
			balancePlan{LiveMembers: 2, Share: 2, Take: []int32{2, 3}}},
		{"under share, own partitions skipped",
			balanceView{Partitions: 4, Start: 1, Held: []int32{1}, LiveMembers: 2, Busy: []int32{3}},
			balancePlan{LiveMembers: 2, Share: 2, Take: []int32{2, 0}}},
		{"at share: nothing to do",
			balanceView{Partitions: 4, Start: 0, Held: []int32{0, 1}, LiveMembers: 2},
			balancePlan{LiveMembers: 2, Share: 2}},
		{"over share after a member joined: hand back the highest",
			balanceView{Partitions: 4, Start: 0, Held: []int32{0, 1, 2, 3}, LiveMembers: 3},
			balancePlan{LiveMembers: 3, Share: 2, Release: []int32{2, 3}}},
		{"everything busy: nothing to take",
			balanceView{Partitions: 2, Start: 0, LiveMembers: 2, Busy: []int32{0, 1}},
			balancePlan{LiveMembers: 2, Share: 1}},
		{"more members than partitions: share 1",
			balanceView{Partitions: 2, Start: 1, LiveMembers: 5},
			balancePlan{LiveMembers: 5, Share: 1, Take: []int32{1, 0}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := planBalance(c.v)
			if got.LiveMembers != c.want.LiveMembers || got.Share != c.want.Share ||
				!slices.Equal(got.Take, c.want.Take) || !slices.Equal(got.Release, c.want.Release) {
				t.Fatalf("planBalance(%+v) = %+v, want %+v", c.v, got, c.want)
			}
		})
	}
}
