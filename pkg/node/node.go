// Package node is Strata's one composition root: it turns a typed Config into a node —
// the stores (embedded files + bbolt, or S3 + DynamoDB), the log, the group coordinator,
// the materialiser of the sequencer's stream and the retention pass — building only the
// parts its caller asks for. FromEnv is the only reader of the STRATA_* variables and of
// the AWS endpoint variables (names in pkg/deploy). `strata dev` (through pkg/runtime),
// every function main, pkg/lambdaconsumer's default backend, the cost tool and the test
// harnesses open their nodes here.
package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"
	"github.com/aws/smithy-go/middleware"

	"github.com/stratalog/strata/pkg/awsfault"
	"github.com/stratalog/strata/pkg/compact"
	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/retention"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/store/dynamo"
	"github.com/stratalog/strata/pkg/store/local"
	s3store "github.com/stratalog/strata/pkg/store/s3"
)

// Backend names for Config.Backend.
const (
	BackendLocal = "local"
	BackendAWS   = "aws"
)

// ErrConfig is returned for a configuration a node cannot run with.
var ErrConfig = errors.New("node: bad configuration")

// Config describes one node. The zero value of every field but DataDir (with the local
// backend) takes a default.
type Config struct {
	// Backend is "local" (default) or "aws".
	Backend string
	// DataDir holds the embedded backend: DataDir/objects and DataDir/meta.db.
	DataDir string
	// AWS configures the aws backend.
	AWS AWSConfig
	// Topics are the defaults and the maximum retention the log applies to new topics.
	Topics log.TopicDefaults
	// Clock is the log's and the compaction pass's time (time.Now when nil); tests set it.
	Clock func() time.Time
	// GroupCommitWindow, when positive, is the log's group-commit window
	// (log.Config.GroupCommitWindow); zero or negative writes every append on its own.
	GroupCommitWindow time.Duration
	// GroupCommitBytes is the group-commit batch's byte budget
	// (log.Config.GroupCommitBytes); zero is the log's default.
	GroupCommitBytes int
	// Metrics receives the log's observations; none when nil.
	Metrics log.Metrics
	// RetentionMetrics receives each retention pass's results; none when nil.
	RetentionMetrics RetentionMetrics
	// Logger receives the SDK's log lines and the background loops' failures; nil
	// discards them.
	Logger *slog.Logger
	// Function holds the settings only a function reads (FromEnv fills it in).
	Function FunctionSettings
	// FenceLimits bound the producer retry fences a topic holds (zero: the stores'
	// defaults, which every deployment runs with; tests set small ones).
	FenceLimits store.FenceLimits
	// CompactStart, when set, turns the log's dirty-ratio trigger on (compact.Trigger
	// over the metadata store's dirty counters, on the log's clock): it asks for a pass
	// of a compacted partition an append found dirty (the api function invokes the
	// compaction function). A trigger failure is logged, never an append's.
	CompactStart func(ctx context.Context, topic string, partition int32) error
}

// FunctionSettings are the settings of the stack that configure a function rather than
// the node it opens.
type FunctionSettings struct {
	// Grants are the api's grants by IAM principal (none: every caller is refused
	// unless EveryPrincipalAdmin).
	Grants []deploy.Grant
	// EveryPrincipalAdmin opts the api out of authorization: every principal API
	// Gateway admitted may do everything.
	EveryPrincipalAdmin bool
	// Subscriptions are dispatch's subscriptions.
	Subscriptions []deploy.Subscription
	// SubscriptionsPath is where dispatch reads attached subscriptions ("" for none).
	SubscriptionsPath string
	// Topic and Group are the only ones a consumer function accepts ("" accepts any).
	Topic, Group string
	// BusinessTable is the example consumer's table (default deploy.BusinessDefaultTable).
	BusinessTable string
	// MetricsNamespace is the EMF namespace (default deploy.MetricsNamespace).
	MetricsNamespace string
	// RetentionFanout makes the retention function invoke itself once per topic
	// (deploy.Settings.RetentionFanout).
	RetentionFanout bool
	// CompactFanout makes the compaction function invoke itself once per partition of
	// each compacted topic (deploy.Settings.CompactFanout).
	CompactFanout bool
	// CompactFunction is the compaction function the api's dirty-ratio trigger invokes
	// (deploy.Settings.CompactFunction); "" for none.
	CompactFunction string
}

