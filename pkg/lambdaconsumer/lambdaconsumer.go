// Package lambdaconsumer turns a record handler into a per-partition consumer function
// for AWS Lambda (docs/DESIGN.md §4, Dispatch and Consumer runtime). Dispatch invokes the
// function asynchronously with {topic, partition, group} when the group lags on that
// partition with no live lease; one invocation then
//
//   - takes the partition's lease (a duplicate invocation finds it held and returns at
//     once, without error, so Lambda does not retry it);
//   - polls and handles records with parallel workers (keys in order when asked), commits
//     the contiguous completed prefix when it moved (at most once per CommitInterval,
//     each commit renewing the lease in the same write), through pkg/consumer, which
//     also applies the group's retry, dead-letter and reset settings (read at each
//     invocation; Config fields override them);
//   - once caught up, long-polls for IdleWait (default 1s) for more records, then
//     commits, releases the lease in the same write, and returns: a caught-up partition
//     holds no invocation, and dispatch invokes it again when records arrive;
//   - after the release reads the high watermark once more: a record appended while the
//     invocation was leaving (its dispatch saw the lease still live and skipped) is
//     consumed by taking the lease again, so no wake-up is lost;
//   - stops DeadlineMargin before the function's deadline, commits what is contiguous,
//     and releases the lease; lag left over is picked up by the next dispatch.
//
// A complete user function:
//
//	package main
//
//	import (
//		"context"
//		"fmt"
//
//		"github.com/aws/aws-lambda-go/lambda"
//		"github.com/stratalog/strata/pkg/lambdaconsumer"
//	)
//
//	func main() {
//		lambda.Start(lambdaconsumer.Handler(lambdaconsumer.Config{Workers: 4, OrderedKeys: true},
//			func(ctx context.Context, r lambdaconsumer.Record) error {
//				fmt.Printf("%s/%d@%d: %s\n", r.Topic, r.Partition, r.Offset, r.Value)
//				return nil
//			}))
//	}
//
// The function reads its stores from the environment (STRATA_BUCKET,
// STRATA_TABLE_PREFIX, STRATA_OBJECT_PREFIX; see functions/README.md) and needs IAM
// rights to the tables and the bucket. A handler's side effects need their own
// idempotency: a record is handled again after a crash before its commit.
package lambdaconsumer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/smithy-go"

	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/node"
)

// Record is a record handed to the handler, with its topic, partition and attempt.
type Record = consumer.Record

// Event is what dispatch sends the function.
type Event = deploy.ConsumerEvent

// Handle handles one record; an error retries it, then dead-letters it (Config). It must
// honour ctx: the invocation's end or a lost lease cancels it.
type Handle func(ctx context.Context, r Record) error

// Backend is the log and the group coordinator an invocation works on.
type Backend struct {
	Log    consumer.Log
	Groups consumer.Coordinator
	// Effects, when set, is the fenced business store handlers reach with
	// EffectsFrom(ctx): writes fenced by the record's lease (Record.Fence).
	Effects *group.Effects
}

type effectsKey struct{}

// EffectsFrom returns the fenced business store of the invocation whose handler got
// ctx (Config.EffectsTable, or Backend.Effects), nil when none is configured. Write a
// record's effect with Apply(ctx, r.Fence, r.Offset, key, value): a zombie invocation's
// write is refused (group.ErrFenced) and a redelivered record's too (group.ErrApplied,
// which the handler treats as done).
func EffectsFrom(ctx context.Context) *group.Effects {
	e, _ := ctx.Value(effectsKey{}).(*group.Effects)
	return e
}

// Metrics receives each invocation's consumer statistics (emf.Sink has it).
type Metrics = consumer.Metrics

