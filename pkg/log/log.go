// Package log is Strata's partitioned log: topics, Append (one segment object per call,
// or per batch of concurrent calls with group commit, then one counter add per
// partition) and bounded Poll, on top of an ObjectStore and the metadata tables.
package log

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// Limits of the API contract (docs/API.md).
const (
	MaxRecordBytes     = wire.MaxRecordBytes // key + value + header bytes of one record
	MaxRecordsPerBatch = wire.MaxRecordsPerBatch
	MaxBatchBytes      = wire.MaxBatchBytes
	MaxPollRecords     = wire.MaxPollRecords
	DefaultRetention   = 24 * time.Hour
	DefaultPartitions  = 4
	MinRetention       = time.Second
	MaxPartitions      = wire.MaxPartitions
	// retentionGrace is added to the deployment's maximum retention for the index
	// entries' TTL (entryExpiry), so a TTL never deletes an entry the retention job
	// still needs.
	retentionGrace = 24 * time.Hour
	// IdempotencyWindow is how long an Idempotency-Key's claims are kept after the append
	// (docs/API.md): a retry within it returns the first attempt's offsets, one after it
	// appends again. It is far past the SDK's retry horizon (10 retries, backoff capped
	// at 10 s: under a minute) and a Lambda invocation's longest run (15 min), and it
	// bounds the idempotency rows by the append rate, not by the retention (Kafka bounds
	// its producer state by a fixed expiry the same way).
	IdempotencyWindow = 20 * time.Minute
	// DefaultCommitWindow is the default of Config.CommitWindow.
	DefaultCommitWindow = time.Minute
	// DefaultGroupCommitBytes is the default byte budget of a group-commit batch.
	DefaultGroupCommitBytes = MaxBatchBytes
	// MaxGroupCommitBytes bounds Config.GroupCommitBytes (one object stays small enough
	// to write in one PUT well within the commit window).
	MaxGroupCommitBytes = 64 << 20
)

// ValidName reports whether s is a valid topic or group name (wire.NamePattern).
func ValidName(s string) bool { return wire.ValidName(s) }

// Meta is what the log needs of the metadata tables.
type Meta interface {
	store.TopicStore
	store.SequencerStore
	store.IndexStore
}

// Config wires a Log. Objects and Meta are required.
type Config struct {
	Objects store.ObjectStore
	Meta    Meta
	// Clock returns the current time; time.Now when nil.
	Clock func() time.Time
	// Metrics receives counters; none when nil.
	Metrics Metrics
	// PollParallelism bounds the ranged reads of one Poll (default 8).
	PollParallelism int
	// RecheckInterval is how often a waiting poll re-reads the high watermark for
	// appends made by other processes (default 200ms); appends through this Log wake
	// it at once.
	RecheckInterval time.Duration
	// CommitWindow bounds the time from an append's object name (its ULID time) to its
	// last commit (default 1m); an append stalled longer fails with nothing committed.
	// It must stay below the retention job's ObjectMargin, which relies on it.
	CommitWindow time.Duration
	// GapWait bounds how long a poll waits at an offset whose commit is not yet
	// materialised in the index (default 2s) before answering with no records.
	GapWait time.Duration
	// GroupCommitWindow, when positive, turns group commit on: concurrent appends to a
	// topic through this Log that arrive within the window after the first one (or until
	// GroupCommitBytes of records wait) share one segment object and one commit per
	// partition (docs/DESIGN.md §4). Each append waits up to the window longer; zero
	// (the default) writes every append on its own. It must be below CommitWindow.
	GroupCommitWindow time.Duration
	// GroupCommitBytes is the record bytes at which a batch is written before its
	// window ends (default DefaultGroupCommitBytes, at most MaxGroupCommitBytes).
	GroupCommitBytes int
	// Topics are the defaults and the bound CreateTopic applies (a deployment's
	// STRATA_DEFAULT_PARTITIONS, STRATA_DEFAULT_RETENTION_MS, STRATA_MAX_RETENTION_MS).
	Topics TopicDefaults
	// KeyOverwrites, when set, is told after each append request on a compacted topic,
	// for each partition whose key index entries the request replaced, how many it
	// replaced (the records they named are now superseded) and the partition's next
	// offset after the request's records: the dirty-ratio trigger (compact.Trigger). It
	// runs before the answer; it handles its own failures, which never fail an append.
	KeyOverwrites func(ctx context.Context, t store.Topic, partition int32, overwrites, next int64)
}

