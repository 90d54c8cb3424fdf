package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/segment"
)

// recordPrinter writes consumed records: a header and tab-separated lines, or one JSON
// object per line. It is safe for concurrent use.
type recordPrinter struct {
	mu       sync.Mutex
	out      io.Writer
	json     bool
	enc      *json.Encoder
	headered bool
	// printTimestamp and printHeaders add the TIMESTAMP and HEADERS columns to the text
	// output (JSON always has both).
	printTimestamp, printHeaders bool
	// limit is --max-messages (0: none); printed counts the records so far, and done is
	// closed once the limit is printed.
	limit, printed int64
	done           chan struct{}
}

// errMaxMessages is a record past --max-messages: it is not printed (and so, in a
// group, not committed).
var errMaxMessages = errors.New("--max-messages printed")

func newRecordPrinter(out io.Writer, cc consumeConfig) *recordPrinter {
	return &recordPrinter{out: out, json: cc.json, enc: json.NewEncoder(out),
		printTimestamp: cc.printTimestamp, printHeaders: cc.printHeaders,
		limit: cc.maxMessages, done: make(chan struct{})}
}

// header prints the text header once (before the first record, or at start so an idle
// topic still shows what the columns will be).
func (p *recordPrinter) header() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.headerLocked()
}

func (p *recordPrinter) headerLocked() error {
	if p.json || p.headered {
		return nil
	}
	p.headered = true
	cols := "PARTITION\tOFFSET"
	if p.printTimestamp {
		cols += "\tTIMESTAMP"
	}
	if p.printHeaders {
		cols += "\tHEADERS"
	}
	_, err := fmt.Fprintln(p.out, cols+"\tKEY\tVALUE")
	return err
}

func (p *recordPrinter) print(partition int32, offset int64, ts int64, key, value []byte, headers map[string][]byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.limit > 0 && p.printed >= p.limit {
		return errMaxMessages
	}
	if err := p.printLocked(partition, offset, ts, key, value, headers); err != nil {
		return err
	}
	p.printed++
	if p.limit > 0 && p.printed == p.limit {
		close(p.done)
	}
	return nil
}

func (p *recordPrinter) printLocked(partition int32, offset int64, ts int64, key, value []byte, headers map[string][]byte) error {
	if p.json {
		j := consumedJSON{Partition: partition, Offset: offset, TimestampMs: ts}
		j.Key, j.KeyBase64 = jsonBytes(key)
		j.Value, j.ValueBase64 = jsonBytes(value)
		for k, v := range headers {
			text, b64 := jsonBytes(v)
			if b64 == nil {
				if text == nil {
					text = new(string)
				}
				if j.Headers == nil {
					j.Headers = map[string]string{}
				}
				j.Headers[k] = *text
			} else {
				if j.HeadersBase64 == nil {
					j.HeadersBase64 = map[string]string{}
				}
				j.HeadersBase64[k] = *b64
			}
		}
		return p.enc.Encode(j)
	}
	if err := p.headerLocked(); err != nil {
		return err
	}
	line := fmt.Sprintf("%d\t%d", partition, offset)
	if p.printTimestamp {
		line += "\t" + time.UnixMilli(ts).UTC().Format("2006-01-02T15:04:05.000Z07:00")
	}
	if p.printHeaders {
		line += "\t" + printHeaders(headers)
	}
	_, err := fmt.Fprintf(p.out, "%s\t%s\t%s\n", line, printable(key), printable(value))
	return err
}

// cancelWhenDone ends the command (cancel) once --max-messages records are printed.
func (p *recordPrinter) cancelWhenDone(ctx context.Context, cancel context.CancelCauseFunc) {
	select {
	case <-p.done:
		cancel(nil)
	case <-ctx.Done():
	}
}

// printHeaders renders headers as Kafka's console consumer does, name:value joined by
// commas (sorted by name; each part printable), or "-" for none.
func printHeaders(hs map[string][]byte) string {
	if len(hs) == 0 {
		return "-"
	}
	names := make([]string, 0, len(hs))
	for k := range hs {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		v := hs[k]
		if v == nil {
			v = []byte{}
		}
		parts[i] = printable([]byte(k)) + ":" + printable(v)
	}
	return strings.Join(parts, ",")
}

// headerMap turns a record's header list into a map (the last of repeated names wins).
func headerMap(hs []segment.Header) map[string][]byte {
	if len(hs) == 0 {
		return nil
	}
	m := make(map[string][]byte, len(hs))
	for _, h := range hs {
		m[h.Key] = h.Value
	}
	return m
}

// readPollWait is how long a read-mode poll waits at the high watermark.
const readPollWait = 5 * time.Second

