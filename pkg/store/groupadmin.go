package store

import (
	"context"
	"time"
)

// GroupAdminStore manages consumer groups as a whole: their settings, the list of them,
// and dropping their positions. Backends implement it beside MetaStore.
type GroupAdminStore interface {
	// PutGroupConfig must store cfg's ResetPolicy, MaxAttempts, DeadLetterTopic and OnFailure as
	// the group's settings, creating the group (with cfg.CreatedAt) when absent and
	// keeping the stored CreatedAt when present, and return the stored config.
	PutGroupConfig(ctx context.Context, cfg GroupConfig) (GroupConfig, error)
	// ListGroups must return every group name in lexical order.
	ListGroups(ctx context.Context) ([]string, error)
	// DeleteCommits must delete every commit row of (group, topic) only if no lease of
	// the group on topic is live at now, else return ErrGroupActive and change nothing.
	// Like ResetCommits it must fence, in the same operation, every assignment row of
	// (group, topic): generation + 1 and no owner, so an owner whose lease lapsed cannot
	// commit its old position back. Deleting what does not exist is not an error.
	DeleteCommits(ctx context.Context, group, topic string, now time.Time) error
	// DeleteGroup must remove the group: its settings row and every commit, member and
	// parked row (ParkStore) of it, on every topic, only if no lease of the group is live and no member's
	// heartbeat is live at now, else return ErrGroupActive and change nothing. Its
	// assignment rows must be fenced (generation + 1, no owner), not deleted, so
	// generations stay monotonic when the name is used again: a member of the deleted
	// group whose lease lapsed can never commit into a new group of that name. Each
	// fenced row must be marked GroupDeleted, so the next AcquireLease of it — on any
	// host, whatever that host remembers of the group — reports the delete. An unknown
	// group must return ErrNotFound.
	DeleteGroup(ctx context.Context, group string, now time.Time) error
}
