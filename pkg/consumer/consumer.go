// Package consumer is the runtime a consumer Lambda or a long-running service uses to
// work through one partition for a group: lease → poll → handle (in parallel, keys in
// order when asked) → commit the contiguous completed prefix → renew → release.
// Failed records are retried with backoff, then dead-lettered; a fenced commit or renew
// stops work on the partition at once. It takes the log and the coordinator as
// interfaces, so it runs in-process (log.Log, group.Coordinator) or over HTTP (pkg/client).
package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stratalog/strata/internal/ctxtime"
	"github.com/stratalog/strata/pkg/checkpoint"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/store"
)

// Log is what the consumer needs of the log. Errors must match log.ErrOffsetOutOfRange
// (as a *log.OffsetOutOfRangeError) for an offset outside the partition's bounds. A run
// polls and reads bounds with its lease's group.Lease.TopicRef as the topic (a plain
// name when the lease names no incarnation); one that is no longer the live
// incarnation must be an error matching group.ErrFenced, as *log.Log's is.
type Log interface {
	Poll(ctx context.Context, topic string, partition int32, offset int64, opt log.PollOptions) (log.PollResult, error)
	Append(ctx context.Context, topic string, recs []log.Record, opt log.AppendOptions) ([]log.Result, error)
	Bounds(ctx context.Context, topic string, partition int32) (logStart, highWatermark int64, err error)
}

// Coordinator is what the consumer needs of the group coordinator; errors must match
// group.ErrFenced and group.ErrLeaseHeld. GetSettings must return the group's stored
// settings, or an error matching group.ErrNotFound for a group that does not exist yet.
type Coordinator interface {
	GetSettings(ctx context.Context, grp string) (group.Settings, error)
	Acquire(ctx context.Context, grp, topic string, partition int32, member string, ttl time.Duration) (group.Lease, error)
	Renew(ctx context.Context, grp, topic string, partition int32, member string, generation int64, ttl time.Duration) (group.Lease, error)
	Release(ctx context.Context, grp, topic string, partition int32, member string, generation int64) error
	Commit(ctx context.Context, grp, topic string, partition int32, member string, generation, nextOffset int64, completed ...store.OffsetRange) error
}

// LeaseCommitter is a Coordinator whose commit can renew or release the lease in the
// same write (*group.Coordinator has it; group.CommitOptions.RenewTTL and Release).
// With it a run's commits renew its lease and its last commit releases it, so a run
// that makes progress sends no renew or release request of its own, and renews alone
// only when no commit did so for a third of the TTL (half of it with records in flight,
// whose commit would carry the renewal). CommitAt must behave as Commit
// with opts.Completed, and renew or release only when the commit goes through.
type LeaseCommitter interface {
	CommitAt(ctx context.Context, grp, topic string, partition int32, member string, generation, nextOffset int64, opts group.CommitOptions) error
}

// Handler handles one record; an error makes the consumer retry it, then dead-letter it.
// It must honour ctx: a fenced partition cancels it.
type Handler func(ctx context.Context, r Record) error

// Record is a record with where it came from.
type Record struct {
	segment.Record
	Topic     string
	Partition int32
	// Attempt is 1 on the first delivery in this process.
	Attempt int
	// Fence is the run's fencing token (group, topic, partition, generation and the
	// lease's topic incarnation): a business write through group.Effects with it is
	// refused once the partition moved to a newer generation or the incarnation was
	// deleted, and applied once per record.
	Fence group.Fence
}

// Reset policies for an offset below the log start (or a new group).
const (
	ResetEarliest = "earliest"
	ResetLatest   = "latest"
	ResetFail     = "fail"
)

// Headers a dead-lettered record carries besides its own. The handler's error is not
// among them (it is logged; see deadLetter).
const (
	HeaderOriginTopic     = "strata-origin-topic"
	HeaderOriginPartition = "strata-origin-partition"
	HeaderOriginOffset    = "strata-origin-offset"
	HeaderAttempts        = "strata-attempts"
)

// DefaultMaxInFlightBytes is Config.MaxInFlightBytes's default.
const DefaultMaxInFlightBytes = 64 << 20

// ErrResetPolicyFail is returned when the position fell outside the log and the policy
// is "fail".
var ErrResetPolicyFail = errors.New("consumer: position out of range and reset policy is fail")

// Metrics receives what each run of a partition did; *metrics.Metrics implements it.
// Implementations must be safe for concurrent use.
type Metrics interface {
	// ConsumerRun is called once when a run of a partition ends, however it ends.
	ConsumerRun(group, topic string, s Stats)
}

