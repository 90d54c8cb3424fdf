package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/wire"
)

// maxReportedFailures bounds the failed records reported one by one on stderr.
const maxReportedFailures = 10

// produceFlushTimeout bounds the flush of buffered records after Ctrl-C.
const produceFlushTimeout = 5 * time.Second

func newProduceCmd(o *options) *cobra.Command {
	var (
		value        string
		key          string
		keySep       string
		allowUnkeyed bool
		partition    int32
		linger       time.Duration
		alignLinger  bool
		headers      []string
		nullValue    bool
	)
	cmd := &cobra.Command{
		Use:   "produce TOPIC",
		Short: "Append records: one per line of stdin, or --value",
		Long: `Append records to TOPIC with the batching producer: each line of stdin is one
record's value (or --value gives a single record); blank lines are skipped. --key
sets every record's key; --key-separator instead splits each line into key and value
at the first separator, refusing a line without one (--allow-unkeyed sends it without
a key); --header adds headers; --null-value appends one record with a null value (a
tombstone: with --key, it deletes the key of a compacted topic). Prints each record's
partition and offset once it is durable. A line over the 1 MiB record limit fails on its own.`,
		Args: exactArgs("TOPIC"),
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
			if cmd.Flags().Changed("partition") && partition < 0 {
				return usagef("--partition must not be negative, got %d", partition)
			}
			if linger < 0 {
				return usagef("--linger must not be negative, got %s", linger)
			}
			if alignLinger && linger < time.Millisecond {
				return usagef("--align-linger needs a --linger of at least 1ms")
			}
			if allowUnkeyed && keySep == "" {
				return usagef("--allow-unkeyed only applies with --key-separator")
			}
			if keySep != "" && cmd.Flags().Changed("key") {
				return usagef("--key and --key-separator both set the key; give one")
			}
			hdrs, err := parseHeaders(headers)
			if err != nil {
				return err
			}
			lines := make(chan line)
			readErr := make(chan error, 1)
			blank := 0
			if nullValue && (cmd.Flags().Changed("value") || keySep != "") {
				return usagef("--null-value is one record without a value: not with --value or --key-separator")
			}
			if nullValue {
				go func() {
					defer close(lines)
					lines <- line{n: 1, data: nil}
					readErr <- nil
				}()
			} else if cmd.Flags().Changed("value") {
				go func() {
					defer close(lines)
					lines <- line{n: 1, data: []byte(value)}
					readErr <- nil
				}()
			} else {
				go readLines(cmd.InOrStdin(), lines, readErr, &blank)
			}
			p := producer{o: o, topic: args[0], key: keyBytes, keySep: []byte(keySep), allowUnkeyed: allowUnkeyed, partition: part, headers: hdrs,
				cfg: client.ProducerConfig{Linger: linger, AlignLinger: alignLinger}}
			err = p.run(cmd.Context(), c, lines, readErr, cmd.OutOrStdout(), cmd.ErrOrStderr())
			if blank > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "strata: skipped %d blank line(s); use --value \"\" for an empty record\n", blank)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&value, "value", "", "append this one value instead of reading stdin")
	f.BoolVar(&nullValue, "null-value", false, "append one record with a null value (a tombstone) instead of reading stdin")
	f.StringVar(&key, "key", "", "key of every record")
	f.StringVar(&keySep, "key-separator", "", "split each line into key and value at the first occurrence of this string (a line without it is refused)")
	f.BoolVar(&allowUnkeyed, "allow-unkeyed", false, "with --key-separator: send a line without the separator as a value without a key")
	f.Int32Var(&partition, "partition", 0, "append to this `PARTITION` (default: by key, else spread)")
	f.StringArrayVar(&headers, "header", nil, "add the header `NAME=VALUE` to every record (repeatable)")
	f.DurationVar(&linger, "linger", 5*time.Millisecond, "how long a batch waits for more records")
	f.BoolVar(&alignLinger, "align-linger", false, "send each round at the next tick of a wall-clock grid of period --linger, so producers on hosts with agreeing clocks send together and the api merges their requests")
	return cmd
}

// line is one line of stdin: its bytes, or tooLong when it is over the record limit
// (its bytes are then dropped, not buffered).
type line struct {
	n       int // 1-based line number
	data    []byte
	tooLong int // the line's length when over wire.MaxRecordBytes
}

