package httpconsumer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/group"
)

// Record is what a GroupConsumer's handler receives: the record with its topic,
// partition, delivery attempt and fencing token for business writes (consumer.Record).
type Record = consumer.Record

// Handler handles one record; an error makes the consumer retry it with backoff, then
// dead-letter it (consumer.Handler). It must honour ctx: a partition moving to another
// member cancels it.
type Handler = consumer.Handler

// Rebalance is what changed at one heartbeat of a GroupConsumer.
type Rebalance struct {
	// Assigned are the partitions this member took at this heartbeat, Revoked those it
	// lost or handed back; Held is what it holds after it. All are in order.
	Assigned, Revoked, Held []int32
	// LiveMembers is how many members the group has on the topic, this one included.
	LiveMembers int
}

// GroupStats is what a GroupConsumer did so far, over every run of every partition.
type GroupStats struct {
	Member string
	// Held is the partitions held after the last heartbeat, LiveMembers the group's
	// members then.
	Held        []int32
	LiveMembers int
	Handled     int64 // records whose handler succeeded
	Failures    int64 // handler errors (each is retried or, after the last attempt, dead-lettered)
	// DeadLettered, Dropped, RecordsLost and Remembered (completed by an earlier run
	// above its commit, so skipped) count as consumer.Stats does, over the partition
	// runs that ended.
	DeadLettered, Dropped, RecordsLost, Remembered int64
	// Parked and Replayed count records sent to the group's parking topic and parked
	// records handed to the handler again by a release (on_failure "park"), over the
	// partition runs that ended; ParkedLost the parked records a release no longer
	// found (the parking topic's retention took them).
	Parked, Replayed, ParkedLost int64
	Runs                         int64 // partition runs that ended
	FencedRuns                   int64 // runs that ended because the partition moved
}

// GroupOption configures a GroupConsumer.
type GroupOption func(*groupConfig)

type groupConfig struct {
	cfg                 consumer.Config
	onAssigned          func(context.Context, []int32)
	onRevoked           func(context.Context, []int32)
	onRebalance         func(context.Context, Rebalance)
	tweak               []func(*consumer.Config)
	adapterOpts         []AdapterOption
	memberSet, ttlIsSet bool
}

// WithMember names this member in the group (default: hostname-pid-random, unique
// per GroupConsumer). A restarted process under the same name resumes its leases.
func WithMember(name string) GroupOption {
	return func(g *groupConfig) { g.cfg.Member, g.memberSet = name, true }
}

// WithWorkers handles the records of each held partition with n workers in parallel
// (default 1); commits stay at the contiguous completed prefix.
func WithWorkers(n int) GroupOption { return func(g *groupConfig) { g.cfg.Workers = n } }

// WithOrderedKeys hands every record of one key to the same worker, in offset order.
func WithOrderedKeys() GroupOption { return func(g *groupConfig) { g.cfg.OrderedKeys = true } }

// WithLeaseTTL sets the lease and membership TTL (default 30 s). The heartbeat runs
// every ttl/3, so a member that stops is replaced within about ttl.
func WithLeaseTTL(ttl time.Duration) GroupOption {
	return func(g *groupConfig) { g.cfg.LeaseTTL, g.ttlIsSet = ttl, true }
}

// WithPollRecords sets how many records one poll asks for (default 500).
func WithPollRecords(n int) GroupOption { return func(g *groupConfig) { g.cfg.PollRecords = n } }

// WithResetPolicy overrides the group's reset policy for this member: "earliest",
// "latest" or "fail" (default: the group's stored policy; a new group's is earliest).
func WithResetPolicy(p string) GroupOption { return func(g *groupConfig) { g.cfg.ResetPolicy = p } }

// WithLogger receives failed heartbeats, releases and partition runs that ended on
// their own (default slog.Default()).
func WithLogger(l *slog.Logger) GroupOption { return func(g *groupConfig) { g.cfg.Logger = l } }

// WithOnAssigned calls f with the partitions taken at a heartbeat, before their runs
// start. f runs on the heartbeat loop: it must return quickly.
func WithOnAssigned(f func(ctx context.Context, partitions []int32)) GroupOption {
	return func(g *groupConfig) { g.onAssigned = f }
}

// WithOnRevoked calls f with the partitions lost or handed back at a heartbeat, and
// with everything still held when Run ends. A handed-back partition's run commits its
// completed prefix and releases after f returns; a lost one was fenced already (its
// commits refused), so f must not assume its records were committed. f runs on the
// heartbeat loop: it must return quickly.
func WithOnRevoked(f func(ctx context.Context, partitions []int32)) GroupOption {
	return func(g *groupConfig) { g.onRevoked = f }
}

