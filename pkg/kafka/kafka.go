// Package kafka is Strata's Kafka-protocol front: a stateless gateway that speaks the
// Kafka wire protocol (franz-go's kmsg encodings, no codec of its own) and serves it
// from a node's log, beside the HTTP API and never on top of it. Every gateway
// advertises itself as the leader of every partition, so any number of copies can
// serve one deployment: all state is in the store. docs/KAFKA.md lists the APIs and
// versions it implements, what is missing and the client settings to use.
package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/wire"
)

// Defaults and bounds of a gateway.
const (
	// DefaultMaxFrameBytes bounds one request frame (Kafka's socket.request.max.bytes is
	// 100 MiB; a Strata append carries at most wire.MaxBatchBytes of records).
	DefaultMaxFrameBytes = 16 << 20
	// DefaultMaxFetchBytes bounds one fetch response's records, whatever the client asks.
	DefaultMaxFetchBytes = 16 << 20
	// DefaultClusterID is the cluster id Metadata and DescribeCluster report.
	DefaultClusterID = "strata"
	// minFrame is the smallest request: api key, version and correlation id.
	minFrame = 8
)

// ErrConfig is returned by New for a configuration a gateway cannot run with.
var ErrConfig = errors.New("kafka: bad configuration")

// Config describes a gateway.
type Config struct {
	// Log is the node's log; required.
	Log *log.Log
	// Groups is the node's group coordinator (the group APIs' store; optional until
	// they are implemented).
	Groups *group.Coordinator
	// Barriers holds the Kafka groups' membership (JoinGroup and SyncGroup barriers);
	// without it the membership APIs answer COORDINATOR_NOT_AVAILABLE.
	Barriers GroupBarriers
	// MinSessionTimeout and MaxSessionTimeout bound a member's session timeout
	// (INVALID_SESSION_TIMEOUT beyond; default DefaultMinSessionTimeout and
	// DefaultMaxSessionTimeout).
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// Advertise is the host:port clients are told to connect to (Metadata,
	// FindCoordinator, DescribeCluster); default the listener's address.
	Advertise string
	// NodeID is the broker id the gateway reports for itself (default 0).
	NodeID int32
	// ClusterID is the cluster id it reports (default DefaultClusterID).
	ClusterID string
	// MaxFrameBytes bounds one request frame; a larger one closes the connection
	// (default DefaultMaxFrameBytes).
	MaxFrameBytes int
	// MaxMessageBytes bounds one record batch, compressed as sent and decompressed
	// (MESSAGE_TOO_LARGE beyond it; default and at most wire.MaxBatchBytes, the most
	// one append takes).
	MaxMessageBytes int
	// MaxFetchBytes bounds one fetch response's records (default DefaultMaxFetchBytes).
	MaxFetchBytes int
	// Logger receives connection failures; nil discards them.
	Logger *slog.Logger
	// Auth, when set, requires SASL authentication on every connection and authorizes
	// each request by the principal's grants; nil serves every connection as the HTTP
	// API's anonymous caller, allowed everything.
	Auth *Auth
	// Metrics receives every dispatched request's API, latency and outcome; nil none.
	Metrics RequestMetrics
}

// Server is a gateway. It is safe for concurrent use; Serve may run on several
// listeners.
type Server struct {
	cfg    Config
	log    *log.Log
	logger *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	lns    map[net.Listener]bool
	conns  map[net.Conn]bool
	closed bool
	// rows writes the producers' sequence rows (rows.go); rowCtx is their writes'
	// context, cancelled by Close once the queued writes are done (or rowDrain passed),
	// and rowWriters counts the goroutines writing them.
	rows       rowCells
	rowCtx     context.Context
	rowCancel  context.CancelFunc
	rowWriters sync.WaitGroup
}

// rowDrain bounds how long Close waits for queued sequence-row writes.
const rowDrain = 10 * time.Second

