package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stratalog/strata/pkg/awsfault"
	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
)

// devFlags are `strata dev`'s flags that override a setting of the environment.
type devFlags struct {
	backend, dataDir, bucket, tablePrefix, objectPrefix string
	bootstrap                                           bool
	defaultPartitions                                   int
	defaultRetention, maxRetention                      time.Duration
}

// register adds the storage flags to f: every command that opens a node through
// node.FromEnv and fl.apply (strata dev, strata kafka) takes the same ones.
func (fl *devFlags) register(f *pflag.FlagSet) {
	f.StringVar(&fl.dataDir, "data-dir", "strata-data", "directory of the embedded backend")
	f.StringVar(&fl.backend, "backend", node.BackendLocal, "storage backend: local or aws")
	f.StringVar(&fl.bucket, "bucket", "", "aws: segment bucket (env "+deploy.EnvBucket+"; default strata-segments)")
	f.StringVar(&fl.tablePrefix, "table-prefix", "", "aws: DynamoDB table name prefix (env "+deploy.EnvTablePrefix+"; default strata-)")
	f.StringVar(&fl.objectPrefix, "object-prefix", "", "aws: key prefix of segment objects in the bucket (env "+deploy.EnvObjectPrefix+")")
	f.BoolVar(&fl.bootstrap, "bootstrap", false, "aws: create the bucket and tables when missing (env "+deploy.EnvBootstrap+"=1)")
	f.IntVar(&fl.defaultPartitions, "default-partitions", 0, "partitions of a topic created without a count (env "+deploy.EnvDefaultPartitions+"; default 4)")
	f.DurationVar(&fl.defaultRetention, "default-retention", 0, "retention of a topic created without one (env "+deploy.EnvDefaultRetentionMS+"; default 24h)")
	f.DurationVar(&fl.maxRetention, "max-retention", 0, "longest retention a topic may ask for, 0 for none (env "+deploy.EnvMaxRetentionMS+"; default none)")
}

