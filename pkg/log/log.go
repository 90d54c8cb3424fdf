// Package log is Strata's partitioned log: topics, Append (one segment object per call,
// one conditional index write per partition — the index is the sequencer) and bounded
// Poll, on top of an ObjectStore and the metadata tables.
package log

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

// Limits of the API contract (docs/API.md).
const (
	MaxRecordBytes     = 1 << 20 // key + value + header bytes of one record
	MaxRecordsPerBatch = 10000
	MaxBatchBytes      = 6 << 20
	MaxPollRecords     = 10000
	DefaultRetention   = 24 * time.Hour
	MinRetention       = time.Second
	MaxPartitions      = 1024
	// retentionGrace is added to a topic's retention for the index entries' TTL, so
	// DynamoDB never deletes an entry the retention job still needs.
	retentionGrace = 24 * time.Hour
)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$`)

// ValidName reports whether s is a valid topic or group name.
func ValidName(s string) bool { return nameRE.MatchString(s) }

// Meta is what the log needs of the metadata tables.
type Meta interface {
	store.TopicStore
	store.IndexStore
	store.PartitionStore
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
	// SequencerTimeout bounds how long one partition of an append keeps losing races
	// for the next offset before failing with ErrUnavailable (default 30s, inside API
	// Gateway's 29s integration limit plus the caller's retry).
	SequencerTimeout time.Duration
}

// Log is safe for concurrent use.
type Log struct {
	objects  store.ObjectStore
	meta     Meta
	now      func() time.Time
	metrics  Metrics
	pollPar  int
	recheck  time.Duration
	seqLimit time.Duration
	notifier *notifier

	mu     sync.Mutex
	topics map[string]store.Topic  // immutable configs, cached
	hw     map[tpKey]int64         // last known high watermark per partition (a hint)
	rr     uint32                  // round-robin cursor for unkeyed records
	seqs   map[tpKey]chan struct{} // per-partition turn of the sequencer
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
		objects:  cfg.Objects,
		meta:     cfg.Meta,
		now:      cfg.Clock,
		metrics:  cfg.Metrics,
		pollPar:  cfg.PollParallelism,
		recheck:  cfg.RecheckInterval,
		seqLimit: cfg.SequencerTimeout,
		notifier: newNotifier(),
		topics:   map[string]store.Topic{},
		hw:       map[tpKey]int64{},
		seqs:     map[tpKey]chan struct{}{},
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
	if l.seqLimit <= 0 {
		l.seqLimit = 30 * time.Second
	}
	if l.recheck <= 0 {
		l.recheck = 200 * time.Millisecond
	}
	return l, nil
}

// TopicInfo describes a topic and the bounds of each partition.
type TopicInfo struct {
	store.Topic
	Partitions []PartitionInfo
}

// PartitionInfo is the readable range of one partition.
type PartitionInfo struct {
	Partition      int32
	LogStartOffset int64
	HighWatermark  int64
}

// CreateTopic creates a topic; retention 0 means DefaultRetention.
func (l *Log) CreateTopic(ctx context.Context, name string, partitions int32, retention time.Duration) (store.Topic, error) {
	if !ValidName(name) {
		return store.Topic{}, invalidf("topic name %q must match %s", name, nameRE)
	}
	if partitions < 1 || partitions > MaxPartitions {
		return store.Topic{}, invalidf("partitions must be 1–%d, got %d", MaxPartitions, partitions)
	}
	if retention == 0 {
		retention = DefaultRetention
	}
	if retention < MinRetention {
		return store.Topic{}, invalidf("retention must be at least %s, got %s", MinRetention, retention)
	}
	t := store.Topic{Name: name, Partitions: partitions, Retention: retention, CreatedAt: l.now().UTC().Truncate(time.Millisecond)}
	if err := l.meta.CreateTopic(ctx, t); err != nil {
		if errors.Is(err, store.ErrExists) {
			return store.Topic{}, fmt.Errorf("%w: %s", ErrTopicExists, name)
		}
		return store.Topic{}, storeErr(err)
	}
	return t, nil
}

// Topic returns a topic's configuration (cached: configurations never change).
func (l *Log) Topic(ctx context.Context, name string) (store.Topic, error) {
	l.mu.Lock()
	t, ok := l.topics[name]
	l.mu.Unlock()
	if ok {
		return t, nil
	}
	if !ValidName(name) {
		return store.Topic{}, fmt.Errorf("%w: %q", ErrTopicNotFound, name)
	}
	t, err := l.meta.GetTopic(ctx, name)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return store.Topic{}, fmt.Errorf("%w: %s", ErrTopicNotFound, name)
		}
		return store.Topic{}, storeErr(err)
	}
	l.mu.Lock()
	l.topics[name] = t
	l.mu.Unlock()
	return t, nil
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
		start, hw, err := l.bounds(ctx, name, p)
		if err != nil {
			return TopicInfo{}, err
		}
		info.Partitions[p] = PartitionInfo{Partition: p, LogStartOffset: start, HighWatermark: hw}
	}
	return info, nil
}

// Partitions returns the partition count of a topic.
func (l *Log) Partitions(ctx context.Context, topic string) (int32, error) {
	t, err := l.Topic(ctx, topic)
	if err != nil {
		return 0, err
	}
	return t.Partitions, nil
}

// Bounds returns a partition's log start offset and high watermark.
func (l *Log) Bounds(ctx context.Context, topic string, partition int32) (logStart, highWatermark int64, err error) {
	if err := l.checkPartition(ctx, topic, partition); err != nil {
		return 0, 0, err
	}
	return l.bounds(ctx, topic, partition)
}

func (l *Log) checkPartition(ctx context.Context, topic string, partition int32) error {
	t, err := l.Topic(ctx, topic)
	if err != nil {
		return err
	}
	if partition < 0 || partition >= t.Partitions {
		return invalidf("partition %d outside [0, %d)", partition, t.Partitions)
	}
	return nil
}

// bounds reads the log start and the high watermark (the end of the newest index
// entry, read strongly consistently).
func (l *Log) bounds(ctx context.Context, topic string, partition int32) (int64, int64, error) {
	hw, err := l.readHW(ctx, topic, partition)
	if err != nil {
		return 0, 0, err
	}
	start, err := l.meta.LogStart(ctx, topic, partition)
	if err != nil {
		return 0, 0, storeErr(err)
	}
	if start > hw {
		start = hw
	}
	return start, hw, nil
}

func (l *Log) readHW(ctx context.Context, topic string, partition int32) (int64, error) {
	e, ok, err := l.meta.LastIndexEntry(ctx, topic, partition)
	if err != nil {
		return 0, storeErr(err)
	}
	var hw int64
	if ok {
		hw = e.End()
	}
	l.noteHW(topic, partition, hw)
	return hw, nil
}

// noteHW raises the cached high-watermark hint.
func (l *Log) noteHW(topic string, partition int32, hw int64) {
	k := tpKey{topic, partition}
	l.mu.Lock()
	if hw > l.hw[k] {
		l.hw[k] = hw
	}
	l.mu.Unlock()
}

func (l *Log) cachedHW(topic string, partition int32) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	hw, ok := l.hw[tpKey{topic, partition}]
	return hw, ok
}

// storeErr maps a store failure that is not a domain outcome to ErrUnavailable.
func storeErr(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// lockPartition waits for the partition's sequencer turn (or ctx) and returns its release.
func (l *Log) lockPartition(ctx context.Context, k tpKey) (func(), error) {
	l.mu.Lock()
	c, ok := l.seqs[k]
	if !ok {
		c = make(chan struct{}, 1)
		l.seqs[k] = c
	}
	l.mu.Unlock()
	select {
	case c <- struct{}{}:
		return func() { <-c }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
