// Package dispatch decides which consumer functions to invoke (docs/DESIGN.md §4,
// Dispatch): from a batch of commits read off the sequencer's stream, and from a
// scheduled sweep, it invokes a subscription's consumer for each (group, partition) that
// has lag and no live lease. It coalesces: per batch, at most one lease check and one
// invocation per (group, partition), and none while a live lease shows a consumer
// working. It knows no Lambda type: the invocation goes through an Invoker (an
// asynchronous Lambda invoke in AWS, consumers run in-process in tests).
package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/store"
)

// Commit is one commit read from the sequencer's stream: an append to one partition
// that moved its high watermark to HighWatermark.
type Commit struct {
	Topic     string
	Partition int32
	// HighWatermark is the partition's high watermark after the commit.
	HighWatermark int64
	// Payload is the decoded commit, handed to the Materializer as is (the stream
	// adapter and the Materializer agree on its type; dispatch never looks inside).
	Payload any
}

// Materializer makes a batch's commits readable (writes their index entries where
// missing). It must be idempotent: a stream batch is retried whole after any failure.
type Materializer interface {
	Materialize(ctx context.Context, commits []Commit) error
}

// Invoker starts a consumer function. It must return once the invocation is accepted
// (asynchronous), not when the consumer finishes; a duplicate invocation must be
// harmless (the consumer finds the lease held and exits).
type Invoker interface {
	Invoke(ctx context.Context, function string, ev deploy.ConsumerEvent) error
}

// Leases is what dispatch reads of the group tables; store.MetaStore has it. Both must
// return an error wrapping store.ErrNotFound when the row does not exist.
type Leases interface {
	GetAssignment(ctx context.Context, group, topic string, partition int32) (store.Assignment, error)
	GetCommit(ctx context.Context, group, topic string, partition int32) (store.CommitRow, error)
}

// Offsets is what the sweep reads of the log; *log.Log has it.
type Offsets interface {
	Partitions(ctx context.Context, topic string) (int32, error)
	Bounds(ctx context.Context, topic string, partition int32) (logStart, highWatermark int64, err error)
}

// Source lists subscriptions kept outside the function's configuration: those other
// CDK apps attach as SSM parameters (docs/DESIGN.md §4, "Subscriptions from other
// apps"). Dispatch calls it on every batch and sweep, so it must be cheap on repeated
// calls (cache). On an error it must return what it still knows (the last list it
// read, or none) with the error.
type Source interface {
	Subscriptions(ctx context.Context) ([]deploy.Subscription, error)
}

// Config configures a Dispatcher. Leases and Invoker are required; Offsets is required
// for Sweep; Materializer and Source are optional (nil: commits are only dispatched;
// only Subscriptions are served).
type Config struct {
	// Subscriptions are the deployment's own (STRATA_SUBSCRIPTIONS): a duplicate or an
	// invalid one is an error of New.
	Subscriptions []deploy.Subscription
	// Source adds subscriptions attached by other apps. A bad or duplicate one (of a
	// topic and group already subscribed) is skipped, and a Source error leaves only what
	// it returned: both are logged and counted (Stats.SourceErrors), and returned by
	// Sweep but never by HandleCommits, so that one app's broken subscription cannot
	// stall the stream every commit is materialised from (the sweep catches up).
	Source Source
	// Logger receives the Source's problems (discarded when nil).
	Logger       *slog.Logger
	Leases       Leases
	Offsets      Offsets
	Invoker      Invoker
	Materializer Materializer
	// Clock returns the current time (time.Now when nil); a lease is live while the
	// clock is before its expiry.
	Clock func() time.Time
}

// Dispatcher holds the subscriptions. It keeps no state between calls, so any number of
// concurrent dispatch invocations may run; it is safe for concurrent use.
type Dispatcher struct {
	cfg     Config
	byTopic map[string][]deploy.Subscription
}