// Config configures a Consumer. Group, Topic, Member and Handler are required.
type Config struct {
	Group, Topic, Member string
	Handler              Handler
	// Workers handle records of one partition in parallel (default 1).
	Workers int
	// OrderedKeys hands all records of one key to the same worker, in offset order.
	OrderedKeys bool
	// MaxAttempts, DeadLetterTopic and ResetPolicy are the group's settings (docs/API.md,
	// "Group administration"), read from the coordinator when a run starts: unset (zero,
	// "") means the group's stored value, and a set field overrides it for this
	// consumer, logged as an override when it differs. A group not created yet has the
	// defaults its first lease gives it (earliest, 5 attempts, no dead-letter topic).
	//
	// MaxAttempts is how many times a record is handled before it is dead-lettered.
	// DeadLetterTopic receives records that failed MaxAttempts times; with none, such
	// records are skipped and counted in Stats.Dropped. ResetPolicy applies when the
	// position is below the log start or beyond the high watermark ("earliest",
	// "latest", "fail"); a new group starts as it says.
	MaxAttempts     int
	DeadLetterTopic string
	ResetPolicy     string
	// OnFailure is the group's on_failure setting ("dead_letter" or "park"; unset: the
	// group's): "park" parks the failed record's key in "<group>.parked" and forwards
	// the key's later records there, in order, while other keys flow (park.go). It
	// needs a coordinator with ParkCoordinator.
	OnFailure string
	// Backoff is the pause between attempts (default 50ms doubling to 2s).
	Backoff     func(attempt int) time.Duration
	LeaseTTL    time.Duration // default 30s; renewed every TTL/3
	PollRecords int           // default 500
	// PollWait is the long-poll wait when caught up (default 1s, or TTL/3 if shorter). A
	// poll delays the next renewal by up to its wait, so it must be at most LeaseTTL/3;
	// New refuses a longer one rather than let the lease lapse between renewals.
	PollWait time.Duration
	// MaxInFlight bounds the window from the oldest incomplete record to the newest
	// polled one (default 4 × PollRecords), and MaxInFlightBytes the bytes of polled
	// records not yet completed (default 64 MiB): when either is reached the run stops
	// polling until workers catch up. One poll answer may exceed both (a binary poll
	// answers whole commits); the run loop holds it and never waits on the workers.
	MaxInFlight      int
	MaxInFlightBytes int64
	// CommitInterval bounds how long completed work waits for a commit (default 1s, at
	// most LeaseTTL/3). A run commits only when its checkpoint moved: a partition with
	// nothing new writes nothing but its lease renewal every LeaseTTL/3.
	CommitInterval time.Duration
	// Clock is this process's clock (default time.Now). The lease is tracked on it alone,
	// as a local deadline: the clock's reading when the acquire or renew request was sent
	// plus LeaseTTL. The server's expiry is never compared with it, so a clock skewed
	// from the server's neither starves the consumer nor lets a zombie work longer.
	Clock func() time.Time
	// Logger receives what RunMember would otherwise drop: failed balancer steps,
	// releases and runs that ended on their own (default slog.Default()).
	Logger *slog.Logger
	// Metrics, when set, receives every run's Stats (Run, RunLease and RunMember's runs).
	Metrics Metrics
}

// Stats is what one run of a partition did.
type Stats struct {
	Handled      int64 // records whose handler succeeded
	Retries      int64 // handler failures that were retried
	DeadLettered int64
	Dropped      int64 // failed MaxAttempts times with no dead-letter topic configured
	RecordsLost  int64 // skipped by a reset policy because retention had removed them
	// Remembered counts records skipped, not handled, because the lease's last commit
	// named them completed (an earlier run finished them above its committed offset).
	Remembered int64
	Parked     int64 // records sent to the group's parking topic (on_failure "park")
	Replayed   int64 // parked records handed to the handler again by a release
	// ParkedLost counts parked records a release did not find: the parking topic's
	// retention took them before the release (they are not handled).
	ParkedLost int64
	Committed  int64 // the last committed next offset
	Fenced     bool
}

// Consumer runs partitions of one topic for one group member.
type Consumer struct {
	cfg   Config
	log   Log
	coord Coordinator
}