// New returns a gateway over cfg.Log.
func New(cfg Config) (*Server, error) {
	if cfg.Log == nil {
		return nil, fmt.Errorf("%w: Config.Log is required", ErrConfig)
	}
	if cfg.ClusterID == "" {
		cfg.ClusterID = DefaultClusterID
	}
	if cfg.MaxFrameBytes <= 0 {
		cfg.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if cfg.MaxMessageBytes <= 0 || cfg.MaxMessageBytes > wire.MaxBatchBytes {
		cfg.MaxMessageBytes = wire.MaxBatchBytes
	}
	if cfg.MaxFetchBytes <= 0 {
		cfg.MaxFetchBytes = DefaultMaxFetchBytes
	}
	if cfg.MinSessionTimeout <= 0 {
		cfg.MinSessionTimeout = DefaultMinSessionTimeout
	}
	if cfg.MaxSessionTimeout <= 0 {
		cfg.MaxSessionTimeout = DefaultMaxSessionTimeout
	}
	if a := cfg.Auth; a != nil {
		switch {
		case a.Tokens == nil && a.IAM == nil:
			return nil, fmt.Errorf("%w: Config.Auth offers no SASL mechanism (Tokens or IAM)", ErrConfig)
		case a.IAM != nil && (a.IAM.Verifier == nil || a.IAM.Grants == nil):
			return nil, fmt.Errorf("%w: Config.Auth.IAM needs a Verifier and Grants", ErrConfig)
		}
	}
	if cfg.Advertise != "" {
		if _, _, err := splitHostPort(cfg.Advertise); err != nil {
			return nil, fmt.Errorf("%w: advertised address: %w", ErrConfig, err)
		}
	}
	s := &Server{cfg: cfg, log: cfg.Log, logger: cfg.Logger, lns: map[net.Listener]bool{}, conns: map[net.Conn]bool{}}
	if s.logger == nil {
		s.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.rowCtx, s.rowCancel = context.WithCancel(context.Background())
	return s, nil
}

// Serve accepts connections on ln until Close, one goroutine per connection. It
// returns nil after Close.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = ln.Close()
		return nil
	}
	s.lns[ln] = true
	s.mu.Unlock()
	advertise := s.cfg.Advertise
	if advertise == "" {
		advertise = ln.Addr().String()
	}
	host, port, err := splitHostPort(advertise)
	if err != nil {
		return fmt.Errorf("kafka: advertised address %q: %w", advertise, err)
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return fmt.Errorf("kafka: accept: %w", err)
		}
		if !s.track(c) {
			_ = c.Close()
			return nil
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.untrack(c)
			s.serveConn(c, broker{host: host, port: port})
		}()
	}
}

func (s *Server) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = true
	return true
}

func (s *Server) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	_ = c.Close()
}

// Close stops every listener and connection (requests in flight are cut short: a long
// poll answers nothing), waits for the connections' goroutines, then for the sequence-row
// changes already queued (an answered batch's "appended" record) to be written, at most
// rowDrain.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for ln := range s.lns {
		_ = ln.Close()
	}
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	drained := make(chan struct{})
	go func() {
		s.rowWriters.Wait()
		close(drained)
	}()
	select {
	case <-drained:
	case <-time.After(rowDrain):
		s.logger.Warn("kafka: closing with sequence-row writes still queued", "waited", rowDrain)
	}
	s.rowCancel()
	return nil
}

// broker is the address the gateway advertises on one listener.
type broker struct {
	host string
	port int32
}

func splitHostPort(addr string) (string, int32, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("port %q: %w", p, err)
	}
	return host, int32(port), nil
}

// errClose ends a connection after its answer (if any) is written.
var errClose = errors.New("kafka: connection closed")

// header is a request's header (v1, or v2 for flexible versions).
type header struct {
	key, version int16
	correlation  int32
	clientID     *string
}

// parseHeader reads a request header and returns it with the request's body.
func parseHeader(frame []byte) (header, []byte, error) {
	rd := kbin.Reader{Src: frame}
	h := header{key: rd.Int16(), version: rd.Int16(), correlation: rd.Int32()}
	h.clientID = rd.NullableString()
	if err := rd.Complete(); err != nil {
		return h, nil, fmt.Errorf("%w: request header: %w", errClose, err)
	}
	return h, rd.Src, nil
}

// handle answers one frame as the first of a new connection (see serveFrame).
func (s *Server) handle(ctx context.Context, b broker, frame []byte) ([]byte, error) {
	return s.serveFrame(ctx, b, s.newSession(), frame)
}