// New checks cfg.
func New(cfg Config) (*Dispatcher, error) {
	if cfg.Leases == nil || cfg.Invoker == nil {
		return nil, errors.New("dispatch: Leases and Invoker are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if ids, ok := cfg.Offsets.(topicIDs); ok {
		cfg.Leases = byIncarnation{cfg.Leases, ids}
	}
	d := &Dispatcher{cfg: cfg, byTopic: map[string][]deploy.Subscription{}}
	seen := map[[2]string]bool{}
	for _, s := range cfg.Subscriptions {
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("dispatch: %w", err)
		}
		k := [2]string{s.Topic, s.Group}
		if seen[k] {
			return nil, fmt.Errorf("dispatch: topic %q and group %q subscribed twice", s.Topic, s.Group)
		}
		seen[k] = true
		d.byTopic[s.Topic] = append(d.byTopic[s.Topic], s)
	}
	return d, nil
}

// Stats counts what one batch or sweep did; the counts are what the steady-rate test
// and the EMF metrics report.
type Stats struct {
	Commits      int // commits in the batch
	Materialized int // commits handed to the Materializer
	Candidates   int // (subscription, partition) pairs considered after coalescing
	LeaseChecks  int // assignment reads
	CommitReads  int // commit-row reads
	SkippedLive  int // a live lease showed a consumer working
	SkippedNoLag int // the group's commit had reached the high watermark
	Invocations  int // consumer invocations accepted
	InvokeErrors int // invocations that failed
	// CheckErrors counts candidates whose lease or commit could not be read (not
	// invoked: the sweep considers them again).
	CheckErrors  int
	SourceErrors int // attached subscriptions skipped, or a Source that failed
	// MissingTopics counts subscribed topics a sweep found not created (yet).
	MissingTopics int
}

// Add sums two Stats.
func (s Stats) Add(o Stats) Stats {
	return Stats{
		Commits: s.Commits + o.Commits, Materialized: s.Materialized + o.Materialized,
		Candidates: s.Candidates + o.Candidates, LeaseChecks: s.LeaseChecks + o.LeaseChecks,
		CommitReads: s.CommitReads + o.CommitReads, SkippedLive: s.SkippedLive + o.SkippedLive,
		SkippedNoLag: s.SkippedNoLag + o.SkippedNoLag, Invocations: s.Invocations + o.Invocations,
		InvokeErrors: s.InvokeErrors + o.InvokeErrors, CheckErrors: s.CheckErrors + o.CheckErrors,
		SourceErrors:  s.SourceErrors + o.SourceErrors,
		MissingTopics: s.MissingTopics + o.MissingTopics,
	}
}

// candidate is one (subscription, partition) with the high watermark to compare the
// group's commit against; logStart is the low bound when the group never committed.
type candidate struct {
	sub       deploy.Subscription
	partition int32
	hw        int64
	logStart  int64
}

// HandleCommits materialises the commits of a stream batch, then invokes the
// consumers it woke: one lease check and at most one invocation per (group, partition)
// of the batch, whatever the number of commits. A materialisation error stops the batch
// before any invocation (the stream retries it whole). A subscription whose consumer
// cannot be woken (its invocation fails, or its lease cannot be read) never fails the
// batch: the batch's job is to make the commits readable, and one subscription's broken
// function must not hold up the others' or the stream. Such a failure is counted
// (Stats.InvokeErrors, Stats.CheckErrors) and logged, and the sweep, which considers
// every lagging partition again, retries it.
func (d *Dispatcher) HandleCommits(ctx context.Context, commits []Commit) (Stats, error) {
	st := Stats{Commits: len(commits)}
	type tp struct {
		topic     string
		partition int32
	}
	newest := map[tp]int64{}
	if d.cfg.Materializer != nil && len(commits) > 0 {
		if err := d.cfg.Materializer.Materialize(ctx, commits); err != nil {
			return st, fmt.Errorf("dispatch: materialise the batch: %w", err)
		}
		st.Materialized = len(commits)
	}
	for _, c := range commits {
		k := tp{c.Topic, c.Partition}
		if hw, ok := newest[k]; !ok || c.HighWatermark > hw {
			newest[k] = c.HighWatermark
		}
	}
	byTopic, problems := d.subscriptions(ctx, &st)
	d.report(problems)
	var cands []candidate
	for k, hw := range newest {
		for _, s := range byTopic[k.topic] {
			cands = append(cands, candidate{sub: s, partition: k.partition, hw: hw, logStart: 0})
		}
	}
	st, errs := d.run(ctx, st, cands)
	for _, err := range errs {
		d.cfg.Logger.Warn("dispatch: consumer not woken (the sweep retries it)", "error", err)
	}
	return st, nil
}