// New checks cfg and fills in its defaults.
func New(l Log, c Coordinator, cfg Config) (*Consumer, error) {
	if l == nil || c == nil || cfg.Handler == nil || cfg.Group == "" || cfg.Topic == "" || cfg.Member == "" {
		return nil, errors.New("consumer: log, coordinator, Group, Topic, Member and Handler are required")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 1
	}
	if cfg.MaxAttempts < 0 || cfg.MaxAttempts > group.MaxMaxAttempts {
		return nil, fmt.Errorf("consumer: max attempts must be 1–%d (or 0 for the group's), got %d", group.MaxMaxAttempts, cfg.MaxAttempts)
	}
	if cfg.Backoff == nil {
		cfg.Backoff = func(a int) time.Duration { return min(50*time.Millisecond<<min(a-1, 6), 2*time.Second) }
	}
	switch cfg.ResetPolicy {
	case "", ResetEarliest, ResetLatest, ResetFail:
	default:
		return nil, fmt.Errorf("consumer: unknown reset policy %q", cfg.ResetPolicy)
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = group.DefaultTTL
	}
	if cfg.PollRecords <= 0 {
		cfg.PollRecords = 500
	}
	switch {
	case cfg.PollWait <= 0:
		cfg.PollWait = min(time.Second, cfg.LeaseTTL/3)
	case cfg.PollWait > cfg.LeaseTTL/3:
		return nil, fmt.Errorf("consumer: lease TTL %s too short for poll wait %s: a poll delays the renewal every TTL/3 by up to its wait, so the wait must be at most TTL/3",
			cfg.LeaseTTL, cfg.PollWait)
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = 4 * cfg.PollRecords
	}
	if cfg.MaxInFlightBytes <= 0 {
		cfg.MaxInFlightBytes = DefaultMaxInFlightBytes
	}
	if cfg.CommitInterval <= 0 {
		cfg.CommitInterval = time.Second
	}
	cfg.CommitInterval = min(cfg.CommitInterval, cfg.LeaseTTL/3)
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Consumer{cfg: cfg, log: l, coord: c}, nil
}

// RunOptions bound one run of a partition.
type RunOptions struct {
	// UntilCaughtUp returns once every record below the high watermark seen is handled
	// and committed (a Lambda invocation); otherwise the run follows the log until ctx ends.
	UntilCaughtUp bool
	// FinishBy, when set, is when the run's last commit and release must be over: a
	// Lambda invocation's own deadline, after which the function is killed mid-request.
	// Zero gives them FinishTimeout after the run ends.
	FinishBy time.Time
}

// FinishTimeout bounds the last commit and release of a run without RunOptions.FinishBy.
const FinishTimeout = 10 * time.Second

// Run acquires the partition's lease and consumes it (see RunLease). A live lease of
// another member returns group.ErrLeaseHeld: a duplicate invocation just exits.
func (c *Consumer) Run(ctx context.Context, partition int32, opt RunOptions) (Stats, error) {
	sent := c.cfg.Clock()
	lease, err := c.coord.Acquire(ctx, c.cfg.Group, c.cfg.Topic, partition, c.cfg.Member, c.cfg.LeaseTTL)
	if err != nil {
		return Stats{}, fmt.Errorf("consumer: lease %s/%d: %w", c.cfg.Topic, partition, err)
	}
	return c.runLease(ctx, lease, sent.Add(c.cfg.LeaseTTL), opt)
}

// RunLease consumes the partition of a lease already held. It returns when ctx ends
// (after committing the contiguous completed prefix and releasing the lease), when
// caught up if asked, or at once with group.ErrFenced when the partition moved to a
// newer generation (then it commits nothing).
//
// lease.ExpiresAt must be a deadline on the consumer's Clock, as group.Balancer's
// leases (it computes the expiry before sending) and the HTTP adapter's are; it is
// capped at now + LeaseTTL.
func (c *Consumer) RunLease(ctx context.Context, lease group.Lease, opt RunOptions) (Stats, error) {
	deadline := c.cfg.Clock().Add(c.cfg.LeaseTTL)
	if lease.ExpiresAt.Before(deadline) {
		deadline = lease.ExpiresAt
	}
	return c.runLease(ctx, lease, deadline, opt)
}

func (c *Consumer) runLease(ctx context.Context, lease group.Lease, deadline time.Time, opt RunOptions) (Stats, error) {
	r := &run{c: c, lease: lease, p: lease.Partition, opt: opt, base: c.cfg.Clock(), lim: limits{
		TTL: c.cfg.LeaseTTL, CommitInterval: c.cfg.CommitInterval, PollWait: c.cfg.PollWait,
		MaxInFlight: c.cfg.MaxInFlight, MaxInFlightBytes: c.cfg.MaxInFlightBytes,
		RetryAfter: min(retryAfter, c.cfg.LeaseTTL/10), IdlePoll: idlePoll,
	}}
	r.leaseCommits, r.lim.CommitRenews = c.coord.(LeaseCommitter)
	if !r.lim.CommitRenews {
		r.leaseCommits = nil
	}
	r.setDeadline(deadline)
	st, err := r.loop(ctx)
	if c.cfg.Metrics != nil {
		c.cfg.Metrics.ConsumerRun(c.cfg.Group, c.cfg.Topic, st)
	}
	return st, err
}

