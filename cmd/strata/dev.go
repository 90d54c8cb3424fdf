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

	"github.com/stratalog/strata/pkg/awsfault"
	"github.com/stratalog/strata/pkg/runtime"
)

// newDevCmd is the local runtime: the whole API on embedded (or AWS) backends in one
// process (docs/API.md, "Local runtime").
func newDevCmd() *cobra.Command {
	var (
		cfg       runtime.Config
		bootstrap bool
		verbose   bool
	)
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Serve the Strata API locally on embedded backends (or AWS)",
		Long: `Serve the Strata HTTP API in one process. With --backend local (the default) records
live under --data-dir (segment files and a bbolt database, fsync'd before every
acknowledgement, so they survive kill -9). With --backend aws they live in S3 and
DynamoDB, at AWS_ENDPOINT_URL when set (an emulator) or in real AWS.

Testing aid: with --backend aws, STRATA_FAULT_RATE (0–1) injects AWS faults (throttling,
HTTP 500s, timeouts, before the request or after it was applied) into that fraction of
S3 and DynamoDB requests; see pkg/awsfault for STRATA_FAULT_SEED, STRATA_FAULT_KINDS and
STRATA_FAULT_SERVICES.

The web console is at http://ADDR/console/ (--console=false turns it off).

Browsers on this machine are kept out: a request whose Origin or Sec-Fetch-Site says
another site, a body that is not JSON, or a Host other than an IP address, localhost or
--allowed-hosts is refused. Without --auth every other client that reaches ADDR may do
everything; a warning says so when ADDR is beyond loopback.

Prints "listening on http://ADDR" once ready; on SIGINT or SIGTERM it finishes the
requests in flight and exits within 5 seconds.`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			level := slog.LevelWarn
			if verbose {
				level = slog.LevelInfo
			}
			cfg.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			cfg.AWS.Bootstrap = bootstrap
			if cfg.GroupCommitWindow == 0 {
				cfg.GroupCommitWindow = -1 // the flag's 0 means off, the runtime's 0 its default
			}
			if err := injectFaults(&cfg); err != nil {
				return err
			}
			return runDev(cmd.Context(), cmd, cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Addr, "addr", runtime.DefaultAddr, "listen address (port 0 picks a free one)")
	f.StringVar(&cfg.DataDir, "data-dir", "strata-data", "directory of the embedded backend")
	f.StringVar(&cfg.AuthFile, "auth", "", "auth `FILE` (tokens and grants); without it every call is allowed")
	f.DurationVar(&cfg.RetentionInterval, "retention-interval", runtime.DefaultRetentionInterval, "period of the retention pass")
	f.StringVar(&cfg.Backend, "backend", runtime.BackendLocal, "storage backend: local or aws")
	f.StringVar(&cfg.AWS.Bucket, "bucket", os.Getenv("STRATA_BUCKET"), "aws: segment bucket (env STRATA_BUCKET; default strata-segments)")
	f.StringVar(&cfg.AWS.TablePrefix, "table-prefix", os.Getenv("STRATA_TABLE_PREFIX"), "aws: DynamoDB table name prefix (env STRATA_TABLE_PREFIX; default strata-)")
	f.StringVar(&cfg.AWS.Prefix, "object-prefix", "", "aws: key prefix of segment objects in the bucket")
	f.BoolVar(&bootstrap, "bootstrap", os.Getenv("STRATA_BOOTSTRAP") == "1", "aws: create the bucket and tables when missing (env STRATA_BOOTSTRAP=1)")
	f.DurationVar(&cfg.GroupCommitWindow, "group-commit-window", runtime.DefaultGroupCommitWindow,
		"concurrent appends arriving within this window share one segment object and one commit per partition (0 turns group commit off)")
	f.BoolVar(&verbose, "verbose", false, "log retention passes and other routine events")
	f.BoolVar(&cfg.Console, "console", true, "serve the web console at /console/")
	f.StringSliceVar(&cfg.AllowedHosts, "allowed-hosts", nil,
		"Host `NAMES` answered besides IP addresses and localhost (comma-separated; * for any): others are refused against DNS rebinding")
	return cmd
}

// runDev opens the node, announces it, serves until ctx ends and shuts down.
func runDev(ctx context.Context, cmd *cobra.Command, cfg runtime.Config) error {
	rt, err := runtime.Open(ctx, cfg)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(cmd.OutOrStdout(), "listening on http://%s\n", rt.Addr()); err != nil {
		return errors.Join(err, rt.Close(context.Background()))
	}
	if cfg.AuthFile == "" && !loopback(rt.Addr()) {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: listening on %s beyond loopback without --auth: anyone who can reach it may read, append, reset and delete everything\n", rt.Addr())
	}
	serveErr := rt.Serve(ctx)
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

// injectFaults installs pkg/awsfault's injector when STRATA_FAULT_RATE asks for one
// (a testing aid, announced on the log).
func injectFaults(cfg *runtime.Config) error {
	in, err := awsfault.FromEnv()
	if err != nil || in == nil {
		return err
	}
	if cfg.Backend != runtime.BackendAWS {
		return fmt.Errorf("%s applies to --backend aws only", awsfault.EnvRate)
	}
	cfg.AWS.APIOptions = append(cfg.AWS.APIOptions, in.Middleware)
	cfg.Logger.Warn("injecting AWS faults (testing aid)", "rate", os.Getenv(awsfault.EnvRate))
	return nil
}
