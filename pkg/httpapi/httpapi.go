// Package httpapi serves Strata's HTTP contract (docs/API.md) with net/http: topics,
// append, poll, consumer groups, health and authorization. Handlers only decode,
// authorize, call the log or the group coordinator, and encode the answer or map the
// error; the rules live in pkg/log and pkg/group.
package httpapi

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// Log is what the handlers need of the partitioned log (*log.Log implements it).
type Log interface {
	CreateTopicWith(ctx context.Context, name string, spec log.TopicSpec) (store.Topic, error)
	ListTopics(ctx context.Context) ([]string, error)
	DescribeTopic(ctx context.Context, name string) (log.TopicInfo, error)
	Append(ctx context.Context, topic string, recs []log.Record, opt log.AppendOptions) ([]log.Result, error)
	AppendBlocks(ctx context.Context, topic string, blocks []log.Block, opt log.AppendOptions) ([]log.BlockResult, error)
	Poll(ctx context.Context, topic string, partition int32, offset int64, opt log.PollOptions) (log.PollResult, error)
	PollRanges(ctx context.Context, topic string, partition int32, offset int64, opt log.PollOptions) (log.RangesResult, error)
	BatchMark(topic string) (wire.BatchMark, bool)
	CachedPartitions(topic string) (int32, bool)
}

// Groups is what the handlers need of the consumer-group coordinator
// (*group.Coordinator implements it).
type Groups interface {
	Acquire(ctx context.Context, g, topic string, partition int32, member string, ttl time.Duration) (group.Lease, error)
	Renew(ctx context.Context, g, topic string, partition int32, member string, generation int64, ttl time.Duration) (group.Lease, error)
	Release(ctx context.Context, g, topic string, partition int32, member string, generation int64) error
	Commit(ctx context.Context, g, topic string, partition int32, member string, generation, nextOffset int64, completed ...store.OffsetRange) error
	Describe(ctx context.Context, g string) (group.GroupInfo, error)
	Reset(ctx context.Context, g, topic string, to group.ResetTo) ([]group.PartitionOffset, error)
}

// The real implementations satisfy the narrow interfaces.
var (
	_ Log    = (*log.Log)(nil)
	_ Groups = (*group.Coordinator)(nil)
)

// Metrics receives one observation per request: the route pattern that served it
// ("unmatched" when none did), the status code written and the handling time.
// Implementations must be safe for concurrent use.
type Metrics interface {
	Request(route string, status int, elapsed time.Duration)
}

// NopMetrics discards every observation.
type NopMetrics struct{}

// Request implements Metrics.
func (NopMetrics) Request(string, int, time.Duration) {}

// Config holds a server's inputs. Log and Groups are required.
type Config struct {
	Log    Log
	Groups Groups
	// Members serves the member routes (heartbeat, leave); when nil, Groups serves them
	// if it implements Members, else they are not served.
	Members Members
	// Admin serves group administration (settings, list, deleting positions,
	// per-partition resets); when nil, Groups serves it if it implements GroupAdmin.
	// The parked-key routes (GroupParker, PartitionParker) are served by Groups when it
	// implements them, else by Admin when it does.
	Admin GroupAdmin
	// Topics serves topic administration (more partitions, the retention pin); when nil, Log serves it if
	// it implements TopicAdmin.
	Topics TopicAdmin
	// Lag serves the lag history route; when nil, Groups serves it if it implements
	// LagHistory, else it is not served.
	Lag LagHistory
	// Auth enforces the per-topic and per-group ACLs; nil accepts every call.
	Auth *Authorizer
	// Quota is the per-principal produce quota; the zero value imposes none.
	Quota Quota
	// AuthFailures slows down token guessing per client address (with Auth); the zero
	// value takes the defaults.
	AuthFailures AuthFailureLimit
	// Inflight bounds the append body bytes being handled at once; the zero value
	// takes the defaults.
	Inflight InflightLimit
	// BodyRead bounds how long a request body may take to arrive (408 beyond); the
	// zero value takes the defaults.
	BodyRead BodyReadLimit
	// Metrics observes every request; NopMetrics when nil.
	Metrics Metrics
	// Clock returns the current time (quota refill, latency); time.Now when nil.
	Clock func() time.Time
	// Logger receives server-side failures (5xx); discarded when nil.
	Logger *slog.Logger
	// MetricsHandler, when set, is served at GET /metrics to principals allowed
	// OpMetrics on ResourceCluster (anyone when auth is off): its text names every topic
	// and group, which the API hides from a principal without rights.
	MetricsHandler http.Handler
}

