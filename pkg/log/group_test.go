package log_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/aws/aws-sdk-go-v2/aws"
	"pgregory.net/rapid"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/awscount"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/store"
)

// countingObjects counts object PUTs and, when put is set, runs it first: its error
// fails the PUT (an injected S3 failure), and it may block (a slow PUT).
type countingObjects struct {
	store.ObjectStore
	puts atomic.Int64
	put  func(ctx context.Context) error
}

func (c *countingObjects) Put(ctx context.Context, key string, data []byte, expiry store.Expiry) error {
	c.puts.Add(1)
	if c.put != nil {
		if err := c.put(ctx); err != nil {
			return err
		}
	}
	return c.ObjectStore.Put(ctx, key, data, expiry)
}

// countingMeta counts sequencer commits (counter adds).
type countingMeta struct {
	store.MetaStore
	commits atomic.Int64
}

func (c *countingMeta) Sequence(ctx context.Context, sc store.SeqCommit) (store.SeqCommit, error) {
	c.commits.Add(1)
	return c.MetaStore.Sequence(ctx, sc)
}

// SequenceBatch counts a topic commit as one write, and a legacy topic's batch as its
// commits.
func (c *countingMeta) SequenceBatch(ctx context.Context, cs []store.SeqCommit) ([]store.SeqCommit, []error) {
	if len(cs) > 0 && store.TopicCommits(cs[0].Entry.Topic) {
		c.commits.Add(1)
	} else {
		c.commits.Add(int64(len(cs)))
	}
	return c.MetaStore.SequenceBatch(ctx, cs)
}

// groupLog is a Log with group commit over counting wrappers of s.
func groupLog(t testing.TB, s backendtest.Stores, window time.Duration, budget int, put func(context.Context) error) (*log.Log, *countingObjects, *countingMeta) {
	t.Helper()
	objs := &countingObjects{ObjectStore: s.Objects, put: put}
	meta := &countingMeta{MetaStore: s.Meta}
	l, err := log.New(log.Config{Objects: objs, Meta: meta, GroupCommitWindow: window, GroupCommitBytes: budget})
	if err != nil {
		t.Fatal(err)
	}
	return l, objs, meta
}

// warm makes the topic's configuration cached in l, so a later Append does no I/O
// before it joins a batch.
func warm(t testing.TB, l *log.Log, topic string) {
	t.Helper()
	if _, err := l.Topic(context.Background(), topic); err != nil {
		t.Fatal(err)
	}
}

// recSize is the byte-budget measure of a record with value v and no key or headers.
func recSize(v []byte) int { return segment.RecordSize(segment.Record{Value: v}) }

