package group_test

import (
	"maps"
	"testing"

	"github.com/stratalog/strata/pkg/group"
)

// TestCountParked: rows are counted per (topic, partition), whatever their keys.
func TestCountParked(t *testing.T) {
	for _, tc := range []struct {
		name string
		rows []group.Parked
		want map[group.PartitionKey]int64
	}{
		{"none", nil, map[group.PartitionKey]int64{}},
		{"one", []group.Parked{{Topic: "orders", Partition: 3, Key: []byte("a")}}, map[group.PartitionKey]int64{{Topic: "orders", Partition: 3}: 1}},
		{"per partition and topic", []group.Parked{
			{Topic: "orders", Partition: 0, Key: []byte("a")}, {Topic: "orders", Partition: 0, Key: []byte("b")},
			{Topic: "orders", Partition: 1, Key: []byte("a")}, {Topic: "refunds", Partition: 0, Key: []byte("a")},
		}, map[group.PartitionKey]int64{{Topic: "orders", Partition: 0}: 2, {Topic: "orders", Partition: 1}: 1, {Topic: "refunds", Partition: 0}: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := group.CountParked(tc.rows); !maps.Equal(got, tc.want) {
				t.Fatalf("CountParked = %v, want %v", got, tc.want)
			}
		})
	}
}
