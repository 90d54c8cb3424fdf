// Package runtime assembles a whole Strata node in one process from explicit
// configuration: the stores (embedded files + bbolt, or S3 + DynamoDB), the log, the
// group coordinator, the HTTP API with /metrics, and the retention loop. `strata dev`
// and the in-process demo both use it (docs/API.md, "Local runtime").
package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"
	"github.com/aws/smithy-go/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/stratalog/strata/pkg/console"
	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/httpapi"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/metrics"
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

// Defaults of the local runtime (docs/API.md).
const (
	DefaultAddr              = "127.0.0.1:4580"
	DefaultRetentionInterval = 30 * time.Second
	// DefaultShutdownTimeout leaves a margin under the contract's 5 s exit.
	DefaultShutdownTimeout = 4 * time.Second
	// DefaultGroupCommitWindow is how long an append waits for others to share its
	// segment object and commits (log.Config.GroupCommitWindow). Locally a write is a
	// page-cache copy and an fsync of well under a millisecond, so a longer window adds
	// latency without saving work: 1 ms gave the best throughput and p99 at 1 and 4
	// producers (docs/BENCHMARKS.md, issue 9). The api function on Lambda uses its own
	// (deploy.DefaultManagedGroupCommitWindow), where each object is an S3 PUT.
	DefaultGroupCommitWindow = time.Millisecond
)

// ErrConfig is returned by Open for a configuration it cannot run.
var ErrConfig = errors.New("runtime: bad configuration")

// Config describes one node. The zero value of every field but DataDir (with the local
// backend) takes a default.
type Config struct {
	// DataDir holds the embedded backend: DataDir/objects and DataDir/meta.db.
	DataDir string
	// Backend is "local" (default) or "aws".
	Backend string
	// AWS configures the aws backend.
	AWS AWSConfig
	// AuthFile, when set, turns authorization on (httpapi.LoadAuth format).
	AuthFile string
	// Auth, when set (and AuthFile is not), is the authorizer to use: the api function
	// builds it from grants keyed by IAM principal.
	Auth *httpapi.Authorizer
	// Sink, when set, receives the log's and the HTTP API's metrics instead of the
	// Prometheus registry (the functions' CloudWatch embedded metrics).
	Sink MetricsSink
	// Console serves the web console (pkg/console) under /console/.
	Console bool
	// Quota is the per-principal produce quota; zero imposes none.
	Quota httpapi.Quota
	// Inflight bounds the append bytes handled at once (httpapi.InflightLimit; zero
	// takes its defaults).
	Inflight httpapi.InflightLimit
	// RetentionInterval is the period of the retention pass (default 30s; negative
	// disables the loop, RunRetention still works).
	RetentionInterval time.Duration
	// AllowedHosts are the Host names a node made by Open answers besides IP
	// literals and localhost (httpapi.LocalGuard; "*" answers any). Open guards its
	// listener against DNS rebinding and cross-site browser requests; New, which the api
	// function behind API Gateway uses, does not.
	AllowedHosts []string
	// Addr is the listen address (default 127.0.0.1:4580; port 0 picks a free port,
	// which Addr reports).
	Addr string
	// Registry receives the metrics; nil creates one with the Go and process collectors.
	Registry *prometheus.Registry
	// Logger receives server-side failures and retention errors; nil discards them.
	Logger *slog.Logger
	// ShutdownTimeout bounds the wait for in-flight requests on shutdown (default 4s).
	ShutdownTimeout time.Duration
	// GroupCommitWindow is the log's group-commit window (log.Config.GroupCommitWindow):
	// Open, which `strata dev` uses, defaults it to DefaultGroupCommitWindow; negative
	// turns group commit off (each append writes its own object and commits).
	GroupCommitWindow time.Duration
}

// MetricsSink receives the log's and the HTTP API's observations.
type MetricsSink interface {
	log.Metrics
	httpapi.Metrics
}

// AWSConfig names the AWS resources. The SDK's default configuration chain supplies
// credentials, region and endpoint (AWS_ENDPOINT_URL points it at an emulator).
type AWSConfig struct {
	// Bucket holds segment objects (default dynamo.DefaultConfig().Bucket).
	Bucket string
	// Prefix is prepended to every object key (default none).
	Prefix string
	// TablePrefix is prepended to every table name (default dynamo.DefaultConfig()).
	TablePrefix string
	// Bootstrap creates the bucket and tables when missing (emulators, development).
	Bootstrap bool
	// PathStyle addresses S3 as endpoint/bucket/key; it is forced on when
	// AWS_ENDPOINT_URL or AWS_ENDPOINT_URL_S3 is set, as emulators on 127.0.0.1 need it.
	PathStyle bool
	// APIOptions are added to every SDK client's middleware stack (tests: request
	// counters, pkg/awsfault's injected faults).
	APIOptions []func(*middleware.Stack) error
}