// TestGroupCommit64Appenders: 64 concurrent single-record appenders (3 appends each,
// one after another) through one Log with a 20 ms window. On the emulator the S3 PUTs
// and the sequencer commits (DynamoDB UpdateItem), counted by an SDK middleware, are at
// most 0.1 per acknowledged append; on both backends the log's own count of object PUTs
// and commits is too. Every acknowledged record reads back byte-identical at its offset,
// offsets are dense, and each appender's records (its key) keep their send order.
func TestGroupCommit64Appenders(t *testing.T) {
	for _, backend := range []string{"local", "aws"} {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			counter := awscount.New()
			var s backendtest.Stores
			if backend == "local" {
				s = backendtest.Local(ctx, t)
			} else {
				s = backendtest.AWSWith(ctx, t, func(c *aws.Config) { c.APIOptions = append(c.APIOptions, counter.Middleware) })
			}
			l, objs, meta := groupLog(t, s, 20*time.Millisecond, 0, nil)
			mustTopic(t, l, "gc", 1)
			warm(t, l, "gc")
			counter.Reset()
			const appenders, each = 64, 3
			type ack struct {
				value  []byte
				offset int64
			}
			acks := make([][]ack, appenders)
			errs := make([]error, appenders)
			var wg sync.WaitGroup
			for a := range appenders {
				wg.Go(func() {
					key := fmt.Appendf(nil, "appender-%d", a)
					for i := range each {
						v := fmt.Appendf(nil, "appender-%d-record-%d", a, i)
						res, err := l.Append(ctx, "gc", []log.Record{{Key: key, Value: v, Partition: i32(0)}}, log.AppendOptions{})
						if err != nil {
							errs[a] = err
							return
						}
						acks[a] = append(acks[a], ack{v, res[0].Offset})
					}
				})
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			const appends = appenders * each
			puts, commits := objs.puts.Load(), meta.commits.Load()
			t.Logf("%d acknowledged appends: %d objects, %d commits (%.3f and %.3f per append)",
				appends, puts, commits, float64(puts)/appends, float64(commits)/appends)
			if float64(puts)/appends > 0.1 || float64(commits)/appends > 0.1 {
				t.Fatalf("%d objects and %d commits for %d appends: more than 0.1 per append", puts, commits, appends)
			}
			if backend == "aws" {
				counts, ops := counter.Snapshot()
				for _, op := range ops {
					t.Logf("%s: %d requests", op, counts[op].Requests)
				}
				sdkPuts, sdkCommits := counter.Requests("S3.PutObject"), counter.Requests("DynamoDB.UpdateItem")
				if float64(sdkPuts)/appends > 0.1 || float64(sdkCommits)/appends > 0.1 {
					t.Fatalf("SDK counted %d PutObject and %d UpdateItem for %d appends: more than 0.1 per append",
						sdkPuts, sdkCommits, appends)
				}
			}
			recs := readAll(t, l, "gc", 0)
			checkDense(t, recs)
			if len(recs) != appends {
				t.Fatalf("read %d records, acknowledged %d", len(recs), appends)
			}
			for _, as := range acks {
				for i, k := range as {
					if !bytes.Equal(recs[k.offset].Value, k.value) {
						t.Fatalf("offset %d holds %q, acknowledged %q", k.offset, recs[k.offset].Value, k.value)
					}
					if i > 0 && k.offset <= as[i-1].offset {
						t.Fatalf("%q acknowledged at %d after %q at %d: send order lost", k.value, k.offset, as[i-1].value, as[i-1].offset)
					}
				}
			}
		})
	}
}

// TestGroupCommitPutFailure: a batch of 8 appends (closed by its byte budget) whose
// object PUT fails answers every member with ErrUnavailable and no offsets, and appends
// nothing; the next batch appends normally.
func TestGroupCommitPutFailure(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		const members = 8
		v := []byte("doomed-record")
		var failing atomic.Bool
		failing.Store(true)
		injected := errors.New("injected PUT failure")
		l, objs, meta := groupLog(t, s, 10*time.Second, members*recSize(v), func(context.Context) error {
			if failing.Load() {
				return injected
			}
			return nil
		})
		mustTopic(t, l, "fail", 2)
		warm(t, l, "fail")
		results := make([][]log.Result, members)
		errs := make([]error, members)
		var wg sync.WaitGroup
		for m := range members {
			wg.Go(func() {
				results[m], errs[m] = l.Append(ctx, "fail", []log.Record{{Value: v, Partition: i32(int32(m % 2))}}, log.AppendOptions{})
			})
		}
		wg.Wait()
		for m := range members {
			if !errors.Is(errs[m], log.ErrUnavailable) || !errors.Is(errs[m], injected) || results[m] != nil {
				t.Fatalf("member %d = %+v, %v; want no results and ErrUnavailable wrapping the PUT failure", m, results[m], errs[m])
			}
			var ae *log.AppendError
			if errors.As(errs[m], &ae) {
				t.Fatalf("member %d got an *AppendError (%v): nothing was appended, so none may be reported", m, ae)
			}
		}
		if puts, commits := objs.puts.Load(), meta.commits.Load(); puts != 1 || commits != 0 {
			t.Fatalf("%d PUTs and %d commits; want the one batch's PUT and no commit", puts, commits)
		}
		for p := range int32(2) {
			if _, hw, err := l.Bounds(ctx, "fail", p); err != nil || hw != 0 {
				t.Fatalf("partition %d high watermark %d, %v; want 0", p, hw, err)
			}
		}
		failing.Store(false)
		// A record the size of the budget closes its batch at once.
		res, err := l.Append(ctx, "fail", []log.Record{{Value: make([]byte, members*recSize(v)), Partition: i32(0)}}, log.AppendOptions{})
		if err != nil || res[0].Offset != 0 {
			t.Fatalf("append after the failed batch = %+v, %v; want offset 0", res, err)
		}
	})
}