// run is one partition's state while it is consumed. The loop owns every field but
// the atomics, the tracker (safe for concurrent use) and the queues.
type run struct {
	c     *Consumer
	lease group.Lease
	p     int32
	opt   RunOptions
	lim   limits
	// pol is the run's policy: the group's settings with the configuration's overrides.
	pol policy

	tracker   *checkpoint.Tracker
	stats     Stats
	committed int64
	// saved is what the last commit stored above committed, and savedAt the tracker's
	// completion count it was read at: a commit is due when either moved.
	saved   []checkpoint.Range
	savedAt int64
	fenced  atomic.Bool
	workCtx context.Context
	cancel  context.CancelFunc
	queues  []chan Record
	// pending holds each worker's polled records that its queue had no room for; the
	// loop hands them on as the queue drains and never waits for room.
	pending [][]Record
	wg      sync.WaitGroup
	handled atomic.Int64
	retries atomic.Int64
	dead    atomic.Int64
	dropped atomic.Int64
	// heldBytes counts the bytes of polled records not yet completed.
	heldBytes atomic.Int64
	// parks is the run's parked keys when the group parks (park.go), else nil.
	parks              *parking
	parkedN, replayedN atomic.Int64
	parkedLostN        atomic.Int64
	workErr            chan error
	// wake tells the loop a worker's queue has room again, or drained, or a worker
	// failed; one slot, so many signals make one wake-up.
	wake  chan struct{}
	timer *time.Timer // sleep's, reused

	// leaseCommits is the coordinator's commit that renews or releases the lease, nil
	// when it has none; lastRefresh is when the parked keys were last read.
	leaseCommits            LeaseCommitter
	lastRefresh             time.Time
	fetch, hw               int64
	lastRenew, renewRetryAt time.Time
	lastCommit              time.Time
	lastPoll, pollRetryAt   time.Time
	lastPollEmpty           bool
	oor                     *log.OffsetOutOfRangeError
	// base is the Clock's reading when the run began and leaseUntil the local lease
	// deadline as nanoseconds after it (Time.Sub uses the monotonic clock when both
	// readings have one, as time.Now's do). Workers start no record past the deadline,
	// so a process that was paused past its lease handles nothing until a renewal
	// proves it still owns the partition.
	base       time.Time
	leaseUntil atomic.Int64
	// released: the run's last commit released the lease.
	released bool
}

// Pauses of the run loop: after a failed poll or renew (at most a tenth of the TTL),
// and between polls that find nothing new while records are still being handled.
const (
	retryAfter = 100 * time.Millisecond
	idlePoll   = 5 * time.Millisecond
)

// setDeadline records the local lease deadline.
func (r *run) setDeadline(t time.Time) { r.leaseUntil.Store(int64(t.Sub(r.base))) }

// leaseLapsed reports whether the local lease deadline is at or before now.
func (r *run) leaseLapsed(now time.Time) bool { return int64(now.Sub(r.base)) >= r.leaseUntil.Load() }

