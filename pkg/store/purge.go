package store

import "context"

// IncarnationPurger deletes what a deleted topic incarnation leaves beside its counters
// and index: the key index entries and dirty counters of a compacted topic, and each
// group's parked rows on it. The retention job's purge calls it once the incarnation's
// leases are fenced and before TopicAdminStore.PurgeTopic removes the record that makes
// the purge come back. Backends implement it beside MetaStore.
type IncarnationPurger interface {
	// PurgeKeys must delete every key index entry of the incarnation topic (a TopicID)
	// and the dirty counter of each of its partitions below partitions, touching nothing
	// of any other incarnation or topic, and return how many key entries it deleted.
	// Interrupted, it may have deleted some; called again, it deletes the rest.
	PurgeKeys(ctx context.Context, topic string, partitions int32) (int, error)
	// PurgeParked must delete every parked row of group on the incarnation topic,
	// unfenced, touching no other group's or topic's rows, and return how many it
	// deleted; none is not an error.
	PurgeParked(ctx context.Context, group, topic string) (int, error)
}
