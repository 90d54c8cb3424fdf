package wire

// The JSON shapes of docs/API.md as the SDK sends and reads them. Bytes are base64
// (standard, padded) strings; optional request fields are omitted when unset.

// TopicCreate is a JSON shape of the contract. Partitions 0 is left out: the node's
// default partition count applies.
type TopicCreate struct {
	Name        string `json:"name"`
	Partitions  int32  `json:"partitions,omitempty"`
	RetentionMs *int64 `json:"retention_ms,omitempty"`
}

// Topic is a JSON shape of the contract.
type Topic struct {
	Name          string          `json:"name"`
	Partitions    int32           `json:"partitions"`
	RetentionMs   int64           `json:"retention_ms"`
	PartitionInfo []PartitionInfo `json:"partition_info,omitempty"`
}

// PartitionInfo is a JSON shape of the contract.
type PartitionInfo struct {
	Partition      int32 `json:"partition"`
	LogStartOffset int64 `json:"log_start_offset"`
	HighWatermark  int64 `json:"high_watermark"`
}

// TopicList is a JSON shape of the contract.
type TopicList struct {
	Topics []string `json:"topics"`
}

// Append is a JSON shape of the contract.
type Append struct {
	Records []Record `json:"records"`
}

// Record is a JSON shape of the contract.
type Record struct {
	Key         *string           `json:"key,omitempty"`
	Value       string            `json:"value"`
	Headers     map[string]string `json:"headers,omitempty"`
	Partition   *int32            `json:"partition,omitempty"`
	TimestampMs *int64            `json:"timestamp_ms,omitempty"`
}

// AppendResponse is a JSON shape of the contract.
type AppendResponse struct {
	Results []Result `json:"results"`
}

// Result is a JSON shape of the contract.
type Result struct {
	Partition int32          `json:"partition"`
	Offset    *int64         `json:"offset,omitempty"`
	Error     map[string]any `json:"error,omitempty"`
}

// PollResponse is a JSON shape of the contract.
type PollResponse struct {
	Records        []PolledRecord `json:"records"`
	NextOffset     int64          `json:"next_offset"`
	HighWatermark  int64          `json:"high_watermark"`
	LogStartOffset int64          `json:"log_start_offset"`
}

// PolledRecord is a JSON shape of the contract.
type PolledRecord struct {
	Offset      int64             `json:"offset"`
	TimestampMs int64             `json:"timestamp_ms"`
	Key         *string           `json:"key"`
	Value       *string           `json:"value"`
	Headers     map[string]string `json:"headers"`
}

// LeaseRequest is a JSON shape of the contract.
type LeaseRequest struct {
	Member     string `json:"member"`
	Generation *int64 `json:"generation,omitempty"`
	TTLMs      *int64 `json:"ttl_ms,omitempty"`
}

// Lease is a JSON shape of the contract.
type Lease struct {
	Generation       int64  `json:"generation"`
	LeaseExpiresAtMs int64  `json:"lease_expires_at_ms"`
	CommittedOffset  *int64 `json:"committed_offset"`
}

// Release is a JSON shape of the contract.
type Release struct {
	Member     string `json:"member"`
	Generation int64  `json:"generation"`
}

// Commit is a JSON shape of the contract.
type Commit struct {
	Member     string `json:"member"`
	Generation int64  `json:"generation"`
	NextOffset int64  `json:"next_offset"`
}

// CommitResponse is a JSON shape of the contract.
type CommitResponse struct {
	CommittedOffset int64 `json:"committed_offset"`
}

// Group is a JSON shape of the contract.
type Group struct {
	Group      string           `json:"group"`
	Partitions []GroupPartition `json:"partitions"`
}

// GroupPartition is a JSON shape of the contract.
type GroupPartition struct {
	Topic            string   `json:"topic"`
	Partition        int32    `json:"partition"`
	CommittedOffset  *int64   `json:"committed_offset"`
	HighWatermark    int64    `json:"high_watermark"`
	LagRecords       *int64   `json:"lag_records"`
	LagSeconds       *float64 `json:"lag_seconds"`
	Owner            *string  `json:"owner"`
	Generation       int64    `json:"generation"`
	LeaseExpiresAtMs *int64   `json:"lease_expires_at_ms"`
}

// ResetResponse is a JSON shape of the contract.
type ResetResponse struct {
	Partitions []ResetPartition `json:"partitions"`
}

// ResetPartition is a JSON shape of the contract.
type ResetPartition struct {
	Partition       int32 `json:"partition"`
	CommittedOffset int64 `json:"committed_offset"`
}

// Health is a JSON shape of the contract.
type Health struct {
	Status string `json:"status"`
}
