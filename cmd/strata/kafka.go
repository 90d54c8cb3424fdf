package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"time"

	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/spf13/cobra"

	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/httpapi"
	"github.com/stratalog/strata/pkg/kafka"
	"github.com/stratalog/strata/pkg/kafka/awsauth"
	"github.com/stratalog/strata/pkg/lambdafn"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/metrics/emf"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
	"github.com/stratalog/strata/pkg/store"
)

// defaultKafkaAddr is where `strata kafka` listens by default (Kafka's port).
const defaultKafkaAddr = "127.0.0.1:9092"

// emfInterval is how often `strata kafka --emf` writes its request metrics.
const emfInterval = 10 * time.Second

// newKafkaCmd is the Kafka-protocol gateway: a stateless process serving Kafka clients
// from a node's log (docs/KAFKA.md, "The Kafka protocol front").
func newKafkaCmd() *cobra.Command {
	var (
		fl        devFlags
		listen    string
		advertise string
		nodeID    int32
		window    time.Duration
		verbose   bool
		ka        kafkaAuthFlags
		emfOut    bool
	)
	cmd := &cobra.Command{
		Use:   "kafka",
		Short: "Serve the Kafka protocol over Strata's log (in progress)",
		Long: `Serve Kafka clients from Strata's log: a stateless gateway that advertises itself as
the leader of every partition, so any number of copies can serve one deployment.
It implements ApiVersions, Metadata, Produce, Fetch, ListOffsets, CreateTopics,
DeleteTopics, CreatePartitions, FindCoordinator and DescribeCluster; consumer groups,
idempotent producers and transactions are not there yet (docs/KAFKA.md lists what is
and the client settings to use).

Authentication (docs/KAFKA.md, "Authentication"): --auth FILE requires SASL/PLAIN with
the tokens of strata dev --auth's file (username the principal's name, password its
token) and enforces its grants per request; --iam requires SASL OAUTHBEARER with a
presigned sts:GetCallerIdentity (pkg/kafka/awsauth), redeemed at --sts-endpoint
(default https://sts.$AWS_REGION.amazonaws.com), the caller's ARN mapped to the
deployment's grants (STRATA_GRANTS, as the api function). Both may be given. Without
either it has no authentication: keep it on loopback or a private network.
--tls-cert and --tls-key serve TLS on the listener (SASL_SSL for clients).

Storage is chosen as for strata dev: --backend local (the default) opens --data-dir,
which one process at a time can hold (use strata dev --kafka to serve Kafka beside the
HTTP API on one data directory); --backend aws opens the bucket and tables of a
deployment (--bucket, --table-prefix; the same environment variables as strata dev).
The gateway runs no retention pass and no stream materialiser: the deployment (its
retention and dispatch functions) or strata dev does.

--advertise is the host:port clients are told to connect to (default --listen; set it
when listening on 0.0.0.0). Prints "kafka listening on ADDR" once ready; SIGINT or
SIGTERM closes every connection and exits.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			level := slog.LevelWarn
			if verbose {
				level = slog.LevelInfo
			}
			logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			env, err := node.FromEnv(os.Getenv)
			if err != nil {
				return err
			}
			ncfg := fl.apply(cmd.Flags(), env)
			ncfg.GroupCommitWindow, ncfg.Logger = window, logger
			if window == 0 {
				ncfg.GroupCommitWindow = -1
			}
			// As the api function: with STRATA_COMPACT_FUNCTION, appends to compacted
			// topics run the dirty-ratio trigger, its invoker's client made from the
			// node's SDK configuration once the node is open (before any append).
			compactor := &lambdafn.CompactInvoker{Function: ncfg.Function.CompactFunction}
			if compactor.Function != "" {
				ncfg.CompactStart = func(ctx context.Context, topic string, p int32) error {
					return compactor.Start(ctx, topic, p, lambdafn.CompactTriggerDirty)
				}
			}
			ctx := cmd.Context()
			var requests kafka.RequestMetrics
			if emfOut {
				sink := emf.New(cmd.OutOrStdout(), ncfg.Function.MetricsNamespace, nil)
				ncfg.Metrics = sink
				kg := emf.NewKafkaGateway(sink)
				requests = kg
				fctx, stopFlush := context.WithCancel(context.Background())
				flushed := make(chan struct{})
				go func() { defer close(flushed); kg.Run(fctx, emfInterval) }()
				defer func() { stopFlush(); <-flushed }()
			}
			// Like the api function, the gateway serves and leaves the deployment's work
			// to the deployment: no stream materialiser (dispatch's, or strata dev's), so
			// it needs no rights on the sequencer's stream.
			n, err := node.Open(ctx, ncfg, node.PartGroups)
			if err != nil {
				return err
			}
			defer n.Close()
			if awsCfg, ok := n.AWS(); ok {
				compactor.Client = awslambda.NewFromConfig(awsCfg)
			}
			auth, err := ka.auth(env.Function, ncfg.AWS.Endpoint, nil)
			if err != nil {
				return err
			}
			tlsCfg, err := ka.tls()
			if err != nil {
				return err
			}
			barriers, _ := n.Meta().(kafka.GroupBarriers)
			gw, err := startKafka(ctx, kafka.Config{Log: n.Log(), Groups: n.Coordinator(), Barriers: barriers, Advertise: advertise, NodeID: nodeID, Logger: logger, Auth: auth, Metrics: requests}, listen, tlsCfg, cmd.OutOrStdout(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			return gw.wait(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", defaultKafkaAddr, "listen address (port 0 picks a free one)")
	f.StringVar(&advertise, "advertise", "", "host:port clients are told to connect to (default the listen address)")
	f.Int32Var(&nodeID, "node-id", 0, "the broker id the gateway reports for itself")
	fl.register(f)
	f.DurationVar(&window, "group-commit-window", runtime.DefaultGroupCommitWindow,
		"concurrent produce requests arriving within this window share one segment object and one commit per partition (0 turns group commit off)")
	f.BoolVar(&verbose, "verbose", false, "log routine events")
	f.StringVar(&ka.file, "auth", "", "require SASL/PLAIN with the tokens and grants of auth `FILE` (strata dev --auth's format)")
	f.BoolVar(&ka.iam, "iam", false, "require SASL OAUTHBEARER with a presigned sts:GetCallerIdentity, the caller's ARN mapped to STRATA_GRANTS")
	f.StringVar(&ka.stsEndpoint, "sts-endpoint", "", "STS endpoint --iam tokens must name and are redeemed at (default https://sts.$AWS_REGION.amazonaws.com)")
	f.StringVar(&ka.audience, "iam-audience", awsauth.DefaultAudience, "audience --iam tokens must be signed for (awsauth.Options.Audience)")
	f.StringVar(&ka.tlsCert, "tls-cert", "", "serve TLS with the certificate (chain) in PEM `FILE` (with --tls-key)")
	f.StringVar(&ka.tlsKey, "tls-key", "", "the private key of --tls-cert, PEM `FILE`")
	f.BoolVar(&emfOut, "emf", false, "write CloudWatch embedded-metric-format lines to stdout: the appends, and per API the requests, server errors and slowest request every 10s (the stack's gateway runs with it)")
	return cmd
}

// kafkaAuthFlags are strata kafka's authentication flags.
type kafkaAuthFlags struct {
	file        string
	iam         bool
	stsEndpoint string
	audience    string
	tlsCert     string
	tlsKey      string
}

// tls is the listener's TLS configuration from --tls-cert and --tls-key (nil without
// them).
func (k kafkaAuthFlags) tls() (*tls.Config, error) {
	if k.tlsCert == "" && k.tlsKey == "" {
		return nil, nil
	}
	if k.tlsCert == "" || k.tlsKey == "" {
		return nil, usageError{errors.New("--tls-cert and --tls-key go together")}
	}
	cert, err := tls.LoadX509KeyPair(k.tlsCert, k.tlsKey)
	if err != nil {
		return nil, fmt.Errorf("kafka: TLS certificate: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// auth is the gateway's authentication from the flags (nil for none): the auth file's
// tokens (or tokens, already loaded by strata dev) for PLAIN, and with --iam the
// deployment's grants (fs) for OAUTHBEARER, redeemed at the STS endpoint (the flag's,
// else the emulator's, else the region's).
func (k kafkaAuthFlags) auth(fs node.FunctionSettings, emulator string, tokens *httpapi.Authorizer) (*kafka.Auth, error) {
	a := &kafka.Auth{Tokens: tokens}
	if k.file != "" {
		var err error
		if a.Tokens, err = httpapi.LoadAuth(k.file); err != nil {
			return nil, err
		}
	}
	if k.iam {
		ps, err := lambdafn.APIPrincipals(fs)
		if err != nil {
			return nil, err
		}
		ep := k.stsEndpoint
		if ep == "" {
			ep = emulator
		}
		if ep == "" {
			region := cmp.Or(os.Getenv("AWS_REGION"), os.Getenv("AWS_DEFAULT_REGION"))
			if region == "" {
				return nil, usageError{errors.New("--iam needs --sts-endpoint or AWS_REGION")}
			}
			ep = "https://sts." + region + ".amazonaws.com"
		}
		grants := func(arn string) kafka.Grants { return kafka.AllowAll{} }
		if ps != nil {
			grants = func(arn string) kafka.Grants { return ps.Principal(arn) }
		}
		a.IAM = &kafka.IAMAuth{Verifier: &awsauth.Verifier{Endpoint: ep, Audience: k.audience}, Grants: grants, KeyCaller: lambdafn.KeyCaller}
	}
	if a.Tokens == nil && a.IAM == nil {
		return nil, nil
	}
	return a, nil
}

// kafkaGateway is a gateway serving one listener.
type kafkaGateway struct {
	srv  *kafka.Server
	done chan struct{}
	err  error // Serve's, once done is closed
}

// startKafka listens on addr (with TLS when tlsCfg is set) and serves cfg's gateway
// there, announcing the address on out (and a warning on errOut beyond loopback when
// the gateway has no authentication).
func startKafka(ctx context.Context, cfg kafka.Config, addr string, tlsCfg *tls.Config, out, errOut io.Writer) (*kafkaGateway, error) {
	srv, err := kafka.New(cfg)
	if err != nil {
		return nil, err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("kafka: listen on %s: %w", addr, err)
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	gw := &kafkaGateway{srv: srv, done: make(chan struct{})}
	go func() { defer close(gw.done); gw.err = srv.Serve(ln) }()
	if _, err := fmt.Fprintf(out, "kafka listening on %s\n", ln.Addr()); err != nil {
		return nil, errors.Join(err, gw.close())
	}
	if cfg.Auth != nil && cfg.Auth.Tokens != nil && tlsCfg == nil && !loopback(ln.Addr().String()) {
		fmt.Fprintf(errOut, "warning: the Kafka gateway listens on %s beyond loopback without TLS: SASL/PLAIN sends tokens in the clear (use --tls-cert/--tls-key or a TLS front)\n", ln.Addr())
	}
	if cfg.Auth == nil && !loopback(ln.Addr().String()) {
		fmt.Fprintf(errOut, "warning: the Kafka gateway listens on %s beyond loopback without authentication: anyone who can reach it may read, produce and delete topics\n", ln.Addr())
	}
	return gw, nil
}

// close stops the gateway and returns what its Serve returned.
func (g *kafkaGateway) close() error {
	if g == nil {
		return nil
	}
	err := g.srv.Close()
	<-g.done
	return errors.Join(err, g.err)
}

// wait serves until ctx ends or the gateway stops by itself, then closes it.
func (g *kafkaGateway) wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
	case <-g.done:
	}
	return g.close()
}

// devKafka starts `strata dev --kafka`'s gateway over the runtime's log and coordinator
// (nil, nil without --kafka), with SASL/PLAIN and the HTTP API's grants when --auth
// turned them on.
func devKafka(ctx context.Context, cmd *cobra.Command, addr string, l *log.Log, groups *group.Coordinator, meta store.MetaStore, logger *slog.Logger, tokens *httpapi.Authorizer) (*kafkaGateway, error) {
	if addr == "" {
		return nil, nil
	}
	var auth *kafka.Auth
	if tokens != nil {
		auth = &kafka.Auth{Tokens: tokens}
	}
	barriers, _ := meta.(kafka.GroupBarriers)
	return startKafka(ctx, kafka.Config{Log: l, Groups: groups, Barriers: barriers, Logger: logger, Auth: auth}, addr, nil, cmd.OutOrStdout(), cmd.ErrOrStderr())
}