// Request body limits, checked before decoding.
const (
	// MaxAppendBody bounds an append request body: the 6 MiB of decoded record bytes
	// the contract allows take 8 MiB as base64, and up to 10,000 records add their JSON
	// framing; anything larger cannot be a valid request. It stays below API Gateway's
	// 10 MB payload limit.
	MaxAppendBody = 9 << 20
	// MaxSmallBody bounds every other request body.
	MaxSmallBody = 64 << 10
	// MaxPollBytes is the largest max_bytes a poll may ask for. As base64 in JSON, with
	// up to 10,000 records' framing, 3 MiB of records stays below the 6 MB response
	// limit of a Lambda behind API Gateway.
	MaxPollBytes = 3 << 20
	// MaxWait is the longest wait_ms of a poll.
	MaxWait = log.MaxPollWait
)

// server holds the handlers' dependencies.
type server struct {
	log      Log
	groups   Groups
	members  Members
	admin    GroupAdmin
	parker   GroupParker
	pparker  PartitionParker
	topics   TopicAdmin
	lag      LagHistory
	auth     *Authorizer
	quota    *quotas
	failures *failLimiter
	inflight *inflight
	bodyRead BodyReadLimit
	metrics  Metrics
	now      func() time.Time
	logger   *slog.Logger
	mux      *http.ServeMux
	promH    http.Handler
}

// New returns the handler of the whole contract, /metrics included when
// Config.MetricsHandler is set. It is meant to be the server's only handler: no outer
// http.ServeMux, whose redirects of non-canonical paths are no answer of the contract.
// It panics if Log or Groups is nil, a wiring bug.
func New(cfg Config) http.Handler {
	if cfg.Log == nil || cfg.Groups == nil {
		panic("httpapi: Config.Log and Config.Groups are required")
	}
	s := &server{
		log:     cfg.Log,
		groups:  cfg.Groups,
		members: cfg.Members,
		admin:   cfg.Admin,
		topics:  cfg.Topics,
		lag:     cfg.Lag,
		auth:    cfg.Auth,
		metrics: cfg.Metrics,
		now:     cfg.Clock,
		logger:  cfg.Logger,
		mux:     http.NewServeMux(),
		promH:   cfg.MetricsHandler,
	}
	if s.metrics == nil {
		s.metrics = NopMetrics{}
	}
	if m, ok := cfg.Groups.(Members); ok && s.members == nil {
		s.members = m
	}
	if pk, ok := cfg.Groups.(GroupParker); ok {
		s.parker = pk
	} else if pk, ok := cfg.Admin.(GroupParker); ok {
		s.parker = pk
	}
	if pk, ok := cfg.Groups.(PartitionParker); ok {
		s.pparker = pk
	} else if pk, ok := cfg.Admin.(PartitionParker); ok {
		s.pparker = pk
	}
	if a, ok := cfg.Groups.(GroupAdmin); ok && s.admin == nil {
		s.admin = a
	}
	if l, ok := cfg.Groups.(LagHistory); ok && s.lag == nil {
		s.lag = l
	}
	if a, ok := cfg.Log.(TopicAdmin); ok && s.topics == nil {
		s.topics = a
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.logger == nil {
		s.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s.quota = newQuotas(cfg.Quota)
	s.failures = newFailLimiter(cfg.AuthFailures)
	s.inflight = newInflight(cfg.Inflight)
	s.bodyRead = cfg.BodyRead.withDefaults()

	const gp = "/v1/groups/{group}/topics/{topic}/partitions/{p}"
	s.mux.HandleFunc("GET /v1/health", s.health)
	s.mux.HandleFunc("POST /v1/topics", s.createTopic)
	s.mux.HandleFunc("GET /v1/topics", s.listTopics)
	s.mux.HandleFunc("GET /v1/topics/{topic}", s.describeTopic)
	s.mux.HandleFunc("POST /v1/topics/{topic}/records", s.appendRecords)
	s.mux.HandleFunc(pollRoute, s.poll)
	s.mux.HandleFunc("POST "+gp+"/lease", s.lease)
	s.mux.HandleFunc("DELETE "+gp+"/lease", s.release)
	s.mux.HandleFunc("POST "+gp+"/commit", s.commit)
	s.mux.HandleFunc("GET /v1/groups/{group}", s.describeGroup)
	s.mux.HandleFunc("POST /v1/groups/{group}/topics/{topic}/reset", s.reset)
	if s.promH != nil {
		s.mux.HandleFunc("GET /metrics", s.serveMetrics)
	}
	s.memberRoutes()
	s.adminRoutes()
	s.offsetRoutes()
	s.statsRoutes()
	s.parkRoutes()
	s.partitionParkRoutes()
	s.topicAdminRoutes()
	s.keyRoutes()
	s.lagHistoryRoutes()
	s.summaryRoutes()
	s.mux.HandleFunc(searchRoute, s.search)
	return s
}

// ServeHTTP routes the request, answers unknown routes and methods with the error body,
// and reports the request to Metrics.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := s.now()
	// No answer of the API is to be sniffed into something a browser would render, nor
	// kept by a browser or a proxy: records, lags and names are the principal's to see.
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	sw := &statusWriter{ResponseWriter: w}
	r = timeBody(sw, r, s.bodyRead, time.Now())
	route := "unmatched"
	// A path ServeMux would clean (".", "..", "//") gets its redirect, which is no answer
	// of the contract: such a path names no route.
	if _, pattern := s.mux.Handler(r); pattern != "" && canonicalPath(r.URL.EscapedPath()) {
		route = pattern
		if e := noQuery(pattern, r.URL.RawQuery); e != nil {
			writeError(sw, e)
		} else {
			s.mux.ServeHTTP(sw, r)
		}
	} else {
		s.unmatched(sw, r)
	}
	status := sw.status
	if status == 0 {
		status = http.StatusOK
	}
	s.metrics.Request(route, status, s.now().Sub(start))
}

// pollRoute is the one route that takes query parameters; it checks its own.
const pollRoute = "GET /v1/topics/{topic}/partitions/{p}/records"

// noQuery refuses any query parameter on a route that takes none (docs/API.md: unknown
// parameters are 400 on every route), so a typo never silently means a default.
func noQuery(pattern, raw string) *apiError {
	if pattern == pollRoute || pattern == offsetsRoute || pattern == partitionParkedRoute || pattern == searchRoute || pattern == statsRoute || pattern == keyRoute || raw == "" {
		return nil
	}
	q, e := parseQuery(raw)
	if e != nil {
		return e
	}
	for k := range q.v {
		return invalid(fmt.Sprintf("unknown query parameter %q (this route takes none)", k))
	}
	return nil
}

// canonicalPath reports whether p is already in the form ServeMux redirects to: rooted,
// without "." or ".." segments or repeated slashes.
func canonicalPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c == p
}

