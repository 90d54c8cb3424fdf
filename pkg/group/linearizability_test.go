package group_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/store"
)

// The linearizability check: concurrent clients run random acquire / renew / release /
// commit / read calls through the Coordinator on ONE (group, topic, partition); the
// history must be explained by a sequential model of the lease row plus the commit row.

const (
	linClients   = 8
	linOpsPerCli = 3 // 24 calls per history: 200 histories take ~40 s on moto
	linHistories = 200
	linTick      = 10 * time.Millisecond // the shared clock advances this much per call
	linHW        = 12
)

type opKind int

const (
	opAcquire opKind = iota
	opRenew
	opRelease
	opCommit
	opRead
)

func (k opKind) String() string {
	return [...]string{"acquire", "renew", "release", "commit", "read"}[k]
}

// linInput is one call: its kind, member, generation, offset and the fixed now and
// expiry (ms since t0) the coordinator used.
type linInput struct {
	kind   opKind
	member string
	gen    int64
	offset int64
	now    int64
	exp    int64
}

// outcome of a call.
type outcome int

const (
	outOK outcome = iota
	outHeld
	outFenced
	outStale
	outBeyond
)

func (o outcome) String() string {
	return [...]string{"ok", "held", "fenced", "stale", "beyond"}[o]
}

type linOutput struct {
	out    outcome
	gen    int64  // acquire: the generation taken
	owner  string // acquire refused: the holder
	offset int64  // read: the committed offset, -1 for none
}

// linState is the lease row and the commit row of the partition.
type linState struct {
	owner     string
	gen       int64
	exp       int64
	committed int64 // -1: none
}

func linStep(state, input, output any) (bool, any) {
	s := state.(linState)
	in := input.(linInput)
	out := output.(linOutput)
	owns := s.owner == in.member && s.gen == in.gen
	switch in.kind {
	case opAcquire:
		if s.owner != "" && in.now < s.exp && s.owner != in.member {
			return out.out == outHeld && out.owner == s.owner, s
		}
		s.gen++
		s.owner, s.exp = in.member, in.exp
		return out.out == outOK && out.gen == s.gen, s
	case opRenew:
		if !owns {
			return out.out == outFenced, s
		}
		s.exp = in.exp
		return out.out == outOK, s
	case opRelease:
		if !owns {
			return out.out == outFenced, s
		}
		s.owner = ""
		return out.out == outOK, s
	case opCommit:
		if in.offset > linHW {
			return out.out == outBeyond, s
		}
		stale := in.offset < s.committed
		if !owns {
			// Both refusals apply when a fenced member commits a lower offset; the
			// store may report either. Nothing changes.
			return out.out == outFenced || (stale && out.out == outStale), s
		}
		if stale {
			return out.out == outStale, s
		}
		s.committed = in.offset
		return out.out == outOK, s
	default:
		return out.out == outOK && out.offset == s.committed, s
	}
}

var linModel = porcupine.Model{
	Init: func() any { return linState{committed: -1} },
	Step: linStep,
	DescribeOperation: func(input, output any) string {
		in, out := input.(linInput), output.(linOutput)
		return fmt.Sprintf("%s(%s g%d o%d now%d exp%d) -> %s g%d %s o%d",
			in.kind, in.member, in.gen, in.offset, in.now, in.exp, out.out, out.gen, out.owner, out.offset)
	},
	DescribeState: func(state any) string {
		s := state.(linState)
		return fmt.Sprintf("owner=%q gen=%d exp=%d committed=%d", s.owner, s.gen, s.exp, s.committed)
	},
}

