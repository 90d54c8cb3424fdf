//go:build bench

package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/stratalog/strata/pkg/peers"
)

func newBenchPeersCmd() *cobra.Command {
	var (
		cfg  peers.Config
		plot string
	)
	cmd := &cobra.Command{
		Use:   "peers",
		Short: "Local durable throughput of strata dev against NATS JetStream and Redis Streams (loopback only)",
		Long: `Starts each system as a child process on 127.0.0.1 with a fresh data directory, drives it
with its own client (1 KB records, P producers, C consumers), stops and removes it after
each run, and prints medians of records/s, ack latency p50/p99 and server CPU-seconds per
100k records. A system whose binary flag is empty is skipped. scripts/bench-peers.sh
builds and finds the binaries.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			runs, err := peers.Compare(cmd.Context(), cfg, func(r peers.Run) {
				if r.Err != "" {
					fmt.Fprintf(out, "run %-32s P=%d: error: %s\n", r.System, r.Producers, r.Err)
					return
				}
				fmt.Fprintf(out, "run %-32s P=%d: %8.0f rec/s  ack p50 %-10s p99 %-10s cpu %.2f s/100k\n", r.System, r.Producers,
					r.RecordsPerSec, r.AckP50.Round(100*time.Microsecond), r.AckP99.Round(100*time.Microsecond), r.CPUPer100k)
			})
			meds := peers.Medians(runs)
			w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(w, "\nsystem\tP\truns\trecords\trecords/s\tack p50\tack p99\tserver CPU-s/100k\t")
			for _, m := range meds {
				fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%.0f\t%s\t%s\t%.2f\t\n", m.System, m.Producers, m.Runs, m.Records, m.RecordsPerSec,
					m.AckP50.Round(100*time.Microsecond), m.AckP99.Round(100*time.Microsecond), m.CPUPer100k)
			}
			w.Flush()
			if err != nil {
				return err
			}
			if plot != "" {
				ps := cfg.Producers
				if len(ps) == 0 {
					ps = []int{1, 4}
				}
				return peers.Plot(meds, ps, plot)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Records, "records", 200000, "records per run")
	f.IntVar(&cfg.SlowRecords, "slow-records", 0, "records per run for JetStream with sync_interval: always (0: --records)")
	f.IntVar(&cfg.ValueBytes, "value-bytes", 1024, "bytes per record")
	f.IntVar(&cfg.StrataBufferBytes, "strata-buffer-bytes", 0, "Strata producer buffer, which also sets its batch size to half (0: the SDK's defaults, client.DefaultBufferBytes)")
	f.IntSliceVar(&cfg.Producers, "producers", []int{1, 4}, "producer counts")
	f.IntVar(&cfg.Consumers, "consumers", 1, "consumers (NATS fetchers, Redis group members; Strata polls each partition)")
	f.IntVar(&cfg.Runs, "runs", 3, "runs per point (medians reported)")
	f.IntVar(&cfg.Partitions, "partitions", 8, "Strata partitions")
	f.DurationVar(&cfg.RunTimeout, "run-timeout", 2*time.Minute, "bound of one run")
	f.StringVar(&cfg.StrataBin, "strata-bin", "", "strata binary (runs `strata dev`)")
	f.StringVar(&cfg.NATSBin, "nats-server", "", "nats-server binary")
	f.StringVar(&cfg.RedisBin, "redis-server", "", "redis-server binary")
	f.StringSliceVar(&cfg.Only, "only", nil, "run only systems whose name starts with one of these")
	f.StringVar(&plot, "plot", "", "write a PNG bar chart of records/s here")
	return cmd
}

func newBenchMemoryCmd() *cobra.Command {
	var (
		cfg     peers.Config
		parts   []int
		records int
	)
	cmd := &cobra.Command{
		Use:   "memory",
		Short: "Resident memory of `strata dev` serving topics of 1, 16 and 256 partitions (loopback only)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pts, err := peers.DevMemory(cmd.Context(), cfg, parts, records)
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(w, "partitions\trecords\tRSS idle MiB\tRSS serving MiB\tpeak RSS MiB\t")
			for _, p := range pts {
				fmt.Fprintf(w, "%d\t%d\t%.1f\t%.1f\t%.1f\t\n", p.Partitions, p.Records, float64(p.IdleKB)/1024,
					float64(p.ServingKB)/1024, float64(p.PeakKB)/1024)
			}
			w.Flush()
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.StrataBin, "strata-bin", "", "strata binary (runs `strata dev`)")
	f.IntSliceVar(&parts, "partitions", []int{1, 16, 256}, "partition counts")
	f.IntVar(&records, "records", 100000, "records appended and read back per topic")
	f.IntVar(&cfg.ValueBytes, "value-bytes", 1024, "bytes per record")
	f.DurationVar(&cfg.RunTimeout, "run-timeout", 5*time.Minute, "bound of one partition count")
	return cmd
}
