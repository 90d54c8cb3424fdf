package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/spf13/cobra"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/wire"
)

func newTopicsCmd(o *options) *cobra.Command {
	cmd := &cobra.Command{Use: "topics", Short: "Create, describe, list, alter and delete topics", Args: cobra.ArbitraryArgs, RunE: runParent}
	cmd.AddCommand(newTopicsCreateCmd(o), newTopicsDescribeCmd(o), newTopicsListCmd(o), newTopicsAlterCmd(o), newTopicsDeleteCmd(o))
	return cmd
}

// topicJSON is a topic as --json prints it (the API's shape).
type (
	topicJSON         = wire.Topic
	partitionInfoJSON = wire.PartitionInfo
)

func toTopicJSON(t *client.Topic) topicJSON {
	out := topicJSON{Name: t.Name, Partitions: t.Partitions, RetentionMs: t.Retention.Milliseconds(), RetentionPinMs: t.RetentionPin.Milliseconds(),
		TimestampType: wire.TimestampCreateTime}
	if t.LogAppendTime {
		out.TimestampType = wire.TimestampLogAppendTime
	}
	out.CleanupPolicy = cleanupOf(t)
	out.MinCompactionLagMs, out.MaxCompactionLagMs, out.DeleteRetentionMs = t.MinCompactionLag.Milliseconds(), t.MaxCompactionLag.Milliseconds(), t.DeleteRetention.Milliseconds()
	for _, p := range t.PartitionInfo {
		out.PartitionInfo = append(out.PartitionInfo, partitionInfoJSON(p))
	}
	return out
}

// forever is the retention the server keeps for ever (retention_ms -1): the longest
// duration in whole milliseconds.
const forever = time.Duration(math.MaxInt64) / time.Millisecond * time.Millisecond

// printTopic prints t's row: its name, partitions, retention ("infinite": for ever) and
// pin cap ("-": none).
func printTopic(w io.Writer, t *client.Topic) error {
	pin := "-"
	if t.RetentionPin > 0 {
		pin = t.RetentionPin.String()
	}
	var retention any = t.Retention
	if t.Retention >= forever {
		retention = "infinite"
	}
	tb := newTable(w, "NAME", "PARTITIONS", "RETENTION", "RETENTION_PIN", "CLEANUP")
	tb.row(t.Name, t.Partitions, retention, pin, cleanupOf(t))
	return tb.flush()
}

// cleanupOf is t's cleanup policy as Kafka spells it ("delete" from a server older
// than policies).
func cleanupOf(t *client.Topic) string {
	if t.Cleanup == "" {
		return client.CleanupDelete
	}
	return t.Cleanup
}

// cleanupFlags are the cleanup policy and compaction settings flags of create and alter.
type cleanupFlags struct {
	policy                    string
	minLag, maxLag, tombstone time.Duration
}

func (f *cleanupFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.policy, "cleanup-policy", "", "delete (records leave by age; the default), compact (the latest record per key is kept; records need a key) or compact,delete")
	cmd.Flags().Var(daysValue{&f.minLag}, "min-compaction-lag", "how long after its append a record is never compacted away, e.g. 1h (0: none)")
	cmd.Flags().Var(daysValue{&f.maxLag}, "max-compaction-lag", "how long an overwritten record may stay before compaction removes it, e.g. 7d (0: no bound)")
	cmd.Flags().Var(daysValue{&f.tombstone}, "delete-retention", "how long a tombstone (a null value) of a compacted topic is kept, e.g. 1d (0: a day)")
}

// changed reports whether any of the flags is set.
func (f *cleanupFlags) changed(cmd *cobra.Command) bool {
	for _, n := range []string{"cleanup-policy", "min-compaction-lag", "max-compaction-lag", "delete-retention"} {
		if cmd.Flags().Changed(n) {
			return true
		}
	}
	return false
}

// change is the flags set, as the SDK's change.
func (f *cleanupFlags) change(cmd *cobra.Command) client.CleanupChange {
	ch := client.CleanupChange{Cleanup: f.policy}
	for _, x := range []struct {
		name string
		d    *time.Duration
		dst  **time.Duration
	}{{"min-compaction-lag", &f.minLag, &ch.MinCompactionLag}, {"max-compaction-lag", &f.maxLag, &ch.MaxCompactionLag}, {"delete-retention", &f.tombstone, &ch.DeleteRetention}} {
		if cmd.Flags().Changed(x.name) {
			*x.dst = x.d
		}
	}
	return ch
}