// Sweep considers every partition of every subscription's topic (reading its bounds)
// and invokes the consumer where the group lags with no live lease: the safety net for
// anything a stream batch missed (a failed invocation, a consumer that stopped at its
// deadline with lag left). A subscribed topic not created yet is counted
// (Stats.MissingTopics) and skipped, not an error.
func (d *Dispatcher) Sweep(ctx context.Context) (Stats, error) {
	if d.cfg.Offsets == nil {
		return Stats{}, errors.New("dispatch: Sweep needs Offsets")
	}
	var st Stats
	var cands []candidate
	byTopic, problems := d.subscriptions(ctx, &st)
	d.report(problems)
	errs := problems
	var subs []deploy.Subscription
	for _, ss := range byTopic {
		subs = append(subs, ss...)
	}
	for _, s := range subs {
		n, err := d.cfg.Offsets.Partitions(ctx, s.Topic)
		if errors.Is(err, store.ErrNotFound) {
			// Subscribed before anyone created the topic (a fresh deployment): nothing
			// can lag, and failing every sweep until then would only raise alarms.
			st.MissingTopics++
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("dispatch: partitions of %q: %w", s.Topic, err))
			continue
		}
		for p := range n {
			start, hw, err := d.cfg.Offsets.Bounds(ctx, s.Topic, p)
			if err != nil {
				errs = append(errs, fmt.Errorf("dispatch: bounds of %s/%d: %w", s.Topic, p, err))
				continue
			}
			if hw <= start {
				continue // nothing readable: no group can lag
			}
			cands = append(cands, candidate{sub: s, partition: p, hw: hw, logStart: start})
		}
	}
	st, runErrs := d.run(ctx, st, cands)
	for _, err := range runErrs {
		d.cfg.Logger.Warn("dispatch: consumer not woken", "error", err)
	}
	return st, errors.Join(append(errs, runErrs...)...)
}

// subscriptions are the static subscriptions by topic plus the Source's valid ones that
// name a topic and group not yet subscribed; problems lists what was skipped and why.
func (d *Dispatcher) subscriptions(ctx context.Context, st *Stats) (byTopic map[string][]deploy.Subscription, problems []error) {
	if d.cfg.Source == nil {
		return d.byTopic, nil
	}
	attached, err := d.cfg.Source.Subscriptions(ctx)
	if err != nil {
		problems = append(problems, fmt.Errorf("dispatch: attached subscriptions: %w", err))
	}
	byTopic = make(map[string][]deploy.Subscription, len(d.byTopic)+len(attached))
	seen := map[[2]string]bool{}
	for t, ss := range d.byTopic {
		byTopic[t] = append([]deploy.Subscription(nil), ss...)
		for _, s := range ss {
			seen[[2]string{s.Topic, s.Group}] = true
		}
	}
	for _, s := range attached {
		k := [2]string{s.Topic, s.Group}
		switch err := s.Validate(); {
		case err != nil:
			problems = append(problems, fmt.Errorf("dispatch: attached subscription skipped: %w", err))
		case seen[k]:
			problems = append(problems, fmt.Errorf("dispatch: attached subscription of topic %q and group %q to %s skipped: the topic and group are already subscribed", s.Topic, s.Group, s.Function))
		default:
			seen[k] = true
			byTopic[s.Topic] = append(byTopic[s.Topic], s)
		}
	}
	st.SourceErrors += len(problems)
	return byTopic, problems
}

