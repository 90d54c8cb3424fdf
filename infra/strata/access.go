package strata

import (
	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/store/dynamo"
)

// DynamoDB actions, grouped by what a role does with a table. No wildcard action is ever
// granted: each statement lists the exact API calls the store makes (a transaction's
// items are authorised by the action of each item: Put, Update, ConditionCheck).
var (
	// tableRead is point reads and queries by key.
	tableRead = []string{"dynamodb:GetItem", "dynamodb:Query"}
	// tableScan lists a whole table (ListTopics, and ListAssignments/ListCommits, which
	// scan with a filter on the group: docs/DESIGN.md §3).
	tableScan = []string{"dynamodb:Scan"}
	// tableWrite is conditional puts, updates, deletes and transaction condition checks.
	tableWrite = []string{"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem"}
	// tableBatchWrite is deletes in batches of 25 (retention's index range deletes).
	tableBatchWrite = []string{"dynamodb:BatchWriteItem"}
)

// Access is what one role may do with one table.
type Access struct {
	Read, Scan, Write bool
}

// actions lists the DynamoDB actions of a, in a stable order.
func (a Access) actions() []string {
	var out []string
	if a.Read {
		out = append(out, tableRead...)
	}
	if a.Scan {
		out = append(out, tableScan...)
	}
	if a.Write {
		out = append(out, tableWrite...)
		out = append(out, tableBatchWrite...)
	}
	return out
}

var (
	r   = Access{Read: true}
	rs  = Access{Read: true, Scan: true}
	rw  = Access{Read: true, Write: true}
	rws = Access{Read: true, Scan: true, Write: true}
	// scanOnly lists a table and nothing else.
	scanOnly = Access{Scan: true}
)

// TableAccess is the one statement of which Strata function uses which table how (keys
// are table suffixes of dynamo.Tables()); each function's role is built from it and the
// tests check the roles against it. It follows the stores' operations the functions run:
//
//   - api serves the whole HTTP contract (docs/API.md): topics, appends through the
//     sequencer (with idempotency rows), polls (index and log start), leases, commits,
//     resets and group describes (which scan assignments and commits), the parked keys
//     of a group (a scan) and their release, and the member routes of group members
//     over HTTP (heartbeat puts the member's row, leave deletes it, the balancer and
//     the member list query the group's rows). On a compacted topic an append also
//     puts its keys' rows of the key index and the key lookup reads them: rows of the
//     index table under their own keys, so its rw on the index covers them.
//   - dispatch reads the sequencer's stream, materialises index entries (an index query,
//     a write-once entry, and the idempotency claims of an idempotent commit, made from
//     the members table it reads from the batch's segment object), and decides
//     from topics, high watermarks, commits and leases whom to invoke. Reading a
//     partition's counter seeds it when missing (the migration), a put on the sequencer.
//     Its scheduled sweep describes each subscribed group and counts the keys it
//     parked (a scan of the parked table), for the subscriptions' alarms.
//   - retention advances log starts on the sequencer items (seeding them like dispatch),
//     deletes index entries (ranges, in BatchWriteItem calls), and reads the topics it
//     works from; the legacy partitions table is read by the migration only. Its pass
//     then samples every group's lag (a scan of groups, each group's leases, commits and
//     index times) into the lag history table, which the api reads. Its purge of a
//     deleted topic fences every group's assignment rows on it and deletes their commit
//     rows and parked keys, a compacted topic's key rows (a scan of the index table),
//     its counters, and last its record in the topics table.
//   - compact compacts compacted topics (pkg/compact): it lists and reads topics, reads
//     each partition's counter (seeding it like dispatch, which may read the legacy
//     partitions table) and index entries, swaps rewritten ranges in one transaction (a
//     Put or Delete per item, conditional) and deletes removed tombstones' key entries,
//     all in the index table.
//
// A subscribed consumer function's rights are narrower still (consumerStatements): the
// rows of its own topic and group only.
func TableAccess() map[string]map[string]Access {
	return map[string]map[string]Access{
		deploy.FunctionAPI: {
			dynamo.TopicsTable:      rws,
			dynamo.SequencerTable:   rw,
			dynamo.IndexTable:       rw,
			dynamo.PartitionsTable:  r,
			dynamo.AssignmentsTable: rws,
			dynamo.CommitsTable:     rws,
			dynamo.GroupsTable:      rw,
			dynamo.IdempotencyTable: rw,
			dynamo.LagHistoryTable:  r,
			dynamo.ParkedTable:      rws,
			dynamo.MembersTable:     rw,
		},
		deploy.FunctionDispatch: {
			dynamo.TopicsTable:     rs,
			dynamo.SequencerTable:  rw,
			dynamo.IndexTable:      rw,
			dynamo.PartitionsTable: r,
			// The scheduled sweep describes every subscribed group (time to data loss):
			// its settings, and its leases and commits (scans filtered on the group).
			dynamo.AssignmentsTable: rs,
			dynamo.CommitsTable:     rs,
			dynamo.IdempotencyTable: rw,
			dynamo.GroupsTable:      r,
			// and counts each subscribed group's parked keys (ListParked, a scan
			// filtered on the group) for the parked-keys alarm: no point read, no write.
			dynamo.ParkedTable: scanOnly,
		},
		deploy.FunctionRetention: {
			// The purge of a deleted topic deletes its record last.
			dynamo.TopicsTable:    rws,
			dynamo.SequencerTable: rw,
			// The purge of a deleted compacted topic scans for its key rows.
			dynamo.IndexTable:      rws,
			dynamo.PartitionsTable: r,
			// The lag sample lists a group's leases and commits (scans filtered on
			// the group, as describe does); the purge of a deleted topic fences the
			// groups' assignment rows on it and deletes their commits (one transaction
			// a group) and their parked keys (a query, then batch deletes).
			dynamo.AssignmentsTable: rws,
			dynamo.CommitsTable:     rws,
			dynamo.GroupsTable:      rs,
			dynamo.LagHistoryTable:  rw,
			dynamo.ParkedTable:      rw,
		},
		deploy.FunctionCompact: {
			dynamo.TopicsTable:     rs,
			dynamo.SequencerTable:  rw,
			dynamo.IndexTable:      rw,
			dynamo.PartitionsTable: r,
		},
	}
}

// S3 actions on segment objects (keys under the object prefix + deploy.SegmentKeyPrefix).
var (
	objectRead   = []string{"s3:GetObject"}
	objectWrite  = []string{"s3:PutObject"}
	objectDelete = []string{"s3:DeleteObject"}
	// objectTag is what a PutObject carrying tags needs beside s3:PutObject (the
	// expiry tag of a topic that deletes by time, store.Expiry), and what the
	// compaction pass's PutObjectTagging needs to take an object away from the
	// lifecycle backstop (store.ObjectStore.Keep).
	objectTag = []string{"s3:PutObjectTagging"}
)
