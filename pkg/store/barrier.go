package store

import (
	"context"
	"errors"
)

// MaxBarrierBytes bounds a group's barrier state: one DynamoDB item holds at most
// 400 KB, and the state is read on every poll of a forming generation.
const MaxBarrierBytes = 128 << 10

// Errors of GroupBarrierStore.
var (
	// ErrBarrierConflict: the barrier's version is no longer the one the caller read.
	ErrBarrierConflict = errors.New("store: barrier changed since it was read")
	// ErrBarrierTooLarge: the state exceeds MaxBarrierBytes; nothing was stored.
	ErrBarrierTooLarge = errors.New("store: barrier state too large")
)

// Barrier is a group's barrier row: the state of the Kafka classic group protocol
// (members, generation, leader, assignment), opaque to the store, and its version.
type Barrier struct {
	Group string
	// Version counts the swaps that stored State; 0 when the group has no barrier.
	Version int64
	// State is what the last swap stored; nil when Version is 0.
	State []byte
}

// GroupBarrierStore holds one barrier per group, moved only by compare-and-swap, so any
// number of gateways can step one group's Kafka membership. The barrier belongs to the
// group's row: DeleteGroup (GroupAdminStore) removes it with the group. Backends
// implement it beside MetaStore.
type GroupBarrierStore interface {
	// GetBarrier must return the group's barrier (Version 0 and no State when none was
	// stored); ErrNotFound for an unknown group. The read must be strongly consistent.
	GetBarrier(ctx context.Context, group string) (Barrier, error)
	// SwapBarrier must store state as the group's barrier only if its version is still
	// version (0: none stored yet), atomically with respect to concurrent swaps, and
	// return the stored barrier at version + 1, leaving the group's settings as they
	// are. A changed version is ErrBarrierConflict, an unknown group ErrNotFound and a
	// state above MaxBarrierBytes ErrBarrierTooLarge; each changes nothing.
	SwapBarrier(ctx context.Context, group string, version int64, state []byte) (Barrier, error)
}
