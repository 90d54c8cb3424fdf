package group

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// MaxCommitMetadata bounds a commit's metadata, in bytes: Kafka's default
// offset.metadata.max.bytes.
const MaxCommitMetadata = wire.MaxCommitMetadata

// ErrMetadataTooLarge: a commit's metadata is over MaxCommitMetadata bytes (Kafka's
// OFFSET_METADATA_TOO_LARGE). Such an error is ErrInvalid too; nothing changed.
var ErrMetadataTooLarge = errors.New("group: commit metadata too large")

// CommitOptions are the optional parts of a commit (CommitAt).
type CommitOptions struct {
	// Metadata is stored with the position and returned with it (Position, Describe):
	// Kafka's OffsetCommit metadata. At most MaxCommitMetadata bytes of UTF-8; empty
	// stores none. Every commit replaces the last one's.
	Metadata string
	// AllowBackward accepts an offset below the committed one from the lease's owner at
	// its generation: a Kafka member's seek-and-commit. The fence is unchanged (an
	// obsolete generation is ErrFenced whatever it asks); without it a lower offset is
	// ErrStaleCommit, which Strata's own consumers rely on.
	AllowBackward bool
	// Completed are the offsets above the position already handled, as Commit's.
	Completed []store.OffsetRange
	// RenewTTL, when set, also renews member's lease to now + RenewTTL (within the lease
	// TTL limits), and Release releases it, in the commit's own write: a consumer that
	// commits needs no separate renew or release request. A refused commit changes
	// neither. Release wins over RenewTTL.
	RenewTTL time.Duration
	Release  bool
}

// CommitAt is Commit with options: it stores nextOffset as the group's position on
// (topic, partition) only if member owns the lease at generation (else ErrFenced),
// nextOffset is at most the high watermark (else a *BeyondHighWatermarkError), and it
// is not below the committed one unless opts.AllowBackward (else ErrStaleCommit), with
// opts.Metadata and opts.Completed. Metadata over MaxCommitMetadata bytes is
// ErrMetadataTooLarge, metadata that is not UTF-8 ErrInvalid; a refused commit
// changes nothing. topic may be a store.TopicRef naming the lease's incarnation.
func (c *Coordinator) CommitAt(ctx context.Context, group, topic string, partition int32, member string, generation, nextOffset int64, opts CommitOptions) error {
	if err := checkRef(group, topic, partition); err != nil {
		return err
	}
	if err := checkMember(member, generation, true); err != nil {
		return err
	}
	if nextOffset < 0 {
		return invalidf("negative offset %d", nextOffset)
	}
	if err := CheckMetadata(opts.Metadata); err != nil {
		return err
	}
	if opts.RenewTTL != 0 {
		if _, err := leaseTTL(opts.RenewTTL); err != nil {
			return err
		}
	}
	completed := opts.Completed
	if err := CheckCompleted(nextOffset, completed); err != nil {
		return err
	}
	name := topicName(topic)
	if err := c.checkPartition(ctx, name, partition); err != nil {
		return err
	}
	// The bounds of the incarnation the commit is for: a ref no longer live is fenced.
	_, hw, err := c.offsets.Bounds(ctx, topic, partition)
	if err != nil {
		return fmt.Errorf("group: bounds of %s/%d: %w", topic, partition, err)
	}
	if nextOffset > hw {
		return &BeyondHighWatermarkError{Topic: topic, Partition: partition, Offset: nextOffset, HighWatermark: hw}
	}
	if n := len(completed); n > 0 && completed[n-1].To > hw {
		return invalidf("completed range [%d, %d) ends above the high watermark %d", completed[n-1].From, completed[n-1].To, hw)
	}
	now := c.now()
	row := store.CommitRow{
		Group:        group,
		Topic:        topic,
		Partition:    partition,
		NextOffset:   nextOffset,
		Generation:   generation,
		CommittedAt:  now,
		Metadata:     opts.Metadata,
		Backward:     opts.AllowBackward,
		Completed:    completed,
		ReleaseLease: opts.Release,
	}
	if opts.RenewTTL != 0 && !opts.Release {
		row.LeaseExpiresAt = now.Add(opts.RenewTTL)
	}
	if err := c.store.Commit(ctx, row, member); err != nil {
		return fmt.Errorf("group: commit %s %s/%d@%d for %q gen %d: %w", group, topic, partition, nextOffset, member, generation, err)
	}
	return nil
}

// CheckMetadata reports whether md can be stored with a commit: at most
// MaxCommitMetadata bytes (else ErrMetadataTooLarge, which is also ErrInvalid) of
// UTF-8 (else ErrInvalid).
func CheckMetadata(md string) error {
	if len(md) > MaxCommitMetadata {
		return fmt.Errorf("%w: %w: %d bytes, at most %d", ErrInvalid, ErrMetadataTooLarge, len(md), MaxCommitMetadata)
	}
	if !utf8.ValidString(md) {
		return invalidf("commit metadata is not UTF-8")
	}
	return nil
}

// Position is a group's committed position on one partition.
type Position struct {
	// NextOffset is the next offset to read.
	NextOffset int64
	// Metadata is what the commit stored with it (CommitOptions.Metadata).
	Metadata    string
	CommittedAt time.Time
}

// Position returns the group's committed position on (topic, partition) with its
// metadata, nil before the first commit.
func (c *Coordinator) Position(ctx context.Context, group, topic string, partition int32) (*Position, error) {
	if err := checkNames(group, topic, partition); err != nil {
		return nil, err
	}
	row, err := c.store.GetCommit(ctx, group, topic, partition)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("group: read commit of %s %s/%d: %w", group, topic, partition, err)
	}
	return &Position{NextOffset: row.NextOffset, Metadata: row.Metadata, CommittedAt: row.CommittedAt}, nil
}