// TopicDefaults are what CreateTopic gives a topic created without a partition count or
// a retention, and the longest retention it accepts. Zero fields take DefaultPartitions,
// DefaultRetention and no maximum.
type TopicDefaults struct {
	Partitions int32
	Retention  time.Duration
	// MaxRetention, when positive, is the longest retention a topic may have: on AWS the
	// bucket's lifecycle rule expires segment objects a day after it, so a longer
	// retention would lose live records. CreateTopic refuses more (ErrInvalid), and a
	// retention plus its pin cap above it (CreateTopicWith, SetRetentionPin).
	MaxRetention time.Duration
}

// Validate reports whether d is usable: partitions within 1–MaxPartitions, retentions at
// least MinRetention, the default retention within the maximum.
func (d TopicDefaults) Validate() error {
	switch {
	case d.Partitions < 0 || d.Partitions > MaxPartitions:
		return fmt.Errorf("log: default partitions %d, want 1 to %d", d.Partitions, MaxPartitions)
	case d.Retention != 0 && d.Retention < MinRetention, d.MaxRetention != 0 && d.MaxRetention < MinRetention:
		return fmt.Errorf("log: default retention %s and maximum retention %s must be at least %s", d.Retention, d.MaxRetention, MinRetention)
	case d.MaxRetention > 0 && d.retention() > d.MaxRetention:
		return fmt.Errorf("log: default retention %s exceeds the maximum retention %s", d.retention(), d.MaxRetention)
	}
	return nil
}

func (d TopicDefaults) partitions() int32 {
	if d.Partitions == 0 {
		return DefaultPartitions
	}
	return d.Partitions
}

func (d TopicDefaults) retention() time.Duration {
	if d.Retention == 0 {
		return DefaultRetention
	}
	return d.Retention
}

// Log is safe for concurrent use.
type Log struct {
	objects      store.ObjectStore
	meta         Meta
	now          func() time.Time
	metrics      Metrics
	pollPar      int
	recheck      time.Duration
	commitWindow time.Duration
	gapWait      time.Duration
	notifier     *notifier
	group        *coalescer // nil: group commit off
	defaults     TopicDefaults
	overwrites   func(ctx context.Context, t store.Topic, partition int32, overwrites, next int64)

	mu     sync.Mutex
	topics map[string]cachedTopic // configs, cached for TopicCacheTTL
	rr     uint32                 // round-robin cursor for unkeyed records

	tablesMu sync.Mutex
	tables   map[string][]tableMember // members tables read by retries, by object

	marksMu sync.Mutex
	marks   map[string]int64 // the highest batch number seen of each topic incarnation
}

type tpKey struct {
	topic     string
	partition int32
}