// AWSConfig names the AWS resources and how to reach them. Without SDK, the SDK's default
// configuration chain supplies credentials and region.
type AWSConfig struct {
	// Bucket holds segment objects (default dynamo.DefaultConfig().Bucket).
	Bucket string
	// ObjectPrefix is prepended to every object key (default none).
	ObjectPrefix string
	// TablePrefix is prepended to every table name (default dynamo.DefaultConfig()).
	TablePrefix string
	// Endpoint, when set, is where every client goes (an emulator); S3 is then
	// addressed path-style.
	Endpoint string
	// Bootstrap creates the bucket and tables when missing (emulators, development).
	Bootstrap bool
	// PathStyle addresses S3 as endpoint/bucket/key (forced on with an Endpoint).
	PathStyle bool
	// APIOptions are added to every SDK client's middleware stack (tests: request
	// counters).
	APIOptions []func(*middleware.Stack) error
	// Faults, when set, injects AWS faults into the node's requests (a testing aid).
	Faults *awsfault.Injector
	// SDK, when set, is the SDK configuration to use instead of loading the default
	// chain (tests and the cost tool on an emulator, with static credentials).
	SDK *aws.Config
}

// RetentionMetrics receives the outcome of retention passes (*metrics.Metrics has it).
type RetentionMetrics interface {
	RetentionRun(st retention.Stats, err error)
	TTLDeleted(n int)
}

// Parts says which parts of a node Open builds beyond the stores.
type Parts uint8

// The parts of a node. Groups and Materializer imply Log.
const (
	// PartLog is the partitioned log.
	PartLog Parts = 1 << iota
	// PartGroups is the group coordinator.
	PartGroups
	// PartMaterializer reads the sequencer's stream (aws backend) to index the commits
	// of appenders that stopped between their commit and their index write.
	PartMaterializer
	// PartRetention is the retention pass.
	PartRetention
	// PartCompaction is the compaction pass of compacted topics (pkg/compact).
	PartCompaction
)

// Node is an opened node: its stores and the parts asked for.
type Node struct {
	cfg       Config
	parts     Parts
	logger    *slog.Logger
	objects   store.ObjectStore
	meta      store.MetaStore
	localMeta *local.MetaStore
	// localObjects is the embedded backend's object store, closed with the node.
	localObjects *local.PackStore
	log          *log.Log
	coord        *group.Coordinator
	commits      *dynamo.CommitStream
	awsCfg       *aws.Config
}