// Config configures the function. Every field has a default.
type Config struct {
	// Topic and Group, when set, are the only ones this function consumes: an event for
	// another is refused (a misrouted subscription). Defaults: STRATA_TOPIC and
	// STRATA_GROUP from the environment, else any.
	Topic, Group string
	// Workers handle records of the partition in parallel (default 1); OrderedKeys keeps
	// the records of one key on one worker, in offset order.
	Workers     int
	OrderedKeys bool
	// MaxAttempts, DeadLetterTopic and ResetPolicy are the group's settings, read from
	// the group when an invocation starts (`strata groups settings`): unset means the
	// group's, a set field overrides it (logged). Backoff is the pause between attempts
	// (pkg/consumer's default). Appending to the dead-letter topic needs the rights
	// Subscribe grants with SubscribeOptions.DeadLetterTopic; without them the
	// invocation fails with ErrDeadLetterDenied naming the topic.
	MaxAttempts     int
	Backoff         func(attempt int) time.Duration
	DeadLetterTopic string
	ResetPolicy     string
	// OnFailure overrides the group's on_failure ("dead_letter" or "park"). With "park"
	// a key whose record failed every attempt is parked: its records go, in order, to
	// "<group>.parked" (the role needs to append there, as to a dead-letter topic) while
	// the partition flows for other keys; the parked keys live in the group store, so
	// the next invocation goes on forwarding them, and replays them once released.
	OnFailure string
	// LeaseTTL is the lease's time to live (default 30s), renewed every third of it, by
	// a commit when there is progress to commit.
	LeaseTTL time.Duration
	// CommitInterval is how often a busy invocation commits its progress (default and
	// at most LeaseTTL/3): each commit carries the lease renewal, so a busy partition
	// writes one transaction per interval and no renewal besides. A crash replays at
	// most an interval of records; the invocation's end commits everything handled.
	CommitInterval time.Duration
	// PollRecords bounds one poll (default 500).
	PollRecords int
	// IdleWait is how long an invocation waits for more records once caught up before
	// it releases the partition and returns (default 1s; at most 20s and
	// LeaseTTL/3): about what a new invocation costs in held seconds (docs/TRADEOFFS.md,
	// "An idle consumer"), so a caught-up partition is never held much longer than a
	// wake-up would cost.
	IdleWait time.Duration
	// DeadlineMargin is how long before the function's deadline the invocation stops
	// taking records, to commit and release (default 3s); the commit and release must
	// end a tenth of it before the deadline, so that the invocation answers.
	DeadlineMargin time.Duration
	// MaxDuration bounds an invocation when the context has no deadline (default 5m).
	MaxDuration time.Duration
	// Open returns the backend, once per execution environment (cold start); default
	// OpenNode with the configuration from the environment (node.FromEnv).
	Open func(ctx context.Context) (Backend, error)
	// Metrics receives each run's statistics; default EMF lines on standard output.
	Metrics Metrics
	// Clock is the consumer's clock (default time.Now).
	Clock func() time.Time
	// EffectsTable is the DynamoDB table of the fenced business store (EffectsFrom) the
	// default Open opens (locally the embedded store; empty: none). The function's role
	// needs dynamodb:ConditionCheckItem on the assignments table and PutItem, GetItem
	// on this table; enable the table's TTL on dynamo.EffectTTLAttribute so that the
	// records' markers expire once the records can no longer be redelivered.
	EffectsTable string
}

// Defaults.
const (
	DefaultIdleWait       = time.Second
	DefaultDeadlineMargin = 3 * time.Second
	DefaultMaxDuration    = 5 * time.Minute
)

// ErrBadEvent is returned for an event the function cannot act on; nothing is touched.
var ErrBadEvent = errors.New("lambdaconsumer: bad event")

// ErrDeadLetterDenied is returned when the function's role may not append to the
// group's dead-letter topic (S3 or DynamoDB answered AccessDenied): the record stays
// uncommitted until the role gets the rights.
var ErrDeadLetterDenied = errors.New("lambdaconsumer: the function's role may not append to the dead-letter topic")

// deadLetterLog is the backend's log with access refusals of appends (the consumer
// appends only dead letters) turned into ErrDeadLetterDenied, which names the topic and
// the missing rights and is not retried as a transient failure.
type deadLetterLog struct{ consumer.Log }