// New returns a Log over the given stores.
func New(cfg Config) (*Log, error) {
	if cfg.Objects == nil || cfg.Meta == nil {
		return nil, errors.New("log: Config.Objects and Config.Meta are required")
	}
	l := &Log{
		objects:      cfg.Objects,
		meta:         cfg.Meta,
		now:          cfg.Clock,
		metrics:      cfg.Metrics,
		pollPar:      cfg.PollParallelism,
		recheck:      cfg.RecheckInterval,
		commitWindow: cfg.CommitWindow,
		gapWait:      cfg.GapWait,
		notifier:     newNotifier(),
		topics:       map[string]cachedTopic{},
		tables:       map[string][]tableMember{},
		marks:        map[string]int64{},
		defaults:     cfg.Topics,
		overwrites:   cfg.KeyOverwrites,
	}
	if err := cfg.Topics.Validate(); err != nil {
		return nil, err
	}
	if l.now == nil {
		l.now = time.Now
	}
	if l.metrics == nil {
		l.metrics = NopMetrics{}
	}
	if l.pollPar <= 0 {
		l.pollPar = 8
	}
	if l.commitWindow <= 0 {
		l.commitWindow = DefaultCommitWindow
	}
	if l.commitWindow > store.MaxProducerCommitWindow {
		// A producer request is committed within two commit windows of its arrival or
		// not at all, which the stores' fence horizon counts on.
		return nil, fmt.Errorf("log: Config.CommitWindow %s above %s", l.commitWindow, store.MaxProducerCommitWindow)
	}
	if l.gapWait <= 0 {
		l.gapWait = 2 * time.Second
	}
	if l.recheck <= 0 {
		l.recheck = 200 * time.Millisecond
	}
	if cfg.GroupCommitWindow > 0 {
		if cfg.GroupCommitWindow >= l.commitWindow {
			return nil, fmt.Errorf("log: GroupCommitWindow %s must be below CommitWindow %s", cfg.GroupCommitWindow, l.commitWindow)
		}
		budget := cfg.GroupCommitBytes
		if budget <= 0 {
			budget = DefaultGroupCommitBytes
		}
		if budget > MaxGroupCommitBytes {
			return nil, fmt.Errorf("log: GroupCommitBytes %d above %d", budget, MaxGroupCommitBytes)
		}
		l.group = newCoalescer(l, cfg.GroupCommitWindow, budget)
	}
	return l, nil
}

// TopicInfo describes a topic and the bounds of each partition.
type TopicInfo struct {
	store.Topic
	Partitions []PartitionInfo
	// Batch is, on a topic of the topic commit layout, a number of a batch the topic had
	// committed when it was described (the highest read), 0 when none was read.
	Batch int64
}

// PartitionInfo is the readable range of one partition.
type PartitionInfo struct {
	Partition      int32
	LogStartOffset int64
	HighWatermark  int64
}

// CreateTopic creates a topic; partitions 0 and retention 0 take Config.Topics'
// defaults. A retention above Config.Topics.MaxRetention is refused (ErrInvalid).
func (l *Log) CreateTopic(ctx context.Context, name string, partitions int32, retention time.Duration) (store.Topic, error) {
	return l.CreateTopicWith(ctx, name, TopicSpec{Partitions: partitions, Retention: retention})
}

// TopicSpec is a new topic's configuration. Partitions 0 and Retention 0 take
// Config.Topics' defaults; RetentionPin 0 is no pin.
type TopicSpec struct {
	Partitions int32
	Retention  time.Duration
	// RetentionPin is how far beyond Retention a record is kept while a group that has
	// committed on the topic has not read it (store.Topic.RetentionPin).
	RetentionPin time.Duration
	// LogAppendTime stamps every record with its append time, whatever the producer
	// gave (store.Topic.LogAppendTime; Kafka's message.timestamp.type=LogAppendTime).
	LogAppendTime bool
	// Cleanup is the topic's cleanup policy and compaction settings (the zero value:
	// delete by time, as Kafka's default cleanup.policy).
	Cleanup store.TopicCleanup
}

// CreateTopicWith creates a topic of spec. A retention, or a retention plus its pin cap,
// above Config.Topics.MaxRetention is refused (ErrInvalid).
func (l *Log) CreateTopicWith(ctx context.Context, name string, spec TopicSpec) (store.Topic, error) {
	partitions, retention := spec.Partitions, spec.Retention
	if !ValidName(name) {
		return store.Topic{}, invalidf("topic name %q must match %s", name, wire.NamePattern)
	}
	if partitions == 0 {
		partitions = l.defaults.partitions()
	}
	if partitions < 1 || partitions > MaxPartitions {
		return store.Topic{}, invalidf("partitions must be 1–%d, got %d", MaxPartitions, partitions)
	}
	if retention == 0 {
		retention = l.defaults.retention()
	}
	if retention < MinRetention {
		return store.Topic{}, invalidf("retention must be at least %s, got %s", MinRetention, retention)
	}
	if maxR := l.defaults.MaxRetention; maxR > 0 && retention > maxR {
		return store.Topic{}, invalidf("retention_ms %d (%s) is above this deployment's maximum retention_ms %d (%s): "+
			"segment objects older than the maximum are expired by the bucket's lifecycle rule", retention.Milliseconds(), retention, maxR.Milliseconds(), maxR)
	}
	if err := l.checkPin(retention, spec.RetentionPin); err != nil {
		return store.Topic{}, err
	}
	cleanup, err := l.checkCleanup(spec.Cleanup)
	if err != nil {
		return store.Topic{}, err
	}
	now := l.now().UTC().Truncate(time.Millisecond)
	t := store.Topic{Name: name, Incarnation: newIncarnation(now), Partitions: partitions, Retention: retention,
		RetentionPin: spec.RetentionPin, CreatedAt: now, LogAppendTime: spec.LogAppendTime}.WithCleanup(cleanup)
	if err := l.meta.CreateTopic(ctx, t); err != nil {
		if errors.Is(err, store.ErrExists) {
			return store.Topic{}, fmt.Errorf("%w: %s", ErrTopicExists, name)
		}
		return store.Topic{}, storeErr(err)
	}
	l.mu.Lock()
	l.topics[name] = cachedTopic{t: t, at: l.now()}
	l.mu.Unlock()
	return t, nil
}