// Open opens the stores of cfg and builds the parts asked for. Close releases them.
func Open(ctx context.Context, cfg Config, parts Parts) (*Node, error) {
	if cfg.Backend == "" {
		cfg.Backend = BackendLocal
	}
	if parts&(PartGroups|PartMaterializer) != 0 {
		parts |= PartLog
	}
	n := &Node{cfg: cfg, parts: parts, logger: cfg.Logger}
	if n.logger == nil {
		n.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if err := cfg.Topics.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := n.openStores(ctx); err != nil {
		_ = n.Close()
		return nil, err
	}
	if parts&PartLog != 0 {
		var err error
		n.log, err = log.New(log.Config{Objects: n.objects, Meta: n.meta, Metrics: cfg.Metrics,
			GroupCommitWindow: max(cfg.GroupCommitWindow, 0), GroupCommitBytes: cfg.GroupCommitBytes, Topics: cfg.Topics, Clock: cfg.Clock,
			KeyOverwrites: n.keyOverwrites()})
		if err != nil {
			_ = n.Close()
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
	}
	if parts&PartGroups != 0 {
		n.coord = group.New(n.meta, n.log, nil)
	}
	return n, nil
}

// keyOverwrites is the log's dirty-ratio trigger when Config.CompactStart asks for one
// and the metadata store keeps dirty counters; nil otherwise.
func (n *Node) keyOverwrites() func(ctx context.Context, t store.Topic, partition int32, overwrites, next int64) {
	counters, ok := n.meta.(store.DirtyCounterStore)
	if n.cfg.CompactStart == nil || !ok {
		return nil
	}
	tr := &compact.Trigger{Store: counters, Clock: n.cfg.Clock, Start: n.cfg.CompactStart}
	return func(ctx context.Context, t store.Topic, partition int32, overwrites, next int64) {
		asked, err := tr.Overwrote(ctx, t, partition, overwrites, next)
		if err != nil {
			n.logger.Warn("compaction trigger failed; the scheduled pass covers the partition", "topic", t.Name, "partition", partition, "error", err)
		} else if asked {
			n.logger.Info("compaction asked for: dirty ratio past the threshold", "topic", t.Name, "partition", partition)
		}
	}
}

func (n *Node) openStores(ctx context.Context) error {
	switch n.cfg.Backend {
	case BackendLocal:
		if n.cfg.DataDir == "" {
			return fmt.Errorf("%w: the local backend needs a data directory", ErrConfig)
		}
		if n.cfg.AWS.Faults != nil {
			return fmt.Errorf("%w: %s applies to the aws backend only", ErrConfig, awsfault.EnvRate)
		}
		objs, err := local.OpenPackStore(ctx, filepath.Join(n.cfg.DataDir, "objects"))
		if err != nil {
			return fmt.Errorf("node: %w", err)
		}
		meta, err := local.OpenMetaStore(filepath.Join(n.cfg.DataDir, "meta.db"), local.WithFenceLimits(n.cfg.FenceLimits))
		if err != nil {
			return errors.Join(fmt.Errorf("node: %w", err), objs.Close())
		}
		n.objects, n.meta, n.localMeta, n.localObjects = objs, meta, meta, objs
		return nil
	case BackendAWS:
		return n.openAWS(ctx)
	}
	return fmt.Errorf("%w: unknown backend %q (want %s or %s)", ErrConfig, n.cfg.Backend, BackendLocal, BackendAWS)
}

// DynamoConfig is the table and bucket naming of c: its names over
// dynamo.DefaultConfig().
func (c AWSConfig) DynamoConfig() dynamo.Config {
	dcfg := dynamo.DefaultConfig()
	if c.Bucket != "" {
		dcfg.Bucket = c.Bucket
	}
	if c.TablePrefix != "" {
		dcfg.TablePrefix = c.TablePrefix
	}
	return dcfg
}

// LoadSDK returns the SDK configuration of c, loaded once per call: c.SDK or the default
// chain, pointed at c.Endpoint, with c's middleware and faults added and the SDK's log
// lines sent to logger (nil discards them).
func (c AWSConfig) LoadSDK(ctx context.Context, logger *slog.Logger) (aws.Config, error) {
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	var awsCfg aws.Config
	if c.SDK != nil {
		awsCfg = c.SDK.Copy()
	} else {
		var err error
		if awsCfg, err = config.LoadDefaultConfig(ctx, config.WithLogger(sdkLogger(logger))); err != nil {
			return aws.Config{}, fmt.Errorf("node: load AWS configuration (credentials and region: the SDK's default chain, "+
				"e.g. AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, and AWS_REGION): %w", err)
		}
	}
	if c.Endpoint != "" {
		awsCfg.BaseEndpoint = aws.String(c.Endpoint)
	}
	awsCfg.APIOptions = append(append([]func(*middleware.Stack) error(nil), awsCfg.APIOptions...), c.APIOptions...)
	if c.Faults != nil {
		awsCfg.APIOptions = append(awsCfg.APIOptions, c.Faults.Middleware)
	}
	if awsCfg.Region == "" {
		return aws.Config{}, fmt.Errorf("%w: no AWS region: set AWS_REGION (or a profile's region)", ErrConfig)
	}
	return awsCfg, nil
}

// S3Client returns the S3 client of awsCfg as c addresses it (path-style with an
// endpoint, as emulators on 127.0.0.1 need).
func (c AWSConfig) S3Client(awsCfg aws.Config) *awss3.Client {
	pathStyle := c.PathStyle || c.Endpoint != "" || c.SDK != nil && c.SDK.BaseEndpoint != nil
	return awss3.NewFromConfig(awsCfg, func(o *awss3.Options) { o.UsePathStyle = o.UsePathStyle || pathStyle })
}

func (n *Node) openAWS(ctx context.Context) error {
	ac := n.cfg.AWS
	dcfg := ac.DynamoConfig()
	dcfg.FenceLimits = n.cfg.FenceLimits
	awsCfg, err := ac.LoadSDK(ctx, n.logger)
	if err != nil {
		return err
	}
	n.awsCfg = &awsCfg
	s3c := ac.S3Client(awsCfg)
	ddb := dynamodb.NewFromConfig(awsCfg)
	if ac.Bootstrap {
		if err := dynamo.Bootstrap(ctx, ddb, s3c, dcfg); err != nil {
			return fmt.Errorf("node: bootstrap AWS resources: %w", err)
		}
	}
	n.objects = s3store.New(s3c, dcfg.Bucket, ac.ObjectPrefix)
	n.meta = dynamo.New(ddb, dcfg)
	if n.parts&PartMaterializer != 0 {
		n.commits = dynamo.NewCommitStream(ddb, dynamodbstreams.NewFromConfig(awsCfg), dcfg)
	}
	return nil
}

// sdkLogger sends the SDK's log lines (by default printed to stderr, e.g. one per
// ranged GET without a checksum) to logger: warnings as warnings, the rest at debug.
func sdkLogger(logger *slog.Logger) logging.Logger {
	return logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
		level := slog.LevelDebug
		if c == logging.Warn {
			level = slog.LevelWarn
		}
		logger.Log(context.Background(), level, fmt.Sprintf(format, v...), "source", "aws-sdk")
	})
}

