package log

import (
	"encoding/json"
	"fmt"

	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// The members table: a batch object holding idempotent requests' blocks ends with a
// JSON table of those requests (after every block, covered by no index entry), and each
// commit of the batch records its location (store.SeqCommit.MembersOffset, Length). The
// appender claims its members' keys from memory; the materialiser, indexing a commit
// whose appender stopped, reads the table to claim them the same way. The sequencer item
// carries two numbers instead of every member's key, so its size (and DynamoDB's bill
// for each commit) stays that of a plain commit.

// memberTable is the table's JSON form.
type memberTable struct {
	Version int           `json:"v"`
	Members []tableMember `json:"members"`
}

type tableMember struct {
	Key        string       `json:"key"`
	BodyHash   string       `json:"hash"`
	Total      int64        `json:"total"`
	Partitions int32        `json:"partitions,omitempty"`
	Blocks     []tableBlock `json:"blocks"`
	// Producer marks a producer session's request (fenced idempotency: no claim) and
	// Attempt is which attempt of it the blocks are.
	Producer bool  `json:"producer,omitempty"`
	Attempt  int32 `json:"attempt,omitempty"`
}

// tableBlock is a member's block in one partition's commit: Offset records from the
// commit's base, Count records.
type tableBlock struct {
	Partition int32 `json:"p"`
	Offset    int64 `json:"off"`
	Count     int64 `json:"n"`
}

// maxTableKey bounds a member's scoped key: a topic ID (name, '#', incarnation), '#' and
// the Idempotency-Key.
const maxTableKey = 200 + 1 + 64 + 1 + wire.MaxIdempotencyKey

// encodeMembers is the members table of a batch's idempotent members.
func encodeMembers(ms []tableMember) ([]byte, error) {
	return json.Marshal(memberTable{Version: 1, Members: ms})
}

// decodeMembers decodes a members table read from a segment object (outside bytes):
// any malformed table is an error, never a panic.
func decodeMembers(b []byte) ([]tableMember, error) {
	var t memberTable
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("members table: %w", err)
	}
	if t.Version != 1 {
		return nil, fmt.Errorf("members table: version %d, want 1", t.Version)
	}
	for i, m := range t.Members {
		switch {
		case m.Key == "" || len(m.Key) > maxTableKey:
			return nil, fmt.Errorf("members table: member %d: key of %d bytes", i, len(m.Key))
		case m.BodyHash == "" || m.Total < 1 || m.Total > MaxRecordsPerBatch || m.Partitions < 0 || m.Partitions > MaxPartitions:
			return nil, fmt.Errorf("members table: member %d: hash %q, %d records, %d partitions", i, m.BodyHash, m.Total, m.Partitions)
		case len(m.Blocks) == 0:
			return nil, fmt.Errorf("members table: member %d has no block", i)
		case m.Attempt < 0 || m.Attempt > wire.MaxAttempt || (m.Attempt > 0 && !m.Producer):
			return nil, fmt.Errorf("members table: member %d: attempt %d", i, m.Attempt)
		}
		for _, b := range m.Blocks {
			if b.Partition < 0 || b.Partition >= MaxPartitions || b.Offset < 0 || b.Count < 1 || b.Count > m.Total {
				return nil, fmt.Errorf("members table: member %d: block %+v", i, b)
			}
		}
	}
	return t.Members, nil
}

// commitMembers are the table's members with a block in partition p, as a commit's
// members.
func commitMembers(ms []tableMember, p int32) []store.CommitMember {
	var out []store.CommitMember
	for _, m := range ms {
		for _, b := range m.Blocks {
			if b.Partition == p {
				out = append(out, store.CommitMember{Key: m.Key, BodyHash: m.BodyHash, Total: m.Total,
					Partitions: m.Partitions, Offset: b.Offset, Count: b.Count, Producer: m.Producer, Attempt: m.Attempt})
			}
		}
	}
	return out
}
