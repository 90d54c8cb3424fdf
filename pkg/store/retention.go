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
