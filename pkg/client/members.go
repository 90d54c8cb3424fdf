package client

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/stratalog/strata/pkg/wire"
)

// HeldLease is a lease a member holds, as it reports it in a heartbeat.
type HeldLease struct {
	Partition  int32
	Generation int64
	// Incarnation is the lease's (MemberLease.Incarnation): a lease of a deleted
	// incarnation then comes back in Lost, never renewed on a topic created again.
	Incarnation string
}

// MemberLease is a lease in a heartbeat's answer. CommittedOffset is set only for
// newly acquired leases (nil before the group's first commit there), and Completed
// with it: the offsets above it the last commit said were handled.
type MemberLease struct {
	Partition       int32
	Generation      int64
	ExpiresAt       time.Time
	CommittedOffset *int64
	Completed       []wire.OffsetRange
	// Incarnation is the topic incarnation the lease is of (see Lease.Incarnation).
	Incarnation string
}

// Assignment is the balancer's answer to one heartbeat of a member (docs/API.md,
// "Members"): what it acquired, what it holds after the step, what it lost to another
// member (stop at once, do not commit) and what it must hand back (commit, then
// release) because it holds more than its fair share.
type Assignment struct {
	Acquired    []MemberLease
	Held        []MemberLease
	Lost        []int32
	Release     []int32
	LiveMembers int
	FairShare   int
}

func fromWireMemberLease(w wire.MemberLease, committed *int64) MemberLease {
	return MemberLease{Partition: w.Partition, Generation: w.Generation, ExpiresAt: time.UnixMilli(w.LeaseExpiresAtMs), CommittedOffset: committed,
		Incarnation: w.Incarnation}
}

func fromWireMemberLeases(ws []wire.MemberLease) []MemberLease {
	out := make([]MemberLease, len(ws))
	for i, w := range ws {
		out[i] = fromWireMemberLease(w, nil)
	}
	return out
}

func fromWireAcquired(ws []wire.AcquiredLease) []MemberLease {
	out := make([]MemberLease, len(ws))
	for i, w := range ws {
		out[i] = fromWireMemberLease(w.MemberLease, w.CommittedOffset)
		out[i].Completed = w.Completed
	}
	return out
}

// Heartbeat is one step of member in group on topic: it keeps the member live for ttl
// (zero: the server default), renews the held leases, takes free partitions up to the
// member's fair share and names the extras to hand back. Call it every ttl/3.
func (c *Client) Heartbeat(ctx context.Context, group, topic, member string, ttl time.Duration, held []HeldLease) (*Assignment, error) {
	req := wire.Heartbeat{Member: member, TTLMs: ttlMs(ttl), Held: make([]wire.HeldLease, len(held))}
	for i, h := range held {
		req.Held[i] = wire.HeldLease(h)
	}
	var w wire.Assignment
	path := "/v1/groups/" + seg(group) + "/topics/" + seg(topic) + "/heartbeat"
	if err := c.doJSON(ctx, http.MethodPost, path, nil, req, &w); err != nil {
		return nil, fmt.Errorf("strata: heartbeat of %q in %s on %q: %w", member, group, topic, err)
	}
	return &Assignment{Acquired: fromWireAcquired(w.Acquired), Held: fromWireMemberLeases(w.Held),
		Lost: w.Lost, Release: w.Release, LiveMembers: w.LiveMembers, FairShare: w.FairShare}, nil
}

// LeaveGroup removes member from the group's live members (release its leases first),
// so the others rebalance at their next heartbeat.
func (c *Client) LeaveGroup(ctx context.Context, group, member string) error {
	if err := c.doJSON(ctx, http.MethodDelete, "/v1/groups/"+seg(group)+"/members", nil, wire.Leave{Member: member}, nil); err != nil {
		return fmt.Errorf("strata: leave %s as %q: %w", group, member, err)
	}
	return nil
}