// newIncarnation names a new topic incarnation: store.TopicCommitPrefix (every new
// topic has the topic commit layout: one sequencer write per batch) and a ULID of its
// creation time, lowercase (store.ValidIncarnation), so incarnations never repeat.
func newIncarnation(now time.Time) string {
	return store.TopicCommitPrefix + strings.ToLower(ulid.MustNew(ulid.Timestamp(now), crand.Reader).String())
}

// Topic returns a topic's configuration, cached for TopicCacheTTL: a partition count
// can grow (IncreasePartitions), so a cached one is re-read after the TTL, and at once
// when a caller asks for a partition beyond it.
func (l *Log) Topic(ctx context.Context, name string) (store.Topic, error) {
	l.mu.Lock()
	c, ok := l.topics[name]
	l.mu.Unlock()
	if ok && l.now().Sub(c.at) < TopicCacheTTL {
		return c.t, nil
	}
	return l.reloadTopic(ctx, name)
}

// TopicID returns the store.TopicID of the live incarnation of the topic name (cached
// as Topic is): the key its partitions' rows have, and the one groups keep their
// leases and commits under (group.ByIncarnation).
func (l *Log) TopicID(ctx context.Context, name string) (string, error) {
	t, err := l.Topic(ctx, name)
	if err != nil {
		return "", err
	}
	return t.ID(), nil
}

// ListTopics returns every topic name in lexical order.
func (l *Log) ListTopics(ctx context.Context) ([]string, error) {
	names, err := l.meta.ListTopics(ctx)
	if err != nil {
		return nil, storeErr(err)
	}
	return names, nil
}

// DescribeTopic returns the topic with each partition's log start and high watermark.
func (l *Log) DescribeTopic(ctx context.Context, name string) (TopicInfo, error) {
	t, err := l.Topic(ctx, name)
	if err != nil {
		return TopicInfo{}, err
	}
	info := TopicInfo{Topic: t, Partitions: make([]PartitionInfo, t.Partitions)}
	for p := int32(0); p < t.Partitions; p++ {
		st, err := l.meta.Sequencer(ctx, t.ID(), p)
		if err != nil {
			return TopicInfo{}, storeErr(err)
		}
		info.Partitions[p] = PartitionInfo{Partition: p, LogStartOffset: st.LogStart, HighWatermark: st.NextOffset}
		if st.Last != nil {
			info.Batch = max(info.Batch, st.Last.Batch)
		}
	}
	l.noteBatch(t.ID(), info.Batch)
	return info, nil
}

// maxMarks bounds the topic incarnations whose batch numbers a Log keeps.
const maxMarks = 4096

// noteBatch records that the topic incarnation id had committed batch n.
func (l *Log) noteBatch(id string, n int64) {
	if n <= 0 || !store.TopicCommits(id) {
		return
	}
	l.marksMu.Lock()
	defer l.marksMu.Unlock()
	if _, ok := l.marks[id]; !ok && len(l.marks) >= maxMarks {
		for k := range l.marks {
			delete(l.marks, k) // an arbitrary one: a lost mark only makes a retry search further
			break
		}
	}
	l.marks[id] = max(l.marks[id], n)
}

