package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/log"
)

// maxReportedFailures bounds the failed records reported one by one on stderr.
const maxReportedFailures = 10

// produceFlushTimeout bounds the flush of buffered records after Ctrl-C.
const produceFlushTimeout = 5 * time.Second

func newProduceCmd(o *options) *cobra.Command {
	var (
		value     string
		key       string
		keySep    string
		partition int32
		linger    time.Duration
	)
	cmd := &cobra.Command{
		Use:   "produce TOPIC",
		Short: "Append records: one per line of stdin, or --value",
		Long: `Append records to TOPIC with the batching producer: each line of stdin is one
record's value (or --value gives a single record). --key sets every record's key;
--key-separator instead splits each line into key and value at the first separator.
Prints each record's partition and offset once it is durable.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			var part *int32
			if cmd.Flags().Changed("partition") {
				part = &partition
			}
			var keyBytes []byte
			if cmd.Flags().Changed("key") {
				keyBytes = []byte(key)
			}
			lines := make(chan []byte)
			readErr := make(chan error, 1)
			if cmd.Flags().Changed("value") {
				go func() {
					defer close(lines)
					lines <- []byte(value)
					readErr <- nil
				}()
			} else {
				go readLines(cmd.InOrStdin(), lines, readErr)
			}
			p := producer{o: o, topic: args[0], key: keyBytes, keySep: []byte(keySep), partition: part,
				cfg: client.ProducerConfig{Linger: linger}}
			return p.run(cmd.Context(), c, lines, readErr, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&value, "value", "", "append this one value instead of reading stdin")
	f.StringVar(&key, "key", "", "key of every record")
	f.StringVar(&keySep, "key-separator", "", "split each line into key and value at the first occurrence of this string")
	f.Int32Var(&partition, "partition", 0, "append to this partition (default: by key, else round-robin)")
	f.DurationVar(&linger, "linger", 5*time.Millisecond, "how long a batch waits for more records")
	return cmd
}

// readLines sends each line of r (without its newline) and then the read error, if any.
func readLines(r io.Reader, out chan<- []byte, errc chan<- error) {
	defer close(out)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), log.MaxRecordBytes+1)
	for sc.Scan() {
		out <- bytes.Clone(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		errc <- fmt.Errorf("read stdin: %w", err)
		return
	}
	errc <- nil
}

// producer is one run of `strata produce`.
type producer struct {
	o         *options
	topic     string
	key       []byte
	keySep    []byte
	partition *int32
	cfg       client.ProducerConfig
}

type produceResultJSON struct {
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
}

// run sends every line, printing outcomes in input order as they arrive. Ctrl-C (ctx)
// stops reading; what was already sent is flushed.
func (p *producer) run(ctx context.Context, c *client.Client, lines <-chan []byte, readErr <-chan error, out, errOut io.Writer) error {
	prod, err := client.NewProducer(ctx, c, p.topic, p.cfg)
	if err != nil {
		return err
	}
	futures := make(chan *client.Future, 1024)
	type tally struct {
		sent, failed int
		first        error
	}
	printed := make(chan tally)
	go func() {
		var n tally
		if !p.o.json {
			fmt.Fprintln(out, "PARTITION OFFSET")
		}
		enc := json.NewEncoder(out)
		for f := range futures {
			<-f.Done()
			res, err := f.Result()
			if err != nil {
				n.failed++
				if n.first == nil {
					n.first = err
				}
				if n.failed <= maxReportedFailures {
					fmt.Fprintf(errOut, "strata: record %d failed: %v\n", n.sent+n.failed, err)
				}
				continue
			}
			n.sent++
			if p.o.json {
				_ = enc.Encode(produceResultJSON{Partition: res.Partition, Offset: res.Offset})
			} else {
				fmt.Fprintf(out, "%-9d %d\n", res.Partition, res.Offset)
			}
		}
		printed <- n
	}()

	var sendErr error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case line, ok := <-lines:
			if !ok {
				sendErr = <-readErr
				break loop
			}
			rec := client.Record{Key: p.key, Value: line, Partition: p.partition}
			if len(p.keySep) > 0 {
				if k, v, found := bytes.Cut(line, p.keySep); found {
					rec.Key, rec.Value = k, v
				}
			}
			f, err := prod.Send(ctx, rec)
			if err != nil {
				if ctx.Err() != nil {
					break loop
				}
				sendErr = err
				break loop
			}
			futures <- f
		}
	}
	flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), produceFlushTimeout)
	defer cancel()
	closeErr := prod.Close(flushCtx)
	close(futures)
	n := <-printed
	if n.failed > 0 {
		return errors.Join(sendErr, fmt.Errorf("%d of %d records failed, the first: %w", n.failed, n.sent+n.failed, n.first))
	}
	return errors.Join(sendErr, closeErr)
}