// loop reads what the run knows, decides (decide, no I/O) and applies the plan, until
// the run ends. It never waits on a worker.
func (r *run) loop(ctx context.Context) (Stats, error) {
	cfg := r.c.cfg
	pol, err := r.c.policy(ctx)
	if err != nil {
		return r.finish(ctx, err)
	}
	r.pol = pol
	start, err := r.startOffset(ctx)
	if err != nil {
		return r.finish(ctx, err)
	}
	r.tracker = checkpoint.New(start)
	r.committed = start
	if r.lease.Committed != nil && *r.lease.Committed == start {
		r.remember(r.lease.Completed)
	}
	if r.lease.Committed == nil || *r.lease.Committed != start {
		// Record where a new group (or a reset) starts, so lag is measured from there.
		if err := r.commit(ctx, start, true); err != nil {
			return r.finish(ctx, err)
		}
	}
	r.workCtx, r.cancel = context.WithCancel(ctx)
	defer r.cancel()
	r.workErr = make(chan error, cfg.Workers)
	r.wake = make(chan struct{}, 1)
	r.queues = make([]chan Record, cfg.Workers)
	r.pending = make([][]Record, cfg.Workers)
	for i := range r.queues {
		r.queues[i] = make(chan Record, cfg.PollRecords)
		r.wg.Add(1)
		go r.worker(r.queues[i])
	}
	if err := r.startParking(ctx); err != nil {
		return r.finish(ctx, err)
	}
	r.fetch, r.hw = start, -1
	now := cfg.Clock()
	r.lastRenew, r.lastCommit, r.lastRefresh = now, now, now
	for {
		if ctx.Err() != nil {
			return r.finish(ctx, nil)
		}
		select {
		case err := <-r.workErr:
			return r.finish(ctx, err)
		default:
		}
		r.feed()
		p := decide(r.lim, r.observe(cfg.Clock()))
		if p.Renew {
			if err := r.renew(ctx); err != nil {
				return r.finish(ctx, err)
			}
		}
		if p.Commit {
			at, renewedAt := cfg.Clock(), r.lastRenew
			if err := r.commitCheckpoint(ctx, leaseRenew); err != nil {
				if ctx.Err() != nil && !r.fenced.Load() {
					return r.finish(ctx, nil) // stopping: finish commits without ctx
				}
				return r.finish(ctx, err)
			}
			r.lastCommit = at
			if r.lastRenew != renewedAt && !r.lastRenew.Before(r.lastRefresh.Add(r.lim.TTL/3)) {
				r.refresh(ctx) // the commit renewed the lease: read what a renew reads
			}
		}
		switch {
		case p.Done:
			return r.finish(ctx, nil)
		case p.Reposition:
			if err := r.reposition(ctx); err != nil {
				if ctx.Err() != nil && !r.fenced.Load() {
					return r.finish(ctx, nil)
				}
				return r.finish(ctx, err)
			}
		case p.Poll:
			if err := r.poll(ctx, p.PollWait); err != nil {
				return r.finish(ctx, err)
			}
		default:
			r.sleep(p.Sleep)
		}
	}
}

// observe reads what decide needs.
func (r *run) observe(now time.Time) observed {
	return observed{
		Now: now, LeaseLapsed: r.leaseLapsed(now), LastRenew: r.lastRenew, RenewRetryAt: r.renewRetryAt,
		LastCommit: r.lastCommit, Committed: r.committed, Next: r.tracker.Next(), Fetch: r.fetch,
		Unsaved:       r.tracker.Completions() != r.savedAt,
		HighWatermark: r.hw, InFlight: r.tracker.InFlight(), HeldBytes: r.heldBytes.Load(),
		LastPoll: r.lastPoll, LastPollEmpty: r.lastPollEmpty, PollRetryAt: r.pollRetryAt, OutOfRange: r.oor != nil, UntilCaughtUp: r.opt.UntilCaughtUp,
		Replaying: r.parks.pendingReplays(),
	}
}

// renew renews the lease; a failure is retried after a pause unless it was fenced or
// the local deadline passed meanwhile.
func (r *run) renew(ctx context.Context) error {
	cfg := r.c.cfg
	// The deadline counts from before the request: the server's expiry is later by at
	// least the request's transit, whatever either clock says.
	sent := cfg.Clock()
	l, err := r.c.coord.Renew(ctx, cfg.Group, r.lease.TopicRef(), r.p, cfg.Member, r.lease.Generation, cfg.LeaseTTL)
	if err != nil {
		if errors.Is(err, group.ErrFenced) {
			return r.fence(err)
		}
		now := cfg.Clock()
		if r.leaseLapsed(now) && ctx.Err() == nil {
			return fmt.Errorf("consumer: lease expired while renew failed: %w", err)
		}
		r.renewRetryAt = now.Add(r.lim.RetryAfter)
		return nil
	}
	r.lease.ExpiresAt = l.ExpiresAt
	r.renewed(sent)
	r.refresh(ctx)
	return nil
}

// renewed records a renewal of the lease sent at sent (a renew or a renewing commit).
func (r *run) renewed(sent time.Time) {
	r.setDeadline(sent.Add(r.c.cfg.LeaseTTL))
	r.lastRenew = sent
}

// refresh reads the partition's parked keys for releases asked meanwhile; a failure is
// logged and retried at the next renewal.
func (r *run) refresh(ctx context.Context) {
	r.lastRefresh = r.c.cfg.Clock()
	if err := r.refreshParked(ctx); err != nil && ctx.Err() == nil {
		r.c.cfg.Logger.Warn("consumer: reading parked keys failed; retried at the next renew", "group", r.c.cfg.Group, "err", err)
	}
}