// Config is the configuration the node was opened with (Backend defaulted).
func (n *Node) Config() Config { return n.cfg }

// Objects is the node's object store.
func (n *Node) Objects() store.ObjectStore { return n.objects }

// Meta is the node's metadata store.
func (n *Node) Meta() store.MetaStore { return n.meta }

// Effects returns the fenced business store of the node's backend (store.EffectStore):
// on AWS the DynamoDB table named table (the user's, see dynamo.EffectStore), fenced by
// the deployment's assignments table; locally the metadata file's own buckets (table
// is not used).
func (n *Node) Effects(table string) (store.EffectStore, error) {
	switch m := n.meta.(type) {
	case *dynamo.MetaStore:
		if table == "" {
			return nil, fmt.Errorf("node: the aws backend's fenced business store needs a table name")
		}
		return m.Effects(table), nil
	case store.EffectStore:
		return m, nil
	}
	return nil, fmt.Errorf("node: %T has no fenced business store", n.meta)
}

// Log is the node's log; nil unless Open was asked for PartLog.
func (n *Node) Log() *log.Log { return n.log }

// Coordinator is the node's group coordinator; nil unless asked for PartGroups.
func (n *Node) Coordinator() *group.Coordinator { return n.coord }

// CommitStream is the reader of the sequencer table's stream (aws backend, opened with
// PartMaterializer); nil otherwise.
func (n *Node) CommitStream() *dynamo.CommitStream { return n.commits }

// AWS is the SDK configuration the stores use (loaded once; dispatch builds its Lambda
// client from it); false on the local backend.
func (n *Node) AWS() (aws.Config, bool) {
	if n.awsCfg == nil {
		return aws.Config{}, false
	}
	return *n.awsCfg, true
}