// TestGroupCommitBadRequestFailsAlone: in a busy window (8 good single-record appends,
// closed by the byte budget), a bad request started in the middle fails alone with its
// own error, before it joins; the 8 good ones share one object and are all appended.
func TestGroupCommitBadRequestFailsAlone(t *testing.T) {
	big := make([]byte, log.MaxRecordBytes+1)
	cases := []struct {
		name string
		recs []log.Record
		opt  log.AppendOptions
		want error
	}{
		{"partition out of range", []log.Record{{Value: []byte("x"), Partition: i32(7)}}, log.AppendOptions{}, log.ErrInvalid},
		{"empty header name", []log.Record{{Value: []byte("x"), Headers: []segment.Header{{Key: ""}}}}, log.AppendOptions{}, log.ErrInvalid},
		{"record too large", []log.Record{{Value: big}}, log.AppendOptions{}, log.ErrTooLarge},
		{"no records", nil, log.AppendOptions{}, log.ErrInvalid},
		{"idempotency key reused", []log.Record{{Value: []byte("other body"), Partition: i32(0)}}, log.AppendOptions{IdempotencyKey: "used"}, log.ErrIdempotencyKeyReused},
	}
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		const good = 8
		v := []byte("good-record")
		l, objs, _ := groupLog(t, s, 10*time.Second, good*recSize(v), nil)
		mustTopic(t, l, "bad", 2)
		warm(t, l, "bad")
		// The key "used" names another body already (a batch of its own: its size fills
		// the budget).
		if _, err := l.Append(ctx, "bad", []log.Record{{Value: make([]byte, good*recSize(v)), Partition: i32(1)}}, log.AppendOptions{IdempotencyKey: "used"}); err != nil {
			t.Fatal(err)
		}
		var want int64
		for _, tc := range cases {
			objs.puts.Store(0)
			results := make([][]log.Result, good)
			errs := make([]error, good)
			var wg sync.WaitGroup
			var badErr error
			for m := range good {
				if m == good/2 {
					wg.Go(func() { _, badErr = l.Append(ctx, "bad", tc.recs, tc.opt) })
				}
				wg.Go(func() {
					results[m], errs[m] = l.Append(ctx, "bad", []log.Record{{Value: v, Partition: i32(0)}}, log.AppendOptions{})
				})
			}
			wg.Wait()
			if !errors.Is(badErr, tc.want) {
				t.Fatalf("%s: bad request = %v, want %v", tc.name, badErr, tc.want)
			}
			if err := errors.Join(errs...); err != nil {
				t.Fatalf("%s: a good member failed: %v", tc.name, err)
			}
			if puts := objs.puts.Load(); puts != 1 {
				t.Fatalf("%s: %d objects for the busy window, want 1", tc.name, puts)
			}
			want += good
			if _, hw, err := l.Bounds(ctx, "bad", 0); err != nil || hw != want {
				t.Fatalf("%s: high watermark %d, %v; want %d", tc.name, hw, err, want)
			}
		}
		recs := readAll(t, l, "bad", 0)
		checkDense(t, recs)
		for _, r := range recs {
			if !bytes.Equal(r.Value, v) {
				t.Fatalf("offset %d holds %q: only the good records may be appended", r.Offset, r.Value)
			}
		}
	})
}