// newDevCmd is the local runtime: the whole API on embedded (or AWS) backends in one
// process (docs/API.md, "Local runtime").
func newDevCmd() *cobra.Command {
	var (
		cfg       runtime.Config
		fl        devFlags
		window    time.Duration
		verbose   bool
		accessLog bool
		kafkaAddr string
	)
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Serve the Strata API locally on embedded backends (or AWS)",
		Long: `Serve the Strata HTTP API in one process. With --backend local (the default) records
live under --data-dir (segment files and a bbolt database, fsync'd before every
acknowledgement, so they survive kill -9).

With --backend aws they live in S3 and DynamoDB: the bucket --bucket and the tables
<--table-prefix>topics, <--table-prefix>sequencer, ... (a deployed stack's BucketName and
TablePrefix outputs; --bootstrap creates them when missing). The AWS SDK's default chain
supplies credentials and region: AWS_PROFILE (or AWS_ACCESS_KEY_ID and
AWS_SECRET_ACCESS_KEY) and AWS_REGION (or the profile's region); the identity needs
read and write rights to the bucket and the tables. AWS_ENDPOINT_URL (or its alias
STRATA_AWS_ENDPOINT) points every client at an emulator, e.g. http://127.0.0.1:4566.

Topics: --default-partitions and --default-retention apply where a create request
leaves them out; --max-retention refuses a longer retention (400), as a deployed stack
does at its bucket's lifecycle backstop (none by default locally).

The environment a deployed function reads configures dev too (flags win):
STRATA_BUCKET, STRATA_TABLE_PREFIX, STRATA_OBJECT_PREFIX, STRATA_BOOTSTRAP=1,
STRATA_DEFAULT_PARTITIONS, STRATA_DEFAULT_RETENTION_MS, STRATA_MAX_RETENTION_MS.

Testing aid: with --backend aws, STRATA_FAULT_RATE (0–1) injects AWS faults (throttling,
HTTP 500s, timeouts, before the request or after it was applied) into that fraction of
S3 and DynamoDB requests; see pkg/awsfault for STRATA_FAULT_SEED, STRATA_FAULT_KINDS and
STRATA_FAULT_SERVICES.

The web console is at http://ADDR/console/ (--console=false turns it off); with
--auth, paste a token in its Token field (it is kept in the tab, never in the URL). Its lag
chart shows the history dev samples every --lag-sample-interval and keeps in the store,
so it survives a reload and a restart. --access-log prints one line per request to
stderr (time, method, path, status, bytes, duration; never the query or headers).

Browsers on this machine are kept out: a request whose Origin or Sec-Fetch-Site says
another site, a body that is not JSON, or a Host other than an IP address, localhost or
--allowed-hosts is refused. Without --auth every other client that reaches ADDR may do
everything; a warning says so when ADDR is beyond loopback.

--kafka ADDR also serves the Kafka protocol on ADDR over the same log (strata kafka
says what it implements); with --auth it requires SASL/PLAIN, username a principal's
name and password its token, and enforces the same grants as the HTTP API.

Prints "listening on http://ADDR" once ready, then "console at http://ADDR/console/"
(unless --console=false) and "kafka listening on ADDR" (with --kafka); on SIGINT or SIGTERM it finishes the
requests in flight and exits within 5 seconds.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			level := slog.LevelWarn
			if verbose {
				level = slog.LevelInfo
			}
			cfg.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			if accessLog {
				cfg.AccessLog = cmd.ErrOrStderr()
			}
			env, err := node.FromEnv(os.Getenv)
			if err != nil {
				return err
			}
			cfg.Node = fl.apply(cmd.Flags(), env)
			cfg.Node.GroupCommitWindow = window
			if window == 0 {
				cfg.Node.GroupCommitWindow = -1 // the flag's 0 means off, the runtime's 0 its default
			}
			if cfg.Node.AWS.Faults != nil {
				if cfg.Node.Backend != node.BackendAWS {
					return fmt.Errorf("%s applies to --backend aws only", awsfault.EnvRate)
				}
				cfg.Logger.Warn("injecting AWS faults (testing aid)", "rate", os.Getenv(awsfault.EnvRate))
			}
			return runDev(cmd.Context(), cmd, cfg, kafkaAddr)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Addr, "addr", runtime.DefaultAddr, "listen address (port 0 picks a free one)")
	f.StringVar(&cfg.AuthFile, "auth", "", "auth `FILE` (tokens and grants); without it every call is allowed")
	f.DurationVar(&cfg.RetentionInterval, "retention-interval", runtime.DefaultRetentionInterval, "period of the retention pass")
	fl.register(f)
	f.DurationVar(&window, "group-commit-window", runtime.DefaultGroupCommitWindow,
		"concurrent appends arriving within this window share one segment object and one commit per partition (0 turns group commit off)")
	f.BoolVar(&verbose, "verbose", false, "log retention passes and other routine events")
	f.BoolVar(&accessLog, "access-log", false, "log one line per request to stderr: time, method, path, status, bytes, duration (never the query or headers)")
	f.DurationVar(&cfg.LagSampleInterval, "lag-sample-interval", runtime.DefaultLagSampleInterval,
		"period of the groups' lag samples the console's history chart shows (GET /v1/groups/NAME/lag-history)")
	f.BoolVar(&cfg.Console, "console", true, "serve the web console at /console/")
	f.StringVar(&kafkaAddr, "kafka", "", "also serve the Kafka protocol on `ADDR` (e.g. "+defaultKafkaAddr+"; see strata kafka)")
	f.StringSliceVar(&cfg.AllowedHosts, "allowed-hosts", nil,
		"Host `NAMES` answered besides IP addresses and localhost (comma-separated; * for any): others are refused against DNS rebinding")
	return cmd
}

// apply returns env's node configuration with every flag the command line set applied
// over it (flags win over the environment).
func (fl devFlags) apply(fs *pflag.FlagSet, env node.Config) node.Config {
	cfg := env
	cfg.Backend, cfg.DataDir = fl.backend, fl.dataDir
	set := func(name string, apply func()) {
		if fs.Changed(name) {
			apply()
		}
	}
	set("bucket", func() { cfg.AWS.Bucket = fl.bucket })
	set("table-prefix", func() { cfg.AWS.TablePrefix = fl.tablePrefix })
	set("object-prefix", func() { cfg.AWS.ObjectPrefix = fl.objectPrefix })
	set("bootstrap", func() { cfg.AWS.Bootstrap = fl.bootstrap })
	set("default-partitions", func() { cfg.Topics.Partitions = int32(min(max(fl.defaultPartitions, -1), 1<<20)) })
	set("default-retention", func() { cfg.Topics.Retention = fl.defaultRetention })
	set("max-retention", func() { cfg.Topics.MaxRetention = fl.maxRetention })
	return cfg
}

// runDev opens the node, announces it, serves until ctx ends and shuts down.
func runDev(ctx context.Context, cmd *cobra.Command, cfg runtime.Config, kafkaAddr string) error {
	rt, err := runtime.Open(ctx, cfg)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(cmd.OutOrStdout(), "listening on http://%s\n", rt.Addr()); err != nil {
		return errors.Join(err, rt.Close(context.Background()))
	}
	if cfg.Console {
		if _, err := fmt.Fprintf(cmd.OutOrStdout(), "console at http://%s/console/\n", rt.Addr()); err != nil {
			return errors.Join(err, rt.Close(context.Background()))
		}
	}
	if cfg.AuthFile == "" && !loopback(rt.Addr()) {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: listening on %s beyond loopback without --auth: anyone who can reach it may read, append, reset and delete everything\n", rt.Addr())
	}
	gw, err := devKafka(ctx, cmd, kafkaAddr, rt.Log(), rt.Coordinator(), rt.Meta(), cfg.Logger, rt.Authorizer())
	if err != nil {
		return errors.Join(err, rt.Close(context.Background()))
	}
	serveErr := rt.Serve(ctx)
	serveErr = errors.Join(serveErr, gw.close())
	closeCtx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	return errors.Join(serveErr, rt.Close(closeCtx))
}

// loopback reports whether addr (host:port) listens on loopback only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