// Append implements consumer.Log.
func (l deadLetterLog) Append(ctx context.Context, topic string, recs []log.Record, opt log.AppendOptions) ([]log.Result, error) {
	res, err := l.Log.Append(ctx, topic, recs, opt)
	if err != nil && accessDenied(err) {
		return nil, fmt.Errorf("%w %q: grant it s3:PutObject on the topic's segment objects and writes of its sequencer, "+
			"index and idempotency rows (strata.SubscribeOptions.DeadLetterTopic, or ConsumerStatements(topic, group, %q) on the role): %s",
			ErrDeadLetterDenied, topic, topic, err.Error())
	}
	return res, err
}

// accessDenied reports whether an AWS service refused the request for lack of rights.
func accessDenied(err error) bool {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode() {
	case "AccessDenied", "AccessDeniedException":
		return true
	}
	return false
}

// Result is what an invocation returns (visible in the Lambda console and in tests).
type Result struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Group     string `json:"group"`
	// LeaseHeld is true when another invocation held the partition: nothing was done.
	LeaseHeld bool `json:"lease_held,omitempty"`
	// Fenced is true when the partition moved to a newer generation mid-run.
	Fenced  bool  `json:"fenced,omitempty"`
	Handled int64 `json:"handled"`
	// Remembered counts records an earlier invocation completed above its committed
	// offset (its commit remembered them): skipped, not handled again.
	Remembered int64 `json:"remembered,omitempty"`
	Retries    int64 `json:"retries,omitempty"`
	DeadLetter int64 `json:"dead_lettered,omitempty"`
	Dropped    int64 `json:"dropped,omitempty"`
	// Parked counts records sent to the group's parking topic, Replayed parked records
	// handled again by a release (the group's on_failure "park"), ParkedLost parked
	// records a release no longer found (the parking topic's retention took them).
	Parked     int64 `json:"parked,omitempty"`
	Replayed   int64 `json:"replayed,omitempty"`
	ParkedLost int64 `json:"parked_lost,omitempty"`
	Lost       int64 `json:"records_lost,omitempty"`
	// Committed is the group's committed offset when the invocation ended.
	Committed int64 `json:"committed"`
	// StoppedAtDeadline is true when the deadline, not a catch-up, ended the work.
	StoppedAtDeadline bool `json:"stopped_at_deadline,omitempty"`
	// Rewoken counts the times the invocation took the partition again after releasing
	// it, because records had arrived meanwhile (their dispatch found it still leased).
	Rewoken int `json:"rewoken,omitempty"`
}

// Handler returns the function's handler for lambda.Start. It panics on a nil handle
// (a wiring bug).
func Handler(cfg Config, handle Handle) func(ctx context.Context, ev Event) (Result, error) {
	if handle == nil {
		panic("lambdaconsumer: nil handle")
	}
	f := newFunction(cfg, handle)
	return f.invoke
}

// function is one execution environment's state: the backend, opened once.
type function struct {
	cfg    Config
	handle Handle

	mu      sync.Mutex
	backend *Backend
}

func newFunction(cfg Config, handle Handle) *function {
	// The environment is read once, by pkg/node; a malformed value fails every
	// invocation's open with an error naming it.
	env, envErr := node.FromEnv(os.Getenv)
	if cfg.Topic == "" {
		cfg.Topic = env.Function.Topic
	}
	if cfg.Group == "" {
		cfg.Group = env.Function.Group
	}
	if cfg.IdleWait <= 0 {
		cfg.IdleWait = DefaultIdleWait
	}
	cfg.IdleWait = min(cfg.IdleWait, log.MaxPollWait)
	if cfg.DeadlineMargin <= 0 {
		cfg.DeadlineMargin = DefaultDeadlineMargin
	}
	if cfg.MaxDuration <= 0 {
		cfg.MaxDuration = DefaultMaxDuration
	}
	if cfg.Open == nil {
		cfg.Open = func(ctx context.Context) (Backend, error) {
			if envErr != nil {
				return Backend{}, envErr
			}
			return openNode(ctx, env, cfg.EffectsTable)
		}
	}
	if cfg.Metrics == nil {
		ns := env.Function.MetricsNamespace
		if ns == "" {
			ns = deploy.MetricsNamespace
		}
		cfg.Metrics = stdoutMetrics(ns)
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = group.DefaultTTL
	}
	// A long poll delays the lease's renewal by up to its wait (pkg/consumer).
	cfg.IdleWait = min(cfg.IdleWait, cfg.LeaseTTL/3)
	if cfg.CommitInterval <= 0 || cfg.CommitInterval > cfg.LeaseTTL/3 {
		cfg.CommitInterval = cfg.LeaseTTL / 3
	}
	return &function{cfg: cfg, handle: handle}
}