// BatchMark returns the topic's batch mark (wire.HeaderTopicBatch) as this Log knows it
// without reading anything: the highest batch number of the topic's cached incarnation
// it has seen committed (by its appends, retries and describes); ok is false when it
// knows none. Every batch committed after it is numbered above it.
func (l *Log) BatchMark(name string) (wire.BatchMark, bool) {
	l.mu.Lock()
	c, ok := l.topics[name]
	l.mu.Unlock()
	if !ok {
		return wire.BatchMark{}, false
	}
	l.marksMu.Lock()
	n, ok := l.marks[c.t.ID()]
	l.marksMu.Unlock()
	if !ok {
		return wire.BatchMark{}, false
	}
	return wire.BatchMark{Batch: n, Incarnation: c.t.Incarnation}, true
}

// CachedPartitions is the partition count of the topic the log has cached (no I/O):
// what an append answer tells its producer (wire.HeaderPartitions). ok is false when
// the topic is not cached.
func (l *Log) CachedPartitions(name string) (n int32, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.topics[name]
	if !ok {
		return 0, false
	}
	return c.t.Partitions, true
}

// Partitions returns the partition count of a topic.
func (l *Log) Partitions(ctx context.Context, topic string) (int32, error) {
	t, err := l.Topic(ctx, topic)
	if err != nil {
		return 0, err
	}
	return t.Partitions, nil
}

// Retention returns the topic's retention (cached as Topic is): what consumer groups
// measure their time to data loss against.
func (l *Log) Retention(ctx context.Context, topic string) (time.Duration, error) {
	t, err := l.Topic(ctx, topic)
	if err != nil {
		return 0, err
	}
	return t.Retention, nil
}

// Bounds returns a partition's log start offset and high watermark.
func (l *Log) Bounds(ctx context.Context, topic string, partition int32) (logStart, highWatermark int64, err error) {
	t, err := l.checkPartition(ctx, topic, partition)
	if err != nil {
		return 0, 0, err
	}
	return l.bounds(ctx, t.ID(), partition)
}

// checkPartition returns the topic when it has the partition. topic may be a
// store.TopicRef pinning an incarnation (a consumer group member reads the incarnation
// its lease is of): one that is not the live incarnation is ErrTopicNotFound, also
// matching store.ErrFenced, so a run of a deleted incarnation never reads the records
// of a topic created again under the name.
func (l *Log) checkPartition(ctx context.Context, topic string, partition int32) (store.Topic, error) {
	name, _, pinned := store.ParseTopicRef(topic)
	t, err := l.Topic(ctx, name)
	if err == nil && pinned && t.ID() != topic {
		t, err = l.reloadTopic(ctx, name) // the cache may predate the incarnation
	}
	if err != nil {
		return store.Topic{}, err
	}
	if pinned && t.ID() != topic {
		return store.Topic{}, fmt.Errorf("%w: incarnation %s was deleted (%w)", ErrTopicNotFound, topic, store.ErrFenced)
	}
	if partition >= t.Partitions {
		if t, err = l.reloadTopic(ctx, name); err != nil {
			return store.Topic{}, err
		}
	}
	if partition < 0 || partition >= t.Partitions {
		return store.Topic{}, invalidf("partition %d outside [0, %d)", partition, t.Partitions)
	}
	return t, nil
}

// bounds reads the log start and the high watermark from the sequencer item of the
// partition of the topic incarnation id (a store.TopicID): one strongly consistent
// read, and the high watermark never moves back.
func (l *Log) bounds(ctx context.Context, id string, partition int32) (int64, int64, error) {
	st, err := l.meta.Sequencer(ctx, id, partition)
	if err != nil {
		return 0, 0, storeErr(err)
	}
	return st.LogStart, st.NextOffset, nil
}