// AWSConfigFromEnv reads the AWS resource names from the environment variables the
// stack sets for the functions and `strata dev --backend aws` reads (pkg/deploy):
// STRATA_BUCKET, STRATA_OBJECT_PREFIX, STRATA_TABLE_PREFIX.
func AWSConfigFromEnv() AWSConfig {
	return AWSConfig{
		Bucket:      os.Getenv(deploy.EnvBucket),
		Prefix:      os.Getenv(deploy.EnvObjectPrefix),
		TablePrefix: os.Getenv(deploy.EnvTablePrefix),
	}
}

// Runtime is a running node. Its HTTP server starts with Serve; the retention loop
// runs from Open until Close.
type Runtime struct {
	cfg       Config
	logger    *slog.Logger
	objects   store.ObjectStore
	meta      store.MetaStore
	localMeta *local.MetaStore
	log       *log.Log
	coord     *group.Coordinator
	groups    *metrics.Groups
	metrics   *metrics.Metrics
	registry  *prometheus.Registry
	handler   http.Handler
	ln        net.Listener
	srv       *http.Server

	// stopping ends the waits of long polls when shutdown starts.
	stopping   context.Context
	stopPolls  context.CancelFunc
	stopRetain context.CancelFunc
	retainDone chan struct{}
	// commits reads the sequencer's stream (aws backend only): the in-process
	// materialiser, as the dispatch function is in AWS.
	commits         *dynamo.CommitStream
	materialiseDone chan struct{}

	listening    bool
	mu           sync.Mutex
	serving      bool
	serveDone    chan struct{}
	shutdownOnce sync.Once
	closeOnce    sync.Once
	closeErr     error
}

// Open builds the node (see New), binds the listener and starts the retention loop.
func Open(ctx context.Context, cfg Config) (*Runtime, error) {
	if cfg.Addr == "" {
		cfg.Addr = DefaultAddr
	}
	// The node Open serves takes many concurrent requests in one process (strata dev):
	// group commit is on by default here, not for every user of log.Config.
	if cfg.GroupCommitWindow == 0 {
		cfg.GroupCommitWindow = DefaultGroupCommitWindow
	}
	if cfg.RetentionInterval == 0 {
		cfg.RetentionInterval = DefaultRetentionInterval
	}
	r, err := New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	// Upgrade every partition to the counter sequencer now (the functions, started far
	// more often, rely on the stores seeding a partition at its first use instead).
	if err := r.log.Migrate(ctx); err != nil {
		_ = r.closeStores()
		return nil, fmt.Errorf("runtime: upgrade to the counter sequencer: %w", err)
	}
	var lc net.ListenConfig
	r.ln, err = lc.Listen(ctx, "tcp", cfg.Addr)
	if err != nil {
		_ = r.closeStores()
		return nil, fmt.Errorf("runtime: listen on %s: %w", cfg.Addr, err)
	}
	// A listener on a developer's machine is reachable from every page their browser
	// opens: refuse rebound Host names and cross-site requests (docs/API.md).
	r.handler = httpapi.Guard(r.handler, httpapi.LocalGuard{AllowedHosts: cfg.AllowedHosts, PagePrefix: console.Prefix})
	r.srv = httpapi.NewServer(r.ln.Addr().String(), r.handler)
	r.srv.ErrorLog = slog.NewLogLogger(r.logger.Handler(), slog.LevelWarn)
	r.listening = true

	retainCtx, cancel := context.WithCancel(context.Background())
	r.stopRetain = cancel
	r.retainDone = make(chan struct{})
	go r.retentionLoop(retainCtx)
	r.materialiseDone = make(chan struct{})
	go r.materialiseLoop(retainCtx)
	return r, nil
}