// poll polls once from the fetch position and buffers what it answers for the
// workers; an answer may exceed PollRecords (whole commits), and is taken whole.
func (r *run) poll(ctx context.Context, wait time.Duration) error {
	cfg := r.c.cfg
	// A run that follows the log reads the partition's bounds from any replica (it polls
	// again anyway); one that ends when caught up reads them strongly, so it ends having
	// handled every record acknowledged before it looked.
	opt := log.PollOptions{MaxRecords: cfg.PollRecords, Wait: wait, WholeCommits: true, EventualReads: !r.opt.UntilCaughtUp}
	res, err := r.c.log.Poll(ctx, r.lease.TopicRef(), r.p, r.fetch, opt)
	now := cfg.Clock()
	var oor *log.OffsetOutOfRangeError
	switch {
	case errors.Is(err, group.ErrFenced):
		return r.fence(err) // the lease's topic incarnation was deleted
	case errors.As(err, &oor):
		if r.pol.ResetPolicy == ResetFail {
			return fmt.Errorf("%w: %w", ErrResetPolicyFail, oor)
		}
		r.oor = oor
		return nil
	case ctx.Err() != nil:
		return nil // the loop finishes
	case err != nil:
		r.pollRetryAt = now.Add(r.lim.RetryAfter)
		return nil
	}
	r.lastPoll, r.lastPollEmpty = now, len(res.Records) == 0
	for _, rec := range res.Records {
		// Offsets the log skips (an idempotent append's duplicate commit) complete
		// at once, so the contiguous prefix passes them.
		if err := r.tracker.Skip(rec.Offset); err != nil {
			return fmt.Errorf("consumer: %w", err)
		}
		remembered, err := r.tracker.Begin(rec.Offset)
		if err != nil {
			return fmt.Errorf("consumer: %w", err)
		}
		if remembered {
			r.stats.Remembered++ // completed by an earlier run: not handled again
			continue
		}
		r.heldBytes.Add(recordBytes(rec))
		// A parking run keeps each key on one worker: its parked records replay there.
		i := route(rec.Offset, rec.Key, len(r.queues), cfg.OrderedKeys || r.parks != nil, log.PartitionForKey)
		r.pending[i] = append(r.pending[i], Record{Record: rec, Topic: cfg.Topic, Partition: r.p, Fence: group.Fence{
			Group: cfg.Group, Topic: cfg.Topic, Incarnation: r.lease.Incarnation, Partition: r.p, Generation: r.lease.Generation}})
	}
	if err := r.tracker.Skip(res.NextOffset); err != nil {
		return fmt.Errorf("consumer: %w", err)
	}
	// The high watermark never moves back; an answer from a lagging replica may.
	r.fetch, r.hw = res.NextOffset, max(r.hw, res.HighWatermark)
	r.feed()
	return nil
}

// feed hands each worker as many of its pending records as its queue has room for.
func (r *run) feed() {
	for i, q := range r.queues {
		recs := r.pending[i]
		n := 0
		for n < len(recs) && trySend(q, recs[n]) {
			n++
		}
		if n == len(recs) {
			r.pending[i] = nil
		} else {
			r.pending[i] = recs[n:]
		}
	}
}

func trySend(q chan<- Record, rec Record) bool {
	select {
	case q <- rec:
		return true
	default:
		return false
	}
}

// sleep waits up to d for a worker's wake-up (or the run's end).
func (r *run) sleep(d time.Duration) {
	if r.timer == nil {
		r.timer = time.NewTimer(d)
	} else {
		r.timer.Reset(d)
	}
	select {
	case <-r.workCtx.Done():
	case <-r.wake:
	case <-r.timer.C:
	}
	r.timer.Stop()
}

// signal wakes the loop without waiting.
func (r *run) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// recordBytes is what a polled record holds in memory, for the window's byte bound.
func recordBytes(rec segment.Record) int64 {
	n := len(rec.Key) + len(rec.Value)
	for _, h := range rec.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return int64(n)
}

// startOffset is the committed offset, or where the reset policy starts a new group.
func (r *run) startOffset(ctx context.Context) (int64, error) {
	if r.lease.Committed != nil {
		return *r.lease.Committed, nil
	}
	start, hw, err := r.c.log.Bounds(ctx, r.lease.TopicRef(), r.p)
	if err != nil {
		return 0, err
	}
	if r.pol.ResetPolicy == ResetLatest {
		return hw, nil
	}
	return start, nil
}

// reposition applies the reset policy once the fetch position left the log and every
// record in flight is done (decide waits for that), so the tracker restarts cleanly.
func (r *run) reposition(ctx context.Context) error {
	oor, fetch := r.oor, r.fetch
	next := oor.LogStartOffset
	if r.pol.ResetPolicy == ResetLatest || fetch > oor.HighWatermark {
		next = oor.HighWatermark
	}
	if fetch < oor.LogStartOffset {
		r.stats.RecordsLost += next - fetch
	}
	r.tracker.Reset(next)
	if err := r.commit(ctx, next, true); err != nil {
		return err
	}
	r.oor, r.fetch = nil, next
	return nil
}

