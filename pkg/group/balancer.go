package group

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

// BalancerConfig wires a Balancer. Every field is required except Clock (time.Now).
type BalancerConfig struct {
	// Store must be the view of the store the members' Coordinator uses — over a log,
	// ByIncarnation(meta, log), as Coordinator.Step passes — so that both key leases by
	// the topic's incarnation.
	Store  Store
	Group  string
	Topic  string
	Member string
	// Partitions is the topic's partition count.
	Partitions int32
	// TTL is both the lease TTL and the member heartbeat TTL; step at least every
	// TTL/3 so neither lapses.
	TTL   time.Duration
	Clock func() time.Time
}

// Balancer spreads a topic's partitions over a group's live members, the way the
// Kinesis Client Library does: each member heartbeats, takes free or expired leases up
// to its fair share ceil(P / live members), and hands back extras over the share for
// its caller to commit and release. It is a step function: the caller calls Step once
// per renew interval, so there are no goroutines or sleeps inside and tests drive it
// with a fake clock. It never takes a live lease from another member: an overloaded
// member hands its extras back at its own next step, and a dead member's partitions
// move once its leases and heartbeat expire. It is not safe for concurrent use.
type Balancer struct {
	cfg     BalancerConfig
	start   int32 // where this member starts scanning, spreading members' first picks
	ensured bool
	held    map[int32]Lease
	takes   int64
}

// NewBalancer checks cfg and returns a Balancer holding nothing.
func NewBalancer(cfg BalancerConfig) (*Balancer, error) {
	if cfg.Store == nil {
		return nil, invalidf("balancer needs a store")
	}
	if err := checkNames(cfg.Group, cfg.Topic, 0); err != nil {
		return nil, err
	}
	if err := checkMember(cfg.Member, 0, false); err != nil {
		return nil, err
	}
	if cfg.Partitions < 1 {
		return nil, invalidf("partition count %d is not positive", cfg.Partitions)
	}
	if cfg.TTL <= 0 {
		return nil, invalidf("ttl %s is not positive", cfg.TTL)
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	h := fnv.New32a()
	h.Write([]byte(cfg.Member))
	return &Balancer{
		cfg:   cfg,
		start: int32(h.Sum32() % uint32(cfg.Partitions)),
		held:  map[int32]Lease{},
	}, nil
}

// StepResult is what one Step did and what the caller must do next.
type StepResult struct {
	// Acquired are the leases taken by this step, with their committed offsets.
	Acquired []Lease
	// Lost are partitions whose renewal was fenced: another member owns them now, so
	// the caller must stop processing them and must not commit them.
	Lost []int32
	// Release are leases held over the fair share: the caller should commit their
	// progress, then call Balancer.Release. They stay held (and renewed) until then.
	Release []Lease
	// LiveMembers and FairShare are what this step saw.
	LiveMembers int
	FairShare   int
	// Takes is the number of ownership changes this step made (the rebalance metric).
	Takes int
}

// Step heartbeats the member, renews its leases, takes free or expired leases up to
// its fair share and reports any extras to release. It reads (members, leases),
// decides with the pure planBalance, then applies the plan. A member holding no lease
// in a group with live Kafka members gets ErrKafkaGroup and changes nothing. An error
// leaves the Balancer consistent; the caller retries at the next interval.
func (b *Balancer) Step(ctx context.Context) (StepResult, error) {
	var res StepResult
	cfg := b.cfg
	now := cfg.Clock()
	exp := now.Add(cfg.TTL)
	if len(b.held) == 0 {
		// A member holding nothing is starting (or waiting for a share): it stays out
		// of a group Kafka members hold, before its heartbeat makes it a member.
		if err := refuseKafkaGroup(ctx, cfg.Store, cfg.Group, now); err != nil {
			return res, err
		}
	}
	if !b.ensured {
		if err := createGroupIfAbsent(ctx, cfg.Store, cfg.Group, now); err != nil {
			return res, err
		}
		b.ensured = true
	}
	// The heartbeat and the renewals are due every step, whatever the plan says.
	if err := cfg.Store.Heartbeat(ctx, store.Member{Group: cfg.Group, ID: cfg.Member, ExpiresAt: exp}); err != nil {
		return res, fmt.Errorf("group: heartbeat of %q in %s: %w", cfg.Member, cfg.Group, err)
	}
	for _, p := range b.heldPartitions() {
		l := b.held[p]
		a, err := cfg.Store.RenewLease(ctx, cfg.Group, l.TopicRef(), p, cfg.Member, l.Generation, exp)
		if errors.Is(err, store.ErrFenced) {
			delete(b.held, p)
			res.Lost = append(res.Lost, p)
			continue
		}
		if err != nil {
			return res, fmt.Errorf("group: renew %s %s/%d: %w", cfg.Group, cfg.Topic, p, err)
		}
		l.ExpiresAt = a.ExpiresAt
		b.held[p] = l
	}
	// Read.
	members, err := cfg.Store.LiveMembers(ctx, cfg.Group, now)
	if err != nil {
		return res, fmt.Errorf("group: live members of %s: %w", cfg.Group, err)
	}
	view := balanceView{Partitions: cfg.Partitions, Start: b.start, Held: b.heldPartitions(), LiveMembers: len(members)}
	if len(view.Held) < fairShare(view.Partitions, view.LiveMembers) {
		rows, err := cfg.Store.ListAssignments(ctx, cfg.Group)
		if err != nil {
			return res, fmt.Errorf("group: list leases of %s: %w", cfg.Group, err)
		}
		for _, a := range rows {
			if a.Topic == cfg.Topic && a.Live(now) && a.Owner != cfg.Member {
				view.Busy = append(view.Busy, a.Partition)
			}
		}
	}
	// Decide.
	pl := planBalance(view)
	res.LiveMembers, res.FairShare = pl.LiveMembers, pl.Share
	// Apply.
	for _, p := range pl.Take {
		if len(b.held) >= pl.Share {
			break
		}
		if err := b.acquire(ctx, p, now, exp, &res); err != nil {
			return res, err
		}
	}
	for _, p := range pl.Release {
		res.Release = append(res.Release, b.held[p])
	}
	return res, nil
}

// balanceView is what a step knows when it decides: the topic's partition count, where
// this member starts scanning, the partitions it holds (sorted), how many members are
// live, and the partitions other members hold live leases on (read only when the
// member is under its share).
type balanceView struct {
	Partitions  int32
	Start       int32
	Held        []int32
	LiveMembers int
	Busy        []int32
}

// balancePlan is a step's decision: the fair share, the partitions to try to take in
// order (the step stops once it holds its share; an acquire another member won is
// skipped), and the held extras to hand back.
type balancePlan struct {
	LiveMembers, Share int
	Take               []int32
	Release            []int32
}

// fairShare is ceil(partitions / live members), counting this member when no one is
// live yet.
func fairShare(partitions int32, live int) int {
	live = max(live, 1)
	return (int(partitions) + live - 1) / live
}

// planBalance is the balancer's pure decision, as KCL does it: under the fair share,
// take free or expired partitions scanning from Start; over it, hand back the highest
// held partitions. It never takes a partition another member holds live.
func planBalance(v balanceView) balancePlan {
	pl := balancePlan{LiveMembers: max(v.LiveMembers, 1), Share: fairShare(v.Partitions, v.LiveMembers)}
	if extra := len(v.Held) - pl.Share; extra > 0 {
		pl.Release = append([]int32(nil), v.Held[len(v.Held)-extra:]...)
		return pl
	}
	if len(v.Held) == pl.Share {
		return pl
	}
	skip := make(map[int32]bool, len(v.Held)+len(v.Busy))
	for _, p := range v.Held {
		skip[p] = true
	}
	for _, p := range v.Busy {
		skip[p] = true
	}
	for i := range v.Partitions {
		if p := (v.Start + i) % v.Partitions; !skip[p] {
			pl.Take = append(pl.Take, p)
		}
	}
	return pl
}

// acquire takes partition's lease with its committed offset; a lease another member
// took since the listing is skipped.
func (b *Balancer) acquire(ctx context.Context, p int32, now, exp time.Time, res *StepResult) error {
	cfg := b.cfg
	a, err := cfg.Store.AcquireLease(ctx, cfg.Group, cfg.Topic, p, cfg.Member, now, exp)
	if errors.Is(err, store.ErrLeaseHeld) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("group: acquire %s %s/%d: %w", cfg.Group, cfg.Topic, p, err)
	}
	b.takes++
	res.Takes++
	ref := store.TopicRef(cfg.Topic, a.Incarnation)
	committed, completed, err := committedOffset(ctx, cfg.Store, cfg.Group, ref, p)
	if err != nil {
		// Without its position the caller cannot process it: hand it back now rather
		// than sit on it until the lease expires.
		if rerr := cfg.Store.ReleaseLease(ctx, cfg.Group, ref, p, cfg.Member, a.Generation); rerr != nil {
			return errors.Join(err, rerr)
		}
		return err
	}
	l := leaseOf(a, committed, completed)
	b.held[p] = l
	res.Acquired = append(res.Acquired, l)
	return nil
}

