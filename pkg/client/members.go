package client

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// HeldLease is a lease a member holds, as it reports it in a heartbeat.
type HeldLease struct {
	Partition  int32
	Generation int64
}

// MemberLease is a lease in a heartbeat's answer. CommittedOffset is set only for
// newly acquired leases (nil before the group's first commit there).
type MemberLease struct {
	Partition       int32
	Generation      int64
	ExpiresAt       time.Time
	CommittedOffset *int64
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

type wireHeld struct {
	Partition  int32 `json:"partition"`
	Generation int64 `json:"generation"`
}

type wireHeartbeat struct {
	Member string     `json:"member"`
	TTLMs  *int64     `json:"ttl_ms,omitempty"`
	Held   []wireHeld `json:"held"`
}

type wireMemberLease struct {
	Partition        int32  `json:"partition"`
	Generation       int64  `json:"generation"`
	LeaseExpiresAtMs int64  `json:"lease_expires_at_ms"`
	CommittedOffset  *int64 `json:"committed_offset"`
}

type wireAssignment struct {
	Acquired    []wireMemberLease `json:"acquired"`
	Held        []wireMemberLease `json:"held"`
	Lost        []int32           `json:"lost"`
	Release     []int32           `json:"release"`
	LiveMembers int               `json:"live_members"`
	FairShare   int               `json:"fair_share"`
}

type wireLeave struct {
	Member string `json:"member"`
}

func fromWireMemberLeases(ws []wireMemberLease) []MemberLease {
	out := make([]MemberLease, len(ws))
	for i, w := range ws {
		out[i] = MemberLease{Partition: w.Partition, Generation: w.Generation, ExpiresAt: time.UnixMilli(w.LeaseExpiresAtMs), CommittedOffset: w.CommittedOffset}
	}
	return out
}

// Heartbeat is one step of member in group on topic: it keeps the member live for ttl
// (zero: the server default), renews the held leases, takes free partitions up to the
// member's fair share and names the extras to hand back. Call it every ttl/3.
func (c *Client) Heartbeat(ctx context.Context, group, topic, member string, ttl time.Duration, held []HeldLease) (*Assignment, error) {
	req := wireHeartbeat{Member: member, TTLMs: ttlMs(ttl), Held: make([]wireHeld, len(held))}
	for i, h := range held {
		req.Held[i] = wireHeld(h)
	}
	var w wireAssignment
	path := "/v1/groups/" + seg(group) + "/topics/" + seg(topic) + "/heartbeat"
	if err := c.doJSON(ctx, http.MethodPost, path, nil, req, &w); err != nil {
		return nil, fmt.Errorf("strata: heartbeat of %q in %s on %q: %w", member, group, topic, err)
	}
	return &Assignment{Acquired: fromWireMemberLeases(w.Acquired), Held: fromWireMemberLeases(w.Held),
		Lost: w.Lost, Release: w.Release, LiveMembers: w.LiveMembers, FairShare: w.FairShare}, nil
}

// LeaveGroup removes member from the group's live members (release its leases first),
// so the others rebalance at their next heartbeat.
func (c *Client) LeaveGroup(ctx context.Context, group, member string) error {
	if err := c.doJSON(ctx, http.MethodDelete, "/v1/groups/"+seg(group)+"/members", nil, wireLeave{Member: member}, nil); err != nil {
		return fmt.Errorf("strata: leave %s as %q: %w", group, member, err)
	}
	return nil
}