// UnindexedAge returns how long the partition's newest commit has waited for its index
// entry: 0 once it is indexed (or with no commit), else now − its append time. Commits
// not yet indexed are Strata's under-replicated partitions: readable only once the
// appender or the materialiser behind the sequencer stream indexes them. The newest
// commit is checked (two reads), not a scan for the oldest gap; the materialiser indexes
// in stream order, and the stream's iterator age alarm (infra) bounds the oldest.
func (l *Log) UnindexedAge(ctx context.Context, topic string, partition int32) (time.Duration, error) {
	t, err := l.checkPartition(ctx, topic, partition)
	if err != nil {
		return 0, err
	}
	st, err := l.meta.Sequencer(ctx, t.ID(), partition)
	if err != nil {
		return 0, storeErr(err)
	}
	if st.Last == nil || st.Last.Entry.End() <= st.LogStart {
		return 0, nil
	}
	base := st.Last.Entry.BaseOffset
	es, err := l.meta.IndexEntries(ctx, t.ID(), partition, base, 1)
	if err != nil {
		return 0, storeErr(err)
	}
	if len(es) > 0 && es[0].BaseOffset <= base && base < es[0].End() {
		return 0, nil
	}
	return max(l.now().Sub(st.Last.Entry.AppendedAt), 0), nil
}

// storeErr maps a store failure that is not a domain outcome to ErrUnavailable.
func storeErr(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// Materialize writes the index entries of the commits in states — sequencer items as the
// sequencer table's stream carries them — that are not in the index yet: the commits of
// appenders that stopped between their commit and their index write. It is idempotent
// and safe beside running appenders, and returns how many entries it wrote. The dispatch
// function runs it on every stream batch; `strata dev --backend aws` runs it in-process.
func (l *Log) Materialize(ctx context.Context, states []store.SeqState) (int, error) {
	byPart := map[tpKey]map[int64]store.SeqCommit{}
	for _, st := range states {
		c := st.Last
		if c == nil || c.Entry.End() <= st.LogStart {
			continue // no commit, or one retention has already moved past
		}
		k := tpKey{st.Topic, st.Partition}
		if byPart[k] == nil {
			byPart[k] = map[int64]store.SeqCommit{}
		}
		byPart[k][c.Entry.BaseOffset] = *c
	}
	written := 0
	var errs []error
	for k, commits := range byPart {
		first := int64(-1)
		for base := range commits {
			if first < 0 || base < first {
				first = base
			}
		}
		existing, err := l.meta.IndexEntries(ctx, k.topic, k.partition, first, len(commits)+1)
		if err != nil {
			errs = append(errs, storeErr(err))
			continue
		}
		for _, e := range existing {
			if c, ok := commits[e.BaseOffset]; ok && c.Entry.ObjectKey == e.ObjectKey && c.Entry.ByteOffset == e.ByteOffset {
				delete(commits, e.BaseOffset)
			}
		}
		n := 0
		for _, c := range commits {
			if _, err := l.materialize(ctx, c); err != nil {
				errs = append(errs, err)
				continue
			}
			n++
		}
		if n > 0 {
			name, _ := store.SplitTopicID(k.topic)
			l.metrics.CommitsMaterialized(name, n)
			l.notifier.notify(k)
		}
		written += n
	}
	return written, errors.Join(errs...)
}

// Migrate upgrades every partition of every topic to the counter sequencer (a counter
// seeded from the newest index entry's end where none exists yet). It is idempotent;
// the stores also seed a partition on first use, so it only shortens the window in which
// a partition of the old format could lose its newest entries to TTL before its counter
// exists.
func (l *Log) Migrate(ctx context.Context) error {
	names, err := l.meta.ListTopics(ctx)
	if err != nil {
		return storeErr(err)
	}
	for _, name := range names {
		t, err := l.Topic(ctx, name)
		if errors.Is(err, ErrTopicNotFound) {
			continue // deleted since the listing
		}
		if err != nil {
			return err
		}
		if store.TopicCommits(t.ID()) {
			continue // born with its topic item: nothing to seed
		}
		for p := int32(0); p < t.Partitions; p++ {
			if _, err := l.meta.Sequencer(ctx, t.ID(), p); err != nil {
				return storeErr(fmt.Errorf("migrate %s/%d: %w", name, p, err))
			}
		}
	}
	return nil
}