// Release gives up the lease of partition (after the caller committed its progress).
// A fenced release (someone else owns it already) also drops it and returns ErrFenced.
func (b *Balancer) Release(ctx context.Context, partition int32) error {
	l, ok := b.held[partition]
	if !ok {
		return invalidf("partition %d is not held by %q", partition, b.cfg.Member)
	}
	err := b.cfg.Store.ReleaseLease(ctx, b.cfg.Group, l.TopicRef(), partition, b.cfg.Member, l.Generation)
	if err == nil || errors.Is(err, store.ErrFenced) {
		delete(b.held, partition)
	}
	if err != nil {
		return fmt.Errorf("group: release %s %s/%d: %w", b.cfg.Group, b.cfg.Topic, partition, err)
	}
	return nil
}

// Leave releases every held lease (commit first) and removes the member, so the others
// rebalance at their next step instead of waiting for expiries.
func (b *Balancer) Leave(ctx context.Context) error {
	var errs []error
	for _, p := range b.heldPartitions() {
		if err := b.Release(ctx, p); err != nil && !errors.Is(err, store.ErrFenced) {
			errs = append(errs, err)
		}
	}
	if err := b.cfg.Store.RemoveMember(ctx, b.cfg.Group, b.cfg.Member); err != nil {
		errs = append(errs, fmt.Errorf("group: remove member %q of %s: %w", b.cfg.Member, b.cfg.Group, err))
	}
	return errors.Join(errs...)
}

// Held returns the leases this member holds, by partition.
func (b *Balancer) Held() []Lease {
	out := make([]Lease, 0, len(b.held))
	for _, p := range b.heldPartitions() {
		out = append(out, b.held[p])
	}
	return out
}

// Takes is the number of ownership changes this Balancer has made since it was built.
func (b *Balancer) Takes() int64 { return b.takes }

func (b *Balancer) heldPartitions() []int32 {
	ps := make([]int32, 0, len(b.held))
	for p := range b.held {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}