// RunRetention makes one retention pass now (and, on the embedded backend, the TTL
// sweep DynamoDB does by itself). It needs PartRetention.
func (n *Node) RunRetention(ctx context.Context) (retention.Stats, error) {
	if n.parts&PartRetention == 0 {
		return retention.Stats{}, errors.New("node: RunRetention needs a node opened with PartRetention")
	}
	job := retention.Job{Meta: n.meta, Objects: n.objects}
	st, err := job.Run(ctx)
	rm := n.cfg.RetentionMetrics
	if rm != nil {
		rm.RetentionRun(st, err)
	}
	if n.localMeta != nil {
		d, derr := n.localMeta.DeleteExpired(ctx, time.Now())
		if rm != nil {
			rm.TTLDeleted(d)
		}
		err = errors.Join(err, derr)
	}
	return st, err
}

// RunCompaction makes one compaction pass now over every compacted topic (`strata dev`
// runs it after each retention pass; the compaction function when it does not fan out).
// It needs PartCompaction.
func (n *Node) RunCompaction(ctx context.Context) (compact.Stats, error) {
	job, err := n.compactJob()
	if err != nil {
		return compact.Stats{}, err
	}
	return job.Run(ctx)
}

// ErrNotCompacted is RunCompactionPartition of a topic that is not compacted (or a
// partition it does not have): nothing to do, not a failure of the store.
var ErrNotCompacted = errors.New("node: not a partition of a compacted topic")

// compactJob is the compaction pass's job over the node's stores, on its clock.
func (n *Node) compactJob() (compact.Job, error) {
	if n.parts&PartCompaction == 0 {
		return compact.Job{}, errors.New("node: compaction needs a node opened with PartCompaction")
	}
	meta, ok := n.meta.(compact.Meta)
	if !ok {
		return compact.Job{}, fmt.Errorf("node: the %T meta store cannot swap index entries", n.meta)
	}
	return compact.Job{Meta: meta, Objects: n.objects, Clock: n.cfg.Clock}, nil
}

// RunCompactionPartition compacts one partition of the compacted topic name
// (compact.Job.Partition, bounded by its MaxRewrites): what each invocation of the
// compaction function's fan-out, and each one the dirty-ratio trigger starts, runs. It
// collects no garbage (the scheduled invocation does, once per topic). A topic that is
// missing, not compacted, or without the partition is ErrNotCompacted. It needs
// PartCompaction.
func (n *Node) RunCompactionPartition(ctx context.Context, name string, partition int32) (compact.Stats, error) {
	var st compact.Stats
	job, err := n.compactJob()
	if err != nil {
		return st, err
	}
	t, err := n.meta.GetTopic(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return st, fmt.Errorf("%w: topic %s is gone", ErrNotCompacted, name)
	}
	if err != nil {
		return st, fmt.Errorf("node: compaction of %s/%d: %w", name, partition, err)
	}
	if !t.Compacted() || partition < 0 || partition >= t.Partitions {
		return st, fmt.Errorf("%w: %s/%d (cleanup.policy=%s, %d partitions)", ErrNotCompacted, name, partition, t.Cleanup, t.Partitions)
	}
	err = job.Partition(ctx, t, partition, &st)
	if counters, ok := n.meta.(store.DirtyCounterStore); ok && st.RecordsRemoved > 0 {
		// The dirty-ratio trigger's estimate subtracts what passes removed.
		err = errors.Join(err, counters.AddRemoved(ctx, t.ID(), partition, st.RecordsRemoved))
	}
	if err != nil {
		return st, fmt.Errorf("node: compaction of %s/%d: %w", name, partition, err)
	}
	return st, nil
}

