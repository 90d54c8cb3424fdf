package wire

import "encoding/json"

// The JSON shapes of docs/API.md: the SDK sends and reads them, the server answers with
// them (its request decoders keep stricter, presence-checking twins). Bytes are base64
// (standard, padded) strings; optional request fields are omitted when unset.

// TopicCreate is a JSON shape of the contract. Partitions 0 is left out: the node's
// default partition count applies. RetentionPinMs left out is no pin.
type TopicCreate struct {
	Name           string `json:"name"`
	Partitions     int32  `json:"partitions,omitempty"`
	RetentionMs    *int64 `json:"retention_ms,omitempty"`
	RetentionPinMs *int64 `json:"retention_pin_ms,omitempty"`
	// TimestampType is TimestampCreateTime or TimestampLogAppendTime; left out: the
	// producer's timestamps (create_time).
	TimestampType string `json:"timestamp_type,omitempty"`
	// CleanupPolicy is CleanupDelete (left out), CleanupCompact or
	// CleanupCompactDelete (Kafka's cleanup.policy); the compaction settings left out
	// are unset (DeleteRetentionMs: a day).
	CleanupPolicy      string `json:"cleanup_policy,omitempty"`
	MinCompactionLagMs *int64 `json:"min_compaction_lag_ms,omitempty"`
	MaxCompactionLagMs *int64 `json:"max_compaction_lag_ms,omitempty"`
	DeleteRetentionMs  *int64 `json:"delete_retention_ms,omitempty"`
}

// The topic cleanup policies (Kafka's cleanup.policy): records leave by age (delete,
// the default), the latest record per key is kept (compact), or both.
const (
	CleanupDelete        = "delete"
	CleanupCompact       = "compact"
	CleanupCompactDelete = "compact,delete"
)

// The topic timestamp types (Kafka's message.timestamp.type): a record keeps the
// timestamp its producer gave (create_time, the default), or every record is stamped
// with its append time (log_append_time).
const (
	TimestampCreateTime    = "create_time"
	TimestampLogAppendTime = "log_append_time"
)

// Topic is a JSON shape of the contract. RetentionPinMs is left out when the topic has
// no pin.
type Topic struct {
	Name           string `json:"name"`
	Partitions     int32  `json:"partitions"`
	RetentionMs    int64  `json:"retention_ms"`
	RetentionPinMs int64  `json:"retention_pin_ms,omitempty"`
	// TimestampType is the topic's (TimestampCreateTime, TimestampLogAppendTime).
	TimestampType string `json:"timestamp_type,omitempty"`
	// CleanupPolicy is the topic's (CleanupDelete, CleanupCompact,
	// CleanupCompactDelete); the compaction settings are left out when unset.
	CleanupPolicy      string          `json:"cleanup_policy,omitempty"`
	MinCompactionLagMs int64           `json:"min_compaction_lag_ms,omitempty"`
	MaxCompactionLagMs int64           `json:"max_compaction_lag_ms,omitempty"`
	DeleteRetentionMs  int64           `json:"delete_retention_ms,omitempty"`
	PartitionInfo      []PartitionInfo `json:"partition_info,omitempty"`
}

