package log_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
)

// The linearizability check of the log: concurrent clients append single records to ONE
// partition, some through appenders that crash at a random step (before or after the
// commit, or between the commit and the index write), while others poll and read the
// high watermark. The history must be explained by a sequential log: a poll returns a
// prefix of the log from its offset with the high watermark of one instant, and an
// append whose appender crashed may have happened (once, at one instant) or not.

const (
	seqClients   = 5
	seqOpsPerCli = 3
)

// EnvLinHistories overrides the number of histories the linearizability checks run per
// backend (default 200 embedded, 25 on the emulator).
const EnvLinHistories = "STRATA_LIN_HISTORIES"

// seqHistoriesFor is how many histories a linearizability check runs on s: 200 on the
// embedded backend, 25 on the emulator, whose every request is serialised and whose
// transactions copy whole tables (each history adds a topic), so that its histories
// took 5–6 minutes a test on a loaded 2-core machine; STRATA_LIN_HISTORIES runs more.
func seqHistoriesFor(t *testing.T, s backendtest.Stores) int {
	if v := os.Getenv(EnvLinHistories); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("%s=%q: want a positive count", EnvLinHistories, v)
		}
		return n
	}
	if s.Name == "local" {
		return 200
	}
	// The emulator serialises every request: its histories check the DynamoDB
	// conditions, the embedded backend's many more check the interleavings.
	return 25
}

type seqKind int

const (
	seqAppend seqKind = iota
	seqPoll
	seqHW
	seqNone // a read that failed: no information, left out of the history
)

type seqInput struct {
	kind   seqKind
	value  string // append
	offset int64  // poll
}

type seqOutput struct {
	unknown bool     // append: the appender crashed; it may or may not have happened
	offset  int64    // append: the acknowledged offset
	values  []string // poll: the records returned
	hw      int64    // poll, hw: the high watermark
}

// seqModel's state is the log's values joined by "\x00" (comparable, as porcupine needs).
var seqModel = porcupine.NondeterministicModel{
	Init: func() []any { return []any{""} },
	Step: func(state, input, output any) []any {
		s := state.(string)
		var vals []string
		if s != "" {
			vals = strings.Split(s, "\x00")
		}
		in, out := input.(seqInput), output.(seqOutput)
		switch in.kind {
		case seqAppend:
			next := strings.Join(append(vals[:len(vals):len(vals)], in.value), "\x00")
			switch {
			case out.unknown:
				return []any{s, next}
			case out.offset == int64(len(vals)):
				return []any{next}
			}
			return nil
		case seqPoll:
			if out.hw != int64(len(vals)) || in.offset+int64(len(out.values)) > out.hw {
				return nil
			}
			for i, v := range out.values {
				if vals[in.offset+int64(i)] != v {
					return nil
				}
			}
			return []any{s}
		case seqHW:
			if out.hw != int64(len(vals)) {
				return nil
			}
			return []any{s}
		}
		return nil
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(seqInput), output.(seqOutput)
		switch in.kind {
		case seqAppend:
			if out.unknown {
				return fmt.Sprintf("append(%s) -> crashed", in.value)
			}
			return fmt.Sprintf("append(%s) -> %d", in.value, out.offset)
		case seqPoll:
			return fmt.Sprintf("poll(%d) -> %v hw %d", in.offset, out.values, out.hw)
		}
		return fmt.Sprintf("hw -> %d", out.hw)
	},
}

// crashingMeta crashes an appender at one step, chosen by mode: 1 the commit is
// refused, 2 the commit is applied and its answer lost, 3 the index write fails.
type crashingMeta struct {
	store.MetaStore
	mode int
}

func (c crashingMeta) Sequence(ctx context.Context, sc store.SeqCommit) (store.SeqCommit, error) {
	switch c.mode {
	case 1:
		return store.SeqCommit{}, errCrash
	case 2:
		if _, err := c.MetaStore.Sequence(ctx, sc); err != nil {
			return store.SeqCommit{}, err
		}
		return store.SeqCommit{}, errCrash
	}
	return c.MetaStore.Sequence(ctx, sc)
}

func (c crashingMeta) SequenceBatch(ctx context.Context, cs []store.SeqCommit) ([]store.SeqCommit, []error) {
	fail := func() ([]store.SeqCommit, []error) {
		errs := make([]error, len(cs))
		for i := range errs {
			errs[i] = errCrash
		}
		return make([]store.SeqCommit, len(cs)), errs
	}
	switch c.mode {
	case 1:
		return fail()
	case 2:
		if out, errs := c.MetaStore.SequenceBatch(ctx, cs); errors.Join(errs...) != nil {
			return out, errs
		}
		return fail()
	}
	return c.MetaStore.SequenceBatch(ctx, cs)
}