// WithOnRebalance calls f after the first heartbeat and after each one that changed
// the partitions held (after WithOnAssigned's and WithOnRevoked's callbacks). f runs
// on the heartbeat loop: it must return quickly.
func WithOnRebalance(f func(ctx context.Context, r Rebalance)) GroupOption {
	return func(g *groupConfig) { g.onRebalance = f }
}

// WithConsumerConfig adjusts the pkg/consumer configuration after the other options
// (max attempts, dead-letter topic, backoff, in-flight bounds, commit interval, clock,
// metrics, and whatever pkg/consumer adds later). Group, Topic, Member, Handler and
// LeaseTTL are the GroupConsumer's own: changes to them are ignored.
func WithConsumerConfig(f func(*consumer.Config)) GroupOption {
	return func(g *groupConfig) { g.tweak = append(g.tweak, f) }
}

// WithAdapterOptions passes options to the ConsumerAdapter underneath (its clock).
func WithAdapterOptions(opts ...AdapterOption) GroupOption {
	return func(g *groupConfig) { g.adapterOpts = append(g.adapterOpts, opts...) }
}

// GroupConsumer is one member of a consumer group on a topic over Strata's HTTP API,
// made in one call: it joins the group, shares the topic's partitions with the other
// members (lease + heartbeat), runs each held partition (poll → handle → commit the
// contiguous completed prefix) and follows rebalances, like franz-go's consumer group
// or a KCL record processor. It is NewConsumerAdapter, consumer.New, NewMemberBalancer
// and consumer.RunMember wired with one group, topic, member and TTL.
type GroupConsumer struct {
	c                    *client.Client
	group, topic, member string
	ttl                  time.Duration
	cons                 *consumer.Consumer
	gc                   groupConfig
	running              atomic.Bool

	handled, failures atomic.Int64

	mu          sync.Mutex
	held        []int32
	liveMembers int
	ended       consumer.Stats // summed over ended runs
	runs, fence int64
}

// ErrRunning is returned by Run on a GroupConsumer that is running already.
var ErrRunning = errors.New("httpconsumer: group consumer is running already")

// NewGroupConsumer returns the member of group on topic that hands each record to
// handle; Run starts it. Records are delivered at least once: a record is committed
// only once its handler returned nil (or it was dead-lettered), so one whose member
// stopped before that is delivered again to whichever member takes its partition.
func NewGroupConsumer(c *client.Client, group, topic string, handle Handler, opts ...GroupOption) (*GroupConsumer, error) {
	if c == nil {
		return nil, errors.New("httpconsumer: a client is required")
	}
	var gc groupConfig
	for _, o := range opts {
		o(&gc)
	}
	if !gc.memberSet {
		m, err := defaultMember()
		if err != nil {
			return nil, err
		}
		gc.cfg.Member = m
	}
	if gc.cfg.LeaseTTL <= 0 {
		if gc.ttlIsSet {
			return nil, fmt.Errorf("httpconsumer: lease TTL must be positive, got %s", gc.cfg.LeaseTTL)
		}
		gc.cfg.LeaseTTL = groupDefaultTTL
	}
	g := &GroupConsumer{c: c, group: group, topic: topic, member: gc.cfg.Member, ttl: gc.cfg.LeaseTTL, gc: gc}
	cfg := gc.cfg
	for _, f := range gc.tweak {
		f(&cfg)
	}
	cfg.Group, cfg.Topic, cfg.Member, cfg.LeaseTTL = group, topic, g.member, g.ttl
	if handle == nil {
		return nil, errors.New("httpconsumer: a handler is required")
	}
	cfg.Handler = func(ctx context.Context, r consumer.Record) error {
		err := handle(ctx, r)
		if err != nil {
			g.failures.Add(1)
		} else {
			g.handled.Add(1)
		}
		return err
	}
	cfg.Metrics = &statsSink{g: g, next: cfg.Metrics}
	ad := NewConsumerAdapter(c, gc.adapterOpts...)
	cons, err := consumer.New(ad, ad, cfg)
	if err != nil {
		return nil, fmt.Errorf("httpconsumer: group %q topic %q: %w", group, topic, err)
	}
	g.cons = cons
	return g, nil
}

// groupDefaultTTL is the lease TTL without WithLeaseTTL: the contract's default.
const groupDefaultTTL = group.DefaultTTL

// defaultMember is hostname-pid-random: unique per GroupConsumer, recognisable in
// `strata groups describe`.
func defaultMember() (string, error) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "member"
	}
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("httpconsumer: member name: %w", err)
	}
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:])), nil
}

