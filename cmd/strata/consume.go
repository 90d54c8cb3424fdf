package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/httpconsumer"
	"github.com/stratalog/strata/pkg/log"
)

// consumeRetry is how long a partition waits before trying again after a lease held by
// another member, a fenced run or a transient failure.
const consumeRetry = time.Second

func newConsumeCmd(o *options) *cobra.Command {
	var (
		cc         consumeConfig
		partitions []int32
		fromTime   string
	)
	cmd := &cobra.Command{
		Use:   "consume TOPIC",
		Short: "Follow a topic, as a consumer group member (--group) or from an offset",
		Long: `Follow TOPIC like tail -f, printing each record under a PARTITION OFFSET KEY VALUE
header (tab-separated; a record without a key shows -, a key or value that is empty,
is "-", has control characters or is not UTF-8 is quoted). --format json prints one
JSON object per line instead. It runs until Ctrl-C (or, with --until-caught-up,
until every record present at start is printed).

With --group it is a member of that consumer group: positions are committed as
records are printed, Ctrl-C commits the last one and releases the leases, and members
of one group share the partitions (with --partition, only those).

Without --group it reads and commits nothing: from --offset on each --partition, or
from --from (earliest or latest) on every partition, or from --since TIME (-1h, -7d,
2026-12-01 or an RFC 3339 time): the server finds each partition's first record
appended at or after it, so nothing before it is downloaded.`,
		Args: exactArgs("TOPIC"),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch cc.format {
			case "text":
			case "json":
				o.json = true
			default:
				return usagef("--format must be text or json, got %q", cc.format)
			}
			if fromTime != "" {
				t, err := parseTime(fromTime, time.Now())
				if err != nil {
					return usagef("--since: %w", err)
				}
				cc.fromTime = t
			}
			cc.offsetSet = cmd.Flags().Changed("offset")
			cc.fromSet = cmd.Flags().Changed("from")
			if cc.group != "" && (cc.offsetSet || fromTime != "") {
				return usagef("--offset and --since read without a group; drop --group (a group starts at its committed position; move it with strata groups reset --since)")
			}
			if cc.offsetSet && cc.offset < 0 {
				return usagef("--offset must not be negative, got %d", cc.offset)
			}
			if cc.offsetSet && cc.fromSet {
				return usagef("--offset and --from both say where to start; give one")
			}
			if fromTime != "" && (cc.offsetSet || cc.fromSet) {
				return usagef("--since, --offset and --from each say where to start; give one")
			}
			if cc.leaseTTL < 0 {
				return usagef("--lease-ttl must not be negative, got %s", cc.leaseTTL)
			}
			if cc.maxMessages < 0 {
				return usagef("--max-messages must not be negative, got %d", cc.maxMessages)
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			cc.topic = args[0]
			cc.json = o.json
			cc.url = o.url
			cc.partitions = partitions
			if cc.group == "" {
				return runRead(cmd.Context(), c, cc, cmd.OutOrStdout(), cmd.ErrOrStderr())
			}
			return runConsume(cmd.Context(), c, cc, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	host, _ := os.Hostname()
	f := cmd.Flags()
	f.StringVar(&cc.group, "group", "", "consume as a member of this consumer `GROUP` (committing positions)")
	f.StringVar(&cc.from, "from", consumer.ResetEarliest, "where to start without a committed position or --offset: earliest or latest (default: the group's reset policy, else earliest)")
	f.Lookup("from").DefValue = ""
	f.StringVar(&cc.member, "member", fmt.Sprintf("strata-cli-%s-%d", host, os.Getpid()), "member name in the group")
	f.Int32SliceVar(&partitions, "partition", nil, "only these `PARTITIONS` (comma-separated or repeated; default: all)")
	f.Lookup("partition").DefValue = ""
	f.Int64Var(&cc.offset, "offset", 0, "without --group: start at this `OFFSET` on each partition")
	f.StringVar(&fromTime, "since", "", "without --group: start at the first record appended at or after "+timeHelp)
	f.StringVar(&fromTime, "from-timestamp", "", "the same as --since")
	_ = f.MarkDeprecated("from-timestamp", "use --since (the same flag as strata groups reset's)")
	f.StringVar(&cc.format, "format", "text", "output format: text or json (same as --json)")
	f.DurationVar(&cc.leaseTTL, "lease-ttl", 10*time.Second, "lease TTL (renewed every third of it)")
	f.BoolVar(&cc.untilCaughtUp, "until-caught-up", false, "exit once every record present at start is printed (and committed)")
	f.Int64Var(&cc.maxMessages, "max-messages", 0, "exit after printing `N` records (with --group, committing them)")
	f.BoolVar(&cc.printTimestamp, "print-timestamp", false, "add a TIMESTAMP column: each record's append time (as Kafka's print.timestamp)")
	f.BoolVar(&cc.printHeaders, "print-headers", false, "add a HEADERS column: name:value pairs, comma-separated (as Kafka's print.headers)")
	return cmd
}

type consumeConfig struct {
	topic, group, from, member string
	format                     string
	partitions                 []int32
	offset                     int64
	offsetSet                  bool
	fromSet                    bool
	fromTime                   time.Time
	leaseTTL                   time.Duration
	untilCaughtUp              bool
	maxMessages                int64
	printTimestamp             bool
	printHeaders               bool
	json                       bool
	url                        string
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
		return usagef("--from must be earliest or latest, got %q", cc.from)
	}
	// The group's settings (reset policy, max attempts, dead-letter topic) apply: the
	// consumer reads them when each partition's run starts. --from overrides the reset
	// policy, and says so.
	reset := ""
	if cc.fromSet {
		reset = cc.from
		s, err := c.GroupSettings(ctx, cc.group)
		switch {
		case err == nil && s.ResetPolicy != cc.from:
			fmt.Fprintf(errOut, "strata: --from %s overrides group %s's reset policy %s\n", cc.from, cc.group, s.ResetPolicy)
		case err != nil && !errors.Is(err, client.ErrNotFound):
			return err
		}
	}
	t, err := c.DescribeTopic(ctx, cc.topic)
	if err != nil {
		return err
	}
	parts, err := choosePartitions(cc, t.Partitions)
	if err != nil {
		return err
	}
	// A record that cannot be printed (stdout closed) stops everything before it counts
	// as handled, so its position is not committed.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var mu sync.Mutex
	pr := newRecordPrinter(out, cc)
	if err := pr.header(); err != nil {
		return err
	}
	go pr.cancelWhenDone(ctx, cancel)
	printRecord := func(r consumer.Record) error {
		return pr.print(r.Partition, r.Offset, r.Timestamp, r.Key, r.Value, headerMap(r.Headers))
	}
	handler := func(_ context.Context, r consumer.Record) error {
		mu.Lock()
		defer mu.Unlock()
		err := printRecord(r)
		if errors.Is(err, errMaxMessages) {
			// Past --max-messages: not handled (so not committed), and not a failure
			// either; the command is ending.
			mu.Unlock()
			<-ctx.Done()
			mu.Lock()
			return ctx.Err()
		}
		if err != nil {
			cancel(fmt.Errorf("write record: %w", err))
			return err
		}
		return nil
	}
	notice := &downNotice{w: errOut, url: cc.url}
	logger := slog.New(&noticeHandler{Handler: slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: slog.LevelError}), n: notice})
	if len(cc.partitions) == 0 && !cc.untilCaughtUp {
		// A member sharing the topic with the group's other members; it says which
		// partitions it holds whenever that changes, so a rebalance is visible.
		opts := []httpconsumer.GroupOption{httpconsumer.WithMember(cc.member),
			httpconsumer.WithResetPolicy(reset), httpconsumer.WithLogger(logger),
			httpconsumer.WithOnRebalance(func(_ context.Context, r httpconsumer.Rebalance) {
				if notice.recovered() {
					fmt.Fprintln(errOut, "strata: the server answers again")
				}
				fmt.Fprintf(errOut, "strata: member of a group of %d: %s\n", r.LiveMembers, holding(r.Held, t.Partitions))
			})}
		if cc.leaseTTL > 0 { // otherwise the contract's default
			opts = append(opts, httpconsumer.WithLeaseTTL(cc.leaseTTL))
		}
		gc, err := httpconsumer.NewGroupConsumer(c, cc.group, cc.topic, handler, opts...)
		if err != nil {
			return err
		}
		err = gc.Run(ctx)
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			err = errors.Join(err, cause)
		}
		return err
	}
	adapter := httpconsumer.NewConsumerAdapter(c)
	cfg := consumer.Config{
		Group: cc.group, Topic: cc.topic, Member: cc.member, Handler: handler,
		ResetPolicy: reset, LeaseTTL: cc.leaseTTL, Logger: logger,
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
			owner := "another member"
			var held *group.LeaseHeldError
			if errors.As(err, &held) && held.Owner != "" {
				owner = fmt.Sprintf("member %q", held.Owner)
			}
			if untilCaughtUp {
				fmt.Fprintf(errOut, "strata: skipping partition %d: %s holds it\n", p, owner)
				return nil
			}
			if !warned {
				fmt.Fprintf(errOut, "strata: partition %d: waiting for %s to let it go\n", p, owner)
				warned = true
			}
		case errors.Is(err, group.ErrFenced), errors.Is(err, group.ErrUnavailable), errors.Is(err, log.ErrUnavailable):
			fmt.Fprintf(errOut, "strata: partition %d: %s; retrying\n", p, userMessage(err, ""))
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

// holding says which of the topic's partitions a member holds.
func holding(held []int32, partitions int32) string {
	if len(held) == 0 {
		return fmt.Sprintf("holding no partitions of %d (waiting for a share)", partitions)
	}
	return fmt.Sprintf("holding partitions %v of %d", held, partitions)
}

// failuresBeforeNotice is how many balancer steps in a row must fail before the member
// says so: one failure is a blip, three (a lease TTL) is a server that is down.
const failuresBeforeNotice = 3

// downNotice counts a member's failed balancer steps and says once, in the user's
// terms, when the group cannot be reached, instead of staying silent.
type downNotice struct {
	w        io.Writer
	url      string
	mu       sync.Mutex
	failures int
}

func (d *downNotice) failed(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.failures++
	if d.failures == failuresBeforeNotice {
		fmt.Fprintf(d.w, "strata: %d attempts in a row to reach the group failed (%s); still retrying (Ctrl-C stops)\n",
			d.failures, userMessage(err, d.url))
	}
}

// recovered reports whether a notice was printed since the last rebalance, and resets.
func (d *downNotice) recovered() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	was := d.failures >= failuresBeforeNotice
	d.failures = 0
	return was
}

// noticeHandler is the member's log: errors print as they are; the consumer's warnings
// of failed balancer steps feed the downNotice instead.
type noticeHandler struct {
	slog.Handler
	n *downNotice
}

func (h *noticeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || h.Handler.Enabled(ctx, l)
}

func (h *noticeHandler) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "consumer: balancer step failed") {
		var err error = errors.New(r.Message)
		r.Attrs(func(a slog.Attr) bool {
			if e, ok := a.Value.Any().(error); ok && a.Key == "err" {
				err = e
			}
			return true
		})
		h.n.failed(err)
		return nil
	}
	if !h.Handler.Enabled(ctx, r.Level) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h *noticeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &noticeHandler{Handler: h.Handler.WithAttrs(as), n: h.n}
}

func (h *noticeHandler) WithGroup(name string) slog.Handler {
	return &noticeHandler{Handler: h.Handler.WithGroup(name), n: h.n}
}