func (c crashingMeta) PutIndexEntry(ctx context.Context, e store.IndexEntry) error {
	if c.mode == 3 {
		return errCrash
	}
	return c.MetaStore.PutIndexEntry(ctx, e)
}

// TestLinearizableWithCrashedAppenders checks 200 histories on the embedded backend and
// 25 on the emulator (seqHistoriesFor).
func TestLinearizableWithCrashedAppenders(t *testing.T) {
	linearizable(t, false)
}

// TestLinearizableProducerRetries: the same histories with every append a producer
// request (fenced idempotency), a crashed first attempt retried by its client on another
// host (attempt 1): the retry finds the attempt or appends itself, so every append's
// outcome is known, each record is in the log once, and the histories stay linearizable.
func TestLinearizableProducerRetries(t *testing.T) {
	linearizable(t, true)
}

func linearizable(t *testing.T, producer bool) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		reader, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta, GapWait: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		backendtest.Materialise(t, s, reader)
		var clock atomic.Int64
		tick := func() int64 { return clock.Add(1) }
		crashes, undecided := 0, 0
		var retried atomic.Int64 // producer first attempts that crashed and were retried
		seqHistories := seqHistoriesFor(t, s)
		if producer && s.Name != "local" && os.Getenv(EnvLinHistories) == "" {
			seqHistories /= 2 // the emulator's share of CI time; the crashed variant covers the rest
		}
		for h := range seqHistories {
			topic := fmt.Sprintf("lin-%d", h)
			mustTopic(t, reader, topic, 1)
			rng := rand.New(rand.NewPCG(uint64(h), 7))
			var mu sync.Mutex
			var ops []porcupine.Operation
			var wg sync.WaitGroup
			for c := range seqClients {
				seed := rng.Uint64()
				wg.Go(func() {
					r := rand.New(rand.NewPCG(seed, uint64(c)))
					for i := range seqOpsPerCli {
						in, out, call, ret := runSeqOp(ctx, t, s, reader, topic, r, fmt.Sprintf("c%d-%d", c, i), tick, producer, &retried)
						if in.kind == seqNone {
							continue
						}
						mu.Lock()
						ops = append(ops, porcupine.Operation{ClientId: c, Input: in, Output: out, Call: call, Return: ret})
						if out.unknown {
							crashes++
						}
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
			// The checker's time bound only matters on a starved machine: a history it
			// could not decide in time is counted and reported, a violation fails.
			switch res, _ := porcupine.CheckOperationsVerbose(seqModel.ToModel(), ops, time.Minute); res {
			case porcupine.Illegal:
				t.Fatalf("history %d is not linearizable: %+v", h, describe(ops))
			case porcupine.Unknown:
				undecided++
			}
		}
		t.Logf("%d histories of %d calls, %d crashed appends of unknown outcome, %d crashed and retried: 0 violations, %d undecided within the checker's minute",
			seqHistories, seqClients*seqOpsPerCli, crashes, retried.Load(), undecided)
	})
}

func runSeqOp(ctx context.Context, t *testing.T, s backendtest.Stores, reader *log.Log, topic string, r *rand.Rand, value string,
	tick func() int64, producer bool, retried *atomic.Int64) (seqInput, seqOutput, int64, int64) {
	switch k := r.IntN(10); {
	case k < 5:
		in := seqInput{kind: seqAppend, value: value}
		mode := 0
		if r.IntN(4) == 0 {
			mode = 1 + r.IntN(3)
		}
		l, err := log.New(log.Config{Objects: s.Objects, Meta: crashingMeta{s.Meta, mode}, GapWait: 100 * time.Millisecond})
		if err != nil {
			t.Error(err)
		}
		call := tick()
		var opt log.AppendOptions
		if producer {
			opt = firstSend(topic + "/" + value)
		}
		res, err := l.Append(ctx, topic, []log.Record{{Value: []byte(value)}}, opt)
		if producer && err != nil {
			// The client retries on another host; the retry decides.
			retried.Add(1)
			retry, rerr := log.New(log.Config{Objects: s.Objects, Meta: s.Meta, GapWait: 100 * time.Millisecond})
			if rerr != nil {
				t.Error(rerr)
			}
			if res, err = retry.Append(ctx, topic, []log.Record{{Value: []byte(value)}}, retryOf(topic+"/"+value, 1)); err != nil {
				t.Errorf("the retry of crashed append %s: %v", value, err)
			}
			mode = 0
		}
		ret := tick()
		switch {
		case err != nil && mode == 0:
			// A failure nobody injected (the emulator under load): as ambiguous as a crash.
			t.Logf("append %s failed without an injected crash: %v", value, err)
			return in, seqOutput{unknown: true}, call, ret
		case err != nil:
			return in, seqOutput{unknown: true}, call, ret
		case mode == 1:
			t.Errorf("an append whose commit was refused succeeded")
		}
		return in, seqOutput{offset: res[0].Offset}, call, ret
	case k < 8:
		_, hw, err := reader.Bounds(ctx, topic, 0)
		if err != nil {
			t.Logf("high watermark read failed: %v", err)
			return seqInput{kind: seqNone}, seqOutput{}, 0, 0
		}
		in := seqInput{kind: seqPoll, offset: r.Int64N(hw + 1)}
		call := tick()
		res, err := reader.Poll(ctx, topic, 0, in.offset, log.PollOptions{})
		ret := tick()
		out := seqOutput{hw: res.HighWatermark}
		for _, rec := range res.Records {
			out.values = append(out.values, string(rec.Value))
		}
		if err != nil {
			// A failed read tells nothing; it is left out of the history (noRead).
			t.Logf("poll failed: %v", err)
			return seqInput{kind: seqNone}, out, call, ret
		}
		return in, out, call, ret
	default:
		call := tick()
		_, hw, err := reader.Bounds(ctx, topic, 0)
		ret := tick()
		if err != nil {
			t.Logf("high watermark read failed: %v", err)
			return seqInput{kind: seqNone}, seqOutput{}, call, ret
		}
		return seqInput{kind: seqHW}, seqOutput{hw: hw}, call, ret
	}
}

func describe(ops []porcupine.Operation) []string {
	out := make([]string, len(ops))
	for i, op := range ops {
		out[i] = fmt.Sprintf("[%d,%d] %s", op.Call, op.Return, seqModel.DescribeOperation(op.Input, op.Output))
	}
	return out
}

// TestLinearizabilityModelRejects: the model is not vacuous — it rejects a reused
// offset, a poll that skips a record, and a high watermark that moves back.
func TestLinearizabilityModelRejects(t *testing.T) {
	m := seqModel.ToModel()
	op := func(call, ret int64, in seqInput, out seqOutput) porcupine.Operation {
		return porcupine.Operation{Input: in, Output: out, Call: call, Return: ret}
	}
	cases := map[string][]porcupine.Operation{
		"offset reused": {
			op(1, 2, seqInput{kind: seqAppend, value: "a"}, seqOutput{offset: 0}),
			op(3, 4, seqInput{kind: seqAppend, value: "b"}, seqOutput{offset: 0}),
		},
		"record skipped": {
			op(1, 2, seqInput{kind: seqAppend, value: "a"}, seqOutput{offset: 0}),
			op(3, 4, seqInput{kind: seqAppend, value: "b"}, seqOutput{offset: 1}),
			op(5, 6, seqInput{kind: seqPoll, offset: 0}, seqOutput{values: []string{"b"}, hw: 2}),
		},
		"high watermark moved back": {
			op(1, 2, seqInput{kind: seqAppend, value: "a"}, seqOutput{offset: 0}),
			op(3, 4, seqInput{kind: seqHW}, seqOutput{hw: 1}),
			op(5, 6, seqInput{kind: seqHW}, seqOutput{hw: 0}),
		},
		"a crashed append seen twice": {
			op(1, 9, seqInput{kind: seqAppend, value: "a"}, seqOutput{unknown: true}),
			op(2, 3, seqInput{kind: seqPoll, offset: 0}, seqOutput{values: []string{"a"}, hw: 1}),
			op(4, 5, seqInput{kind: seqAppend, value: "b"}, seqOutput{offset: 1}),
			op(6, 7, seqInput{kind: seqPoll, offset: 0}, seqOutput{values: []string{"a", "b", "a"}, hw: 3}),
		},
	}
	for name, ops := range cases {
		if porcupine.CheckOperations(m, ops) {
			t.Errorf("%s: the model accepted a history it must reject", name)
		}
	}
	ok := []porcupine.Operation{
		op(1, 9, seqInput{kind: seqAppend, value: "a"}, seqOutput{unknown: true}),
		op(2, 3, seqInput{kind: seqAppend, value: "b"}, seqOutput{offset: 0}),
		op(4, 5, seqInput{kind: seqPoll, offset: 0}, seqOutput{values: []string{"b", "a"}, hw: 2}),
	}
	if !porcupine.CheckOperations(m, ok) {
		t.Error("the model rejected a crashed append that took effect after another")
	}
}
