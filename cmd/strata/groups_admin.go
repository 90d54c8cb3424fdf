package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/wire"
)

func newGroupsListCmd(o *options) *cobra.Command {
	return newNamesListCmd(o, "List the consumer groups the caller may describe", "groups", "GROUP",
		func(ctx context.Context, c *client.Client) ([]string, error) { return c.ListGroups(ctx) })
}

// settingsJSON is a group's settings as --json prints them (the API's shape).
type settingsJSON = wire.GroupSettings

func newGroupsSettingsCmd(o *options) *cobra.Command {
	var (
		resetPolicy, dlq string
		onFailure        string
		maxAttempts      int
		noDLQ            bool
	)
	cmd := &cobra.Command{
		Use:   "settings GROUP [--reset-policy P] [--max-attempts N] [--dead-letter-topic T | --no-dead-letter-topic] [--on-failure dead_letter|park]",
		Short: "Show or change a group's consumer settings",
		Long: `Without flags, show GROUP's settings. With flags, change those settings (the others
keep their values; a new group starts from earliest, 5 attempts, no dead-letter
topic). Members started with strata consume --group apply them: where a group without
a position starts (--reset-policy earliest|latest|fail), how many times a record is
handled before it is dead-lettered (--max-attempts), and where it goes then
(--dead-letter-topic, an existing topic), or whether such a record parks its key
instead (--on-failure park: the key's records go, in order, to GROUP.parked while the
other keys flow; see strata groups parked and strata groups release).`,
		Args: exactArgs("GROUP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			if f.Changed("reset-policy") && resetPolicy != consumer.ResetEarliest && resetPolicy != consumer.ResetLatest && resetPolicy != consumer.ResetFail {
				return usagef("--reset-policy must be earliest, latest or fail, got %q", resetPolicy)
			}
			if f.Changed("max-attempts") && maxAttempts < 1 {
				return usagef("--max-attempts must be at least 1, got %d", maxAttempts)
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			if f.Changed("dead-letter-topic") && noDLQ {
				return usagef("--dead-letter-topic and --no-dead-letter-topic contradict each other")
			}
			var s *client.GroupSettings
			if f.Changed("reset-policy") || f.Changed("max-attempts") || f.Changed("dead-letter-topic") || noDLQ || f.Changed("on-failure") {
				cur, err := c.GroupSettings(cmd.Context(), args[0])
				switch {
				case errors.Is(err, client.ErrNotFound):
					cur = &client.GroupSettings{ResetPolicy: "earliest", MaxAttempts: 5}
				case err != nil:
					return err
				}
				if f.Changed("reset-policy") {
					cur.ResetPolicy = resetPolicy
				}
				if f.Changed("max-attempts") {
					cur.MaxAttempts = maxAttempts
				}
				if f.Changed("dead-letter-topic") {
					cur.DeadLetterTopic = dlq
				}
				if noDLQ {
					cur.DeadLetterTopic = ""
				}
				if f.Changed("on-failure") {
					cur.OnFailure = onFailure
				}
				if s, err = c.SetGroupSettings(cmd.Context(), args[0], *cur); err != nil {
					return err
				}
			} else if s, err = c.GroupSettings(cmd.Context(), args[0]); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if o.json {
				j := settingsJSON{Group: s.Group, ResetPolicy: s.ResetPolicy, MaxAttempts: s.MaxAttempts, OnFailure: s.OnFailure, CreatedAtMs: s.CreatedAt.UnixMilli()}
				if s.DeadLetterTopic != "" {
					j.DeadLetterTopic = &s.DeadLetterTopic
				}
				return printJSON(w, j)
			}
			tb := newTable(w, "GROUP", "RESET_POLICY", "MAX_ATTEMPTS", "DEAD_LETTER_TOPIC", "ON_FAILURE")
			d := s.DeadLetterTopic
			if d == "" {
				d = "-"
			}
			tb.row(s.Group, s.ResetPolicy, s.MaxAttempts, d, s.OnFailure)
			return tb.flush()
		},
	}
	f := cmd.Flags()
	f.StringVar(&resetPolicy, "reset-policy", "", "where a member without a usable position starts: earliest, latest or fail")
	f.IntVar(&maxAttempts, "max-attempts", 0, "times a record is handled before it is dead-lettered (1-100)")
	f.StringVar(&dlq, "dead-letter-topic", "", "`TOPIC` that receives records that failed every attempt")
	f.BoolVar(&noDLQ, "no-dead-letter-topic", false, "drop records that failed every attempt instead")
	f.StringVar(&onFailure, "on-failure", "", "what a record that failed every attempt does: dead_letter or park (its key)")
	return cmd
}

func newGroupsDeleteOffsetsCmd(o *options) *cobra.Command {
	var topic string
	cmd := &cobra.Command{
		Use:   "delete-offsets GROUP --topic TOPIC",
		Short: "Drop a group's committed positions on a topic",
		Long: `Delete GROUP's committed offsets on every partition of --topic: its members then start
where the group's reset policy says. Refused while any member holds a live lease on the
topic (stop the group's consumers first).`,
		Args: exactArgs("GROUP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			if err := c.DeleteGroupOffsets(cmd.Context(), args[0], topic); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if o.json {
				return printJSON(w, map[string]any{"group": args[0], "topic": topic, "deleted": true})
			}
			_, err = fmt.Fprintf(w, "deleted the offsets of group %s on %s\n", args[0], topic)
			return err
		},
	}
	cmd.Flags().StringVar(&topic, "topic", "", "topic whose positions are dropped (required)")
	_ = cmd.MarkFlagRequired("topic")
	return cmd
}

func newGroupsDeleteCmd(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "delete GROUP",
		Short: "Delete a stopped consumer group: its settings and positions on every topic",
		Long: `Delete GROUP: its settings, its members and its committed offsets on every topic;
its lag leaves /metrics. Refused while any member of it holds a live lease or
heartbeats (stop the group's consumers first, or wait for their leases to expire).
A group created again under the name starts as its reset policy says.`,
		Args: exactArgs("GROUP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			if err := c.DeleteGroup(cmd.Context(), args[0]); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if o.json {
				return printJSON(w, map[string]any{"group": args[0], "deleted": true})
			}
			_, err = fmt.Fprintf(w, "deleted group %s\n", args[0])
			return err
		},
	}
}