// TestGroupCommitIdempotent: idempotent appends share batches with plain ones. Two
// concurrent attempts of each of 4 keys (both may land in one batch, each with its own
// block) return the same offsets; a retry in a later batch returns the first offsets;
// every idempotent record reaches a reader exactly once, the superseded attempt's block
// being a duplicate readers skip.
func TestGroupCommitIdempotent(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		l, _, _ := groupLog(t, s, 30*time.Millisecond, 0, nil)
		mustTopic(t, l, "idem", 2)
		warm(t, l, "idem")
		const keys, plain = 4, 4
		body := func(k int) []log.Record {
			return []log.Record{
				{Key: fmt.Appendf(nil, "k%d", k), Value: fmt.Appendf(nil, "idem-%d-a", k), Partition: i32(0)},
				{Key: fmt.Appendf(nil, "k%d", k), Value: fmt.Appendf(nil, "idem-%d-b", k), Partition: i32(1)},
			}
		}
		round := func(n, attempts int) [][][]log.Result {
			got := make([][][]log.Result, keys)
			var mu sync.Mutex
			var errs []error
			var wg sync.WaitGroup
			for k := range keys {
				got[k] = make([][]log.Result, attempts)
				for a := range attempts {
					wg.Go(func() {
						res, err := l.Append(ctx, "idem", body(k), log.AppendOptions{IdempotencyKey: fmt.Sprintf("key-%d", k)})
						mu.Lock()
						defer mu.Unlock()
						errs = append(errs, err)
						got[k][a] = res
					})
				}
			}
			for p := range plain {
				wg.Go(func() {
					_, err := l.Append(ctx, "idem", []log.Record{{Value: fmt.Appendf(nil, "plain-%d-%d", n, p), Partition: i32(int32(p % 2))}}, log.AppendOptions{})
					mu.Lock()
					defer mu.Unlock()
					errs = append(errs, err)
				})
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			return got
		}
		first := round(0, 2)
		for k := range keys {
			if fmt.Sprint(first[k][0]) != fmt.Sprint(first[k][1]) {
				t.Fatalf("key %d: concurrent attempts got %v and %v", k, first[k][0], first[k][1])
			}
		}
		again := round(1, 1)
		for k := range keys {
			if fmt.Sprint(again[k][0]) != fmt.Sprint(first[k][0]) {
				t.Fatalf("key %d: retry in a later batch got %v, first attempt %v", k, again[k][0], first[k][0])
			}
		}
		for p := range int32(2) {
			recs := readAll(t, l, "idem", p)
			seen := map[string]int64{}
			for _, r := range recs {
				if prev, ok := seen[string(r.Value)]; ok {
					t.Fatalf("partition %d: %q at offsets %d and %d", p, r.Value, prev, r.Offset)
				}
				seen[string(r.Value)] = r.Offset
			}
			for k := range keys {
				want := body(k)[p]
				off, ok := seen[string(want.Value)]
				if !ok || off != first[k][0][p].Offset {
					t.Fatalf("partition %d: %q at %d (present %v), acknowledged at %d", p, want.Value, off, ok, first[k][0][p].Offset)
				}
			}
			if len(recs) != keys+plain {
				t.Fatalf("partition %d: %d records reach a reader, want %d (each once)", p, len(recs), keys+plain)
			}
		}
	})
}

