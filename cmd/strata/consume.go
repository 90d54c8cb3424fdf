package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
)

// consumeRetry is how long a partition waits before trying again after a lease held by
// another member, a fenced run or a transient failure.
const consumeRetry = time.Second

func newConsumeCmd(o *options) *cobra.Command {
	var (
		cc         consumeConfig
		partitions []int32
	)
	cmd := &cobra.Command{
		Use:   "consume TOPIC",
		Short: "Follow a topic as a consumer group member, printing each record",
		Long: `Consume TOPIC as a member of --group, following the log like tail -f and printing
each record as "partition offset key value" (values with control characters or
invalid UTF-8 are quoted). Positions are committed as records are printed; Ctrl-C
commits the last one and releases the leases. Partitions leased by another live
member are retried until they free up. --from says where a group without a committed
position starts.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			cc.topic = args[0]
			cc.json = o.json
			cc.partitions = partitions
			return runConsume(cmd.Context(), c, cc, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	host, _ := os.Hostname()
	f := cmd.Flags()
	f.StringVar(&cc.group, "group", "", "consumer group (required)")
	f.StringVar(&cc.from, "from", consumer.ResetEarliest, "where a new group starts: earliest or latest")
	f.StringVar(&cc.member, "member", fmt.Sprintf("strata-cli-%s-%d", host, os.Getpid()), "member name in the group")
	f.Int32SliceVar(&partitions, "partition", nil, "consume only these partitions (default all)")
	f.DurationVar(&cc.leaseTTL, "lease-ttl", 10*time.Second, "lease TTL (renewed every third of it)")
	f.BoolVar(&cc.untilCaughtUp, "until-caught-up", false, "exit once every record present at start is printed and committed")
	_ = cmd.MarkFlagRequired("group")
	return cmd
}

type consumeConfig struct {
	topic, group, from, member string
	partitions                 []int32
	leaseTTL                   time.Duration
	untilCaughtUp              bool
	json                       bool
}

// consumedJSON is one record as --json prints it (one JSON object per line); bytes
// that are not UTF-8 go in the _base64 fields instead.
type consumedJSON struct {
	Partition   int32             `json:"partition"`
	Offset      int64             `json:"offset"`
	TimestampMs int64             `json:"timestamp_ms"`
	Key         *string           `json:"key"`
	KeyBase64   *string           `json:"key_base64,omitempty"`
	Value       *string           `json:"value,omitempty"`
	ValueBase64 *string           `json:"value_base64,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	// HeadersBase64 holds the headers whose values are not UTF-8.
	HeadersBase64 map[string]string `json:"headers_base64,omitempty"`
}

// runConsume runs one consumer per partition until ctx ends (or, with untilCaughtUp,
// until each is caught up).
func runConsume(ctx context.Context, c *client.Client, cc consumeConfig, out, errOut io.Writer) error {
	if cc.from != consumer.ResetEarliest && cc.from != consumer.ResetLatest {
		return fmt.Errorf("--from must be earliest or latest, got %q", cc.from)
	}
	t, err := c.DescribeTopic(ctx, cc.topic)
	if err != nil {
		return err
	}
	parts := cc.partitions
	if len(parts) == 0 {
		for p := range t.Partitions {
			parts = append(parts, p)
		}
	}
	for _, p := range parts {
		if p < 0 || p >= t.Partitions {
			return fmt.Errorf("partition %d out of range: %q has %d", p, cc.topic, t.Partitions)
		}
	}
	// A record that cannot be printed (stdout closed) stops everything before it counts
	// as handled, so its position is not committed.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var mu sync.Mutex
	enc := json.NewEncoder(out)
	printRecord := func(r consumer.Record) error {
		if cc.json {
			j := consumedJSON{Partition: r.Partition, Offset: r.Offset, TimestampMs: r.Timestamp}
			j.Key, j.KeyBase64 = jsonBytes(r.Key)
			j.Value, j.ValueBase64 = jsonBytes(r.Value)
			for _, h := range r.Headers {
				text, b64 := jsonBytes(h.Value)
				if b64 == nil {
					if text == nil {
						text = new(string)
					}
					if j.Headers == nil {
						j.Headers = map[string]string{}
					}
					j.Headers[h.Key] = *text
				} else {
					if j.HeadersBase64 == nil {
						j.HeadersBase64 = map[string]string{}
					}
					j.HeadersBase64[h.Key] = *b64
				}
			}
			return enc.Encode(j)
		}
		_, err := fmt.Fprintf(out, "%d\t%d\t%s\t%s\n", r.Partition, r.Offset, printable(r.Key), printable(r.Value))
		return err
	}
	handler := func(_ context.Context, r consumer.Record) error {
		mu.Lock()
		defer mu.Unlock()
		if err := printRecord(r); err != nil {
			cancel(fmt.Errorf("write record: %w", err))
			return err
		}
		return nil
	}
	adapter := client.NewConsumerAdapter(c)
	cfg := consumer.Config{
		Group: cc.group, Topic: cc.topic, Member: cc.member, Handler: handler,
		ResetPolicy: cc.from, LeaseTTL: cc.leaseTTL, MaxAttempts: 1,
	}
	if cc.untilCaughtUp {
		// Nothing to wait for at the high watermark: that is where the run ends.
		cfg.PollWait = time.Millisecond
	}
	cons, err := consumer.New(adapter, adapter, cfg)
	if err != nil {
		return err
	}
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = consumePartition(ctx, cons, p, cc.untilCaughtUp, errOut)
		}()
	}
	wg.Wait()
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		errs = append(errs, cause)
	}
	return errors.Join(errs...)
}

// consumePartition runs the partition until ctx ends, retrying what another member or a
// transient failure got in the way of; it fails only on errors a retry cannot fix.
func consumePartition(ctx context.Context, cons *consumer.Consumer, p int32, untilCaughtUp bool, errOut io.Writer) error {
	warned := false
	for ctx.Err() == nil {
		_, err := cons.Run(ctx, p, consumer.RunOptions{UntilCaughtUp: untilCaughtUp})
		switch {
		case err == nil:
			if untilCaughtUp {
				return nil
			}
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, group.ErrLeaseHeld):
			if untilCaughtUp {
				fmt.Fprintf(errOut, "strata: skipping partition %d: %v\n", p, err)
				return nil
			}
			if !warned {
				fmt.Fprintf(errOut, "strata: partition %d: %v; waiting for it\n", p, err)
				warned = true
			}
		case errors.Is(err, group.ErrFenced), errors.Is(err, group.ErrUnavailable), errors.Is(err, log.ErrUnavailable):
			fmt.Fprintf(errOut, "strata: partition %d: %v; retrying\n", p, err)
		default:
			return fmt.Errorf("partition %d: %w", p, err)
		}
		t := time.NewTimer(consumeRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
	return nil
}
