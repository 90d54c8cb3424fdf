package main

import (
	"encoding/base64"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/wire"
)

// parkedJSON prints parked keys as the API answers them.
func parkedJSON(keys []client.ParkedKey) wire.ParkedList {
	out := wire.ParkedList{Parked: make([]wire.ParkedKey, len(keys))}
	for i, k := range keys {
		out.Parked[i] = wire.ParkedKey{Topic: k.Topic, Partition: k.Partition, Key: base64.StdEncoding.EncodeToString(k.Key),
			FirstOffset: k.FirstOffset, Records: k.Records, Error: k.Error, ParkedAtMs: k.ParkedAt.UnixMilli(), Expired: k.Expired}
		if !k.ReleaseRequested.IsZero() {
			ms := k.ReleaseRequested.UnixMilli()
			out.Parked[i].ReleaseRequestedAtMs = &ms
		}
	}
	return out
}

func printParked(cmd *cobra.Command, o *options, keys []client.ParkedKey) error {
	w := cmd.OutOrStdout()
	if o.json {
		return printJSON(w, parkedJSON(keys))
	}
	tb := newTable(w, "TOPIC", "PARTITION", "KEY", "FIRST_OFFSET", "RECORDS", "EXPIRED", "PARKED_AT", "RELEASE", "ERROR")
	for _, k := range keys {
		release, expired := "-", "-"
		if !k.ReleaseRequested.IsZero() {
			release = "requested"
		}
		if k.Expired {
			expired = "some"
		}
		tb.row(k.Topic, k.Partition, strconv.Quote(string(k.Key)), k.FirstOffset, k.Records, expired,
			k.ParkedAt.UTC().Format(time.RFC3339), release, k.Error)
	}
	return tb.flush()
}

func newGroupsParkedCmd(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "parked GROUP",
		Short: "List the keys a group parked",
		Long: `List the keys GROUP parked (its settings' --on-failure park): for each, the topic and
partition, the first offset parked, how many records were parked, whether
GROUP.parked's retention took some of them already (EXPIRED: a release replays what
is left and counts the rest lost), and the handler's error. Release a key with strata groups release.`,
		Args: exactArgs("GROUP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			keys, err := c.ParkedKeys(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printParked(cmd, o, keys)
		},
	}
}

func newGroupsReleaseCmd(o *options) *cobra.Command {
	var topic, key string
	cmd := &cobra.Command{
		Use:   "release GROUP --topic TOPIC --key KEY",
		Short: "Release a parked key: replay its parked records in order, then unpark it",
		Long: `Release KEY (its bytes as given) that GROUP parked on TOPIC. The partition's owner
hands the key's parked records to the handler again, in their original order and
before any newer record of the key, then unparks the key; a partition with no running
member does so on its next run.`,
		Args: exactArgs("GROUP"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if topic == "" || !cmd.Flags().Changed("key") {
				return usagef("--topic and --key are required")
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			keys, err := c.ReleaseParkedKey(cmd.Context(), args[0], topic, []byte(key))
			if err != nil {
				return err
			}
			return printParked(cmd, o, keys)
		},
	}
	cmd.Flags().StringVar(&topic, "topic", "", "`TOPIC` the key was parked on")
	cmd.Flags().StringVar(&key, "key", "", "the parked `KEY`")
	return cmd
}
