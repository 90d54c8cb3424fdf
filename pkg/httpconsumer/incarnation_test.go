package httpconsumer_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/httpconsumer"
	"github.com/stratalog/strata/pkg/log"
	stratanode "github.com/stratalog/strata/pkg/node"
)

// fencedAnswer fails unless err is the contract's 409 fenced, as the adapter hands it
// to pkg/consumer (group.ErrFenced, the client's sentinel and status still there).
func fencedAnswer(t *testing.T, what string, err error) {
	t.Helper()
	var apiErr *client.APIError
	if !errors.Is(err, group.ErrFenced) || !errors.Is(err, client.ErrFenced) || !errors.As(err, &apiErr) || apiErr.Status != http.StatusConflict {
		t.Errorf("%s of the deleted incarnation's lease: got %v, want 409 fenced", what, err)
	}
}

// TestHTTPMemberOfDeletedIncarnationCannotCommitIntoSuccessor: a member over HTTP
// holds a lease, the topic is deleted and created again, and the same member id takes
// generation 1 of the new topic's partition. Every call of the old run — named by its
// lease's TopicRef, as pkg/consumer names it — is refused as fenced (409) and changes
// nothing on the successor: no commit, no release, no parked row written or deleted,
// no record polled, no renewal.
func TestHTTPMemberOfDeletedIncarnationCannotCommitIntoSuccessor(t *testing.T) {
	for _, backend := range []string{stratanode.BackendLocal, stratanode.BackendAWS} {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			c := assembledServer(t, backend)
			ad := httpconsumer.NewConsumerAdapter(c)
			const g, topic, m = "zombies", "orders", "m"
			ttl := 30 * time.Second
			appendN := func(n int) {
				t.Helper()
				recs := make([]client.Record, n)
				for i := range recs {
					recs[i] = client.Record{Key: []byte("k"), Value: []byte("v")}
				}
				if _, err := c.Append(ctx, topic, recs, client.AppendOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := c.CreateTopic(ctx, topic, client.TopicConfig{Partitions: 1}); err != nil {
				t.Fatal(err)
			}
			appendN(2)
			old, err := ad.Acquire(ctx, g, topic, 0, m, ttl)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.DeleteTopic(ctx, topic); err != nil {
				t.Fatal(err)
			}
			if _, err := c.CreateTopic(ctx, topic, client.TopicConfig{Partitions: 1}); err != nil {
				t.Fatal(err)
			}
			appendN(3)
			fresh, err := ad.Acquire(ctx, g, topic, 0, m, ttl)
			if err != nil {
				t.Fatal(err)
			}
			if fresh.Generation != old.Generation {
				t.Fatalf("the successor's lease is at generation %d, want %d (the old one's): the case this test is about", fresh.Generation, old.Generation)
			}
			if old.Incarnation == "" || fresh.Incarnation == "" || old.Incarnation == fresh.Incarnation {
				t.Fatalf("leases name incarnations %q (old) and %q (new), want two different ones", old.Incarnation, fresh.Incarnation)
			}
			// The successor's run parks a key, so the old run has something to unpark.
			key := []byte("poison")
			row := group.Parked{Group: g, Topic: fresh.TopicRef(), Partition: 0, Key: key, FirstOffset: 1, LastOffset: 1,
				Records: 1, Error: "boom", Attempts: 1, ParkedAt: time.UnixMilli(time.Now().UnixMilli()), ParkOffset: -1}
			if err := ad.PutParked(ctx, row, m, fresh.Generation); err != nil {
				t.Fatal(err)
			}

			ref := old.TopicRef()
			_, err = ad.Poll(ctx, ref, 0, 0, log.PollOptions{MaxRecords: 10})
			fencedAnswer(t, "poll", err)
			fencedAnswer(t, "commit", ad.Commit(ctx, g, ref, 0, m, old.Generation, 2))
			zombieRow := row
			zombieRow.Topic, zombieRow.Key, zombieRow.Error = ref, []byte("other"), "zombie"
			fencedAnswer(t, "park", ad.PutParked(ctx, zombieRow, m, old.Generation))
			fencedAnswer(t, "unpark", ad.Unpark(ctx, g, ref, 0, key, m, old.Generation))
			_, err = ad.ParkedOf(ctx, g, ref, 0)
			fencedAnswer(t, "parked rows read", err)
			_, err = ad.Renew(ctx, g, ref, 0, m, old.Generation, ttl)
			fencedAnswer(t, "renew", err)
			fencedAnswer(t, "release", ad.Release(ctx, g, ref, 0, m, old.Generation))

			// Nothing of it reached the successor: no position, the lease still held,
			// the parked row as its run wrote it and alone.
			desc, err := c.DescribeGroup(ctx, g)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range desc.Partitions {
				if p.Topic == topic && p.Partition == 0 && (p.CommittedOffset != nil || p.Owner != m || p.Generation != fresh.Generation) {
					t.Errorf("successor's partition after the zombie's calls: committed %v, owner %q, generation %d; want none, %q, %d",
						p.CommittedOffset, p.Owner, p.Generation, m, fresh.Generation)
				}
			}
			rows, err := ad.ParkedOf(ctx, g, fresh.TopicRef(), 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 1 || !slices.Equal(rows[0].Key, key) || rows[0].Error != "boom" {
				t.Errorf("successor's parked rows after the zombie's calls: %+v, want only its own key %q", rows, key)
			}
			// The successor's own run carries on.
			if _, err := ad.Renew(ctx, g, fresh.TopicRef(), 0, m, fresh.Generation, ttl); err != nil {
				t.Fatalf("successor's renew: %v", err)
			}
			res, err := ad.Poll(ctx, fresh.TopicRef(), 0, 0, log.PollOptions{MaxRecords: 10})
			if err != nil || len(res.Records) != 3 {
				t.Fatalf("successor's poll: %d records, %v; want 3", len(res.Records), err)
			}
			if err := ad.Commit(ctx, g, fresh.TopicRef(), 0, m, fresh.Generation, 3); err != nil {
				t.Fatalf("successor's commit: %v", err)
			}
		})
	}
}

// TestHTTPMemberHeartbeatLosesLeaseOfDeletedIncarnation: a member's heartbeat names
// the incarnation of each lease it holds, so after delete + re-create the lease of the
// deleted topic comes back lost (its run stops) instead of being renewed as the new
// topic's partition, which the member then takes afresh.
func TestHTTPMemberHeartbeatLosesLeaseOfDeletedIncarnation(t *testing.T) {
	ctx := context.Background()
	c := assembledServer(t, stratanode.BackendLocal)
	const g, topic, m = "zombies", "orders", "m"
	if _, err := c.CreateTopic(ctx, topic, client.TopicConfig{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	b := httpconsumer.NewMemberBalancer(c, g, topic, m, 30*time.Second)
	first, err := b.Step(ctx)
	if err != nil || len(first.Acquired) != 1 {
		t.Fatalf("first step: %+v, %v; want one lease", first, err)
	}
	if err := c.DeleteTopic(ctx, topic); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, topic, client.TopicConfig{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	// The new topic's partition is free: a fresh lease of this member at generation 1.
	if _, err := c.Lease(ctx, g, topic, 0, m, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	next, err := b.Step(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(next.Lost, 0) {
		t.Fatalf("step after re-create: lost %v, want partition 0 (its lease's incarnation was deleted)", next.Lost)
	}
}
