package dynamo

// This file is the one definition of Strata's DynamoDB tables (docs/DESIGN.md §3). The
// emulator bootstrap (Bootstrap), the LocalStack init hook (generated from it, see
// TestInitHookUpToDate) and the CDK stack all read it, so it is plain data with no SDK types.

// AttrType is a DynamoDB scalar attribute type as the API spells it.
type AttrType string

// The scalar types key attributes use.
const (
	String AttrType = "S"
	Number AttrType = "N"
)

// KeyAttr is a key attribute: its name and scalar type.
type KeyAttr struct {
	Name string
	Type AttrType
}

// StreamView is a DynamoDB stream view type; "" means no stream.
type StreamView string

// NewImage streams each item as it is after the write (what dispatch reads: every
// commit of the sequencer table, in order per partition).
const NewImage StreamView = "NEW_IMAGE"

// TableSchema describes one table. All tables are on-demand (PAY_PER_REQUEST).
type TableSchema struct {
	// Suffix is appended to Config.TablePrefix to form the table name.
	Suffix string
	// PartitionKey is the hash key; SortKey the range key, zero Name when none.
	PartitionKey KeyAttr
	SortKey      KeyAttr
	// TTLAttribute, when set, holds epoch seconds after which DynamoDB may delete the item.
	TTLAttribute string
	// Stream is the stream view type of the table's stream, "" for none.
	Stream StreamView
	// PointInTimeRecovery is whether PITR is enabled (continuous backups).
	PointInTimeRecovery bool
}

// Table name suffixes, one per table.
const (
	TopicsTable      = "topics"
	IndexTable       = "index"
	SequencerTable   = "sequencer"
	PartitionsTable  = "partitions"
	AssignmentsTable = "assignments"
	CommitsTable     = "commits"
	GroupsTable      = "groups"
	MembersTable     = "members"
	IdempotencyTable = "idempotency"
	LagHistoryTable  = "laghistory"
	ParkedTable      = "parked"
)

// Attribute names shared by the schemas and the item codecs.
const (
	attrTopic      = "topic"
	attrTP         = "tp" // "topic#partition", the index's partition key
	attrBaseOffset = "base_offset"
	attrPartition  = "partition"
	attrGT         = "gt" // "group#topic", the assignments' and commits' partition key
	attrGroup      = "group"
	attrMember     = "member"
	attrKP         = "kp" // "key#partition", the idempotency table's key
	attrTTL        = "ttl"
	attrPK         = "pk" // "partition#hash of key", the parked table's sort key
)

// Tables returns the schema of every Strata table, in creation order.
func Tables() []TableSchema {
	return []TableSchema{
		{
			Suffix:              TopicsTable,
			PartitionKey:        KeyAttr{attrTopic, String},
			PointInTimeRecovery: true,
		},
		{
			// The sequencer: one item per partition, its counter (the high watermark, never
			// expiring) and the newest commit's payload. Every commit is one update, so the
			// stream holds every commit exactly once, in order per partition; dispatch
			// reads it to materialise index entries and to wake consumers.
			Suffix:              SequencerTable,
			PartitionKey:        KeyAttr{attrTP, String},
			Stream:              NewImage,
			PointInTimeRecovery: true,
		},
		{
			// The index: one write-once item per committed block of offsets.
			Suffix:              IndexTable,
			PartitionKey:        KeyAttr{attrTP, String},
			SortKey:             KeyAttr{attrBaseOffset, Number},
			TTLAttribute:        attrTTL,
			PointInTimeRecovery: true,
		},
		{
			Suffix:              PartitionsTable,
			PartitionKey:        KeyAttr{attrTopic, String},
			SortKey:             KeyAttr{attrPartition, Number},
			PointInTimeRecovery: true,
		},
		{
			Suffix:              AssignmentsTable,
			PartitionKey:        KeyAttr{attrGT, String},
			SortKey:             KeyAttr{attrPartition, Number},
			PointInTimeRecovery: true,
		},
		{
			Suffix:              CommitsTable,
			PartitionKey:        KeyAttr{attrGT, String},
			SortKey:             KeyAttr{attrPartition, Number},
			PointInTimeRecovery: true,
		},
		{
			Suffix:              GroupsTable,
			PartitionKey:        KeyAttr{attrGroup, String},
			PointInTimeRecovery: true,
		},
		{
			// Heartbeats of long-running members; expired rows are also removed by TTL.
			Suffix:       MembersTable,
			PartitionKey: KeyAttr{attrGroup, String},
			SortKey:      KeyAttr{attrMember, String},
			TTLAttribute: attrTTL,
		},
		{
			// Parked keys of a group (on_failure "park"): one row per (partition, key),
			// read by the partition's next owner.
			Suffix:              ParkedTable,
			PartitionKey:        KeyAttr{attrGT, String},
			SortKey:             KeyAttr{attrPK, String},
			PointInTimeRecovery: true,
		},
		{
			Suffix:              IdempotencyTable,
			PartitionKey:        KeyAttr{attrKP, String},
			TTLAttribute:        attrTTL,
			PointInTimeRecovery: true,
		},
		{
			// Each group's lag history, one bounded item per group (store.LagHistoryStore),
			// written by the retention function's pass and read by the api.
			Suffix:       LagHistoryTable,
			PartitionKey: KeyAttr{attrGroup, String},
		},
	}
}

// TableName is the full name of the table with suffix under cfg's prefix.
func (cfg Config) TableName(suffix string) string { return cfg.TablePrefix + suffix }