// New builds the node without a listener or a retention loop: it opens the stores and
// wires the log, the coordinator and the HTTP handler. The Lambda functions use it (the
// api function serves Handler, the retention function calls RunRetention); Close
// releases it.
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	if cfg.Backend == "" {
		cfg.Backend = BackendLocal
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = DefaultShutdownTimeout
	}
	r := &Runtime{cfg: cfg, logger: cfg.Logger, registry: cfg.Registry}
	if r.logger == nil {
		r.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if r.registry == nil {
		r.registry = prometheus.NewRegistry()
		r.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	ok := false
	defer func() {
		if !ok {
			r.closeStores()
		}
	}()
	if err := r.openStores(ctx); err != nil {
		return nil, err
	}
	m, err := metrics.New(r.registry)
	if err != nil {
		return nil, fmt.Errorf("runtime: register metrics: %w", err)
	}
	r.metrics = m
	var logMetrics log.Metrics = m
	var httpMetrics httpapi.Metrics = m
	if cfg.Sink != nil {
		logMetrics, httpMetrics = cfg.Sink, cfg.Sink
	}
	r.log, err = log.New(log.Config{Objects: r.objects, Meta: r.meta, Metrics: logMetrics,
		GroupCommitWindow: max(cfg.GroupCommitWindow, 0)})
	if err != nil {
		return nil, fmt.Errorf("runtime: %w", err)
	}
	r.coord = group.New(r.meta, r.log, nil)
	r.groups = m.WrapGroups(r.coord)
	if err := r.registry.Register(metrics.NewLagCollector(r.groups, 0)); err != nil {
		return nil, fmt.Errorf("runtime: register lag collector: %w", err)
	}
	auth := cfg.Auth
	if cfg.AuthFile != "" {
		if auth, err = httpapi.LoadAuth(cfg.AuthFile); err != nil {
			return nil, fmt.Errorf("%w: auth file: %w", ErrConfig, err)
		}
	}
	r.stopping, r.stopPolls = context.WithCancel(context.Background())
	// The API handler is the whole server, /metrics included: an outer ServeMux would
	// answer a non-canonical path ("//", ".", "..") with its own 307 redirect before the
	// contract's handler saw it, and /metrics needs the API's authorization.
	api := httpapi.New(httpapi.Config{
		Log:            drainingLog{Log: r.log, stopping: r.stopping},
		Groups:         r.groups,
		Members:        r.coord,
		Admin:          r.coord,
		Auth:           auth,
		Quota:          cfg.Quota,
		Inflight:       cfg.Inflight,
		Metrics:        httpMetrics,
		Logger:         r.logger,
		MetricsHandler: metrics.Handler(r.registry),
	})
	r.handler = api
	if cfg.Console {
		// The console's static page sits beside the API under its own prefix; every
		// other path, canonical or not, is the API's to answer.
		page := console.Handler()
		r.handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			p := req.URL.Path
			canonical := path.Clean(p) == p || path.Clean(p)+"/" == p
			if (req.Method == http.MethodGet || req.Method == http.MethodHead) && canonical && strings.HasPrefix(p, console.Prefix) {
				page.ServeHTTP(w, req)
				return
			}
			api.ServeHTTP(w, req)
		})
	}
	r.stopRetain = func() {}
	r.retainDone = make(chan struct{})
	close(r.retainDone) // no loops until Open starts them
	r.materialiseDone = make(chan struct{})
	close(r.materialiseDone)
	ok = true
	return r, nil
}

func (r *Runtime) openStores(ctx context.Context) error {
	switch r.cfg.Backend {
	case BackendLocal:
		if r.cfg.DataDir == "" {
			return fmt.Errorf("%w: the local backend needs a data directory", ErrConfig)
		}
		objs, err := local.NewObjectStore(filepath.Join(r.cfg.DataDir, "objects"))
		if err != nil {
			return fmt.Errorf("runtime: %w", err)
		}
		meta, err := local.OpenMetaStore(filepath.Join(r.cfg.DataDir, "meta.db"))
		if err != nil {
			return fmt.Errorf("runtime: %w", err)
		}
		r.objects, r.meta, r.localMeta = objs, meta, meta
		return nil
	case BackendAWS:
		return r.openAWS(ctx)
	}
	return fmt.Errorf("%w: unknown backend %q (want local or aws)", ErrConfig, r.cfg.Backend)
}