// retentionPinUsage is the --retention-pin flag's help.
const retentionPinUsage = "keep records up to this much longer than the retention while a group that has committed on the topic has not read them, e.g. 6h, 2d (0: no pin)"

func newTopicsCreateCmd(o *options) *cobra.Command {
	var (
		partitions int32
		retention  time.Duration
		pin        time.Duration
		tsType     string
		cleanup    cleanupFlags
	)
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a topic",
		Args:  exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("partitions") && partitions <= 0 {
				return usagef("--partitions must be 1 to 1024, got %d", partitions)
			}
			var logAppend bool
			switch tsType {
			case "create-time":
			case "log-append-time":
				logAppend = true
			default:
				return usagef("--timestamp-type %q: want create-time or log-append-time", tsType)
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			t, err := c.CreateTopic(cmd.Context(), args[0], client.TopicConfig{Partitions: partitions, Retention: retention, RetentionPin: pin, LogAppendTime: logAppend,
				Cleanup: cleanup.policy, MinCompactionLag: cleanup.minLag, MaxCompactionLag: cleanup.maxLag, DeleteRetention: cleanup.tombstone})
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if o.json {
				return printJSON(w, toTopicJSON(t))
			}
			return printTopic(w, t)
		},
	}
	// 0 leaves the count out of the request: the server's default applies (4 unless the
	// deployment sets another).
	cmd.Flags().Int32Var(&partitions, "partitions", 0, "number of partitions, 1-1024 (default: the server's, 4 unless the deployment sets another)")
	cmd.Flags().Var(daysValue{&retention}, "retention", "how long records are kept, e.g. 7d, 36h (default: the server's, 24h)")
	cmd.Flags().Var(daysValue{&pin}, "retention-pin", retentionPinUsage)
	cmd.Flags().StringVar(&tsType, "timestamp-type", "create-time", "record timestamps: create-time (the producer's) or log-append-time (the append time, whatever the producer gave)")
	cleanup.register(cmd)
	return cmd
}

func newTopicsDescribeCmd(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "describe [NAME]",
		Short: "Show a topic and each partition's log start offset and high watermark (without NAME: every topic)",
		Args:  maxArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			names := args
			if len(names) == 0 {
				if names, err = c.ListTopics(ctx); err != nil {
					return err
				}
			}
			var topics []*client.Topic
			for _, n := range names {
				t, err := c.DescribeTopic(ctx, n)
				if errors.Is(err, client.ErrNotFound) && len(args) == 0 {
					continue // deleted since the list
				}
				if err != nil {
					return err
				}
				topics = append(topics, t)
			}
			w := cmd.OutOrStdout()
			if o.json {
				if len(args) == 1 {
					return printJSON(w, toTopicJSON(topics[0]))
				}
				out := make([]topicJSON, len(topics))
				for i, t := range topics {
					out[i] = toTopicJSON(t)
				}
				return printJSON(w, map[string]any{"topics": out})
			}
			for i, t := range topics {
				if i > 0 {
					if _, err := fmt.Fprintln(w); err != nil {
						return err
					}
				}
				if err := describeTopic(w, t); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// describeTopic prints t's row and its partitions' bounds.
func describeTopic(w io.Writer, t *client.Topic) error {
	if err := printTopic(w, t); err != nil {
		return err
	}
	if _, err := w.Write([]byte("\n")); err != nil {
		return err
	}
	tb := newTable(w, "PARTITION", "LOG_START", "HIGH_WATERMARK", "RECORDS")
	for _, p := range t.PartitionInfo {
		tb.row(p.Partition, p.LogStartOffset, p.HighWatermark, p.HighWatermark-p.LogStartOffset)
	}
	return tb.flush()
}

func newTopicsListCmd(o *options) *cobra.Command {
	return newNamesListCmd(o, "List the topics the caller may describe", "topics", "NAME",
		func(ctx context.Context, c *client.Client) ([]string, error) { return c.ListTopics(ctx) })
}

// newNamesListCmd is a `list` subcommand printing the names list returns: one column
// under header, or {"<jsonKey>": [...]} with --json.
func newNamesListCmd(o *options, short, jsonKey, header string, list func(context.Context, *client.Client) ([]string, error)) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: short,
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			names, err := list(cmd.Context(), c)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if o.json {
				if names == nil {
					names = []string{}
				}
				return printJSON(w, map[string][]string{jsonKey: names})
			}
			tb := newTable(w, header)
			for _, n := range names {
				tb.row(n)
			}
			return tb.flush()
		},
	}
}

