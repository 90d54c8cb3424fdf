package httpconsumer

import (
	"context"
	"errors"
	"fmt"
	"github.com/stratalog/strata/pkg/client"
	"sort"
	"sync"
	"time"

	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/wire"
)

// MemberBalancer is consumer.Balancer over HTTP: each Step is one Heartbeat carrying
// the leases this member holds, and the server's balancer decides what it takes, loses
// and hands back (docs/API.md, "Members"). With consumer.RunMember it makes members of
// one group in different processes share a topic's partitions. client.Lease expiries it
// reports are local deadlines (see ConsumerAdapter). It is safe for concurrent use.
type MemberBalancer struct {
	c                    *client.Client
	group, topic, member string
	ttl                  time.Duration
	now                  func() time.Time

	mu   sync.Mutex
	held map[int32]client.HeldLease // partition → its lease's generation and incarnation
}

// NewMemberBalancer returns the balancer of member in group on topic, with lease and
// heartbeat TTL ttl (zero: the server default); step it every ttl/3.
func NewMemberBalancer(c *client.Client, group, topic, member string, ttl time.Duration) *MemberBalancer {
	return &MemberBalancer{c: c, group: group, topic: topic, member: member, ttl: ttl, now: time.Now, held: map[int32]client.HeldLease{}}
}

func (b *MemberBalancer) heldList() []client.HeldLease {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]client.HeldLease, 0, len(b.held))
	for _, h := range b.held {
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Partition < out[j].Partition })
	return out
}

// Step implements consumer.Balancer.
func (b *MemberBalancer) Step(ctx context.Context) (group.StepResult, error) {
	sent := b.now()
	a, err := b.c.Heartbeat(ctx, b.group, b.topic, b.member, b.ttl, b.heldList())
	if err != nil {
		return group.StepResult{}, groupError(err)
	}
	ttl := b.ttl
	if ttl == 0 {
		ttl = group.DefaultTTL
	}
	// The leases name their incarnation: the runs pass Lease.TopicRef as their topic.
	lease := func(h client.HeldLease, committed *int64, completed []wire.OffsetRange) group.Lease {
		return group.Lease{Group: b.group, Topic: b.topic, Partition: h.Partition, Member: b.member, Generation: h.Generation,
			ExpiresAt: sent.Add(ttl), Committed: committed, Completed: group.FromWire(completed), Incarnation: h.Incarnation}
	}
	res := group.StepResult{Lost: a.Lost, LiveMembers: a.LiveMembers, FairShare: a.FairShare, Takes: len(a.Acquired)}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range a.Lost {
		delete(b.held, p)
	}
	for _, l := range a.Acquired {
		h := client.HeldLease{Partition: l.Partition, Generation: l.Generation, Incarnation: l.Incarnation}
		b.held[l.Partition] = h
		res.Acquired = append(res.Acquired, lease(h, l.CommittedOffset, l.Completed))
	}
	for _, p := range a.Release {
		if h, ok := b.held[p]; ok {
			res.Release = append(res.Release, lease(h, nil, nil))
		}
	}
	return res, nil
}

// Release implements consumer.Balancer: it gives back partition's lease (a fenced
// release, the lease being someone else's already, also forgets it).
func (b *MemberBalancer) Release(ctx context.Context, partition int32) error {
	b.mu.Lock()
	h, ok := b.held[partition]
	b.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: partition %d is not held by %q", group.ErrInvalid, partition, b.member)
	}
	err := groupError(b.c.Release(ctx, b.group, client.TopicRef(b.topic, h.Incarnation), partition, b.member, h.Generation))
	if err == nil || errors.Is(err, group.ErrFenced) {
		b.mu.Lock()
		delete(b.held, partition)
		b.mu.Unlock()
	}
	return err
}

// Leave implements consumer.Balancer: it releases what it still holds and leaves the
// group.
func (b *MemberBalancer) Leave(ctx context.Context) error {
	var errs []error
	for _, h := range b.heldList() {
		if err := b.Release(ctx, h.Partition); err != nil && !errors.Is(err, group.ErrFenced) {
			errs = append(errs, err)
		}
	}
	if err := b.c.LeaveGroup(ctx, b.group, b.member); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Held returns the partitions this member holds, in order.
func (b *MemberBalancer) Held() []int32 {
	hs := b.heldList()
	out := make([]int32, len(hs))
	for i, h := range hs {
		out[i] = h.Partition
	}
	return out
}
