package main

import (
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/stratalog/strata/pkg/client"
)

func newGetCmd(o *options) *cobra.Command {
	var (
		partition int32
		keyB64    bool
	)
	cmd := &cobra.Command{
		Use:   "get TOPIC KEY",
		Short: "Print the latest record of a key of a compacted topic",
		Long: `Print the latest record of KEY on compacted topic TOPIC, from the server's key index:
no replay of the partition, and every append acknowledged before the run is seen. A key
whose latest record is a tombstone fails naming the tombstone's offset; a key never
written (or whose tombstone's retention passed) fails as not found. The key is looked
for in its partition by the topic's partition count; --partition names another (a key
appended there explicitly, or before a partition increase).`,
		Args: exactArgs("TOPIC", "KEY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			key := []byte(args[1])
			if keyB64 {
				var err error
				if key, err = base64.StdEncoding.DecodeString(args[1]); err != nil {
					return usagef("--key-base64: %q is not base64: %v", args[1], err)
				}
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			var kr *client.KeyRecord
			if cmd.Flags().Changed("partition") {
				kr, err = c.LatestIn(cmd.Context(), args[0], partition, key)
			} else {
				kr, err = c.Latest(cmd.Context(), args[0], key)
			}
			var ae *client.APIError
			if errors.Is(err, client.ErrKeyDeleted) && errors.As(err, &ae) {
				return fmt.Errorf("key %s of topic %s was deleted by the tombstone at partition %v offset %v: %w",
					printable(key), args[0], ae.Details["partition"], ae.Details["offset"], err)
			}
			if err != nil {
				return err
			}
			p := newRecordPrinter(cmd.OutOrStdout(), consumeConfig{json: o.json, printTimestamp: true, printHeaders: true})
			return p.print(kr.Partition, kr.Offset, kr.Timestamp.UnixMilli(), kr.Key, kr.Value, kr.Headers)
		},
	}
	cmd.Flags().Int32Var(&partition, "partition", 0, "the partition to look in (default: the key's, by the topic's partition count)")
	cmd.Flags().BoolVar(&keyB64, "key-base64", false, "KEY is base64 (standard), for keys that are not text")
	return cmd
}