// KeyRecord is a JSON shape of the contract: the latest record of a key of a compacted
// topic (GET /v1/topics/{topic}/keys/{key}), the polled record's fields and its
// partition.
type KeyRecord struct {
	Partition int32 `json:"partition"`
	PolledRecord
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

// Record is a JSON shape of the contract. Value nil is null: a tombstone.
type Record struct {
	Key         *string  `json:"key,omitempty"`
	Value       *string  `json:"value"`
	Headers     *Headers `json:"headers,omitempty"`
	Partition   *int32   `json:"partition,omitempty"`
	TimestampMs *int64   `json:"timestamp_ms,omitempty"`
}

// Header is a JSON shape of the contract: one header of the list form of a record's
// headers. Value nil is null.
type Header struct {
	Key   string  `json:"key"`
	Value *string `json:"value"`
}

// Headers is a record's headers in an append: the object form (names to base64 values;
// the server stores them sorted by name) or, when List is non-nil, the list form, an
// array of Header kept in order with repeated names and null values.
type Headers struct {
	Object map[string]string
	List   []Header
}

// MarshalJSON writes the list form when List is non-nil, the object form otherwise.
func (h Headers) MarshalJSON() ([]byte, error) {
	if h.List != nil {
		return json.Marshal(h.List)
	}
	return json.Marshal(h.Object)
}

// UnmarshalJSON reads either form.
func (h *Headers) UnmarshalJSON(b []byte) error {
	*h = Headers{}
	if len(b) > 0 && b[0] == '[' {
		h.List = []Header{}
		return json.Unmarshal(b, &h.List)
	}
	return json.Unmarshal(b, &h.Object)
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

// PolledRecord is a JSON shape of the contract. Value nil is a tombstone. Headers holds
// every non-null header (a repeated name: its last value); HeaderList, present only when
// Headers loses something (a repeated name, a null value, an order other than by name),
// holds them all in order.
type PolledRecord struct {
	Offset      int64             `json:"offset"`
	TimestampMs int64             `json:"timestamp_ms"`
	Key         *string           `json:"key"`
	Value       *string           `json:"value"`
	Headers     map[string]string `json:"headers"`
	HeaderList  []Header          `json:"header_list,omitempty"`
}

// LeaseRequest is a JSON shape of the contract.
type LeaseRequest struct {
	Member     string `json:"member"`
	Generation *int64 `json:"generation,omitempty"`
	TTLMs      *int64 `json:"ttl_ms,omitempty"`
	// Incarnation, on a renew, is the one the lease answer named: a lease of a deleted
	// incarnation is then fenced even when the name has a live one again.
	Incarnation string `json:"incarnation,omitempty"`
}

// Lease is a JSON shape of the contract.
type Lease struct {
	Generation       int64  `json:"generation"`
	LeaseExpiresAtMs int64  `json:"lease_expires_at_ms"`
	CommittedOffset  *int64 `json:"committed_offset"`
	// Completed are the offsets above CommittedOffset the last commit said were done;
	// a new owner skips them.
	Completed []OffsetRange `json:"completed,omitempty"`
	// Incarnation is the topic incarnation the lease was taken on (absent for a topic
	// created before incarnations). The holder sends it back with its renewals,
	// commits, release and parked writes, which are then fenced once it is deleted.
	Incarnation string `json:"incarnation,omitempty"`
}

// Release is a JSON shape of the contract.
type Release struct {
	Member     string `json:"member"`
	Generation int64  `json:"generation"`
	// Incarnation is the lease's (Lease.Incarnation); absent: the live one.
	Incarnation string `json:"incarnation,omitempty"`
}

// Commit is a JSON shape of the contract.
type Commit struct {
	Member     string `json:"member"`
	Generation int64  `json:"generation"`
	NextOffset int64  `json:"next_offset"`
	// Completed are offsets above NextOffset already handled (CheckCompleted).
	Completed []OffsetRange `json:"completed,omitempty"`
	// Incarnation is the lease's (Lease.Incarnation); absent: the live one.
	Incarnation string `json:"incarnation,omitempty"`
	// Metadata is stored with the position (at most MaxCommitMetadata bytes), as
	// Kafka's OffsetCommit metadata; absent stores none.
	Metadata string `json:"metadata,omitempty"`
	// AllowBackward accepts a NextOffset below the committed one from the owner at its
	// generation (a seek-and-commit); without it such a commit is 409 stale_commit.
	AllowBackward bool `json:"allow_backward,omitempty"`
}

// MaxCommitMetadata bounds a commit's metadata, in bytes (Kafka's default
// offset.metadata.max.bytes).
const MaxCommitMetadata = 4096

// CommitResponse is a JSON shape of the contract.
type CommitResponse struct {
	CommittedOffset int64 `json:"committed_offset"`
	// Metadata is the metadata stored with the commit (absent when none).
	Metadata string `json:"metadata,omitempty"`
}

// Group is a JSON shape of the contract.
type Group struct {
	Group      string           `json:"group"`
	Partitions []GroupPartition `json:"partitions"`
}

// GroupPartition is a JSON shape of the contract.
type GroupPartition struct {
	Topic           string   `json:"topic"`
	Partition       int32    `json:"partition"`
	CommittedOffset *int64   `json:"committed_offset"`
	HighWatermark   int64    `json:"high_watermark"`
	LagRecords      *int64   `json:"lag_records"`
	LagSeconds      *float64 `json:"lag_seconds"`
	// SecondsToDataLoss is how long until the oldest unread record still retained
	// expires (0 when expiring); null when caught up.
	SecondsToDataLoss *float64 `json:"seconds_to_data_loss"`
	// RecordsLost counts the records that expired before the group read them.
	RecordsLost int64 `json:"records_lost"`
	// ParkedKeys counts the keys the group parked on the partition (on_failure park).
	ParkedKeys       int64   `json:"parked_keys"`
	Owner            *string `json:"owner"`
	Generation       int64   `json:"generation"`
	LeaseExpiresAtMs *int64  `json:"lease_expires_at_ms"`
	// Metadata is the metadata the last commit stored with the position (absent when
	// none).
	Metadata string `json:"metadata,omitempty"`
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

// TopicAlter is a JSON shape of the contract (PATCH /v1/topics/{topic}): exactly one
// change, the new partition count, the new retention (-1: kept for ever, where the
// deployment has no maximum retention), the new retention pin cap (0 removes the pin),
// or the cleanup policy and compaction settings (any of those four together; 0 unsets
// a setting).
type TopicAlter struct {
	Partitions         int32   `json:"partitions,omitempty"`
	RetentionMs        *int64  `json:"retention_ms,omitempty"`
	RetentionPinMs     *int64  `json:"retention_pin_ms,omitempty"`
	CleanupPolicy      *string `json:"cleanup_policy,omitempty"`
	MinCompactionLagMs *int64  `json:"min_compaction_lag_ms,omitempty"`
	MaxCompactionLagMs *int64  `json:"max_compaction_lag_ms,omitempty"`
	DeleteRetentionMs  *int64  `json:"delete_retention_ms,omitempty"`
}

// GroupList is a JSON shape of the contract (GET /v1/groups).
type GroupList struct {
	Groups []string `json:"groups"`
}

// GroupSettings is a JSON shape of the contract: a group's settings as answered.
type GroupSettings struct {
	Group           string  `json:"group"`
	ResetPolicy     string  `json:"reset_policy"`
	MaxAttempts     int     `json:"max_attempts"`
	DeadLetterTopic *string `json:"dead_letter_topic"`
	OnFailure       string  `json:"on_failure"`
	CreatedAtMs     int64   `json:"created_at_ms"`
}

// GroupSettingsRequest is a JSON shape of the contract: a group's settings as put.
// DeadLetterTopic is left out for none: the API refuses null in a request.
type GroupSettingsRequest struct {
	ResetPolicy     string  `json:"reset_policy"`
	MaxAttempts     int     `json:"max_attempts"`
	DeadLetterTopic *string `json:"dead_letter_topic,omitempty"`
	// OnFailure is left out for the default ("dead_letter").
	OnFailure string `json:"on_failure,omitempty"`
}

// HeldLease is a JSON shape of the contract: a lease a member says it holds.
type HeldLease struct {
	Partition  int32 `json:"partition"`
	Generation int64 `json:"generation"`
	// Incarnation is the lease's (MemberLease.Incarnation); absent: the live one.
	Incarnation string `json:"incarnation,omitempty"`
}

// Heartbeat is a JSON shape of the contract (a member's heartbeat request).
type Heartbeat struct {
	Member string      `json:"member"`
	TTLMs  *int64      `json:"ttl_ms,omitempty"`
	Held   []HeldLease `json:"held"`
}

// MemberLease is a JSON shape of the contract: a lease of a heartbeat's answer.
type MemberLease struct {
	Partition        int32 `json:"partition"`
	Generation       int64 `json:"generation"`
	LeaseExpiresAtMs int64 `json:"lease_expires_at_ms"`
	// Incarnation is the topic incarnation the lease is of, as Lease.Incarnation.
	Incarnation string `json:"incarnation,omitempty"`
}

// AcquiredLease is a JSON shape of the contract: a lease a heartbeat just acquired,
// with the offset to resume from (null: none committed).
type AcquiredLease struct {
	MemberLease
	CommittedOffset *int64 `json:"committed_offset"`
	// Completed are the offsets above CommittedOffset the last commit said were done.
	Completed []OffsetRange `json:"completed,omitempty"`
}

// Assignment is a JSON shape of the contract (a heartbeat's answer).
type Assignment struct {
	Acquired    []AcquiredLease `json:"acquired"`
	Held        []MemberLease   `json:"held"`
	Lost        []int32         `json:"lost"`
	Release     []int32         `json:"release"`
	LiveMembers int             `json:"live_members"`
	FairShare   int             `json:"fair_share"`
}

// Leave is a JSON shape of the contract (a member leaving its group).
type Leave struct {
	Member string `json:"member"`
}

// ErrorBody is a JSON shape of the contract: the body of every non-2xx answer. Results
// is present on a partially failed JSON append, Blocks on a partially failed binary one.
type ErrorBody struct {
	Error   map[string]any `json:"error"`
	Results []Result       `json:"results,omitempty"`
	Blocks  []BlockResult  `json:"blocks,omitempty"`
}

// LagHistory is a JSON shape of the contract: GET /v1/groups/{group}/lag-history, the
// group's lag as the scheduled passes sampled it, oldest sample first.
type LagHistory struct {
	Group      string                `json:"group"`
	Partitions []LagHistoryPartition `json:"partitions"`
}

// LagHistoryPartition is a JSON shape of the contract.
type LagHistoryPartition struct {
	Topic     string             `json:"topic"`
	Partition int32              `json:"partition"`
	Samples   []LagHistorySample `json:"samples"`
}

// LagHistorySample is a JSON shape of the contract.
type LagHistorySample struct {
	TimestampMs int64   `json:"timestamp_ms"`
	LagRecords  int64   `json:"lag_records"`
	LagSeconds  float64 `json:"lag_seconds"`
}

// MemberList is a JSON shape of the contract: GET /v1/groups/{group}/members.
type MemberList struct {
	Group   string       `json:"group"`
	Members []LiveMember `json:"members"`
}

// LiveMember is a JSON shape of the contract.
type LiveMember struct {
	Member      string `json:"member"`
	ExpiresAtMs int64  `json:"expires_at_ms"`
}