func (r *run) worker(q <-chan Record) {
	defer r.wg.Done()
	for {
		select {
		case <-r.workCtx.Done():
			return
		case rec := <-q:
			if rec.Attempt == replayMarker {
				if !r.awaitLease() || !r.replay(rec.Key) {
					return
				}
				continue
			}
			if !r.awaitLease() || !r.process(rec) {
				return
			}
			if err := r.tracker.Done(rec.Offset); err != nil {
				r.workErr <- fmt.Errorf("consumer: %w", err)
				r.signal()
				return
			}
			r.heldBytes.Add(-recordBytes(rec.Record))
			if len(q) <= cap(q)/2 {
				// Room for the loop to refill (and an empty queue when the run is
				// drained); decide wakes the loop for commits on its own.
				r.signal()
			}
		}
	}
}

// awaitLease waits while the local lease deadline is past; false means the run is over.
func (r *run) awaitLease() bool {
	for r.leaseLapsed(r.c.cfg.Clock()) {
		if ctxtime.Sleep(r.workCtx, time.Millisecond) != nil {
			return false
		}
	}
	return r.workCtx.Err() == nil
}

// handle runs the handler with retries, then dead-letters; false means stop (the
// record is not complete and must not be marked done).
func (r *run) handle(rec Record) bool {
	err := r.attempts(&rec)
	switch {
	case err == nil:
		return true
	case errors.Is(err, group.ErrFenced):
		return r.stopFenced(err)
	case r.workCtx.Err() != nil:
		return false
	}
	switch planFailure(r.pol.OnFailure, rec.Key, r.pol.DeadLetterTopic) {
	case failPark:
		if r.parks != nil {
			return r.parkKey(rec, err)
		}
	case failDrop:
		r.dropped.Add(1)
		return true
	}
	if r.pol.DeadLetterTopic == "" {
		r.dropped.Add(1)
		return true
	}
	if derr := r.deadLetter(rec, err); derr != nil {
		if r.workCtx.Err() == nil {
			r.workErr <- fmt.Errorf("consumer: dead-letter %s/%d@%d: %w", rec.Topic, rec.Partition, rec.Offset, derr)
			r.signal()
		}
		return false
	}
	r.dead.Add(1)
	return true
}

// deadLetter appends rec to the dead-letter topic under DeadLetterKey. The body is
// the same on every delivery of the record — its key, value, timestamp and headers,
// the origin headers and the attempts — so a redelivery after a crash between this
// append and the commit (or a move, or a reset) is answered as a retry of the first
// append: the record lands once. The handler's error is logged, not stored in the
// record: its text differs between deliveries (durations, hosts, request ids), and the
// server hashes every header of an idempotent append.
func (r *run) deadLetter(rec Record, cause error) error {
	cfg := r.c.cfg
	hs := append([]segment.Header(nil), rec.Headers...)
	hs = append(hs,
		segment.Header{Key: HeaderOriginTopic, Value: []byte(rec.Topic)},
		segment.Header{Key: HeaderOriginPartition, Value: []byte(strconv.Itoa(int(rec.Partition)))},
		segment.Header{Key: HeaderOriginOffset, Value: []byte(strconv.FormatInt(rec.Offset, 10))},
		segment.Header{Key: HeaderAttempts, Value: []byte(strconv.Itoa(rec.Attempt))},
	)
	ts := rec.Timestamp
	key := DeadLetterKey(cfg.Group, r.lease.TopicRef(), rec.Partition, rec.Offset)
	for attempt := 1; ; attempt++ {
		res, err := r.c.log.Append(r.workCtx, r.pol.DeadLetterTopic,
			[]log.Record{{Key: rec.Key, Value: rec.Value, Headers: hs, Timestamp: &ts}},
			log.AppendOptions{IdempotencyKey: key})
		if err == nil {
			lg := cfg.Logger.With("group", cfg.Group, "topic", rec.Topic, "partition", rec.Partition, "offset", rec.Offset)
			if len(res) == 1 {
				lg = lg.With("dead_letter_partition", res[0].Partition, "dead_letter_offset", res[0].Offset)
			}
			lg.Warn("consumer: record dead-lettered", "dead_letter_topic", r.pol.DeadLetterTopic, "attempts", rec.Attempt, "err", cause)
			return nil
		}
		if errors.Is(err, log.ErrIdempotencyKeyReused) {
			// The key names this origin record alone: an earlier delivery dead-lettered
			// it with other attempts (the group's max attempts changed in between).
			cfg.Logger.Warn("consumer: record already dead-lettered by an earlier delivery", "group", cfg.Group,
				"topic", rec.Topic, "partition", rec.Partition, "offset", rec.Offset, "dead_letter_topic", r.pol.DeadLetterTopic, "err", cause)
			return nil
		}
		if !errors.Is(err, log.ErrUnavailable) || attempt >= r.pol.MaxAttempts {
			return err
		}
		if err := ctxtime.Sleep(r.workCtx, cfg.Backoff(attempt)); err != nil {
			return err
		}
	}
}