func TestLinearizableLeaseAndCommit(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st store.MetaStore) {
		// Each history runs on its own partition of one group, so histories are
		// independent and the clients' coordinators learn the group exists once.
		off := newOffsets()
		off.addTopic(topic, linHistories)
		for p := range int32(linHistories) {
			off.appendN(topic, p, linHW)
		}
		g := uniqueGroup("lin")
		clients := make([]*linClient, linClients)
		for i := range clients {
			clients[i] = &linClient{}
			clients[i].c = group.New(st, off, func() time.Time { return clients[i].now })
		}
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 1))
		began := time.Now()
		ops := 0
		seen := map[opKind]map[outcome]int{}
		for k := opAcquire; k <= opRead; k++ {
			seen[k] = map[outcome]int{}
		}
		for h := range linHistories {
			history := runHistory(t, clients, g, int32(h), rng.Uint64())
			if t.Failed() {
				return
			}
			ops += len(history)
			for _, op := range history {
				seen[op.Input.(linInput).kind][op.Output.(linOutput).out]++
			}
			res := porcupine.CheckOperationsTimeout(linModel, history, 10*time.Second)
			if res != porcupine.Ok {
				for _, op := range history {
					t.Logf("client %d [%d, %d] %s", op.ClientId, op.Call, op.Return, linModel.DescribeOperation(op.Input, op.Output))
				}
				t.Fatalf("history %d (seed %d) is %s", h, seed, res)
			}
		}
		t.Logf("%d histories, %d operations, 0 violations in %s; outcomes %v", linHistories, ops, time.Since(began).Round(time.Millisecond), seen)
		// The histories must exercise every path, or passing proves little.
		for _, want := range []struct {
			k opKind
			o outcome
		}{{opAcquire, outOK}, {opAcquire, outHeld}, {opRenew, outOK}, {opRenew, outFenced}, {opRelease, outOK},
			{opRelease, outFenced}, {opCommit, outOK}, {opCommit, outFenced}, {opCommit, outStale}, {opCommit, outBeyond}} {
			if seen[want.k][want.o] == 0 {
				t.Errorf("no %s ended %s in %d histories", want.k, want.o, linHistories)
			}
		}
	})
}

// linClient is one client's coordinator; its clock is frozen at the current call's now,
// so the model knows exactly which instant the store compared against.
type linClient struct {
	c   *group.Coordinator
	now time.Time
}

