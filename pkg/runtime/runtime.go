// Package runtime serves HTTP for one node: it opens the node through pkg/node (the
// composition root: stores, log, coordinator, materialiser, retention) and adds the HTTP
// API with /metrics, the console, the listener, the background loops and graceful
// shutdown. `strata dev`, the in-process demo and the api function use it
// (docs/API.md, "Local runtime"); functions that serve no HTTP open a node directly.
package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/stratalog/strata/pkg/compact"
	"github.com/stratalog/strata/pkg/console"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/httpapi"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/metrics"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/retention"
	"github.com/stratalog/strata/pkg/store"
)

// Defaults of the local runtime (docs/API.md).
const (
	DefaultAddr              = "127.0.0.1:4580"
	DefaultRetentionInterval = 30 * time.Second
	// DefaultLagSampleInterval is how often Open's loop samples every group's lag into
	// the lag history: 120 samples (group.LagHistorySamples) cover 10 minutes.
	DefaultLagSampleInterval = 5 * time.Second
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

// ErrConfig is returned by Open for a configuration it cannot run (node.ErrConfig).
var ErrConfig = node.ErrConfig

// Config describes one served node.
type Config struct {
	// Node configures the node: backend, stores, topic defaults, group commit. Open,
	// which `strata dev` uses, defaults its GroupCommitWindow to DefaultGroupCommitWindow
	// (negative turns group commit off); New leaves it as given.
	Node node.Config
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
	// BodyRead bounds how long a request body may take to arrive
	// (httpapi.BodyReadLimit; zero takes its defaults).
	BodyRead httpapi.BodyReadLimit
	// RetentionInterval is the period of the retention pass (default 30s; negative
	// disables the loop, RunRetention still works).
	RetentionInterval time.Duration
	// LagSampleInterval is the period of the lag history's sampling loop a node made by
	// Open runs (default DefaultLagSampleInterval; negative disables it).
	LagSampleInterval time.Duration
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
	// AccessLog, when set, receives one line per request a node made by Open serves:
	// method, path, status, bytes and duration (never the query or headers, so never a
	// token).
	AccessLog io.Writer
	// Logger receives server-side failures and retention errors (and the node's, unless
	// Node.Logger is set); nil discards them.
	Logger *slog.Logger
	// ShutdownTimeout bounds the wait for in-flight requests on shutdown (default 4s).
	ShutdownTimeout time.Duration
}

// MetricsSink receives the log's and the HTTP API's observations.
type MetricsSink interface {
	log.Metrics
	httpapi.Metrics
}

// Runtime is a running node. Its HTTP server starts with Serve; the retention loop
// runs from Open until Close.
type Runtime struct {
	cfg      Config
	auth     *httpapi.Authorizer
	logger   *slog.Logger
	node     *node.Node
	log      *log.Log
	coord    *group.Coordinator
	groups   *metrics.Groups
	metrics  *metrics.Metrics
	registry *prometheus.Registry
	handler  http.Handler
	ln       net.Listener
	srv      *http.Server

	// stopping ends the waits of long polls when shutdown starts.
	stopping   context.Context
	stopPolls  context.CancelFunc
	stopRetain context.CancelFunc
	retainDone chan struct{}
	// materialiseDone is closed when the materialiser of the sequencer's stream (aws
	// backend only; the dispatch function is it in AWS) has stopped.
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
	if cfg.Node.GroupCommitWindow == 0 {
		cfg.Node.GroupCommitWindow = DefaultGroupCommitWindow
	}
	if cfg.RetentionInterval == 0 {
		cfg.RetentionInterval = DefaultRetentionInterval
	}
	if cfg.LagSampleInterval == 0 {
		cfg.LagSampleInterval = DefaultLagSampleInterval
	}
	r, err := build(ctx, cfg, node.PartGroups|node.PartRetention|node.PartCompaction|node.PartMaterializer)
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
	// Folded header lines and bare-LF line endings, which net/http accepts, are
	// refused before the server reads them (docs/API.md).
	r.ln = httpapi.StrictListener(r.ln)
	// A listener on a developer's machine is reachable from every page their browser
	// opens: refuse rebound Host names and cross-site requests (docs/API.md).
	r.handler = httpapi.Guard(r.handler, httpapi.LocalGuard{AllowedHosts: cfg.AllowedHosts, PagePrefix: console.Prefix})
	if cfg.AccessLog != nil {
		r.handler = accessLog(r.handler, cfg.AccessLog, time.Now)
	}
	r.srv = httpapi.NewServer(r.ln.Addr().String(), r.handler)
	r.srv.ErrorLog = slog.NewLogLogger(r.logger.Handler(), slog.LevelWarn)
	r.listening = true

	retainCtx, cancel := context.WithCancel(context.Background())
	r.stopRetain = cancel
	r.retainDone = make(chan struct{})
	go func() {
		defer close(r.retainDone)
		var wg sync.WaitGroup
		if cfg.LagSampleInterval > 0 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.node.RunLagSampleLoop(retainCtx, cfg.LagSampleInterval)
			}()
		}
		if cfg.RetentionInterval > 0 {
			r.node.RunRetentionLoop(retainCtx, cfg.RetentionInterval)
		}
		wg.Wait()
	}()
	r.materialiseDone = make(chan struct{})
	go func() {
		defer close(r.materialiseDone)
		r.node.RunMaterializer(retainCtx)
	}()
	return r, nil
}