// serveFrame answers one frame of the connection whose authentication is ss: the
// encoded response frame (nil when the request takes none) and, when the connection
// must close after it, an error.
func (s *Server) serveFrame(ctx context.Context, b broker, ss *session, frame []byte) ([]byte, error) {
	h, body, err := parseHeader(frame)
	if err != nil {
		return nil, err
	}
	if h.key == apiVersionsKey && !supported(h.key, h.version) {
		// A client that asks for a newer ApiVersions than the gateway knows gets the v0
		// answer naming the versions of ApiVersions it may retry with (KIP-511), as
		// Kafka answers.
		resp := apiVersionsResponse(unsupportedVersion)
		resp.SetVersion(0)
		resp.ApiKeys = slices.DeleteFunc(resp.ApiKeys, func(k kmsg.ApiVersionsResponseApiKey) bool { return k.ApiKey != apiVersionsKey })
		return encodeResponse(h, resp), nil
	}
	req := kmsg.RequestForKey(h.key)
	if req == nil || h.version < 0 || h.version > req.MaxVersion() {
		return nil, fmt.Errorf("%w: api key %d version %d is unknown", errClose, h.key, h.version)
	}
	req.SetVersion(h.version)
	if req.IsFlexible() {
		rd := kbin.Reader{Src: body}
		kmsg.SkipTags(&rd)
		if err := rd.Complete(); err != nil {
			return nil, fmt.Errorf("%w: request header tags: %w", errClose, err)
		}
		body = rd.Src
	}
	if err := req.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("%w: %s v%d: %w", errClose, kmsg.NameForKey(h.key), h.version, err)
	}
	switch admit(ss.phase, h.key) {
	case admitRefuse:
		// Before authentication only ApiVersions and the SASL steps are served; the
		// answer says why the connection then closes, as Kafka's ILLEGAL_SASL_STATE.
		// A Metadata of every topic could not carry the code before v13 and would look
		// like an empty cluster, so it gets no answer.
		err := fmt.Errorf("%w: %s before SASL authentication", errClose, kmsg.NameForKey(h.key))
		if md, ok := req.(*kmsg.MetadataRequest); ok && len(md.Topics) == 0 {
			return nil, err
		}
		if resp := errorResponse(req, illegalSaslState); resp != nil {
			return encodeResponse(h, resp), err
		}
		return nil, err
	case admitSASL:
		if !supported(h.key, h.version) {
			return encodeResponse(h, errorResponse(req, unsupportedVersion)), fmt.Errorf("%w: %s v%d is not implemented", errClose, kmsg.NameForKey(h.key), h.version)
		}
		resp, err := s.saslStep(ctx, ss, req)
		return encodeResponse(h, resp), err
	}
	if !supported(h.key, h.version) {
		resp := errorResponse(req, unsupportedVersion)
		if resp == nil {
			return nil, fmt.Errorf("%w: %s v%d is not implemented", errClose, kmsg.NameForKey(h.key), h.version)
		}
		return encodeResponse(h, resp), nil
	}
	ctx = withClientID(withIdentity(ctx, ss.id), h.clientID)
	if s.cfg.Auth == nil {
		start := time.Now()
		resp, err := s.dispatch(ctx, b, req)
		s.observe(h.key, start, resp, err)
		if resp == nil {
			return nil, err
		}
		return encodeResponse(h, resp), err
	}
	gr := authorize(ss.id.grants, req, s.topicName(ctx))
	switch {
	case gr.err != nil:
		return nil, gr.err
	case gr.deny != nil:
		return encodeResponse(h, gr.deny), nil
	}
	var resp kmsg.Response
	if gr.skip {
		resp = req.ResponseKind()
		resp.SetVersion(h.version)
	} else {
		start := time.Now()
		resp, err = s.dispatch(ctx, b, req)
		s.observe(h.key, start, resp, err)
	}
	if resp == nil {
		return nil, err
	}
	if gr.finish != nil {
		gr.finish(resp)
	}
	return encodeResponse(h, resp), err
}

// encodeResponse frames resp as the answer to h: size, correlation id, the header's
// tags for a flexible version (never for ApiVersions, whose header stays v0), body.
func encodeResponse(h header, resp kmsg.Response) []byte {
	out := make([]byte, 8, 256+responseSizeHint(resp))
	binary.BigEndian.PutUint32(out[4:], uint32(h.correlation))
	if resp.IsFlexible() && resp.Key() != apiVersionsKey {
		out = append(out, 0)
	}
	out = resp.AppendTo(out)
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	return out
}

// dispatch runs the handler of a supported request.
func (s *Server) dispatch(ctx context.Context, b broker, req kmsg.Request) (kmsg.Response, error) {
	switch r := req.(type) {
	case *kmsg.ApiVersionsRequest:
		resp := apiVersionsResponse(0)
		resp.SetVersion(r.Version)
		return resp, nil
	case *kmsg.MetadataRequest:
		return s.metadata(ctx, b, r), nil
	case *kmsg.ProduceRequest:
		return s.produce(ctx, r)
	case *kmsg.FetchRequest:
		return s.fetch(ctx, r), nil
	case *kmsg.ListOffsetsRequest:
		return s.listOffsets(ctx, r), nil
	case *kmsg.CreateTopicsRequest:
		return s.createTopics(ctx, r), nil
	case *kmsg.DeleteTopicsRequest:
		return s.deleteTopics(ctx, r), nil
	case *kmsg.CreatePartitionsRequest:
		return s.createPartitions(ctx, r), nil
	case *kmsg.FindCoordinatorRequest:
		return s.findCoordinator(b, r), nil
	case *kmsg.DescribeClusterRequest:
		return s.describeCluster(b, r), nil
	case *kmsg.OffsetCommitRequest:
		return s.offsetCommit(ctx, r), nil
	case *kmsg.OffsetFetchRequest:
		return s.offsetFetch(ctx, r), nil
	case *kmsg.InitProducerIDRequest:
		return s.initProducerID(ctx, r), nil
	case *kmsg.DescribeConfigsRequest:
		return s.describeConfigs(ctx, r), nil
	case *kmsg.AlterConfigsRequest:
		return s.alterConfigs(ctx, r), nil
	case *kmsg.IncrementalAlterConfigsRequest:
		return s.incrementalAlterConfigs(ctx, r), nil
	}
	if resp, ok := s.dispatchGroup(ctx, req); ok {
		return resp, nil
	}
	return nil, fmt.Errorf("%w: %s has no handler", errClose, kmsg.NameForKey(req.Key()))
}
