package store

import (
	"context"
	"time"
)

// TopicCleanup is a topic's cleanup policy and compaction settings, changed together
// (the fields of Topic of the same names).
type TopicCleanup struct {
	Cleanup          CleanupPolicy
	MinCompactionLag time.Duration
	MaxCompactionLag time.Duration
	DeleteRetention  time.Duration
}

// CleanupSettings is t's cleanup policy and compaction settings.
func (t Topic) CleanupSettings() TopicCleanup {
	return TopicCleanup{Cleanup: t.Cleanup, MinCompactionLag: t.MinCompactionLag, MaxCompactionLag: t.MaxCompactionLag, DeleteRetention: t.DeleteRetention}
}

// WithCleanup is t with its cleanup policy and compaction settings replaced by c.
func (t Topic) WithCleanup(c TopicCleanup) Topic {
	t.Cleanup, t.MinCompactionLag, t.MaxCompactionLag, t.DeleteRetention = c.Cleanup, c.MinCompactionLag, c.MaxCompactionLag, c.DeleteRetention
	return t
}

// CleanupStore changes a live topic's cleanup policy and compaction settings after its
// creation. Backends implement it beside TopicAdminStore.
type CleanupStore interface {
	// SetCleanup must set the live topic's Cleanup, MinCompactionLag, MaxCompactionLag
	// and DeleteRetention to c's, changing nothing else of it, in one atomic write, and
	// return the stored topic; ErrNotFound for an unknown (or deleted) name.
	SetCleanup(ctx context.Context, name string, c TopicCleanup) (Topic, error)
}