// New builds the node without a listener or background loops: it opens the node (log,
// coordinator, retention) and wires the HTTP handler. The api function serves Handler;
// Close releases it.
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	return build(ctx, cfg, node.PartGroups|node.PartRetention|node.PartCompaction)
}

func build(ctx context.Context, cfg Config, parts node.Parts) (*Runtime, error) {
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
	ncfg := cfg.Node
	ncfg.Metrics, ncfg.RetentionMetrics = logMetrics, m
	if ncfg.Logger == nil {
		ncfg.Logger = r.logger
	}
	r.node, err = node.Open(ctx, ncfg, parts)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			_ = r.node.Close()
		}
	}()
	r.log = r.node.Log()
	r.coord = r.node.Coordinator()
	r.groups = m.WrapGroups(r.coord)
	if err := r.registry.Register(metrics.NewLagCollector(r.groups, 0)); err != nil {
		return nil, fmt.Errorf("runtime: register lag collector: %w", err)
	}
	if err := r.registry.Register(metrics.NewUnindexedCollector(r.log, 0)); err != nil {
		return nil, fmt.Errorf("runtime: register unindexed commit collector: %w", err)
	}
	auth := cfg.Auth
	if cfg.AuthFile != "" {
		if auth, err = httpapi.LoadAuth(cfg.AuthFile); err != nil {
			return nil, fmt.Errorf("%w: auth file: %w", ErrConfig, err)
		}
	}
	r.auth = auth
	r.stopping, r.stopPolls = context.WithCancel(context.Background())
	// The API handler is the whole server, /metrics included: an outer ServeMux would
	// answer a non-canonical path ("//", ".", "..") with its own 307 redirect before the
	// contract's handler saw it, and /metrics needs the API's authorization.
	api := httpapi.New(httpapi.Config{
		Log:            drainingLog{Log: r.log, stopping: r.stopping},
		Groups:         r.groups,
		Members:        r.coord,
		Admin:          r.coord,
		Lag:            r.coord,
		Auth:           auth,
		Quota:          cfg.Quota,
		Inflight:       cfg.Inflight,
		BodyRead:       cfg.BodyRead,
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

// Addr is the address the node listens on (the real port when Config.Addr asked for 0).
func (r *Runtime) Addr() string {
	if !r.listening {
		return ""
	}
	return r.ln.Addr().String()
}

// URL is the node's base URL, http://Addr.
func (r *Runtime) URL() string { return "http://" + r.Addr() }

// Authorizer is the tokens and grants the HTTP API enforces (nil with auth off), for a
// front beside it (strata dev --kafka) to enforce the same ones.
func (r *Runtime) Authorizer() *httpapi.Authorizer { return r.auth }

// Log is the node's log, for in-process users.
func (r *Runtime) Log() *log.Log { return r.log }

// Meta is the node's metadata store (dispatch reads leases and commits from it).
func (r *Runtime) Meta() store.MetaStore { return r.node.Meta() }

// Node is the node the runtime serves.
func (r *Runtime) Node() *node.Node { return r.node }

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

func (r *Runtime) closeStores() error { return r.node.Close() }

// RunRetention makes one retention pass now (and, on the embedded backend, the TTL
// sweep DynamoDB does by itself).
func (r *Runtime) RunRetention(ctx context.Context) (retention.Stats, error) {
	return r.node.RunRetention(ctx)
}

// RunCompaction makes one compaction pass now over every compacted topic.
func (r *Runtime) RunCompaction(ctx context.Context) (compact.Stats, error) {
	return r.node.RunCompaction(ctx)
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