// TestGroupCommitCallerLeaves: a caller whose context ends leaves the batch without
// harming it. One that ends before the batch is written is left out of it (its record
// is not appended); one that ends while the batch's PUT is in flight gets its context's
// error at once, and the batch still commits every member, itself included (like an
// append whose response was lost).
func TestGroupCommitCallerLeaves(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		v := []byte("member")
		entered := make(chan struct{}, 4)
		release := make(chan struct{})
		var gate atomic.Bool
		l, _, _ := groupLog(t, s, 10*time.Second, 2*recSize(v), func(context.Context) error {
			if gate.Load() {
				entered <- struct{}{}
				<-release
			}
			return nil
		})
		mustTopic(t, l, "leave", 1)
		warm(t, l, "leave")

		// Ended before the batch is written: out of it.
		gone, cancel := context.WithCancel(ctx)
		cancel()
		var wg sync.WaitGroup
		var goneErr error
		wg.Go(func() {
			_, goneErr = l.Append(gone, "leave", []log.Record{{Value: []byte("goner!")}}, log.AppendOptions{})
		})
		wg.Wait()
		if !errors.Is(goneErr, context.Canceled) {
			t.Fatalf("caller with an ended context = %v, want context.Canceled", goneErr)
		}
		// The leaver still counts towards the budget: one more member closes the batch.
		r1, e1 := l.Append(ctx, "leave", []log.Record{{Value: v}}, log.AppendOptions{})
		if e1 != nil || r1[0].Offset != 0 {
			t.Fatalf("batch with a leaver = %v, %v; want offset 0", r1, e1)
		}

		// Ended while the PUT is in flight: answered at once, committed anyway.
		gate.Store(true)
		leaving, cancel := context.WithCancel(ctx)
		left := make(chan error, 1)
		var stayErr error
		var stay []log.Result
		wg.Go(func() {
			_, err := l.Append(leaving, "leave", []log.Record{{Value: []byte("lefter")}}, log.AppendOptions{})
			left <- err
		})
		wg.Go(func() {
			stay, stayErr = l.Append(ctx, "leave", []log.Record{{Value: []byte("stayer")}}, log.AppendOptions{})
		})
		<-entered
		cancel()
		// The leaver returns while the PUT still blocks (a liveness bound, not a speed one).
		var leftErr error
		select {
		case leftErr = <-left:
		case <-time.After(10 * time.Second):
			t.Fatal("a caller whose context ended still waits for its batch")
		}
		close(release)
		wg.Wait()
		if !errors.Is(leftErr, context.Canceled) || stayErr != nil {
			t.Fatalf("leaver = %v, stayer = %v; want context.Canceled and success", leftErr, stayErr)
		}
		recs := readAll(t, l, "leave", 0)
		checkDense(t, recs)
		var values []string
		for _, r := range recs {
			values = append(values, string(r.Value))
		}
		if len(recs) != 3 || string(recs[stay[0].Offset].Value) != "stayer" {
			t.Fatalf("log = %q; want member, then lefter and stayer (gone never)", values)
		}
		for _, v := range values {
			if v == "goner!" {
				t.Fatalf("log = %q: the record of a caller that left before its batch was written", values)
			}
		}
	})
}

// TestGroupCommitProperties (rapid, embedded backend): any mix of concurrent requests —
// several records over several partitions, some idempotent, some invalid — through a
// group-committing Log. Invalid ones fail with ErrInvalid and append nothing; every
// other one is acknowledged; each partition's offsets are dense; each request's records
// of one partition are contiguous and in request order (its block is never interleaved
// with another's); every acknowledged record reads back at its offset.
func TestGroupCommitProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		ctx := context.Background()
		s := backendtest.Local(ctx, t)
		window := rapid.SampledFrom([]time.Duration{time.Millisecond, 5 * time.Millisecond}).Draw(rt, "window")
		budget := rapid.SampledFrom([]int{0, 200}).Draw(rt, "budget")
		l, _, _ := groupLog(t, s, window, budget, nil)
		const partitions = 3
		mustTopic(t, l, "prop", partitions)
		warm(t, l, "prop")
		type request struct {
			recs []log.Record
			opt  log.AppendOptions
			bad  bool
		}
		reqs := make([]request, rapid.IntRange(1, 12).Draw(rt, "requests"))
		for i := range reqs {
			r := &reqs[i]
			r.bad = rapid.IntRange(0, 5).Draw(rt, "bad") == 0
			n := rapid.IntRange(1, 4).Draw(rt, "records")
			for j := range n {
				p := int32(rapid.IntRange(0, partitions-1).Draw(rt, "partition"))
				if r.bad && j == n-1 {
					p = partitions // out of range: the whole request is invalid
				}
				r.recs = append(r.recs, log.Record{Value: fmt.Appendf(nil, "req-%d-rec-%d", i, j), Partition: i32(p)})
			}
			if rapid.Bool().Draw(rt, "idempotent") {
				r.opt.IdempotencyKey = fmt.Sprintf("key-%d", i)
			}
		}
		results := make([][]log.Result, len(reqs))
		errs := make([]error, len(reqs))
		var wg sync.WaitGroup
		for i := range reqs {
			wg.Go(func() { results[i], errs[i] = l.Append(ctx, "prop", reqs[i].recs, reqs[i].opt) })
		}
		wg.Wait()
		total := map[int32]int{}
		for i, r := range reqs {
			if r.bad {
				if !errors.Is(errs[i], log.ErrInvalid) {
					rt.Fatalf("invalid request %d = %v, want ErrInvalid", i, errs[i])
				}
				continue
			}
			if errs[i] != nil {
				rt.Fatalf("request %d: %v", i, errs[i])
			}
			last := map[int32]int64{}
			for j, res := range results[i] {
				p := *r.recs[j].Partition
				if res.Partition != p {
					rt.Fatalf("request %d record %d placed on %d, asked %d", i, j, res.Partition, p)
				}
				if prev, ok := last[p]; ok && res.Offset != prev+1 {
					rt.Fatalf("request %d: records on partition %d at %d then %d, want contiguous", i, p, prev, res.Offset)
				}
				last[p] = res.Offset
				total[p]++
			}
		}
		logs := make([][]segment.Record, partitions)
		for p := range int32(partitions) {
			logs[p] = readAll(t, l, "prop", p)
			checkDense(t, logs[p])
			if len(logs[p]) != total[p] {
				rt.Fatalf("partition %d holds %d records, %d acknowledged", p, len(logs[p]), total[p])
			}
		}
		for i, r := range reqs {
			for j, res := range results[i] {
				if got := logs[res.Partition][res.Offset].Value; !bytes.Equal(got, r.recs[j].Value) {
					rt.Fatalf("%d/%d holds %q, acknowledged %q", res.Partition, res.Offset, got, r.recs[j].Value)
				}
			}
		}
	})
}

