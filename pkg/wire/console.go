package wire

// Summary is a JSON shape of the contract: GET /v1/summary, everything the console shows
// of a node in one answer (the topics and groups the caller may describe, with their
// lag), so that a page's refresh is one request whatever the number of topics.
type Summary struct {
	Principal SummaryPrincipal `json:"principal"`
	Topics    []SummaryTopic   `json:"topics"`
	Groups    []SummaryGroup   `json:"groups"`
}

// SummaryPrincipal is the caller and its grants, so a page can offer only what the
// server would allow (the server checks every call again).
type SummaryPrincipal struct {
	Name string `json:"name"`
	// Open is true when auth is off: every call is allowed.
	Open   bool    `json:"open"`
	Grants []Grant `json:"grants"`
}

// Grant is one grant of an auth file: ops on a resource ("topic:orders", "group:bill*").
type Grant struct {
	Resource string   `json:"resource"`
	Ops      []string `json:"ops"`
}

// SummaryTopic is a topic of the summary with its partitions and the caller's ops on it.
type SummaryTopic struct {
	Name           string             `json:"name"`
	Partitions     int32              `json:"partitions"`
	RetentionMs    int64              `json:"retention_ms"`
	RetentionPinMs int64              `json:"retention_pin_ms"`
	TimestampType  string             `json:"timestamp_type"`
	PartitionInfo  []SummaryPartition `json:"partition_info"`
	Allowed        []string           `json:"allowed"`
}

// SummaryPartition is a partition's readable range and the records in it (offsets
// skipped by a duplicate attempt count as records).
type SummaryPartition struct {
	Partition      int32 `json:"partition"`
	LogStartOffset int64 `json:"log_start_offset"`
	HighWatermark  int64 `json:"high_watermark"`
	Records        int64 `json:"records"`
}

// Group states of the summary.
const (
	GroupEmpty       = "empty"       // no live member and no live lease
	GroupStable      = "stable"      // every partition the group has is leased
	GroupRebalancing = "rebalancing" // live members, but a partition has no owner
)

// SummaryGroup is a group of the summary: its state, settings, members, partitions (as
// GET /v1/groups/{group}), parked keys and its total lag over time.
type SummaryGroup struct {
	Group      string           `json:"group"`
	State      string           `json:"state"`
	Settings   *GroupSettings   `json:"settings,omitempty"`
	Members    []SummaryMember  `json:"members"`
	Partitions []GroupPartition `json:"partitions"`
	Parked     []ParkedKey      `json:"parked"`
	// LagHistory is the group's total lag per sample (records summed, seconds the
	// largest), oldest first.
	LagHistory []LagHistorySample `json:"lag_history"`
	Allowed    []string           `json:"allowed"`
}

// SummaryMember is a live member (heartbeating, or holding a live lease) and what it
// holds.
type SummaryMember struct {
	Member      string           `json:"member"`
	ExpiresAtMs int64            `json:"expires_at_ms"`
	Holds       []TopicPartition `json:"holds"`
}

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// KeySearch is a JSON shape of the contract: GET
// /v1/topics/{topic}/partitions/{p}/search, the records of one key among the offsets
// scanned. NextOffset is where a further search goes on; Complete is true when the
// scan reached the high watermark.
type KeySearch struct {
	Records        []PolledRecord `json:"records"`
	NextOffset     int64          `json:"next_offset"`
	Scanned        int64          `json:"scanned"`
	Complete       bool           `json:"complete"`
	HighWatermark  int64          `json:"high_watermark"`
	LogStartOffset int64          `json:"log_start_offset"`
}

// Search bounds: how many offsets one search scans, by default and at most, and how
// many matching records it returns at most.
const (
	DefaultSearchScan = 10_000
	MaxSearchScan     = 100_000
	MaxSearchRecords  = 500
)

// PartitionStats is a JSON shape of the contract: GET
// /v1/topics/{topic}/partitions/{p}/stats, a bounded scan of the partition's index from
// its log start. Bytes is the stored size of the blocks readers read; when Complete is
// false the scan stopped early and Records and Bytes are lower bounds.
type PartitionStats struct {
	LogStart       int64 `json:"log_start"`
	HighWatermark  int64 `json:"high_watermark"`
	Records        int64 `json:"records"`
	Bytes          int64 `json:"bytes"`
	EntriesScanned int64 `json:"entries_scanned"`
	Complete       bool  `json:"complete"`
}

// Stats bounds: how many index entries one partition stats request scans, by default
// and at most.
const (
	DefaultStatsEntries = 10_000
	MaxStatsEntries     = 100_000
)