// runHistory runs one goroutine per client, each making linOpsPerCli random calls on
// partition p of group g, and returns the timed history.
func runHistory(t *testing.T, clients []*linClient, g string, p int32, seed uint64) []porcupine.Operation {
	t.Helper()
	ctx := context.Background()
	var (
		tick    atomic.Int64
		mu      sync.Mutex
		history []porcupine.Operation
		wg      sync.WaitGroup
		maxGen  atomic.Int64
	)
	start := time.Now()
	stamp := func() int64 { return int64(time.Since(start)) }
	for cli, lc := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(cli)))
			member := fmt.Sprintf("m%d", cli%6) // two pairs share a name: incarnations
			c := lc.c
			var gen int64
			holding := false
			for range linOpsPerCli {
				time.Sleep(time.Duration(rng.IntN(1500)) * time.Microsecond)
				nowMS := tick.Add(1) * linTick.Milliseconds()
				now := t0.Add(time.Duration(nowMS) * time.Millisecond)
				ttl := []time.Duration{100 * time.Millisecond, 300 * time.Millisecond}[rng.IntN(2)]
				lc.now = now
				in := linInput{member: member, now: nowMS, exp: nowMS + ttl.Milliseconds(), gen: gen}
				if gen == 0 || rng.IntN(5) == 0 {
					in.gen = 1 + rng.Int64N(maxGen.Load()+1)
				}
				in.offset = rng.Int64N(linHW + 2)
				// A client that believes it holds the lease mostly works it; one that does
				// not mostly tries to take it. Both sometimes do the other.
				mix := []opKind{opAcquire, opAcquire, opAcquire, opRenew, opRelease, opCommit, opRead, opRead, opRead, opRead}
				if holding {
					mix = []opKind{opAcquire, opRenew, opRenew, opRelease, opCommit, opCommit, opCommit, opCommit, opCommit, opRead}
				}
				in.kind = mix[rng.IntN(len(mix))]
				var out linOutput
				var err error
				call := stamp()
				switch in.kind {
				case opAcquire:
					var l group.Lease
					l, err = c.Acquire(ctx, g, topic, p, member, ttl)
					out.gen = l.Generation
				case opRenew:
					_, err = c.Renew(ctx, g, topic, p, member, in.gen, ttl)
				case opRelease:
					err = c.Release(ctx, g, topic, p, member, in.gen)
				case opCommit:
					err = c.Commit(ctx, g, topic, p, member, in.gen, in.offset)
				case opRead:
					var o *int64
					o, err = c.Committed(ctx, g, topic, p)
					out.offset = -1
					if o != nil {
						out.offset = *o
					}
				}
				ret := stamp()
				switch {
				case err == nil:
					out.out = outOK
				case errors.Is(err, group.ErrLeaseHeld):
					out.out = outHeld
					out.owner, _, _ = group.LeaseHolder(err)
				case errors.Is(err, group.ErrFenced):
					out.out = outFenced
				case errors.Is(err, group.ErrStaleCommit):
					out.out = outStale
				case errors.Is(err, group.ErrBeyondHighWatermark):
					out.out = outBeyond
				default:
					t.Errorf("client %d %s: unexpected error %v", cli, in.kind, err)
					return
				}
				switch {
				case out.out == outFenced, in.kind == opRelease && err == nil:
					holding = false
				case in.kind == opAcquire && err == nil:
					holding = true
				}
				if in.kind == opAcquire && err == nil {
					gen = out.gen
					for cur := maxGen.Load(); out.gen > cur && !maxGen.CompareAndSwap(cur, out.gen); cur = maxGen.Load() {
					}
				}
				mu.Lock()
				history = append(history, porcupine.Operation{ClientId: cli, Input: in, Output: out, Call: call, Return: ret})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return history
}

// TestLinearizabilityModelRejects makes sure the model can fail: a history where a
// commit by a fenced member succeeds must be rejected.
func TestLinearizabilityModelRejects(t *testing.T) {
	op := func(cli int, call, ret int64, in linInput, out linOutput) porcupine.Operation {
		return porcupine.Operation{ClientId: cli, Input: in, Output: out, Call: call, Return: ret}
	}
	good := []porcupine.Operation{
		op(0, 0, 1, linInput{kind: opAcquire, member: "a", now: 0, exp: 100}, linOutput{out: outOK, gen: 1}),
		op(1, 2, 3, linInput{kind: opAcquire, member: "b", now: 200, exp: 300}, linOutput{out: outOK, gen: 2}),
		op(0, 4, 5, linInput{kind: opCommit, member: "a", gen: 1, offset: 5}, linOutput{out: outFenced}),
		op(0, 6, 7, linInput{kind: opRead}, linOutput{out: outOK, offset: -1}),
	}
	if !porcupine.CheckOperations(linModel, good) {
		t.Fatal("a legal history was rejected")
	}
	bad := append([]porcupine.Operation(nil), good...)
	bad[2] = op(0, 4, 5, linInput{kind: opCommit, member: "a", gen: 1, offset: 5}, linOutput{out: outOK})
	bad[3] = op(0, 6, 7, linInput{kind: opRead}, linOutput{out: outOK, offset: 5})
	if porcupine.CheckOperations(linModel, bad) {
		t.Fatal("a fenced commit that landed was accepted")
	}
	held := append([]porcupine.Operation(nil), good[:1]...)
	held = append(held, op(1, 2, 3, linInput{kind: opAcquire, member: "b", now: 50, exp: 150}, linOutput{out: outOK, gen: 2}))
	if porcupine.CheckOperations(linModel, held) {
		t.Fatal("a take-over of a live lease was accepted")
	}
}
