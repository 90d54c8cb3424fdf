package group_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/store"
)

// TestCommitAtBackwardAndMetadata: the lease's owner at its generation moves its
// position back when it asks (a Kafka seek-and-commit) and its metadata comes back
// from Position and Describe; an obsolete generation stays fenced, a commit that does
// not ask stays monotonic, and metadata over the bound changes nothing.
func TestCommitAtBackwardAndMetadata(t *testing.T) {
	const topic = "seek"
	forEachBackend(t, func(t *testing.T, st store.MetaStore) {
		ctx := context.Background()
		f := newFixture(st)
		f.off.addTopic(topic, 1)
		f.off.appendN(topic, 0, 20)
		g := uniqueGroup("seek") + " #/ä"
		a := must(f.c.Acquire(ctx, g, topic, 0, "A", time.Second))(t)
		mustOK(t, f.c.CommitAt(ctx, g, topic, 0, "A", a.Generation, 15, group.CommitOptions{Metadata: "at 15"}))

		if err := f.c.Commit(ctx, g, topic, 0, "A", a.Generation, 5); !errors.Is(err, group.ErrStaleCommit) {
			t.Fatalf("Commit below without asking: %v, want ErrStaleCommit", err)
		}
		mustOK(t, f.c.CommitAt(ctx, g, topic, 0, "A", a.Generation, 5, group.CommitOptions{Metadata: "seek ä", AllowBackward: true}))
		pos := must(f.c.Position(ctx, g, topic, 0))(t)
		if pos == nil || pos.NextOffset != 5 || pos.Metadata != "seek ä" {
			t.Fatalf("Position after the backward commit = %+v, want 5 with its metadata", pos)
		}

		big := strings.Repeat("m", group.MaxCommitMetadata+1)
		err := f.c.CommitAt(ctx, g, topic, 0, "A", a.Generation, 6, group.CommitOptions{Metadata: big})
		if !errors.Is(err, group.ErrMetadataTooLarge) || !errors.Is(err, group.ErrInvalid) {
			t.Fatalf("CommitAt with %d bytes of metadata: %v, want ErrMetadataTooLarge and ErrInvalid", len(big), err)
		}
		if err := f.c.CommitAt(ctx, g, topic, 0, "A", a.Generation, 6, group.CommitOptions{Metadata: "\xff"}); !errors.Is(err, group.ErrInvalid) {
			t.Fatalf("CommitAt with metadata not UTF-8: %v, want ErrInvalid", err)
		}
		mustOK(t, f.c.CommitAt(ctx, g, topic, 0, "A", a.Generation, 6, group.CommitOptions{Metadata: strings.Repeat("é", group.MaxCommitMetadata/2)}))

		f.clock.Advance(2 * time.Second)
		b := must(f.c.Acquire(ctx, g, topic, 0, "B", time.Second))(t)
		err = f.c.CommitAt(ctx, g, topic, 0, "A", a.Generation, 1, group.CommitOptions{AllowBackward: true, Metadata: "stale"})
		if !errors.Is(err, group.ErrFenced) {
			t.Fatalf("backward commit of an obsolete generation: %v, want ErrFenced", err)
		}
		mustOK(t, f.c.CommitAt(ctx, g, topic, 0, "B", b.Generation, 2, group.CommitOptions{AllowBackward: true, Metadata: "B"}))
		info := must(f.c.Describe(ctx, g))(t)
		if len(info.Partitions) != 1 || info.Partitions[0].Committed == nil || *info.Partitions[0].Committed != 2 || info.Partitions[0].Metadata != "B" {
			t.Fatalf("Describe = %+v, want position 2 with metadata B", info.Partitions)
		}
		mustOK(t, f.c.Commit(ctx, g, topic, 0, "B", b.Generation, 3))
		if pos := must(f.c.Position(ctx, g, topic, 0))(t); pos.NextOffset != 3 || pos.Metadata != "" {
			t.Fatalf("Position after a commit without metadata = %+v, want 3 and none", pos)
		}
	})
}

// TestCommitAtRenewsOrReleases: a commit asking for it renews the owner's lease to the
// coordinator's now + TTL, or releases it, in the same write; a TTL outside the limits
// is refused with nothing changed.
func TestCommitAtRenewsOrReleases(t *testing.T) {
	const topic = "ride"
	forEachBackend(t, func(t *testing.T, st store.MetaStore) {
		ctx := context.Background()
		f := newFixture(st)
		f.off.addTopic(topic, 1)
		f.off.appendN(topic, 0, 20)
		g := uniqueGroup("ride")
		a := must(f.c.Acquire(ctx, g, topic, 0, "A", 10*time.Second))(t)
		if err := f.c.CommitAt(ctx, g, topic, 0, "A", a.Generation, 3, group.CommitOptions{RenewTTL: group.MaxTTL + time.Second}); !errors.Is(err, group.ErrInvalid) {
			t.Fatalf("CommitAt renewing beyond the TTL limit: %v, want ErrInvalid", err)
		}
		f.clock.Advance(8 * time.Second)
		mustOK(t, f.c.CommitAt(ctx, g, topic, 0, "A", a.Generation, 5, group.CommitOptions{RenewTTL: 10 * time.Second}))
		f.clock.Advance(8 * time.Second) // past the acquire's expiry, within the commit's
		if _, err := f.c.Acquire(ctx, g, topic, 0, "B", time.Second); !errors.Is(err, group.ErrLeaseHeld) {
			t.Fatalf("Acquire by another member within the renewed lease: %v, want ErrLeaseHeld", err)
		}
		mustOK(t, f.c.CommitAt(ctx, g, topic, 0, "A", a.Generation, 7, group.CommitOptions{RenewTTL: 10 * time.Second, Release: true}))
		b := must(f.c.Acquire(ctx, g, topic, 0, "B", time.Second))(t)
		if b.Generation != a.Generation+1 || b.Committed == nil || *b.Committed != 7 {
			t.Fatalf("Acquire after the releasing commit = %+v, want generation %d at 7", b, a.Generation+1)
		}
	})
}
