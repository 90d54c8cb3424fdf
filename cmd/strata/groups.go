package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/wire"
)

func newGroupsCmd(o *options) *cobra.Command {
	cmd := &cobra.Command{Use: "groups", Short: "List, describe, configure, reset and delete consumer groups", Args: cobra.ArbitraryArgs, RunE: runParent}
	cmd.AddCommand(newGroupsListCmd(o), newGroupsDescribeCmd(o), newGroupsResetCmd(o), newGroupsSettingsCmd(o), newGroupsDeleteOffsetsCmd(o),
		newGroupsDeleteCmd(o), newGroupsParkedCmd(o), newGroupsReleaseCmd(o))
	return cmd
}

// groupPartitionJSON is a group's partition as --json prints it (the API's shape).
type groupPartitionJSON = wire.GroupPartition

func newGroupsDescribeCmd(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "describe [GROUP]",
		Short: "Show a group's state, members, and committed offset, lag and lease on every partition it uses (without GROUP: every group)",
		Long: `Show GROUP's committed offset, lag and lease on every partition it uses, then its
state and members: empty (no member holds a live lease), stable (members hold every
partition of the topics they consume) or rebalancing (some of those wait for an owner),
and each member with the partitions it holds. Without GROUP every group is
described, one after another (as kafka-consumer-groups --describe --all-groups).`,
		Args: maxArgs("GROUP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			names := args
			if len(names) == 0 {
				if names, err = c.ListGroups(ctx); err != nil {
					return err
				}
			}
			var groups []*client.Group
			for _, n := range names {
				g, err := c.DescribeGroup(ctx, n)
				if errors.Is(err, client.ErrNotFound) && len(args) == 0 {
					continue // deleted since the list
				}
				if err != nil {
					return err
				}
				groups = append(groups, g)
			}
			w := cmd.OutOrStdout()
			now := time.Now()
			if o.json {
				out := make([]groupDescribeJSON, len(groups))
				for i, g := range groups {
					out[i] = toGroupDescribeJSON(g, now)
				}
				if len(args) == 1 {
					return printJSON(w, out[0])
				}
				return printJSON(w, map[string]any{"groups": out})
			}
			for i, g := range groups {
				if i > 0 {
					if _, err := fmt.Fprintln(w); err != nil {
						return err
					}
				}
				if err := printGroup(w, g, now); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// groupDescribeJSON is a group as groups describe --json prints it: the API's shape,
// with the state and members derived from its live leases.
type groupDescribeJSON struct {
	wire.Group
	State   string       `json:"state"`
	Members []memberJSON `json:"members"`
}

type memberJSON struct {
	Member     string            `json:"member"`
	Partitions []memberPartition `json:"partitions"`
}

type memberPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// Group states, as kafka-consumer-groups names them (lower case).
const (
	groupEmpty       = "empty"
	groupStable      = "stable"
	groupRebalancing = "rebalancing"
)

// groupMembers derives a group's state and members from its partitions' live leases
// at now: a member is an owner of a lease that has not expired. The group is
// rebalancing while a partition of a topic its members consume has no live lease;
// positions on a topic nobody consumes now do not count.
func groupMembers(g *client.Group, now time.Time) (string, []memberJSON) {
	var members []memberJSON
	at := map[string]int{}
	owned := 0
	consumed := map[string]bool{}
	for _, p := range g.Partitions {
		if p.Owner == "" || !p.LeaseExpiresAt.After(now) {
			continue
		}
		owned++
		consumed[p.Topic] = true
		i, ok := at[p.Owner]
		if !ok {
			i = len(members)
			at[p.Owner] = i
			members = append(members, memberJSON{Member: p.Owner})
		}
		members[i].Partitions = append(members[i].Partitions, memberPartition{Topic: p.Topic, Partition: p.Partition})
	}
	sort.Slice(members, func(i, j int) bool { return members[i].Member < members[j].Member })
	wanted := 0
	for _, p := range g.Partitions {
		if consumed[p.Topic] {
			wanted++
		}
	}
	switch {
	case owned == 0:
		return groupEmpty, []memberJSON{}
	case owned < wanted:
		return groupRebalancing, members
	}
	return groupStable, members
}

func toGroupDescribeJSON(g *client.Group, now time.Time) groupDescribeJSON {
	ps := make([]groupPartitionJSON, len(g.Partitions))
	for i, p := range g.Partitions {
		lagRecords, lagSeconds := p.LagRecords, p.LagSeconds
		ps[i] = groupPartitionJSON{Topic: p.Topic, Partition: p.Partition, CommittedOffset: p.CommittedOffset,
			HighWatermark: p.HighWatermark, LagRecords: &lagRecords, LagSeconds: &lagSeconds, Generation: p.Generation,
			SecondsToDataLoss: p.SecondsToDataLoss, RecordsLost: p.RecordsLost, ParkedKeys: p.ParkedKeys}
		if p.Owner != "" {
			owner := p.Owner
			ps[i].Owner = &owner
		}
		if !p.LeaseExpiresAt.IsZero() {
			ms := p.LeaseExpiresAt.UnixMilli()
			ps[i].LeaseExpiresAtMs = &ms
		}
	}
	state, members := groupMembers(g, now)
	return groupDescribeJSON{Group: wire.Group{Group: g.Name, Partitions: ps}, State: state, Members: members}
}

// printGroup prints a group's partitions table, then its state and members.
func printGroup(w io.Writer, g *client.Group, now time.Time) error {
	tb := newTable(w, "TOPIC", "PARTITION", "COMMITTED", "HIGH_WATERMARK", "LAG", "LAG_SECONDS", "TO_DATA_LOSS", "LOST", "PARKED", "OWNER", "GENERATION", "LEASE_EXPIRES")
	for _, p := range g.Partitions {
		owner := p.Owner
		if owner == "" {
			owner = "-"
		}
		tb.row(p.Topic, p.Partition, orDash(p.CommittedOffset), p.HighWatermark, p.LagRecords,
			strconv.FormatFloat(p.LagSeconds, 'f', 3, 64), secondsOrDash(p.SecondsToDataLoss), p.RecordsLost, p.ParkedKeys, owner, p.Generation, timeOrDash(p.LeaseExpiresAt))
	}
	if err := tb.flush(); err != nil {
		return err
	}
	state, members := groupMembers(g, now)
	if _, err := fmt.Fprintln(w); err != nil {
		return err
	}
	tb = newTable(w, "GROUP", "STATE", "MEMBERS")
	tb.row(g.Name, state, len(members))
	if err := tb.flush(); err != nil {
		return err
	}
	if len(members) == 0 {
		return nil
	}
	if _, err := fmt.Fprintln(w); err != nil {
		return err
	}
	tb = newTable(w, "MEMBER", "PARTITIONS")
	for _, m := range members {
		parts := make([]string, len(m.Partitions))
		for i, p := range m.Partitions {
			parts[i] = fmt.Sprintf("%s/%d", p.Topic, p.Partition)
		}
		tb.row(m.Member, strings.Join(parts, ","))
	}
	return tb.flush()
}

func newGroupsResetCmd(o *options) *cobra.Command {
	var (
		topic, to, since     string
		partitions           []int32
		execute, create      bool
		shiftBy              int64
		toCurrent, allTopics bool
	)
	cmd := &cobra.Command{
		Use:   "reset GROUP (--topic TOPIC | --all-topics) (--to earliest|latest|OFFSET | --since TIME | --shift-by N | --to-current) [--execute]",
		Short: "Show, then with --execute apply, new committed offsets of a group on a topic",
		Long: `Plan moving GROUP's committed offset on every partition of --topic (or only on each
--partition, or on every topic the group has positions on with --all-topics): to the
log start (earliest), the high watermark (latest), an explicit OFFSET, the first record
appended at or after --since TIME (-1h, -7d, 2026-12-01 or an RFC 3339 time), N records
later (--shift-by N; back with a negative N, clamped to the partition's records), or
where it is (--to-current, clamped to the partition's records). A partition without a
committed offset counts from where the group would start (its reset policy). It prints
each partition's current and new offset and changes nothing unless --execute is given,
as Kafka's kafka-consumer-groups --reset-offsets does. An OFFSET outside a partition's
range is refused for all of them; give --partition to reset only the partitions where
it exists. A group that does not exist is refused (a typo must not create one) unless
--create. Refused, plan included, while any member holds a live lease on the topic.`,
		Args: exactArgs("GROUP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			g := args[0]
			var shift *int64
			if cmd.Flags().Changed("shift-by") {
				shift = &shiftBy
			}
			target, err := resetTarget(to, since, shift, toCurrent, time.Now())
			if err != nil {
				return err
			}
			if allTopics && len(partitions) > 0 {
				return usagef("--partition needs --topic: partition numbers belong to one topic")
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			exists := true
			info, err := c.DescribeGroup(ctx, g)
			switch {
			case errors.Is(err, client.ErrNotFound) && !create:
				return fmt.Errorf("group %q does not exist (strata groups list shows the groups); give --create to create it at these positions", g)
			case errors.Is(err, client.ErrNotFound):
				exists = false
				info = &client.Group{Name: g}
			case err != nil:
				return err
			}
			topics := []string{topic}
			if allTopics {
				topics = groupTopics(info)
				if len(topics) == 0 {
					return fmt.Errorf("group %q has no positions on any topic: give --topic", g)
				}
			}
			if err := refuseLive(info, topics, time.Now()); err != nil {
				return err
			}
			policy := consumer.ResetEarliest
			if target.relative() && exists {
				s, err := c.GroupSettings(ctx, g)
				if err != nil && !errors.Is(err, client.ErrNotFound) {
					return err
				}
				if err == nil && s.ResetPolicy != "" {
					policy = s.ResetPolicy
				}
			}
			var plans []topicResetPlan
			for _, tp := range topics {
				current := map[int32]int64{}
				for _, p := range info.Partitions {
					if p.Topic == tp && p.CommittedOffset != nil {
						current[p.Partition] = *p.CommittedOffset
					}
				}
				var plan []client.PartitionOffset
				switch {
				case execute && target.relative():
					plan, err = planReset(ctx, c, tp, partitions, target, current, policy)
					if err == nil {
						plan, err = applyOffsets(ctx, c, g, tp, plan)
					}
				case execute && len(partitions) > 0:
					plan, err = c.ResetGroupPartitions(ctx, g, tp, partitions, target.to)
				case execute:
					plan, err = c.ResetGroup(ctx, g, tp, target.to)
				default:
					plan, err = planReset(ctx, c, tp, partitions, target, current, policy)
				}
				if err != nil {
					return err
				}
				plans = append(plans, topicResetPlan{topic: tp, plan: plan, current: current})
			}
			return printResetPlans(cmd, o.json, g, plans, allTopics, execute, exists)
		},
	}
	f := cmd.Flags()
	f.StringVar(&topic, "topic", "", "topic whose positions move (or --all-topics)")
	f.BoolVar(&allTopics, "all-topics", false, "every topic the group has positions on")
	f.StringVar(&to, "to", "", "earliest, latest or an offset")
	f.StringVar(&since, "since", "", "the first record appended at or after "+timeHelp)
	f.StringVar(&since, "to-time", "", "the same as --since")
	_ = f.MarkDeprecated("to-time", "use --since (the same flag as strata consume's)")
	f.Int64Var(&shiftBy, "shift-by", 0, "move each position by `N` records (negative: back), clamped to the partition's records")
	f.BoolVar(&toCurrent, "to-current", false, "keep each position where it is, clamped to the partition's records")
	f.Int32SliceVar(&partitions, "partition", nil, "only these `PARTITIONS` (comma-separated or repeated; default: all)")
	f.Lookup("partition").DefValue = ""
	f.BoolVar(&execute, "execute", false, "apply the plan (without it, only show it)")
	f.BoolVar(&create, "create", false, "create GROUP if it does not exist")
	cmd.MarkFlagsMutuallyExclusive("topic", "all-topics")
	cmd.MarkFlagsOneRequired("topic", "all-topics")
	cmd.MarkFlagsMutuallyExclusive("to", "since", "to-time", "shift-by", "to-current")
	cmd.MarkFlagsOneRequired("to", "since", "to-time", "shift-by", "to-current")
	return cmd
}

// groupTopics lists the topics a group has partitions on, sorted.
func groupTopics(g *client.Group) []string {
	var out []string
	for _, p := range g.Partitions {
		if !slices.Contains(out, p.Topic) {
			out = append(out, p.Topic)
		}
	}
	sort.Strings(out)
	return out
}

// refuseLive fails while a member holds a live lease on one of topics at now: a reset
// under a running consumer would be overwritten by its next commit, so Kafka refuses it
// (and the server refuses the reset itself); the plan is refused too, since it could
// not be applied.
func refuseLive(g *client.Group, topics []string, now time.Time) error {
	var held []string
	for _, p := range g.Partitions {
		if slices.Contains(topics, p.Topic) && p.Owner != "" && p.LeaseExpiresAt.After(now) {
			held = append(held, fmt.Sprintf("%s holds %s/%d", p.Owner, p.Topic, p.Partition))
		}
	}
	if len(held) == 0 {
		return nil
	}
	return fmt.Errorf("group %q has live members (%s): stop the group's consumers (or wait for their leases to expire) first: %w",
		g.Name, strings.Join(held, ", "), client.ErrGroupActive)
}

// applyOffsets sets each partition's planned offset (a shift or the current position
// differs per partition, so each is its own reset to an offset).
func applyOffsets(ctx context.Context, c *client.Client, g, topic string, plan []client.PartitionOffset) ([]client.PartitionOffset, error) {
	out := make([]client.PartitionOffset, 0, len(plan))
	for _, p := range plan {
		res, err := c.ResetGroupPartitions(ctx, g, topic, []int32{p.Partition}, client.ResetToOffset(p.CommittedOffset))
		if err != nil {
			return nil, err
		}
		out = append(out, res...)
	}
	return out, nil
}

// topicResetPlan is one topic's part of a reset.
type topicResetPlan struct {
	topic   string
	plan    []client.PartitionOffset
	current map[int32]int64
}

// resetPlan is a parsed --to, --since, --shift-by or --to-current: what to send, and
// what to resolve for a plan.
type resetPlan struct {
	to     client.ResetTarget
	kind   string // earliest, latest, offset, time, shift or current
	offset int64  // the offset, or the shift
	at     time.Time
}

// relative reports whether the target counts from each partition's committed offset.
func (r resetPlan) relative() bool { return r.kind == "shift" || r.kind == "current" }

// planReset computes, without changing anything, the offsets a reset would set: from
// the topic's bounds, the server's offsets for a time, or the committed offsets
// (current; policy places a partition without one).
func planReset(ctx context.Context, c *client.Client, topic string, partitions []int32, target resetPlan, current map[int32]int64, policy string) ([]client.PartitionOffset, error) {
	t, err := c.DescribeTopic(ctx, topic)
	if err != nil {
		return nil, err
	}
	parts, err := choosePartitions(consumeConfig{topic: topic, partitions: partitions}, t.Partitions)
	if err != nil {
		return nil, err
	}
	byTime := map[int32]int64{}
	if target.kind == "time" {
		offs, err := c.OffsetsForTime(ctx, topic, target.at)
		if err != nil {
			return nil, err
		}
		for _, o := range offs {
			byTime[o.Partition] = o.Offset
		}
	}
	bounds := map[int32]client.PartitionInfo{}
	for _, pi := range t.PartitionInfo {
		bounds[pi.Partition] = pi
	}
	out := make([]client.PartitionOffset, 0, len(parts))
	for _, p := range parts {
		b := bounds[p]
		var n int64
		switch target.kind {
		case "earliest":
			n = b.LogStartOffset
		case "latest":
			n = b.HighWatermark
		case "time":
			n = byTime[p]
		case "shift", "current":
			n = shiftedOffset(current, p, b, target, policy)
		default:
			if target.offset < b.LogStartOffset || target.offset > b.HighWatermark {
				return nil, fmt.Errorf("offset %d is out of range on partition %d: it holds offsets %d to %d (give --partition to reset only the partitions where it exists)",
					target.offset, p, b.LogStartOffset, b.HighWatermark)
			}
			n = target.offset
		}
		out = append(out, client.PartitionOffset{Partition: p, CommittedOffset: n})
	}
	return out, nil
}

// shiftedOffset is partition p's position after --shift-by (or --to-current, a shift
// of 0): its committed offset, or where policy starts it without one, plus the shift,
// clamped to the partition's log start and high watermark.
func shiftedOffset(current map[int32]int64, p int32, b client.PartitionInfo, target resetPlan, policy string) int64 {
	n, ok := current[p]
	if !ok {
		n = b.LogStartOffset
		if policy == consumer.ResetLatest {
			n = b.HighWatermark
		}
	}
	if target.kind == "shift" {
		// Saturate rather than overflow on an absurd shift.
		switch {
		case target.offset > 0 && n > math.MaxInt64-target.offset:
			n = math.MaxInt64
		case target.offset < 0 && n < math.MinInt64-target.offset:
			n = math.MinInt64
		default:
			n += target.offset
		}
	}
	return min(max(n, b.LogStartOffset), b.HighWatermark)
}

// printResetPlans prints each partition's current and new offset (with a TOPIC column
// for --all-topics) and says whether it was applied.
func printResetPlans(cmd *cobra.Command, asJSON bool, g string, plans []topicResetPlan, allTopics, executed, exists bool) error {
	w := cmd.OutOrStdout()
	if asJSON {
		type row struct {
			Partition     int32  `json:"partition"`
			CurrentOffset *int64 `json:"current_offset"`
			NewOffset     int64  `json:"new_offset"`
		}
		type topicRows struct {
			Topic      string `json:"topic"`
			Partitions []row  `json:"partitions"`
		}
		out := make([]topicRows, len(plans))
		for i, tp := range plans {
			rows := make([]row, len(tp.plan))
			for j, p := range tp.plan {
				rows[j] = row{Partition: p.Partition, NewOffset: p.CommittedOffset}
				if c, ok := tp.current[p.Partition]; ok {
					rows[j].CurrentOffset = &c
				}
			}
			out[i] = topicRows{Topic: tp.topic, Partitions: rows}
		}
		if !allTopics {
			return printJSON(w, map[string]any{"group": g, "topic": out[0].Topic, "executed": executed, "partitions": out[0].Partitions})
		}
		return printJSON(w, map[string]any{"group": g, "executed": executed, "topics": out})
	}
	header := []string{"PARTITION", "CURRENT", "NEW"}
	if allTopics {
		header = append([]string{"TOPIC"}, header...)
	}
	tb := newTable(w, header...)
	for _, tp := range plans {
		for _, p := range tp.plan {
			cur := "-"
			if c, ok := tp.current[p.Partition]; ok {
				cur = strconv.FormatInt(c, 10)
			}
			if allTopics {
				tb.row(tp.topic, p.Partition, cur, p.CommittedOffset)
			} else {
				tb.row(p.Partition, cur, p.CommittedOffset)
			}
		}
	}
	if err := tb.flush(); err != nil {
		return err
	}
	if !executed {
		what := "nothing changed"
		if !exists {
			what += fmt.Sprintf("; group %s will be created", g)
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "strata: this is the plan, %s: add --execute to apply it\n", what)
	}
	return nil
}

// resetTarget parses --to, --since, --shift-by (shift non-nil) or --to-current.
func resetTarget(to, since string, shift *int64, toCurrent bool, now time.Time) (resetPlan, error) {
	switch {
	case shift != nil:
		return resetPlan{kind: "shift", offset: *shift}, nil
	case toCurrent:
		return resetPlan{kind: "current"}, nil
	}
	if since != "" {
		t, err := parseTime(since, now)
		if err != nil {
			return resetPlan{}, usagef("--since: %w", err)
		}
		return resetPlan{to: client.ResetToTime(t), kind: "time", at: t}, nil
	}
	switch to {
	case "earliest":
		return resetPlan{to: client.ResetEarliest(), kind: to}, nil
	case "latest":
		return resetPlan{to: client.ResetLatest(), kind: to}, nil
	case "":
		return resetPlan{}, usagef("one of --to, --since, --shift-by or --to-current is required")
	}
	n, err := strconv.ParseInt(to, 10, 64)
	if err != nil || n < 0 {
		return resetPlan{}, usagef("--to must be earliest, latest or a non-negative offset, got %q (a time goes in --since)", to)
	}
	return resetPlan{to: client.ResetToOffset(n), kind: "offset", offset: n}, nil
}

// secondsOrDash prints a time to data loss in seconds, or "-" when caught up.
func secondsOrDash(s *float64) string {
	if s == nil {
		return "-"
	}
	return strconv.FormatFloat(*s, 'f', 0, 64)
}