// unmatched turns the mux's plain-text 404 and 405 into the contract's error body.
func (s *server) unmatched(w http.ResponseWriter, r *http.Request) {
	probe := &headerProbe{header: http.Header{}}
	h, _ := s.mux.Handler(r)
	h.ServeHTTP(probe, r)
	if probe.status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", probe.header.Get("Allow"))
		writeError(w, &apiError{status: http.StatusMethodNotAllowed, code: codeMethodNotAllowed,
			message: r.Method + " is not allowed on " + r.URL.Path})
		return
	}
	writeError(w, &apiError{status: http.StatusNotFound, code: codeNotFound, message: "no route " + r.URL.Path})
}

func (s *server) health(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, wire.Health{Status: "ok"})
}

// serveMetrics serves the Prometheus text to a principal allowed OpMetrics on the
// cluster.
func (s *server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.allow(w, r, need{OpMetrics, ResourceCluster}); !ok {
		return
	}
	s.promH.ServeHTTP(w, r)
}

// statusWriter remembers the status code written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// headerProbe captures the mux's own 404/405 answer without sending it.
type headerProbe struct {
	header http.Header
	status int
}

func (p *headerProbe) Header() http.Header         { return p.header }
func (p *headerProbe) Write(b []byte) (int, error) { return len(b), nil }
func (p *headerProbe) WriteHeader(code int)        { p.status = code }

// NewServer returns an http.Server for h with timeouts fit for the contract: the write
// timeout (which runs from the end of the request header, so it covers reading the body,
// handling and answering) outlasts the longest long poll (20 s) with room to spare.
func NewServer(addr string, h http.Handler) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      MaxWait + 40*time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		// "OPTIONS *" reaches the handler, which answers it as no route, like any other
		// path that names none.
		DisableGeneralOptionsHandler: true,
	}
}