// runRead follows partitions without a group: nothing is leased or committed.
func runRead(ctx context.Context, c *client.Client, cc consumeConfig, out, errOut io.Writer) error {
	if cc.from != "earliest" && cc.from != "latest" {
		return usagef("--from must be earliest or latest, got %q", cc.from)
	}
	t, err := c.DescribeTopic(ctx, cc.topic)
	if err != nil {
		return err
	}
	parts, err := choosePartitions(cc, t.Partitions)
	if err != nil {
		return err
	}
	starts := make([]int64, len(parts))
	hws := make([]int64, len(parts))
	for i, p := range parts {
		if starts[i], hws[i], err = startOffset(cc, p, t.PartitionInfo); err != nil {
			return err
		}
	}
	if !cc.fromTime.IsZero() {
		// The server seeks: each partition starts at its first record appended at or
		// after the time instead of being read from its start and filtered here.
		offs, err := c.OffsetsForTime(ctx, cc.topic, cc.fromTime)
		if err != nil {
			return err
		}
		at := make(map[int32]int64, len(offs))
		for _, o := range offs {
			at[o.Partition] = o.Offset
		}
		for i, p := range parts {
			if o, ok := at[p]; ok && o > starts[i] {
				starts[i] = o
			}
		}
	}
	pr := newRecordPrinter(out, cc)
	if err := pr.header(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go pr.cancelWhenDone(ctx, cancel)
	notice := &readNotice{w: errOut, url: cc.url}
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := readPartition(ctx, c, cc, p, starts[i], hws[i], pr, notice); err != nil {
				errs[i] = err
				cancel(err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// choosePartitions checks --partition against the topic, or returns all of them.
func choosePartitions(cc consumeConfig, n int32) ([]int32, error) {
	parts := cc.partitions
	if len(parts) == 0 {
		for p := range n {
			parts = append(parts, p)
		}
	}
	for _, p := range parts {
		if p < 0 || p >= n {
			return nil, fmt.Errorf("partition %d does not exist: topic %q has partitions 0-%d", p, cc.topic, n-1)
		}
	}
	return parts, nil
}

// startOffset is where partition p is read from, and its high watermark at start.
func startOffset(cc consumeConfig, p int32, info []client.PartitionInfo) (offset, hw int64, err error) {
	var start int64
	for _, pi := range info {
		if pi.Partition == p {
			start, hw = pi.LogStartOffset, pi.HighWatermark
		}
	}
	switch {
	case cc.offsetSet:
		if cc.offset < start || cc.offset > hw {
			return 0, 0, fmt.Errorf("offset %d is out of range on partition %d: it holds offsets %d to %d (next append at %d)",
				cc.offset, p, start, max(hw-1, start), hw)
		}
		return cc.offset, hw, nil
	case cc.from == "latest":
		return hw, hw, nil
	}
	return start, hw, nil
}

// Backoff of a read that lost the server: from readRetryMin, doubling to readRetryMax.
const (
	readRetryMin = 100 * time.Millisecond
	readRetryMax = 5 * time.Second
)

// readPartition prints partition p from offset until ctx ends (or, with untilCaughtUp,
// until hw, the high watermark seen at start). Like tail -F it rides through a server
// that goes away: a retryable failure (the server unreachable, 503) is retried with
// backoff from the same offset, said once on notice, and its recovery said too.
func readPartition(ctx context.Context, c *client.Client, cc consumeConfig, p int32, offset, hw int64, pr *recordPrinter, notice *readNotice) error {
	backoff := readRetryMin
	for ctx.Err() == nil {
		if cc.untilCaughtUp && offset >= hw {
			return nil
		}
		wait := readPollWait
		if cc.untilCaughtUp {
			wait = 0
		}
		res, err := c.Poll(ctx, cc.topic, p, offset, client.PollOptions{Wait: wait})
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, client.ErrOffsetOutOfRange):
			// Retention passed us: carry on from the new log start.
			var api *client.APIError
			if errors.As(err, &api) {
				if s, ok := api.LogStartOffset(); ok && s > offset {
					offset = s
					continue
				}
			}
			return err
		case err != nil && client.IsRetryable(err):
			notice.lost(err)
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
			backoff = min(2*backoff, readRetryMax)
			continue
		case err != nil:
			return err
		}
		backoff = readRetryMin
		notice.answered()
		for _, r := range res.Records {
			if err := pr.print(p, r.Offset, r.Timestamp.UnixMilli(), r.Key, r.Value, r.Headers); errors.Is(err, errMaxMessages) {
				return nil
			} else if err != nil {
				return fmt.Errorf("write record: %w", err)
			}
		}
		offset = res.NextOffset
	}
	return nil
}

// readNotice says once, on stderr, that the server cannot be reached and reads are
// retried, and once that it answers again (shared by a command's partitions).
type readNotice struct {
	w    io.Writer
	url  string
	mu   sync.Mutex
	down bool
}

func (n *readNotice) lost(err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.down {
		n.down = true
		fmt.Fprintf(n.w, "strata: %s; retrying (Ctrl-C stops)\n", userMessage(err, n.url))
	}
}

func (n *readNotice) answered() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.down {
		n.down = false
		fmt.Fprintln(n.w, "strata: the server answers again")
	}
}