// open returns the backend, opening it on first use; a failed open is retried by the
// next invocation.
func (f *function) open(ctx context.Context) (Backend, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.backend != nil {
		return *f.backend, nil
	}
	b, err := f.cfg.Open(ctx)
	if err != nil {
		return Backend{}, fmt.Errorf("lambdaconsumer: open backend: %w", err)
	}
	if b.Log == nil || b.Groups == nil {
		return Backend{}, errors.New("lambdaconsumer: open returned no log or coordinator")
	}
	f.backend = &b
	return b, nil
}

// checkEvent refuses an event that names nothing valid or another topic or group.
func (f *function) checkEvent(ev Event) error {
	sub := deploy.Subscription{Topic: ev.Topic, Group: ev.Group, Function: "self"}
	if err := sub.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrBadEvent, err)
	}
	if ev.Partition < 0 {
		return fmt.Errorf("%w: partition %d is negative", ErrBadEvent, ev.Partition)
	}
	if f.cfg.Topic != "" && ev.Topic != f.cfg.Topic {
		return fmt.Errorf("%w: this function consumes topic %q, not %q", ErrBadEvent, f.cfg.Topic, ev.Topic)
	}
	if f.cfg.Group != "" && ev.Group != f.cfg.Group {
		return fmt.Errorf("%w: this function consumes for group %q, not %q", ErrBadEvent, f.cfg.Group, ev.Group)
	}
	return nil
}

// errIdle is the cause of a run's end after an idle wait.
var errIdle = errors.New("lambdaconsumer: idle")

// idleLog tells the invocation when a long poll (made only when nothing is in flight)
// came back empty: the partition stayed idle for a whole IdleWait.
type idleLog struct {
	consumer.Log
	idle func()
}

// Poll implements consumer.Log.
func (l idleLog) Poll(ctx context.Context, topic string, partition int32, offset int64, opt log.PollOptions) (log.PollResult, error) {
	res, err := l.Log.Poll(ctx, topic, partition, offset, opt)
	if err == nil && opt.Wait > 0 && len(res.Records) == 0 {
		l.idle()
	}
	return res, err
}

// member names this invocation in the lease: the request id, unique per invocation, so
// a duplicate invocation never shares a lease.
func member(ctx context.Context) string {
	if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
		return "lambda:" + lc.AwsRequestID
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "lambda:" + hex.EncodeToString(b)
}

func (f *function) invoke(ctx context.Context, ev Event) (Result, error) {
	res := Result{Topic: ev.Topic, Partition: ev.Partition, Group: ev.Group}
	if err := f.checkEvent(ev); err != nil {
		return res, err
	}
	b, err := f.open(ctx)
	if err != nil {
		return res, err
	}
	// Work stops DeadlineMargin before the deadline; the final commit and release run
	// in the margin (pkg/consumer finishes on a context detached from the work's).
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = f.cfg.Clock().Add(f.cfg.MaxDuration)
	}
	deadlineCtx, cancelDeadline := context.WithDeadline(ctx, deadline.Add(-f.cfg.DeadlineMargin))
	defer cancelDeadline()
	// The last commit and release end before the function is killed, a tenth of the
	// margin before, kept to answer: a commit cut short by the kill is safe
	// (conditional), but the answer and its metrics would be lost, and Lambda would
	// count a timeout.
	var opt consumer.RunOptions
	if ok {
		opt.FinishBy = deadline.Add(-f.cfg.DeadlineMargin / 10)
	}
	m := member(ctx)
	for prev := int64(-1); ; prev = res.Committed {
		st, idle, err := f.run(deadlineCtx, b, ev, m, opt)
		if errors.Is(err, group.ErrLeaseHeld) {
			// Another invocation holds the partition: at the start a duplicate, after a
			// release the invocation dispatch started for the records that came.
			res.LeaseHeld = res.Rewoken == 0
			return res, nil
		}
		res.add(st)
		res.StoppedAtDeadline = !idle && errors.Is(context.Cause(deadlineCtx), context.DeadlineExceeded)
		if st.Fenced {
			// Another invocation owns the partition now; failing would make Lambda retry
			// this one, which could only be fenced again.
			return res, nil
		}
		if err != nil {
			return res, fmt.Errorf("lambdaconsumer: %s/%d for %s: %w", ev.Topic, ev.Partition, ev.Group, err)
		}
		if !idle || deadlineCtx.Err() != nil || (res.Rewoken > 0 && st.Committed <= prev) {
			// The deadline ended the work (the next dispatch or the sweep goes on), or a
			// run taken again moved nothing (a commit not indexed yet): the sweep
			// retries that rather than this invocation spinning.
			return res, nil
		}
		more, err := f.lagging(deadlineCtx, b.Log, ev, st.Committed)
		if err != nil || !more {
			return res, nil // an unreadable bound leaves the wake-up to the sweep
		}
		res.Rewoken++
	}
}

