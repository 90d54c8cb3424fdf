package wire

// OffsetsResponse answers GET /v1/topics/{topic}/offsets: per partition, the first
// offset appended at or after TimestampMs.
type OffsetsResponse struct {
	Topic       string            `json:"topic"`
	TimestampMs int64             `json:"timestamp_ms"`
	Partitions  []PartitionOffset `json:"partitions"`
}

// PartitionOffset is one partition's offset in an OffsetsResponse.
type PartitionOffset struct {
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
}