func newTopicsAlterCmd(o *options) *cobra.Command {
	var (
		partitions int32
		retention  time.Duration
		pin        time.Duration
		cleanup    cleanupFlags
	)
	cmd := &cobra.Command{
		Use:     "alter NAME (--partitions N | --retention D | --retention-pin D | --cleanup-policy P ...)",
		Aliases: []string{"update"},
		Short:   "Raise a topic's partition count, or set its retention or retention pin",
		Long: `Raise NAME's partition count to --partitions (counts only grow). Existing records
and offsets stay; new partitions start at offset 0. Keys hash over the new count from
then on, so some keys continue on another partition: a consumer relying on per-key
order should drain the topic with producers paused first (docs/DESIGN.md, "More
partitions").

Or set its retention (--retention 3d): a shorter one removes the older records at the
next retention pass. --retention -1 (or infinite) keeps records for ever, only where the
deployment has no maximum retention. A retention above the maximum is refused, naming
the setting that raises it (strata:maxRetentionDays on AWS, --max-retention for
strata dev).

Or set its retention pin (--retention-pin, 0 removes it): retention then keeps a record
up to that much longer while a group that has committed on the topic has not read it
(docs/DESIGN.md, "Retention pin").

Or set its cleanup policy and compaction settings (--cleanup-policy, --min-compaction-lag,
--max-compaction-lag, --delete-retention, together): a delete topic may become compact
or compact,delete, and those two may swap; a compacted topic cannot go back to delete.
Records already there stay; from then on records need a key, and strata get answers the
keys appended after the change. One change per run.`,
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			setP, setR, setPin := cmd.Flags().Changed("partitions"), cmd.Flags().Changed("retention"), cmd.Flags().Changed("retention-pin")
			setC := cleanup.changed(cmd)
			if n := btoi(setP) + btoi(setR) + btoi(setPin) + btoi(setC); n != 1 {
				return usagef("exactly one of --partitions, --retention, --retention-pin and the cleanup flags (--cleanup-policy, --min-compaction-lag, --max-compaction-lag, --delete-retention) is required")
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			var t *client.Topic
			switch {
			case setP:
				t, err = c.IncreasePartitions(cmd.Context(), args[0], partitions)
			case setR:
				t, err = c.SetRetention(cmd.Context(), args[0], retention)
			case setC:
				t, err = c.SetCleanup(cmd.Context(), args[0], cleanup.change(cmd))
			default:
				t, err = c.SetRetentionPin(cmd.Context(), args[0], pin)
			}
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if o.json {
				return printJSON(w, toTopicJSON(t))
			}
			return printTopic(w, t)
		},
	}
	cmd.Flags().Int32Var(&partitions, "partitions", 0, "the new partition count (more than the current one, at most 1024)")
	cmd.Flags().Var(retentionValue{&retention}, "retention", "how long records are kept, e.g. 3d, 36h; -1 or infinite: for ever (only without a deployment maximum)")
	cmd.Flags().Var(daysValue{&pin}, "retention-pin", retentionPinUsage)
	cleanup.register(cmd)
	return cmd
}

// btoi is 1 for true, for counting the flags a run sets.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// retentionValue is the alter --retention flag: a duration with days, or -1 / infinite
// for client.RetentionForever.
type retentionValue struct{ d *time.Duration }

func (v retentionValue) String() string {
	switch {
	case v.d == nil || *v.d == 0:
		return ""
	case *v.d == client.RetentionForever:
		return "infinite"
	}
	return v.d.String()
}

func (v retentionValue) Set(s string) error {
	if s == "-1" || s == "infinite" {
		*v.d = client.RetentionForever
		return nil
	}
	d, err := parseDays(s)
	if err != nil {
		return err
	}
	if d <= 0 {
		return fmt.Errorf("%q: want a positive duration, -1 or infinite", s)
	}
	*v.d = d
	return nil
}

func (retentionValue) Type() string { return "duration" }

func newTopicsDeleteCmd(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a topic and, in the background, its records",
		Long: `Delete NAME: appends and reads of it fail at once, and the name is free at once: a
topic created again under it is a new topic, from offset 0, on which no group has a
position. The server's retention pass removes the deleted topic's records and every
group's positions on it in the background (after a 5-minute margin).`,
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			if err := c.DeleteTopic(cmd.Context(), args[0]); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if o.json {
				return printJSON(w, map[string]any{"name": args[0], "deleted": true})
			}
			_, err = fmt.Fprintf(w, "deleted topic %s (its records are removed by the next retention pass)\n", args[0])
			return err
		},
	}
}