// run is one run of the partition: lease, consume until caught up and idle for
// IdleWait (idle true) or until ctx ends, commit, release.
func (f *function) run(ctx context.Context, b Backend, ev Event, m string, opt consumer.RunOptions) (consumer.Stats, bool, error) {
	// An idle wait that brings nothing ends the run: the consumer then commits, releases
	// and returns, as it does at the deadline.
	workCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	idle := idleLog{Log: deadLetterLog{b.Log}, idle: func() { stop(errIdle) }}
	c, err := consumer.New(idle, b.Groups, consumer.Config{
		Group: ev.Group, Topic: ev.Topic, Member: m, Handler: consumer.Handler(f.handle),
		Workers: f.cfg.Workers, OrderedKeys: f.cfg.OrderedKeys,
		MaxAttempts: f.cfg.MaxAttempts, Backoff: f.cfg.Backoff, DeadLetterTopic: f.cfg.DeadLetterTopic,
		ResetPolicy: f.cfg.ResetPolicy, OnFailure: f.cfg.OnFailure, LeaseTTL: f.cfg.LeaseTTL, PollRecords: f.cfg.PollRecords,
		CommitInterval: f.cfg.CommitInterval,
		// The consumer long-polls (PollWait) only when nothing is in flight: caught up.
		PollWait: f.cfg.IdleWait, Clock: f.cfg.Clock, Metrics: f.cfg.Metrics,
	})
	if err != nil {
		return consumer.Stats{}, false, fmt.Errorf("lambdaconsumer: configuration: %w", err)
	}
	runCtx := context.Context(workCtx)
	if b.Effects != nil {
		runCtx = context.WithValue(workCtx, effectsKey{}, b.Effects)
	}
	st, err := c.Run(runCtx, ev.Partition, opt)
	return st, errors.Is(context.Cause(workCtx), errIdle), err
}

// lagging reports whether the partition has records above committed, read after the
// run released the lease. Dispatch skips a partition whose lease it finds live, and both
// reads are strongly consistent: a record whose dispatch found the lease live was
// appended before that read, hence before the release and this read, which sees it. A
// record appended later is dispatched against a released lease, and invoked.
func (f *function) lagging(ctx context.Context, l consumer.Log, ev Event, committed int64) (bool, error) {
	_, hw, err := l.Bounds(ctx, ev.Topic, ev.Partition)
	if err != nil {
		return false, err
	}
	return hw > committed, nil
}

// add sums a run's statistics into the invocation's result; Committed is the last run's.
func (r *Result) add(st consumer.Stats) {
	r.Fenced = st.Fenced
	r.Handled += st.Handled
	r.Retries += st.Retries
	r.DeadLetter += st.DeadLettered
	r.Dropped += st.Dropped
	r.Lost += st.RecordsLost
	r.Parked += st.Parked
	r.Replayed += st.Replayed
	r.ParkedLost += st.ParkedLost
	r.Remembered += st.Remembered
	r.Committed = st.Committed
}