// RunCompactionFanout is the compaction function's scheduled pass fanned out per
// partition: it hands every partition of every compacted topic to start (the function
// invokes itself asynchronously with it, each partition's pass its own invocation:
// RunCompactionPartition), so a pass takes its largest partition's time, not the sum;
// then it collects each compacted topic's garbage here (compact.Job.Collect: the
// objects rewrites replaced, once no reader can hold them). A partition start fails
// for is left to the next schedule. It needs PartCompaction.
func (n *Node) RunCompactionFanout(ctx context.Context, start func(ctx context.Context, topic string, partition int32) error) (compact.Stats, error) {
	var st compact.Stats
	job, err := n.compactJob()
	if err != nil {
		return st, err
	}
	names, err := n.meta.ListTopics(ctx)
	if err != nil {
		return st, fmt.Errorf("node: compaction: list topics: %w", err)
	}
	var errs []error
	for _, name := range names {
		t, err := n.meta.GetTopic(ctx, name)
		if errors.Is(err, store.ErrNotFound) {
			continue // deleted since the listing
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("node: compaction: topic %s: %w", name, err))
			continue
		}
		if !t.Compacted() {
			continue
		}
		for p := int32(0); p < t.Partitions; p++ {
			if err := start(ctx, name, p); err != nil {
				errs = append(errs, fmt.Errorf("node: compaction of %s/%d: %w", name, p, err))
			}
		}
		if err := job.Collect(ctx, t, &st); err != nil {
			errs = append(errs, fmt.Errorf("node: %w", err))
		}
	}
	return st, errors.Join(errs...)
}

// SampleLag records every group's lag now in the store's lag history
// (group.Coordinator.SampleLag). It needs PartGroups.
func (n *Node) SampleLag(ctx context.Context) error {
	if n.coord == nil {
		return errors.New("node: SampleLag needs a node opened with PartGroups")
	}
	_, err := n.coord.SampleLag(ctx)
	return err
}

// RunScheduledPass is the retention function's pass outside Lambda: the retention pass,
// the compaction pass when the node was opened with PartCompaction, then a lag sample
// of every group (which needs a scheduled pass on AWS, where no process outlives a
// request) when the node was opened with PartGroups. Each runs even if one fails.
func (n *Node) RunScheduledPass(ctx context.Context) (retention.Stats, error) {
	st, err := n.RunRetention(ctx)
	err = errors.Join(err, n.scheduledCompaction(ctx))
	if n.coord != nil {
		if lerr := n.SampleLag(ctx); lerr != nil {
			err = errors.Join(err, fmt.Errorf("node: lag sample: %w", lerr))
		}
	}
	return st, err
}

// scheduledCompaction is a scheduled pass's compaction step: one compaction pass when
// the node was opened with PartCompaction, its work logged.
func (n *Node) scheduledCompaction(ctx context.Context) error {
	if n.parts&PartCompaction == 0 {
		return nil
	}
	cst, err := n.RunCompaction(ctx)
	if cst.Rewrites > 0 || cst.ObjectsDeleted > 0 {
		n.logger.Info("compaction pass", "records_removed", cst.RecordsRemoved, "rewrites", cst.Rewrites, "objects_deleted", cst.ObjectsDeleted)
	}
	if err != nil {
		return fmt.Errorf("node: compaction: %w", err)
	}
	return nil
}

// RunRetentionTopic makes the retention pass over the one topic name
// (retention.Job.RunTopic): what each invocation of the retention function's fan-out
// runs. It needs PartRetention.
func (n *Node) RunRetentionTopic(ctx context.Context, name string) (retention.Stats, error) {
	if n.parts&PartRetention == 0 {
		return retention.Stats{}, errors.New("node: RunRetentionTopic needs a node opened with PartRetention")
	}
	job := retention.Job{Meta: n.meta, Objects: n.objects}
	st, err := job.RunTopic(ctx, name)
	if rm := n.cfg.RetentionMetrics; rm != nil {
		rm.RetentionRun(st, err)
	}
	return st, err
}

