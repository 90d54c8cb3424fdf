//go:build bench

package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stratalog/strata/pkg/cost"
	"github.com/stratalog/strata/pkg/cost/measure"
	"github.com/stratalog/strata/pkg/node"
)

// newBenchCmd groups the benchmarks: `strata bench cost` and `strata bench peers`.
func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "bench", Short: "Cost model and local benchmarks (docs/BENCHMARKS.md)"}
	cmd.AddCommand(newBenchCostCmd(), newBenchPeersCmd(), newBenchMemoryCmd())
	return cmd
}

func newBenchCostCmd() *cobra.Command {
	o := cost.Defaults(10)
	var (
		noMeasure  bool
		idempotent bool
		plotDir    string
		retention  time.Duration
		shape      string
		body       string
		built      string
		claims     string
	)
	cmd := &cobra.Command{
		Use:   "cost",
		Short: "Count Strata's AWS requests on the emulator and price a workload against Kinesis and Kafka",
		Long: `Runs a tiny workload through the AWS backend on the emulator (AWS_ENDPOINT_URL or its
alias STRATA_AWS_ENDPOINT, loopback only), counting every request by service, operation and bytes:
appends alone, and concurrent appenders sharing group-commit batches, as the SDK's producer
sends them (fenced idempotency: first attempts of producer requests, and a retry of each with
Strata-Attempt 1, whose counts are printed and not priced). It then extrapolates to the target
workload with the AWS list prices of pkg/cost/prices.go.
--no-measure prices the design's request profile instead. The targets table prices the best
configuration at tier windows of 250 ms, 500 ms and 1 s (strata:groupCommitWindowMs, at most
1 s) and once with folded claims (one claim per request) beside fenced idempotency (none), and
"where the money goes" breaks those rows down line by line.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			o.Workload.Retention = retention
			switch shape {
			case "sdk":
				o.Producers.Shape = cost.ShapeSDK
			case "multi":
				o.Producers.Shape = cost.ShapeMulti
			default:
				return usagef("--shape must be sdk or multi, got %q", shape)
			}
			switch body {
			case "binary":
				o.Producers.EncodedRecordBytes, o.Serving.CPUPerRecord = cost.BinaryRecordBytes, cost.BinaryCPUPerRecord
			case "json":
				o.Producers.EncodedRecordBytes, o.Serving.CPUPerRecord = cost.JSONRecordBytes, cost.JSONCPUPerRecord
			default:
				return usagef("--body must be binary or json, got %q", body)
			}
			if idempotent {
				o.Profile = cost.IdempotentDesignProfile()
			}
			if o.Claims, err = cost.ParseClaims(claims); err != nil {
				return err
			}
			levers, err := cost.ParseLevers(built)
			if err != nil {
				return err
			}
			o.Built = levers
			if err := o.Validate(); err != nil {
				return err
			}
			if !noMeasure {
				env, err := node.FromEnv(os.Getenv)
				if err != nil {
					return err
				}
				if env.AWS.Endpoint == "" {
					return errors.New("no emulator: set AWS_ENDPOINT_URL (or STRATA_AWS_ENDPOINT), e.g. http://127.0.0.1:4566, or pass --no-measure")
				}
				cfg, err := measure.EmulatorConfig(env.AWS.Endpoint)
				if err != nil {
					return err
				}
				res, err := measure.Run(cmd.Context(), cfg, measure.Options{ValueBytes: int(o.Workload.EventBytes), Idempotent: idempotent})
				if err != nil {
					return err
				}
				o.Profile = res.Profile
				out := cmd.OutOrStdout()
				fmt.Fprintln(out, "Counted on the emulator (per case: requests per append; per poll):")
				for _, c := range res.Cases {
					fmt.Fprintf(out, "  %s, %d appends of %d records:", c.Name, c.Appends, c.Records/c.Appends)
					for _, k := range slices.Sorted(maps.Keys(c.AppendOps)) {
						op := c.AppendOps[k]
						fmt.Fprintf(out, " %s %.2f (%d B sent, %d failed)", k, float64(op.Requests)/float64(c.Appends), op.BytesSent, op.Failed)
					}
					if len(c.RetryOps) > 0 {
						fmt.Fprintf(out, "\n    retries (Strata-Attempt 1, not priced) per retry:")
						for _, k := range slices.Sorted(maps.Keys(c.RetryOps)) {
							fmt.Fprintf(out, " %s %.2f", k, float64(c.RetryOps[k].Requests)/float64(c.Appends))
						}
					}
					fmt.Fprintf(out, "\n    polls %d:", c.Polls)
					for _, k := range slices.Sorted(maps.Keys(c.PollOps)) {
						fmt.Fprintf(out, " %s %.2f", k, float64(c.PollOps[k].Requests)/float64(c.Polls))
					}
					fmt.Fprintln(out)
				}
				fmt.Fprintln(out, "Counted with group commit (per acknowledged append; per batch = per segment object):")
				for _, c := range res.Group {
					fmt.Fprintf(out, "  %s, %s window, %d appends in %d batches (%.1f per batch), CPU %s per append:",
						c.Name, c.Window, c.Appends, c.Batches(), float64(c.Appends)/float64(c.Batches()), c.CPU/time.Duration(c.Appends))
					for _, k := range slices.Sorted(maps.Keys(c.Ops)) {
						fmt.Fprintf(out, " %s %.3f (%.2f per batch)", k, c.PerAppend(k), float64(c.Ops[k].Requests)/float64(c.Batches()))
					}
					fmt.Fprintln(out)
				}
				fmt.Fprintln(out)
			}
			if err := cost.Report(cmd.OutOrStdout(), o, cost.DefaultSweep()); err != nil {
				return err
			}
			if plotDir != "" {
				return cost.Plot(o, plotDir)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&noMeasure, "no-measure", false, "price the design's request profile instead of counting on the emulator")
	f.BoolVar(&idempotent, "idempotent", true, "profile appends with Idempotency-Key, as the SDK's producer sends them")
	f.StringVar(&plotDir, "plot-dir", "", "write cost-producers.png and cost-linger.png into this directory")
	f.Float64Var(&o.Workload.EventsPerSec, "events-per-sec", o.Workload.EventsPerSec, "target events per second")
	f.Float64Var(&o.Workload.EventBytes, "event-bytes", o.Workload.EventBytes, "bytes per event")
	f.DurationVar(&retention, "retention", o.Workload.Retention, "retention")
	f.IntVar(&o.Workload.Partitions, "partitions", o.Workload.Partitions, "partitions of the topic")
	f.DurationVar(&o.Producers.Linger, "linger", o.Producers.Linger, "producer linger")
	f.Float64Var(&o.Producers.BatchBytes, "batch-bytes", o.Producers.BatchBytes, "producer batch bytes")
	f.IntVar(&o.Producers.BatchRecords, "batch-records", o.Producers.BatchRecords, "producer batch records")
	f.StringVar(&shape, "shape", "sdk", "producer appends: sdk (pkg/client: one request per round, a batch per partition, up to 5 MiB / 10,000 records) or multi (one per flush, the batch caps the whole request)")
	f.BoolVar(&o.Serving.FunctionURL, "function-url", false, "clients call the api function's URL, not API Gateway")
	f.StringVar(&body, "body", "binary", "producers' request body: binary (segment blocks, as pkg/client sends) or json")
	f.StringVar(&built, "built", joinLevers(cost.BuiltLevers()), "levers built, comma-separated (function-url, tier, folded, fenced, manifest, consumer-window): the targets table counts a configuration needing another as modelled")
	f.StringVar(&claims, "claims", "profiled", "how idempotency claims are priced: profiled (as counted, or the design's fenced idempotency with --no-measure), "+
		"folded (one claim write per request, the code before fenced idempotency) or fenced (none); the targets table prices each row as it says")
	f.Float64Var(&o.Aggregator.BudgetBytes, "agg-budget", o.Aggregator.BudgetBytes, "aggregation tier: bytes that cut a batch")
	f.IntVar(&o.Aggregator.Instances, "agg-instances", o.Aggregator.Instances, "aggregation tier: fewest Lambda Managed Instances (more when CPU needs them)")
	f.DurationVar(&o.Aggregator.Window, "agg-window", o.Aggregator.Window, "aggregation tier: group-commit window")
	return cmd
}

func joinLevers(ls []cost.Lever) string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = string(l)
	}
	return strings.Join(out, ",")
}
