package store

import (
	"context"
	"time"
)

// RetentionStore changes a live topic's retention after its creation (the Kafka front's
// retention.ms alter). Backends implement it beside TopicAdminStore.
type RetentionStore interface {
	// SetRetention must set the live topic's Retention to retention, changing nothing
	// else of it, and return the stored topic; ErrNotFound for an unknown (or deleted)
	// name.
	SetRetention(ctx context.Context, name string, retention time.Duration) (Topic, error)
}

// IndexTTLStore is a metadata store whose backend deletes an index entry by itself, free
// of any request of its user, once the entry's ExpiresAt has passed (DynamoDB's TTL).
// The retention pass leaves such entries below the log start to it instead of paying a
// write per entry.
type IndexTTLStore interface {
	// IndexEntriesExpire must report true only if every index entry written with a
	// non-zero ExpiresAt is deleted by the backend some time after ExpiresAt, with no
	// call of the store; until then the entry must read back as written.
	IndexEntriesExpire() bool
}

// IndexExpiryClearer takes the expiry off index entries. Entries of a topic that deletes
// by time carry one (the deployment's maximum retention plus a grace, written with the
// entry); a topic altered to compact-only keeps every key's latest record for ever, so
// the compaction pass clears the expiry of each entry written before the alter.
type IndexExpiryClearer interface {
	// ClearIndexExpiry must make the entry at e.BaseOffset of (e.Topic, e.Partition)
	// one that never expires — ExpiresAt reads back zero and no TTL of the backend
	// deletes it — changing nothing else of it, only if it is stored as e (SameBlock).
	// Otherwise (no entry there, or another, as after a compaction's swap) it must
	// return an error wrapping ErrConflict and change nothing: in particular it never
	// writes an entry where none is. Clearing an entry without an expiry changes nothing.
	ClearIndexExpiry(ctx context.Context, e IndexEntry) error
}
