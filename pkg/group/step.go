package group

import (
	"context"
	"fmt"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

// HeldLease is a lease a remote member says it holds: the partition, the generation it
// was granted at and the topic incarnation it is of ("" for the live one, as older
// members say): a lease of a deleted incarnation is then lost, never renewed on the
// topic created again under the name.
type HeldLease struct {
	Partition   int32
	Generation  int64
	Incarnation string
}

// MemberStepResult is one StepMember: the balancer's decisions and the leases the member
// holds after it (renewed, with their new expiries).
type MemberStepResult struct {
	StepResult
	// Held is every lease the member holds after the step, including Acquired and
	// Release (which stay held until the member releases them).
	Held []Lease
}

// StepMember is Balancer.Step for a member that lives across the network (a `strata
// consume` process talking HTTP): the member sends the leases it holds, and the step
// heartbeats it, renews those leases (any it no longer owns come back in Lost), takes
// free or expired partitions up to its fair share and names the extras it must commit
// and release. The coordinator keeps nothing between steps, so members may talk to any
// node. A claimed lease the member does not own is fenced by the store, never taken.
func (c *Coordinator) StepMember(ctx context.Context, group, topic, member string, ttl time.Duration, held []HeldLease) (MemberStepResult, error) {
	if err := checkNames(group, topic, 0); err != nil {
		return MemberStepResult{}, err
	}
	if err := checkMember(member, 0, false); err != nil {
		return MemberStepResult{}, err
	}
	ttl, err := leaseTTL(ttl)
	if err != nil {
		return MemberStepResult{}, err
	}
	n, err := c.offsets.Partitions(ctx, topic)
	if err != nil {
		return MemberStepResult{}, fmt.Errorf("group: topic %q: %w", topic, err)
	}
	b, err := NewBalancer(BalancerConfig{Store: c.store, Group: group, Topic: topic, Member: member,
		Partitions: n, TTL: ttl, Clock: c.now})
	if err != nil {
		return MemberStepResult{}, err
	}
	seen := make(map[int32]bool, len(held))
	for _, h := range held {
		if h.Partition < 0 || h.Generation < 1 || seen[h.Partition] || (h.Incarnation != "" && !store.ValidIncarnation(h.Incarnation)) {
			return MemberStepResult{}, invalidf("held lease of partition %d at generation %d is not valid", h.Partition, h.Generation)
		}
		seen[h.Partition] = true
		if h.Partition >= n {
			continue // not renewable here; the step reports it lost below
		}
		b.held[h.Partition] = Lease{Group: group, Topic: topic, Partition: h.Partition, Member: member, Generation: h.Generation,
			Incarnation: h.Incarnation}
	}
	// A member holding leases belongs to a group that exists.
	if len(b.held) > 0 {
		b.ensured = true
	} else if err := c.ensureGroup(ctx, group, c.now()); err != nil {
		return MemberStepResult{}, err
	} else {
		b.ensured = true
	}
	res, err := b.Step(ctx)
	if err != nil {
		return MemberStepResult{}, err
	}
	for _, h := range held {
		if h.Partition >= n {
			res.Lost = append(res.Lost, h.Partition)
		}
	}
	return MemberStepResult{StepResult: res, Held: b.Held()}, nil
}

// LeaveMember removes member from the group's live members, so the others rebalance at
// their next step instead of waiting for its heartbeat to expire. The member releases
// its leases first (after committing); a missing member is not an error.
func (c *Coordinator) LeaveMember(ctx context.Context, group, member string) error {
	if !validGroup(group) {
		return invalidf("bad group name %q", group)
	}
	if err := checkMember(member, 0, false); err != nil {
		return err
	}
	if err := c.store.RemoveMember(ctx, group, member); err != nil {
		return fmt.Errorf("group: remove member %q of %s: %w", member, group, err)
	}
	return nil
}