// Member is this member's name in the group.
func (g *GroupConsumer) Member() string { return g.member }

// HeartbeatInterval is how often the member heartbeats: a third of the lease TTL.
func (g *GroupConsumer) HeartbeatInterval() time.Duration { return g.ttl / 3 }

// Run consumes until ctx ends, then commits what each partition completed, releases
// its leases and leaves the group (so the others take over at once), and returns nil.
// Failed heartbeats and partition runs are logged and retried: only ctx ends Run.
// A GroupConsumer runs once at a time; it may run again after Run returned.
func (g *GroupConsumer) Run(ctx context.Context) error {
	if !g.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer g.running.Store(false)
	bal := &rebalancer{MemberBalancer: NewMemberBalancer(g.c, g.group, g.topic, g.member, g.ttl), g: g}
	err := g.cons.RunMember(ctx, bal, g.HeartbeatInterval())
	g.mu.Lock()
	last := g.held
	g.held = nil
	g.mu.Unlock()
	if len(last) > 0 && g.gc.onRevoked != nil {
		g.gc.onRevoked(context.WithoutCancel(ctx), last)
	}
	return err
}

// Stats returns what the member did so far. It is safe to call while Run runs.
func (g *GroupConsumer) Stats() GroupStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return GroupStats{Member: g.member, Held: slices.Clone(g.held), LiveMembers: g.liveMembers,
		Handled: g.handled.Load(), Failures: g.failures.Load(),
		DeadLettered: g.ended.DeadLettered, Dropped: g.ended.Dropped, RecordsLost: g.ended.RecordsLost,
		Remembered: g.ended.Remembered, Parked: g.ended.Parked, Replayed: g.ended.Replayed, ParkedLost: g.ended.ParkedLost, Runs: g.runs, FencedRuns: g.fence}
}

// statsSink sums the Stats of ended runs and passes them on to the configured Metrics.
type statsSink struct {
	g    *GroupConsumer
	next consumer.Metrics
}

func (s *statsSink) ConsumerRun(grp, topic string, st consumer.Stats) {
	s.g.mu.Lock()
	s.g.ended.DeadLettered += st.DeadLettered
	s.g.ended.Dropped += st.Dropped
	s.g.ended.RecordsLost += st.RecordsLost
	s.g.ended.Remembered += st.Remembered
	s.g.ended.Parked += st.Parked
	s.g.ended.Replayed += st.Replayed
	s.g.ended.ParkedLost += st.ParkedLost
	s.g.runs++
	if st.Fenced {
		s.g.fence++
	}
	s.g.mu.Unlock()
	if s.next != nil {
		s.next.ConsumerRun(grp, topic, st)
	}
}

// rebalancer is the MemberBalancer that tells the GroupConsumer (and its callbacks)
// what each heartbeat changed.
type rebalancer struct {
	*MemberBalancer
	g       *GroupConsumer
	stepped bool
}

// Step implements consumer.Balancer.
func (b *rebalancer) Step(ctx context.Context) (group.StepResult, error) {
	res, err := b.MemberBalancer.Step(ctx)
	if err != nil {
		return res, err
	}
	held := b.Held()
	for _, l := range res.Release {
		held = slices.DeleteFunc(held, func(p int32) bool { return p == l.Partition })
	}
	g := b.g
	g.mu.Lock()
	r := planRebalance(g.held, held, res.LiveMembers)
	g.held, g.liveMembers = held, res.LiveMembers
	g.mu.Unlock()
	first := !b.stepped
	b.stepped = true
	if len(r.Revoked) > 0 && g.gc.onRevoked != nil {
		g.gc.onRevoked(ctx, r.Revoked)
	}
	if len(r.Assigned) > 0 && g.gc.onAssigned != nil {
		g.gc.onAssigned(ctx, r.Assigned)
	}
	if (first || len(r.Assigned) > 0 || len(r.Revoked) > 0) && g.gc.onRebalance != nil {
		g.gc.onRebalance(ctx, r)
	}
	return res, nil
}

// planRebalance is what a heartbeat changed: held before and after (both in order).
func planRebalance(before, after []int32, live int) Rebalance {
	r := Rebalance{Held: slices.Clone(after), LiveMembers: live}
	for _, p := range after {
		if !slices.Contains(before, p) {
			r.Assigned = append(r.Assigned, p)
		}
	}
	for _, p := range before {
		if !slices.Contains(after, p) {
			r.Revoked = append(r.Revoked, p)
		}
	}
	return r
}
