package httpconsumer

import (
	"slices"
	"testing"
)

// TestPlanRebalance: what a heartbeat changed, from the partitions held before and
// after it.
func TestPlanRebalance(t *testing.T) {
	for _, tc := range []struct {
		name                      string
		before, after             []int32
		assigned, revoked, stayed []int32
	}{
		{"first heartbeat, nothing free", nil, nil, nil, nil, nil},
		{"takes all", nil, []int32{0, 1, 2}, []int32{0, 1, 2}, nil, []int32{0, 1, 2}},
		{"hands two back", []int32{0, 1, 2, 3}, []int32{0, 1}, nil, []int32{2, 3}, []int32{0, 1}},
		{"loses one, takes another", []int32{0, 1}, []int32{1, 3}, []int32{3}, []int32{0}, []int32{1, 3}},
		{"unchanged", []int32{4}, []int32{4}, nil, nil, []int32{4}},
		{"leaves all", []int32{0, 5}, nil, nil, []int32{0, 5}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := planRebalance(tc.before, tc.after, 3)
			if !slices.Equal(r.Assigned, tc.assigned) || !slices.Equal(r.Revoked, tc.revoked) ||
				!slices.Equal(r.Held, tc.stayed) || r.LiveMembers != 3 {
				t.Fatalf("plan %+v, want assigned %v revoked %v held %v", r, tc.assigned, tc.revoked, tc.stayed)
			}
		})
	}
}