func (r *Runtime) openAWS(ctx context.Context) error {
	ac := r.cfg.AWS
	dcfg := dynamo.DefaultConfig()
	if ac.Bucket != "" {
		dcfg.Bucket = ac.Bucket
	}
	if ac.TablePrefix != "" {
		dcfg.TablePrefix = ac.TablePrefix
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, config.WithLogger(r.sdkLogger()))
	if err != nil {
		return fmt.Errorf("runtime: load AWS configuration: %w", err)
	}
	awsCfg.APIOptions = append(awsCfg.APIOptions, ac.APIOptions...)
	pathStyle := ac.PathStyle || os.Getenv("AWS_ENDPOINT_URL") != "" || os.Getenv("AWS_ENDPOINT_URL_S3") != ""
	s3c := awss3.NewFromConfig(awsCfg, func(o *awss3.Options) { o.UsePathStyle = pathStyle })
	ddb := dynamodb.NewFromConfig(awsCfg)
	if ac.Bootstrap {
		if err := dynamo.Bootstrap(ctx, ddb, s3c, dcfg); err != nil {
			return fmt.Errorf("runtime: bootstrap AWS resources: %w", err)
		}
	}
	r.objects = s3store.New(s3c, dcfg.Bucket, ac.Prefix)
	r.meta = dynamo.New(ddb, dcfg)
	r.commits = dynamo.NewCommitStream(ddb, dynamodbstreams.NewFromConfig(awsCfg), dcfg)
	return nil
}

// materialiseLoop indexes the commits of appenders that stopped between their commit
// and their index write, from the sequencer table's stream (aws backend; the embedded
// backend commits and indexes in one transaction).
func (r *Runtime) materialiseLoop(ctx context.Context) {
	defer close(r.materialiseDone)
	if r.commits == nil {
		return
	}
	for ctx.Err() == nil {
		err := r.commits.Run(ctx, func(ctx context.Context, batch []store.SeqState) error {
			_, err := r.log.Materialize(ctx, batch)
			if err != nil && ctx.Err() == nil {
				r.logger.Warn("materialising commits failed; the batch is retried", "error", err)
			}
			return err
		})
		if err != nil && ctx.Err() == nil {
			r.logger.Error("reading the sequencer stream failed; retrying", "error", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// sdkLogger sends the SDK's log lines (by default printed to stderr, e.g. one per
// ranged GET without a checksum) to the runtime's logger: warnings as warnings, the
// rest at debug level.
func (r *Runtime) sdkLogger() logging.Logger {
	return logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
		level := slog.LevelDebug
		if c == logging.Warn {
			level = slog.LevelWarn
		}
		r.logger.Log(context.Background(), level, fmt.Sprintf(format, v...), "source", "aws-sdk")
	})
}

// Addr is the address the node listens on (the real port when Config.Addr asked for 0).
func (r *Runtime) Addr() string {
	if !r.listening {
		return ""
	}
	return r.ln.Addr().String()
}

// URL is the node's base URL, http://Addr.
func (r *Runtime) URL() string { return "http://" + r.Addr() }

// Log is the node's log, for in-process users.
func (r *Runtime) Log() *log.Log { return r.log }

// Meta is the node's metadata store (dispatch reads leases and commits from it).
func (r *Runtime) Meta() store.MetaStore { return r.meta }

// Coordinator is the node's group coordinator, for in-process users. Calls through it
// bypass the metrics wrapper; Groups counts them.
func (r *Runtime) Coordinator() *group.Coordinator { return r.coord }

// Groups is the coordinator instrumented with metrics (what the HTTP API uses).
func (r *Runtime) Groups() *metrics.Groups { return r.groups }

// Metrics is the node's metric set, for in-process consumers to report their runs.
func (r *Runtime) Metrics() *metrics.Metrics { return r.metrics }

// Registry is the registry /metrics serves.
func (r *Runtime) Registry() *prometheus.Registry { return r.registry }

// Handler is the node's whole HTTP handler (the API and /metrics).
func (r *Runtime) Handler() http.Handler { return r.handler }

// Serve answers HTTP requests until ctx ends or Close is called, then shuts down
// gracefully: in-flight requests finish (long polls answer at once with what they
// have), bounded by Config.ShutdownTimeout. It returns nil after a shutdown.
func (r *Runtime) Serve(ctx context.Context) error {
	if !r.listening {
		return errors.New("runtime: Serve needs a node made by Open")
	}
	r.mu.Lock()
	if r.serving {
		r.mu.Unlock()
		return errors.New("runtime: Serve called twice")
	}
	r.serving = true
	r.serveDone = make(chan struct{})
	r.mu.Unlock()

	errc := make(chan error, 1)
	go func() {
		defer close(r.serveDone)
		errc <- r.srv.Serve(r.ln)
	}()
	select {
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			r.shutdown() // started by Close; wait until it completes
			return nil
		}
		return fmt.Errorf("runtime: serve: %w", err)
	case <-ctx.Done():
	}
	r.shutdown()
	return nil
}

// shutdown stops the HTTP server once: long polls are told to answer, in-flight
// requests get ShutdownTimeout to finish, then remaining connections are closed.
func (r *Runtime) shutdown() {
	if !r.listening {
		return
	}
	r.shutdownOnce.Do(func() {
		r.stopPolls()
		ctx, cancel := context.WithTimeout(context.Background(), r.cfg.ShutdownTimeout)
		defer cancel()
		if err := r.srv.Shutdown(ctx); err != nil {
			r.logger.Warn("shutdown: requests still in flight were cut off", "error", err)
			_ = r.srv.Close()
		}
		_ = r.ln.Close() // Shutdown closes it only if Serve had started
		r.mu.Lock()
		done := r.serveDone
		r.mu.Unlock()
		if done != nil {
			<-done
		}
	})
}

// Close shuts the server down (if serving), stops the retention loop and closes the
// stores. It is safe to call more than once.
func (r *Runtime) Close(ctx context.Context) error {
	r.closeOnce.Do(func() {
		r.shutdown()
		r.stopRetain()
		select {
		case <-r.retainDone:
		case <-ctx.Done():
			r.closeErr = fmt.Errorf("runtime: retention pass still running: %w", ctx.Err())
		}
		select {
		case <-r.materialiseDone:
		case <-ctx.Done():
			r.closeErr = errors.Join(r.closeErr, fmt.Errorf("runtime: materialiser still running: %w", ctx.Err()))
		}
		r.closeErr = errors.Join(r.closeErr, r.closeStores())
	})
	return r.closeErr
}

func (r *Runtime) closeStores() error {
	if r.localMeta != nil {
		if err := r.localMeta.Close(); err != nil {
			return fmt.Errorf("runtime: close meta store: %w", err)
		}
	}
	return nil
}

// RunRetention makes one retention pass now (and, on the embedded backend, the TTL
// sweep DynamoDB does by itself).
func (r *Runtime) RunRetention(ctx context.Context) (retention.Stats, error) {
	job := retention.Job{Meta: r.meta, Objects: r.objects}
	st, err := job.Run(ctx)
	r.metrics.RetentionRun(st, err)
	if r.localMeta != nil {
		n, derr := r.localMeta.DeleteExpired(ctx, time.Now())
		r.metrics.TTLDeleted(n)
		err = errors.Join(err, derr)
	}
	return st, err
}

func (r *Runtime) retentionLoop(ctx context.Context) {
	defer close(r.retainDone)
	if r.cfg.RetentionInterval < 0 {
		return
	}
	t := time.NewTicker(r.cfg.RetentionInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			st, err := r.RunRetention(ctx)
			if err != nil && ctx.Err() == nil {
				r.logger.Error("retention pass failed", "error", err)
			} else if st.PartitionsMoved > 0 || st.ObjectsDeleted > 0 {
				r.logger.Info("retention pass", "records_expired", st.RecordsExpired,
					"objects_deleted", st.ObjectsDeleted, "entries_deleted", st.EntriesDeleted)
			}
		}
	}
}

