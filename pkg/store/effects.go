package store

import (
	"context"
	"errors"
	"time"
)

// ErrApplied: a fenced effect of that record was applied already (a duplicate delivery).
var ErrApplied = errors.New("store: effect already applied")

// Fence is the fencing token of a consumer's side effects: the lease generation under
// which the group handles (Topic, Partition). Topic is the store key of the topic (its
// incarnation, as in LeaseStore).
type Fence struct {
	Group      string
	Topic      string
	Partition  int32
	Generation int64
	// Incarnation is the topic incarnation of the lease, for a fence whose Topic is a
	// name (group.Fence): group.Effects checks it against the live one and keys the
	// store call by TopicID(Topic, Incarnation). An EffectStore ignores it.
	Incarnation string
}

// EffectStore is a business store whose writes are fenced by a consumer's lease (issue
// 22 item 2): a zombie consumer's late write is refused, not only its commit, and a
// record's effect lands once. One EffectStore serves one consumer group.
type EffectStore interface {
	// ApplyEffect must, atomically: check that the assignment row of (f.Group, f.Topic,
	// f.Partition) — in the metadata tables it was opened over — is at f.Generation
	// (else ErrFenced, also for a missing row); check that no effect of (f.Topic,
	// f.Partition, offset) was applied (else ErrApplied); then put value under key and
	// record that offset's marker. A refused call writes nothing; when both checks fail
	// the error is ErrFenced. The marker must refuse the record's effects until
	// markerExpiresAt at least (zero: for ever); after it the backend may delete the
	// marker (DynamoDB's TTL; the embedded store's DeleteExpired sweep), so that the
	// markers of records no longer retained do not pile up, and the record's effect may
	// then be applied again.
	ApplyEffect(ctx context.Context, f Fence, offset int64, key string, value []byte, markerExpiresAt time.Time) error
	// GetEffect must return the value last put under key, or ErrNotFound.
	GetEffect(ctx context.Context, key string) ([]byte, error)
}
