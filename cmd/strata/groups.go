package main

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/wire"
)

func newGroupsCmd(o *options) *cobra.Command {
	cmd := &cobra.Command{Use: "groups", Short: "List, describe, configure and reset consumer groups", Args: cobra.ArbitraryArgs, RunE: runParent}
	cmd.AddCommand(newGroupsListCmd(o), newGroupsDescribeCmd(o), newGroupsResetCmd(o), newGroupsSettingsCmd(o), newGroupsDeleteOffsetsCmd(o))
	return cmd
}

// groupPartitionJSON is a group's partition as --json prints it (the API's shape).
type groupPartitionJSON = wire.GroupPartition

func newGroupsDescribeCmd(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "describe GROUP",
		Short: "Show a group's committed offset, lag and lease on every partition it uses",
		Args:  exactArgs("GROUP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			g, err := c.DescribeGroup(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if o.json {
				ps := make([]groupPartitionJSON, len(g.Partitions))
				for i, p := range g.Partitions {
					lagRecords, lagSeconds := p.LagRecords, p.LagSeconds
					ps[i] = groupPartitionJSON{Topic: p.Topic, Partition: p.Partition, CommittedOffset: p.CommittedOffset,
						HighWatermark: p.HighWatermark, LagRecords: &lagRecords, LagSeconds: &lagSeconds, Generation: p.Generation}
					if p.Owner != "" {
						owner := p.Owner
						ps[i].Owner = &owner
					}
					if !p.LeaseExpiresAt.IsZero() {
						ms := p.LeaseExpiresAt.UnixMilli()
						ps[i].LeaseExpiresAtMs = &ms
					}
				}
				return printJSON(w, wire.Group{Group: g.Name, Partitions: ps})
			}
			tb := newTable(w, "TOPIC", "PARTITION", "COMMITTED", "HIGH_WATERMARK", "LAG", "LAG_SECONDS", "OWNER", "GENERATION", "LEASE_EXPIRES")
			for _, p := range g.Partitions {
				owner := p.Owner
				if owner == "" {
					owner = "-"
				}
				tb.row(p.Topic, p.Partition, orDash(p.CommittedOffset), p.HighWatermark, p.LagRecords,
					strconv.FormatFloat(p.LagSeconds, 'f', 3, 64), owner, p.Generation, timeOrDash(p.LeaseExpiresAt))
			}
			return tb.flush()
		},
	}
}

func newGroupsResetCmd(o *options) *cobra.Command {
	var (
		topic, to, toTime string
		partitions        []int32
	)
	cmd := &cobra.Command{
		Use:   "reset GROUP --topic TOPIC (--to earliest|latest|OFFSET | --to-time RFC3339)",
		Short: "Move a group's committed offsets on a topic's partitions",
		Long: `Set GROUP's committed offset on every partition of --topic (or only on each
--partition): to the log start (earliest), the high watermark (latest), an explicit
OFFSET, or the first record appended at or after --to-time. An OFFSET outside a
partition's range is refused for all of them; give --partition to reset only the
partitions where it exists. Refused while any member holds a live lease on the topic.`,
		Args: exactArgs("GROUP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			target, err := resetTarget(to, toTime)
			if err != nil {
				return err
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			var res []client.PartitionOffset
			if len(partitions) > 0 {
				res, err = c.ResetGroupPartitions(cmd.Context(), args[0], topic, partitions, target)
			} else {
				res, err = c.ResetGroup(cmd.Context(), args[0], topic, target)
			}
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if o.json {
				rows := make([]wire.ResetPartition, len(res))
				for i, p := range res {
					rows[i] = wire.ResetPartition(p)
				}
				return printJSON(w, wire.ResetResponse{Partitions: rows})
			}
			tb := newTable(w, "PARTITION", "COMMITTED")
			for _, p := range res {
				tb.row(p.Partition, p.CommittedOffset)
			}
			return tb.flush()
		},
	}
	f := cmd.Flags()
	f.StringVar(&topic, "topic", "", "topic whose positions move (required)")
	f.StringVar(&to, "to", "", "earliest, latest or an offset")
	f.StringVar(&toTime, "to-time", "", "RFC 3339 time: the first record appended at or after it")
	f.Int32SliceVar(&partitions, "partition", nil, "only these `PARTITIONS` (comma-separated or repeated; default: all)")
	f.Lookup("partition").DefValue = ""
	_ = cmd.MarkFlagRequired("topic")
	cmd.MarkFlagsMutuallyExclusive("to", "to-time")
	cmd.MarkFlagsOneRequired("to", "to-time")
	return cmd
}

// resetTarget parses --to or --to-time.
func resetTarget(to, toTime string) (client.ResetTarget, error) {
	if toTime != "" {
		t, err := time.Parse(time.RFC3339Nano, toTime)
		if err != nil {
			return client.ResetTarget{}, fmt.Errorf("--to-time: %w", err)
		}
		return client.ResetToTime(t), nil
	}
	switch to {
	case "earliest":
		return client.ResetEarliest(), nil
	case "latest":
		return client.ResetLatest(), nil
	case "":
		return client.ResetTarget{}, errors.New("one of --to or --to-time is required")
	}
	n, err := strconv.ParseInt(to, 10, 64)
	if err != nil || n < 0 {
		return client.ResetTarget{}, fmt.Errorf("--to must be earliest, latest or a non-negative offset, got %q", to)
	}
	return client.ResetToOffset(n), nil
}
