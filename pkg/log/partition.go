package log

import "github.com/stratalog/strata/pkg/wire"

// PartitionForKey maps a key to a partition as Kafka's default partitioner does; it is
// the contract's partitioner (wire.PartitionForKey), which the SDK shares.
func PartitionForKey(key []byte, partitions int32) int32 {
	return wire.PartitionForKey(key, partitions)
}