// RunScheduledFanout is RunScheduledPass fanned out per topic: it hands every live topic
// to start (the retention function invokes itself asynchronously with it, each topic's
// pass its own invocation: RunRetentionTopic), so a pass's time is its largest topic's,
// not the sum of all; then it purges deleted topics and samples every group's lag. A
// topic start fails for is left to the next schedule. With PartCompaction the
// compaction pass runs here too; the retention function opens its node without it (the
// compaction function compacts on AWS). It needs PartRetention.
func (n *Node) RunScheduledFanout(ctx context.Context, start func(ctx context.Context, topic string) error) (retention.Stats, error) {
	if n.parts&PartRetention == 0 {
		return retention.Stats{}, errors.New("node: RunScheduledFanout needs a node opened with PartRetention")
	}
	names, err := n.meta.ListTopics(ctx)
	if err != nil {
		return retention.Stats{}, fmt.Errorf("node: retention: list topics: %w", err)
	}
	var errs []error
	for _, name := range names {
		if err := start(ctx, name); err != nil {
			errs = append(errs, fmt.Errorf("node: retention of %s: %w", name, err))
		}
	}
	job := retention.Job{Meta: n.meta, Objects: n.objects}
	st, err := job.RunDeleted(ctx)
	if rm := n.cfg.RetentionMetrics; rm != nil {
		rm.RetentionRun(st, err)
	}
	errs = append(errs, err, n.scheduledCompaction(ctx))
	if n.coord != nil {
		if lerr := n.SampleLag(ctx); lerr != nil {
			errs = append(errs, fmt.Errorf("node: lag sample: %w", lerr))
		}
	}
	return st, errors.Join(errs...)
}

// RunLagSampleLoop samples every group's lag every interval until ctx ends (`strata
// dev`'s loop; the retention function samples on AWS).
func (n *Node) RunLagSampleLoop(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := n.SampleLag(ctx); err != nil && ctx.Err() == nil {
			n.logger.Warn("lag sample failed", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// RunRetentionLoop runs a retention pass every interval until ctx ends.
func (n *Node) RunRetentionLoop(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			start := time.Now()
			st, err := n.RunRetention(ctx)
			if err != nil && ctx.Err() == nil {
				n.logger.Error("retention pass failed", "error", err)
			} else if st.PartitionsMoved > 0 || st.ObjectsDeleted > 0 {
				n.logger.Info("retention pass", "records_expired", st.RecordsExpired,
					"objects_deleted", st.ObjectsDeleted, "entries_deleted", st.EntriesDeleted,
					"took", time.Since(start).Round(time.Millisecond))
			}
			if n.parts&PartCompaction == 0 {
				continue
			}
			start = time.Now()
			cst, err := n.RunCompaction(ctx)
			if err != nil && ctx.Err() == nil {
				n.logger.Error("compaction pass failed", "error", err)
			} else if cst.Rewrites > 0 || cst.ObjectsDeleted > 0 {
				n.logger.Info("compaction pass", "records_removed", cst.RecordsRemoved, "rewrites", cst.Rewrites,
					"objects_deleted", cst.ObjectsDeleted, "took", time.Since(start).Round(time.Millisecond))
			}
		}
	}
}

// RunMaterializer indexes, until ctx ends, the commits of appenders that stopped between
// their commit and their index write, from the sequencer table's stream (aws backend
// with PartMaterializer, as the dispatch function does in AWS; it returns at once
// otherwise: the embedded backend commits and indexes in one transaction).
func (n *Node) RunMaterializer(ctx context.Context) {
	if n.commits == nil {
		return
	}
	for ctx.Err() == nil {
		err := n.commits.Run(ctx, func(ctx context.Context, batch []store.SeqState) error {
			_, err := n.log.Materialize(ctx, batch)
			if err != nil && ctx.Err() == nil {
				n.logger.Warn("materialising commits failed; the batch is retried", "error", err)
			}
			return err
		})
		if err != nil && ctx.Err() == nil {
			n.logger.Error("reading the sequencer stream failed; retrying", "error", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// Close releases the stores. It is safe to call more than once.
func (n *Node) Close() error {
	var errs []error
	if n.localMeta != nil {
		m := n.localMeta
		n.localMeta = nil
		if err := m.Close(); err != nil {
			errs = append(errs, fmt.Errorf("node: close meta store: %w", err))
		}
	}
	if n.localObjects != nil {
		o := n.localObjects
		n.localObjects = nil
		if err := o.Close(); err != nil {
			errs = append(errs, fmt.Errorf("node: close object store: %w", err))
		}
	}
	return errors.Join(errs...)
}
