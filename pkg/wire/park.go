package wire

// Group failure policies (the settings' "on_failure"): what a record that failed every
// attempt does.
const (
	// OnFailureDeadLetter appends the record to the dead-letter topic (or drops it
	// when none is set) and goes on; the default.
	OnFailureDeadLetter = "dead_letter"
	// OnFailurePark parks the record's key: it and every later record of the key go,
	// in order, to the group's parking topic until the key is released.
	OnFailurePark = "park"
)

// ParkingTopicSuffix makes a group's parking topic: "<group>.parked". A group that
// parks needs a name short enough for the suffix (MaxParkingGroupName).
const ParkingTopicSuffix = ".parked"

// MaxParkingGroupName is the longest group name that can park (a topic name is at most
// MaxNameLength characters); such a group also needs a name of topic characters.
const MaxParkingGroupName = MaxNameLength - len(ParkingTopicSuffix)

// MaxParkedKey bounds the key a consumer parks; a record with a longer key (or none)
// is dead-lettered instead.
const MaxParkedKey = 1024

// ParkingTopic is the parking topic of group.
func ParkingTopic(group string) string { return group + ParkingTopicSuffix }

// Headers of a parked record besides its own: where it came from, the handler's error,
// the attempts made, and when it was parked (epoch milliseconds).
const (
	HeaderOriginTopic     = "strata-origin-topic"
	HeaderOriginPartition = "strata-origin-partition"
	HeaderOriginOffset    = "strata-origin-offset"
	HeaderAttempts        = "strata-attempts"
	HeaderError           = "strata-error"
	HeaderParkedAt        = "strata-parked-at-ms"
)

// ParkedKey is a JSON shape of the contract: one parked key of GET
// /v1/groups/{group}/parked. Key is base64 (absent: a key of zero bytes is "").
type ParkedKey struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	Key         string `json:"key"`
	FirstOffset int64  `json:"first_offset"`
	Records     int64  `json:"records"`
	Error       string `json:"error"`
	ParkedAtMs  int64  `json:"parked_at_ms"`
	// ReleaseRequestedAtMs is set once a release was asked for and the partition's
	// owner has not replayed the key yet.
	ReleaseRequestedAtMs *int64 `json:"release_requested_at_ms,omitempty"`
	// Expired reports that the parking topic's retention has taken the key's first
	// parked record (its log start passed the key's parking position): a release
	// replays what is left and counts the rest as lost.
	Expired bool `json:"expired,omitempty"`
}

// ParkedList is a JSON shape of the contract.
type ParkedList struct {
	Parked []ParkedKey `json:"parked"`
}

// ParkedRelease is a JSON shape of the contract: the body of POST
// /v1/groups/{group}/parked/release (Key base64).
type ParkedRelease struct {
	Topic string `json:"topic"`
	Key   string `json:"key"`
}

// MaxParkedError bounds the handler's error a parked row keeps (bytes of UTF-8); a
// consumer cuts a longer one.
const MaxParkedError = 4096

// ParkedState is a JSON shape of the contract: a parked row as its partition's owner
// keeps it (Key base64; ParkOffset -1 until the first record is in the parking topic).
type ParkedState struct {
	Key           string `json:"key"`
	FirstOffset   int64  `json:"first_offset"`
	LastOffset    int64  `json:"last_offset"`
	Records       int64  `json:"records"`
	Error         string `json:"error"`
	Attempts      int    `json:"attempts"`
	ParkedAtMs    int64  `json:"parked_at_ms"`
	ParkPartition int32  `json:"park_partition"`
	ParkOffset    int64  `json:"park_offset"`
}

// ParkedRow is a JSON shape of the contract: one row of GET
// /v1/groups/{group}/topics/{topic}/partitions/{p}/parked.
type ParkedRow struct {
	ParkedState
	ReleaseRequestedAtMs *int64 `json:"release_requested_at_ms,omitempty"`
}

// ParkedRows is a JSON shape of the contract: a partition's parked rows, ordered by key
// bytes.
type ParkedRows struct {
	Parked []ParkedRow `json:"parked"`
}

// ParkedPut is a JSON shape of the contract: the body of PUT
// /v1/groups/{group}/topics/{topic}/partitions/{p}/parked, fenced as a commit is.
type ParkedPut struct {
	Member     string `json:"member"`
	Generation int64  `json:"generation"`
	// Incarnation is the lease's (Lease.Incarnation); absent: the live one.
	Incarnation string `json:"incarnation,omitempty"`
	ParkedState
}

// ParkedUnpark is a JSON shape of the contract: the body of POST
// /v1/groups/{group}/topics/{topic}/partitions/{p}/parked/unpark (Key base64), fenced
// as a commit is.
type ParkedUnpark struct {
	Member     string `json:"member"`
	Generation int64  `json:"generation"`
	Key        string `json:"key"`
	// Incarnation is the lease's (Lease.Incarnation); absent: the live one.
	Incarnation string `json:"incarnation,omitempty"`
}