// TestLinearizableWithGroupCommit is the linearizability check of
// TestLinearizableWithCrashedAppenders (same model, clients and crash steps) with the
// appends going through four shared group-committing Logs (5 ms window), one per crash
// mode, so concurrent appends share batches and a crash fails every member of one:
// seqHistoriesFor histories per backend, 0 violations.
func TestLinearizableWithGroupCommit(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		objs := &countingObjects{ObjectStore: s.Objects}
		var logs [4]*log.Log
		for mode := range logs {
			l, err := log.New(log.Config{Objects: objs, Meta: crashingMeta{s.Meta, mode},
				GapWait: 100 * time.Millisecond, GroupCommitWindow: 5 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			logs[mode] = l
		}
		reader, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta, GapWait: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		backendtest.Materialise(t, s, reader)
		var clock atomic.Int64
		tick := func() int64 { return clock.Add(1) }
		var appends, crashes atomic.Int64
		seqHistories := seqHistoriesFor(t, s)
		for h := range seqHistories {
			topic := fmt.Sprintf("glin-%d", h)
			mustTopic(t, reader, topic, 1)
			rng := rand.New(rand.NewPCG(uint64(h), 11))
			var mu sync.Mutex
			var ops []porcupine.Operation
			var wg sync.WaitGroup
			for c := range seqClients {
				seed := rng.Uint64()
				wg.Go(func() {
					r := rand.New(rand.NewPCG(seed, uint64(c)))
					for i := range seqOpsPerCli {
						in, out, call, ret, ok := groupSeqOp(ctx, t, logs, reader, topic, r, fmt.Sprintf("c%d-%d", c, i), tick)
						if !ok {
							continue
						}
						if in.kind == seqAppend {
							appends.Add(1)
						}
						if out.unknown {
							crashes.Add(1)
						}
						mu.Lock()
						ops = append(ops, porcupine.Operation{ClientId: c, Input: in, Output: out, Call: call, Return: ret})
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			// A crashed append may take effect any time after its call.
			end := tick()
			for i := range ops {
				if ops[i].Output.(seqOutput).unknown {
					ops[i].Return = end
				}
			}
			if res, _ := porcupine.CheckOperationsVerbose(seqModel.ToModel(), ops, 10*time.Second); res != porcupine.Ok {
				t.Fatalf("history %d is not linearizable (%v): %+v", h, res, describe(ops))
			}
		}
		t.Logf("%d histories of %d calls, %d appends (%d crashed) in %d segment objects: 0 violations",
			seqHistories, seqClients*seqOpsPerCli, appends.Load(), crashes.Load(), objs.puts.Load())
		if objs.puts.Load() >= appends.Load() {
			t.Fatal("no two appends shared a batch: the histories did not exercise group commit")
		}
	})
}

// groupSeqOp runs one random operation of a history: an append through logs[mode] (mode
// 0 crashes nothing), a poll, or a high-watermark read. A failed read tells nothing and
// is left out (ok false); an append that failed although nothing was injected (the
// emulator under load) is as ambiguous as a crash.
func groupSeqOp(ctx context.Context, t *testing.T, logs [4]*log.Log, reader *log.Log, topic string, r *rand.Rand, value string,
	tick func() int64) (in seqInput, out seqOutput, call, ret int64, ok bool) {
	switch k := r.IntN(10); {
	case k < 5:
		in = seqInput{kind: seqAppend, value: value}
		mode := 0
		if r.IntN(4) == 0 {
			mode = 1 + r.IntN(3)
		}
		call = tick()
		res, err := logs[mode].Append(ctx, topic, []log.Record{{Value: []byte(value)}}, log.AppendOptions{})
		ret = tick()
		switch {
		case err != nil:
			if mode == 0 {
				t.Logf("append %s failed without an injected crash: %v", value, err)
			}
			return in, seqOutput{unknown: true}, call, ret, true
		case mode == 1:
			t.Errorf("an append whose commit was refused succeeded")
		}
		return in, seqOutput{offset: res[0].Offset}, call, ret, true
	case k < 8:
		_, hw, err := reader.Bounds(ctx, topic, 0)
		if err != nil {
			t.Logf("high watermark read failed: %v", err)
			return in, out, 0, 0, false
		}
		in = seqInput{kind: seqPoll, offset: r.Int64N(hw + 1)}
		call = tick()
		res, err := reader.Poll(ctx, topic, 0, in.offset, log.PollOptions{})
		ret = tick()
		if err != nil {
			t.Logf("poll failed: %v", err)
			return in, out, 0, 0, false
		}
		out = seqOutput{hw: res.HighWatermark}
		for _, rec := range res.Records {
			out.values = append(out.values, string(rec.Value))
		}
		return in, out, call, ret, true
	default:
		call = tick()
		_, hw, err := reader.Bounds(ctx, topic, 0)
		ret = tick()
		if err != nil {
			t.Logf("high watermark read failed: %v", err)
			return in, out, 0, 0, false
		}
		return seqInput{kind: seqHW}, seqOutput{hw: hw}, call, ret, true
	}
}

// TestGroupCommitConfig: a window the commit window could not cover, or a budget above
// the maximum, is refused when the Log is built.
func TestGroupCommitConfig(t *testing.T) {
	s := backendtest.Local(context.Background(), t)
	cases := []struct {
		name   string
		cfg    log.Config
		wantOK bool
	}{
		{"off", log.Config{}, true},
		{"5ms", log.Config{GroupCommitWindow: 5 * time.Millisecond}, true},
		{"window at the commit window", log.Config{GroupCommitWindow: log.DefaultCommitWindow}, false},
		{"window above a short commit window", log.Config{GroupCommitWindow: time.Second, CommitWindow: 500 * time.Millisecond}, false},
		{"budget at the maximum", log.Config{GroupCommitWindow: time.Millisecond, GroupCommitBytes: log.MaxGroupCommitBytes}, true},
		{"budget above the maximum", log.Config{GroupCommitWindow: time.Millisecond, GroupCommitBytes: log.MaxGroupCommitBytes + 1}, false},
	}
	for _, tc := range cases {
		tc.cfg.Objects, tc.cfg.Meta = s.Objects, s.Meta
		_, err := log.New(tc.cfg)
		if (err == nil) != tc.wantOK {
			t.Errorf("%s: New = %v, want ok %v", tc.name, err, tc.wantOK)
		}
	}
}