// DeadLetterKey is the Idempotency-Key of the dead-letter append of (group, topic,
// partition, offset), topic the record's store.TopicRef (the run's lease names its
// incarnation): store.RecordKey with "dlq:" — at most 67 characters, within
// wire.MaxIdempotencyKey whatever the names' length, and distinct for distinct records
// (the names and the incarnation through the hash, partition and offset verbatim), so
// no two poison records of a group share one, even across a topic's incarnations.
func DeadLetterKey(group, topic string, partition int32, offset int64) string {
	return store.RecordKey("dlq:", group, topic, partition, offset)
}

// commit stores next as the group's position; force commits even when not above the
// last commit (a reset moving backwards goes through the group's Reset, not here).
func (r *run) commit(ctx context.Context, next int64, force bool) error {
	if !force && next <= r.committed {
		return nil
	}
	cfg := r.c.cfg
	err := r.c.coord.Commit(ctx, cfg.Group, r.lease.TopicRef(), r.p, cfg.Member, r.lease.Generation, next)
	if err != nil {
		if errors.Is(err, group.ErrFenced) {
			return r.fence(err)
		}
		return fmt.Errorf("consumer: commit %s/%d@%d: %w", cfg.Topic, r.p, next, err)
	}
	r.committed = next
	r.stats.Committed = next
	r.saved = nil
	return nil
}

// fence stops all work on the partition at once.
// stopFenced stops the run at once on a handler's fenced business write: the record is
// not this run's any more, so it is neither retried nor dead-lettered, as a fenced
// commit stops the run. It returns false (the record is not complete).
func (r *run) stopFenced(err error) bool {
	r.workErr <- r.fence(err)
	r.signal()
	return false
}

func (r *run) fence(err error) error {
	r.fenced.Store(true)
	if r.cancel != nil {
		r.cancel()
	}
	return fmt.Errorf("consumer: %s/%d generation %d: %w", r.c.cfg.Topic, r.p, r.lease.Generation, err)
}

// finish stops the workers; unless fenced it commits the contiguous completed prefix
// and releases the lease.
func (r *run) finish(ctx context.Context, cause error) (Stats, error) {
	if r.cancel != nil {
		r.cancel()
		r.wg.Wait()
	}
	r.stats.Handled = r.handled.Load()
	r.stats.Retries = r.retries.Load()
	r.stats.DeadLettered = r.dead.Load()
	r.stats.Dropped = r.dropped.Load()
	r.stats.Parked = r.parkedN.Load()
	r.stats.Replayed = r.replayedN.Load()
	r.stats.ParkedLost = r.parkedLostN.Load()
	r.stats.Committed = r.committed
	if r.fenced.Load() || errors.Is(cause, group.ErrFenced) {
		r.stats.Fenced = true
		return r.stats, cause
	}
	// The run's own context may be over; the last commit and release still matter, and
	// must end by FinishBy when the caller is killed then.
	by := time.Now().Add(FinishTimeout)
	if !r.opt.FinishBy.IsZero() && r.opt.FinishBy.Before(by) {
		by = r.opt.FinishBy
	}
	bg, cancel := context.WithDeadline(context.WithoutCancel(ctx), by)
	defer cancel()
	if r.tracker != nil {
		if err := r.commitCheckpoint(bg, leaseRelease); err != nil {
			if errors.Is(err, group.ErrFenced) {
				r.stats.Fenced = true
			}
			return r.stats, errors.Join(cause, err)
		}
	}
	if r.released {
		return r.stats, cause // the last commit released the lease
	}
	cfg := r.c.cfg
	if err := r.c.coord.Release(bg, cfg.Group, r.lease.TopicRef(), r.p, cfg.Member, r.lease.Generation); err != nil && !errors.Is(err, group.ErrFenced) {
		cause = errors.Join(cause, fmt.Errorf("consumer: release: %w", err))
	}
	return r.stats, cause
}