// readLines sends each non-blank line of r (without its newline, or "\r\n") and then
// the read error, if any; blank lines are counted in *blank, not sent, since an empty
// record is almost never what a line-oriented producer meant. A line over the record
// limit is sent as tooLong so it fails with the record-size error while the rest go on.
func readLines(r io.Reader, out chan<- line, errc chan<- error, blank *int) {
	defer close(out)
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		var buf []byte
		size := 0
		var err error
		for {
			var chunk []byte
			chunk, err = br.ReadSlice('\n')
			size += len(chunk)
			if size <= wire.MaxRecordBytes+2 {
				buf = append(buf, chunk...)
			}
			if err != bufio.ErrBufferFull {
				break
			}
		}
		if size == 0 && err == io.EOF {
			errc <- nil
			return
		}
		if err != nil && err != io.EOF {
			errc <- fmt.Errorf("read stdin: %w", err)
			return
		}
		l := line{n: n}
		trimmed := size
		if trimmed > 0 && err == nil { // ends in \n
			trimmed--
			if len(buf) >= 2 && buf[len(buf)-2] == '\r' {
				trimmed--
			}
		}
		if trimmed > wire.MaxRecordBytes {
			l.tooLong = trimmed
		} else {
			l.data = buf[:trimmed]
			if len(bytes.TrimSpace(l.data)) == 0 {
				*blank++
				if err == io.EOF {
					errc <- nil
					return
				}
				continue
			}
		}
		out <- l
		if err == io.EOF {
			errc <- nil
			return
		}
	}
}

// producer is one run of `strata produce`.
type producer struct {
	o      *options
	topic  string
	key    []byte
	keySep []byte
	// allowUnkeyed sends a line without keySep as a value without a key instead of
	// refusing it.
	allowUnkeyed bool
	partition    *int32
	headers      map[string][]byte
	cfg          client.ProducerConfig
}

// outcome is a record's fate as the printer waits for it: a *client.Future, or a
// record refused before it was sent.
type outcome interface {
	Done() <-chan struct{}
	Result() (client.Result, error)
}

// failedOutcome is an outcome that has already failed.
type failedOutcome struct {
	done chan struct{}
	err  error
}

func failed(err error) outcome {
	f := failedOutcome{done: make(chan struct{}), err: err}
	close(f.done)
	return f
}

func (f failedOutcome) Done() <-chan struct{}          { return f.done }
func (f failedOutcome) Result() (client.Result, error) { return client.Result{}, f.err }

// errNoKeySeparator is a line --key-separator cannot split (Kafka's console producer
// refuses it too, with parse.key=true).
var errNoKeySeparator = errors.New("no key separator")

// parseHeaders parses --header NAME=VALUE flags.
func parseHeaders(hs []string) (map[string][]byte, error) {
	if len(hs) == 0 {
		return nil, nil
	}
	out := make(map[string][]byte, len(hs))
	for _, h := range hs {
		k, v, ok := strings.Cut(h, "=")
		if !ok || k == "" {
			return nil, usagef("--header must be NAME=VALUE, got %q", h)
		}
		out[k] = []byte(v)
	}
	return out, nil
}

type produceResultJSON struct {
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
}

// run sends every line, printing outcomes in input order as they arrive. Ctrl-C (ctx)
// stops reading; what was already sent is flushed.
func (p *producer) run(ctx context.Context, c *client.Client, lines <-chan line, readErr <-chan error, out, errOut io.Writer) error {
	prod, err := client.NewProducer(ctx, c, p.topic, p.cfg)
	if err != nil {
		return err
	}
	futures := make(chan outcome, 1024)
	type tally struct {
		sent, failed int
		first        error
	}
	printed := make(chan tally)
	go func() {
		var n tally
		if !p.o.json {
			fmt.Fprintf(out, "%-9s  %s\n", "PARTITION", "OFFSET")
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
					fmt.Fprintf(errOut, "strata: record %d failed: %s\n", n.sent+n.failed, userMessage(err, ""))
				}
				continue
			}
			n.sent++
			if p.o.json {
				_ = enc.Encode(produceResultJSON{Partition: res.Partition, Offset: res.Offset})
			} else {
				fmt.Fprintf(out, "%-9d  %d\n", res.Partition, res.Offset)
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
			if line.tooLong > 0 {
				f := failed(fmt.Errorf("line %d is %d bytes, over the %d-byte record limit: %w",
					line.n, line.tooLong, wire.MaxRecordBytes, client.ErrPayloadTooLarge))
				futures <- f
				continue
			}
			rec := client.Record{Key: p.key, Value: line.data, Partition: p.partition, Headers: p.headers}
			if len(p.keySep) > 0 {
				if k, v, found := bytes.Cut(line.data, p.keySep); found {
					rec.Key, rec.Value = k, v
				} else if !p.allowUnkeyed {
					futures <- failed(fmt.Errorf("line %d has no key separator %q (--allow-unkeyed sends such a line without a key): %w",
						line.n, p.keySep, errNoKeySeparator))
					continue
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