// drainingLog ends the wait of long polls when shutdown starts, so they answer at once
// (with the records there are, usually none) instead of holding shutdown for up to
// 20 s; the caller polls again elsewhere.
type drainingLog struct {
	*log.Log
	stopping context.Context
}

// Poll implements httpapi.Log.
func (d drainingLog) Poll(ctx context.Context, topic string, partition int32, offset int64, opt log.PollOptions) (log.PollResult, error) {
	return drain(ctx, d.stopping, opt, func(ctx context.Context, opt log.PollOptions) (log.PollResult, error) {
		return d.Log.Poll(ctx, topic, partition, offset, opt)
	})
}

// PollRanges implements httpapi.Log.
func (d drainingLog) PollRanges(ctx context.Context, topic string, partition int32, offset int64, opt log.PollOptions) (log.RangesResult, error) {
	return drain(ctx, d.stopping, opt, func(ctx context.Context, opt log.PollOptions) (log.RangesResult, error) {
		return d.Log.PollRanges(ctx, topic, partition, offset, opt)
	})
}

// drain runs a poll whose wait ends when stopping does, polling once more without a
// wait if it was cut short by shutdown.
func drain[T any](ctx, stopping context.Context, opt log.PollOptions, poll func(context.Context, log.PollOptions) (T, error)) (T, error) {
	if opt.Wait <= 0 {
		return poll(ctx, opt)
	}
	if stopping.Err() != nil {
		opt.Wait = 0
		return poll(ctx, opt)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(stopping, cancel)
	defer stop()
	res, err := poll(wctx, opt)
	if err != nil && ctx.Err() == nil && stopping.Err() != nil {
		opt.Wait = 0
		return poll(ctx, opt)
	}
	return res, err
}