// report logs the Source's problems.
func (d *Dispatcher) report(problems []error) {
	for _, p := range problems {
		d.cfg.Logger.Warn("dispatch: attached subscriptions", "error", p)
	}
}

// run checks each candidate once and invokes the lagging ones without a live lease; a
// candidate's failure is counted and returned, never stops the others.
func (d *Dispatcher) run(ctx context.Context, st Stats, cands []candidate) (Stats, []error) {
	sort.Slice(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.sub.Topic != b.sub.Topic {
			return a.sub.Topic < b.sub.Topic
		}
		if a.sub.Group != b.sub.Group {
			return a.sub.Group < b.sub.Group
		}
		return a.partition < b.partition
	})
	var errs []error
	for _, c := range cands {
		st.Candidates++
		invoke, err := d.lagging(ctx, &st, c)
		if err != nil {
			st.CheckErrors++
			errs = append(errs, err)
			continue
		}
		if !invoke {
			continue
		}
		ev := deploy.ConsumerEvent{Topic: c.sub.Topic, Partition: c.partition, Group: c.sub.Group}
		if err := d.cfg.Invoker.Invoke(ctx, c.sub.Function, ev); err != nil {
			st.InvokeErrors++
			errs = append(errs, fmt.Errorf("dispatch: invoke %s for %s/%s/%d: %w", c.sub.Function, c.sub.Group, c.sub.Topic, c.partition, err))
			continue
		}
		st.Invocations++
	}
	return st, errs
}

// lagging reports whether c's group has lag on the partition and no live lease.
func (d *Dispatcher) lagging(ctx context.Context, st *Stats, c candidate) (bool, error) {
	st.LeaseChecks++
	a, err := d.cfg.Leases.GetAssignment(ctx, c.sub.Group, c.sub.Topic, c.partition)
	switch {
	case err == nil && a.Live(d.cfg.Clock()):
		st.SkippedLive++
		return false, nil
	case err != nil && !errors.Is(err, store.ErrNotFound):
		return false, fmt.Errorf("dispatch: lease of %s/%s/%d: %w", c.sub.Group, c.sub.Topic, c.partition, err)
	}
	st.CommitReads++
	cr, err := d.cfg.Leases.GetCommit(ctx, c.sub.Group, c.sub.Topic, c.partition)
	switch {
	case errors.Is(err, store.ErrNotFound):
		if c.hw > c.logStart {
			return true, nil
		}
		st.SkippedNoLag++
		return false, nil
	case err != nil:
		return false, fmt.Errorf("dispatch: commit of %s/%s/%d: %w", c.sub.Group, c.sub.Topic, c.partition, err)
	case cr.NextOffset >= c.hw:
		st.SkippedNoLag++
		return false, nil
	}
	return true, nil
}

// topicIDs resolves a topic name to its live incarnation's store.TopicID (*log.Log has
// it; group.TopicIDs is the same contract).
type topicIDs interface {
	TopicID(ctx context.Context, name string) (string, error)
}

// byIncarnation reads leases and commits under the topic's live incarnation, where the
// group coordinator keeps them (group.ByIncarnation): a deleted topic's positions are
// never taken for those of a topic created again under its name.
type byIncarnation struct {
	Leases
	ids topicIDs
}

func (b byIncarnation) GetAssignment(ctx context.Context, group, topic string, partition int32) (store.Assignment, error) {
	id, err := b.ids.TopicID(ctx, topic)
	if err != nil {
		return store.Assignment{}, err
	}
	a, err := b.Leases.GetAssignment(ctx, group, id, partition)
	a.Topic = topic
	return a, err
}

func (b byIncarnation) GetCommit(ctx context.Context, group, topic string, partition int32) (store.CommitRow, error) {
	id, err := b.ids.TopicID(ctx, topic)
	if err != nil {
		return store.CommitRow{}, err
	}
	c, err := b.Leases.GetCommit(ctx, group, id, partition)
	c.Topic = topic
	return c, err
}
