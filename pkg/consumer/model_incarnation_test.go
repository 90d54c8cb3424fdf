package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// TestModelIncarnations (rapid, both backends) runs random sequences of create /
// append / consume / reset / delete / re-create / append / consume / zombie / reset
// (/ delete) over two incarnations of one topic name, through several hosts (a log.Log, group.Coordinator and group.Effects
// each, over the same stores). Two groups consume it: one applies each record as a
// fenced effect and dead-letters poison records, the other parks them. A zombie is a
// run of a deleted incarnation's lease, started after the name was created again while
// its member holds the new incarnation's lease. The checker: every record of the live
// incarnation below a group's committed position was handled under a fence of its own
// incarnation and its effect is there, or it was dead-lettered or parked (its own
// value, once); a zombie is fenced having handled, dead-lettered, parked and committed
// nothing, and the new lease is still its member's. Values name their incarnation and
// offset, so a record taken for another incarnation's is caught.
func TestModelIncarnations(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		ctx := context.Background()
		checks := 40
		if s.Name == "aws" {
			checks = 8 // the emulator copies whole tables in each transaction
		}
		if v, err := strconv.Atoi(strings.TrimSpace(os.Getenv("STRATA_MODEL_CHECKS"))); err == nil && v > 0 {
			checks = v
		}
		var skew atomic.Int64
		clock := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
		es := s.Effects(ctx, t)
		hosts := make([]*modelHost, 3)
		for i := range hosts {
			l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta, Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			hosts[i] = &modelHost{log: l, coord: group.New(s.Meta, l, nil), fx: group.NewEffects(es, l)}
		}
		passed, seq := 0, 0
		var zombies, second int // zombies run, checks of a second incarnation
		rapid.Check(t, func(rt *rapid.T) {
			if passed >= checks {
				return
			}
			seq++
			m := &incModel{rt: rt, ctx: ctx, hosts: hosts, skew: &skew, id: fmt.Sprintf("m%d%s", seq, s.Name[:1])}
			m.setup()
			// Incarnation 1, its deletion (a member holding a lease on it), incarnation 2
			// with runs of the deleted one's leases among its own, maybe deleted too.
			for range rapid.IntRange(1, 6).Draw(rt, "steps1") {
				m.step([]string{"append", "consume", "reset"})
			}
			m.maybeConsumeAll()
			m.delete()
			m.step([]string{"none", "append", "consume", "reset"}) // all refused or none
			m.create()
			for range rapid.IntRange(1, 8).Draw(rt, "steps2") {
				m.step([]string{"append", "zombie", "consume", "reset"})
			}
			m.maybeConsumeAll()
			if rapid.Bool().Draw(rt, "delete2") {
				m.delete()
			}
			if m.live != nil {
				for _, g := range m.groups {
					m.consume(g, 0)
				}
			}
			zombies += m.zombies
			if len(m.incs) == 2 {
				second++
			}
			passed++
		})
		t.Logf("%d sequences, %d with a second incarnation, %d zombie runs", passed, second, zombies)
		if s.Name == "local" && (zombies == 0 || second == 0) {
			t.Errorf("the model never ran a zombie or a second incarnation")
		}
	})
}

type modelHost struct {
	log   *log.Log
	coord *group.Coordinator
	fx    *group.Effects
}

// modelInc is one incarnation as the model knows it: its ID and each offset's value.
type modelInc struct {
	n      int
	id     string
	values []string
	bad    []bool
}

type modelGroup struct {
	name string
	park bool
}

// staleLease is a lease a member held on an incarnation when it was deleted.
type staleLease struct {
	lease group.Lease
	inc   *modelInc
}

type incModel struct {
	rt    *rapid.T
	ctx   context.Context
	hosts []*modelHost
	skew  *atomic.Int64
	id    string

	topic, dlq string
	groups     []modelGroup
	incs       []*modelInc
	live       *modelInc
	stale      []staleLease
	zombies    int
	// handled maps a group and value to the incarnations whose fences handled it.
	mu      sync.Mutex
	handled map[string][]string
}

func (m *incModel) host() *modelHost {
	return m.hosts[rapid.IntRange(0, len(m.hosts)-1).Draw(m.rt, "host")]
}

// everyHostSees moves the hosts' clocks past the topic cache, as time does.
func (m *incModel) everyHostSees() { m.skew.Add(int64(log.TopicCacheTTL + time.Second)) }

func (m *incModel) setup() {
	m.topic, m.dlq = m.id+"-orders", m.id+"-dlq"
	m.groups = []modelGroup{{name: m.id + "-fx"}, {name: m.id + "-pk", park: true}}
	m.handled = map[string][]string{}
	h := m.hosts[0]
	if _, err := h.log.CreateTopic(m.ctx, m.dlq, 1, 0); err != nil {
		m.rt.Fatal(err)
	}
	if _, err := h.coord.SetSettings(m.ctx, m.groups[0].name, group.Settings{ResetPolicy: "earliest", MaxAttempts: 1, DeadLetterTopic: m.dlq}); err != nil {
		m.rt.Fatal(err)
	}
	if _, err := h.coord.SetSettings(m.ctx, m.groups[1].name, group.Settings{ResetPolicy: "earliest", MaxAttempts: 1, OnFailure: group.OnFailurePark}); err != nil {
		m.rt.Fatal(err)
	}
	m.create()
}

func (m *incModel) step(actions []string) {
	switch rapid.SampledFrom(actions).Draw(m.rt, "action") {
	case "append":
		m.appendRecords()
	case "consume":
		if m.live != nil {
			m.consume(m.groups[rapid.IntRange(0, 1).Draw(m.rt, "group")], rapid.IntRange(0, len(m.hosts)-1).Draw(m.rt, "host"))
		}
	case "reset":
		m.reset()
	case "zombie":
		m.zombie()
	}
}

// chance draws true with about pct percent (rapid leans towards small draws: true).
func (m *incModel) chance(label string, pct int) bool {
	return rapid.IntRange(0, 99).Draw(m.rt, label) < pct
}

// maybeConsumeAll appends to the live incarnation and has each group consume it, each
// step with some chance, so that both incarnations usually have poison records at
// the same offsets dead-lettered and parked.
func (m *incModel) maybeConsumeAll() {
	if m.chance("append", 80) {
		m.appendRecords()
	}
	for _, g := range m.groups {
		if m.live != nil && m.chance("consume", 80) {
			m.consume(g, rapid.IntRange(0, len(m.hosts)-1).Draw(m.rt, "host"))
		}
	}
}

func (m *incModel) create() {
	if m.live != nil || len(m.incs) == 2 {
		return
	}
	h := m.host()
	tp, err := h.log.CreateTopic(m.ctx, m.topic, 1, 0)
	if err != nil {
		m.rt.Fatalf("create incarnation %d: %v", len(m.incs)+1, err)
	}
	m.everyHostSees()
	inc := &modelInc{n: len(m.incs) + 1, id: tp.ID()}
	m.incs = append(m.incs, inc)
	m.live = inc
}

func (m *incModel) appendRecords() {
	if m.live == nil {
		return
	}
	n := rapid.IntRange(1, 3).Draw(m.rt, "records")
	p := int32(0)
	var recs []log.Record
	base := int64(len(m.live.values))
	for i := range n {
		bad := rapid.IntRange(0, 3).Draw(m.rt, "poison") == 0
		key := "good"
		if bad {
			key = "bad"
		}
		v := fmt.Sprintf("%s-i%d-o%d", m.id, m.live.n, base+int64(i))
		recs = append(recs, log.Record{Key: []byte(key), Value: []byte(v), Partition: &p})
		m.live.values = append(m.live.values, v)
		m.live.bad = append(m.live.bad, bad)
	}
	res, err := m.host().log.Append(m.ctx, m.topic, recs, log.AppendOptions{})
	if err != nil {
		m.rt.Fatalf("append to incarnation %d: %v", m.live.n, err)
	}
	for i, r := range res {
		if r.Offset != base+int64(i) {
			m.rt.Fatalf("record %d of incarnation %d appended at %d", base+int64(i), m.live.n, r.Offset)
		}
	}
}

// handler handles a record for group g on host h: poison records fail; the effect
// group applies the others as fenced effects. It checks that the record is handled
// under a fence of the incarnation it belongs to.
func (m *incModel) handler(g modelGroup, h *modelHost) consumer.Handler {
	return func(ctx context.Context, r consumer.Record) error {
		v := string(r.Value)
		if string(r.Key) == "bad" {
			return errors.New("poison")
		}
		inc := m.incOf(v)
		if fenced := store.TopicID(r.Fence.Topic, r.Fence.Incarnation); inc == nil || fenced != inc.id {
			m.rt.Errorf("record %q handled under the fence of %q", v, fenced)
		}
		if !g.park {
			err := h.fx.Apply(ctx, r.Fence, r.Offset, v, r.Value)
			if errors.Is(err, group.ErrApplied) {
				err = nil
			}
			if err != nil {
				return err
			}
		}
		m.mu.Lock()
		m.handled[g.name+"/"+v] = append(m.handled[g.name+"/"+v], r.Fence.Incarnation)
		m.mu.Unlock()
		return nil
	}
}

// incOf is the incarnation a value was appended to.
func (m *incModel) incOf(v string) *modelInc {
	for _, inc := range m.incs {
		for _, w := range inc.values {
			if w == v {
				return inc
			}
		}
	}
	return nil
}

func (m *incModel) newConsumer(g modelGroup, h *modelHost, member string) *consumer.Consumer {
	c, err := consumer.New(h.log, h.coord, consumer.Config{Group: g.name, Topic: m.topic, Member: member,
		Handler: m.handler(g, h), PollWait: 10 * time.Millisecond, CommitInterval: time.Millisecond, LeaseTTL: 10 * time.Second,
		Backoff: func(int) time.Duration { return time.Millisecond }, Logger: quietLogger()})
	if err != nil {
		m.rt.Fatal(err)
	}
	return c
}

func (m *incModel) consume(g modelGroup, hi int) {
	h := m.hosts[hi]
	st, err := m.newConsumer(g, h, "m-"+strconv.Itoa(hi)).Run(m.ctx, 0, consumer.RunOptions{UntilCaughtUp: true})
	if err != nil {
		m.rt.Fatalf("consume %s on incarnation %d: %v (stats %+v)", g.name, m.live.n, err, st)
	}
	m.check(g)
}

// check is the checker of one group against the live incarnation.
func (m *incModel) check(g modelGroup) {
	h := m.hosts[0]
	c, err := h.coord.Committed(m.ctx, g.name, m.topic, 0)
	if err != nil {
		m.rt.Fatal(err)
	}
	if c == nil {
		return
	}
	inc := m.live
	if *c > int64(len(inc.values)) {
		m.rt.Fatalf("%s committed %d on incarnation %d of %d records", g.name, *c, inc.n, len(inc.values))
	}
	side := m.dlq
	if g.park {
		side = wire.ParkingTopic(g.name)
	}
	landed := m.values(side)
	for off := range *c {
		v := inc.values[off]
		switch {
		case inc.bad[off] && landed[v] != 1:
			m.rt.Fatalf("%s committed past poison record %q of incarnation %d; %s holds it %d times", g.name, v, inc.n, side, landed[v])
		case inc.bad[off]:
		case g.park:
			if len(m.handled[g.name+"/"+v]) == 0 {
				m.rt.Fatalf("%s committed past %q of incarnation %d, never handled", g.name, v, inc.n)
			}
		default:
			got, err := h.fx.Get(m.ctx, v)
			if err != nil || string(got) != v {
				m.rt.Fatalf("%s committed past %q of incarnation %d; its effect is %q, %v", g.name, v, inc.n, got, err)
			}
		}
	}
	for v, n := range landed {
		if n > 1 {
			m.rt.Fatalf("%s holds %q %d times", side, v, n)
		}
	}
}

// values counts the values in a one-partition topic.
func (m *incModel) values(topic string) map[string]int {
	out := map[string]int{}
	l := m.hosts[0].log
	n, err := l.Partitions(m.ctx, topic)
	if errors.Is(err, log.ErrTopicNotFound) {
		return out
	}
	if err != nil {
		m.rt.Fatal(err)
	}
	for p := range n {
		for off := int64(0); ; {
			res, err := l.Poll(m.ctx, topic, p, off, log.PollOptions{MaxRecords: wire.MaxPollRecords})
			if err != nil {
				m.rt.Fatal(err)
			}
			for _, r := range res.Records {
				out[string(r.Value)]++
			}
			if res.NextOffset >= res.HighWatermark || res.NextOffset == off {
				break
			}
			off = res.NextOffset
		}
	}
	return out
}

// delete deletes the live incarnation; a member of one group holds a lease on it,
// which the zombie step runs later.
func (m *incModel) delete() {
	if m.live == nil {
		return
	}
	g := m.groups[rapid.IntRange(0, 1).Draw(m.rt, "group")]
	member := "m-" + strconv.Itoa(rapid.IntRange(0, len(m.hosts)-1).Draw(m.rt, "member"))
	h := m.host()
	l, err := h.coord.Acquire(m.ctx, g.name, m.topic, 0, member, 10*time.Second)
	if err != nil {
		m.rt.Fatalf("lease before the delete: %v", err)
	}
	m.stale = append(m.stale, staleLease{lease: l, inc: m.live})
	if err := m.host().log.DeleteTopic(m.ctx, m.topic); err != nil {
		m.rt.Fatalf("delete incarnation %d: %v", m.live.n, err)
	}
	m.everyHostSees()
	m.live = nil
}

func (m *incModel) reset() {
	if m.live == nil {
		return
	}
	g := m.groups[rapid.IntRange(0, 1).Draw(m.rt, "group")]
	if _, err := m.host().coord.Reset(m.ctx, g.name, m.topic, group.ResetEarliest()); err != nil {
		m.rt.Fatalf("reset %s: %v", g.name, err)
	}
}

// zombie runs a lease of a deleted incarnation while its member holds the live
// incarnation's lease of the same group.
func (m *incModel) zombie() {
	if m.live == nil || len(m.stale) == 0 {
		return
	}
	z := m.stale[rapid.IntRange(0, len(m.stale)-1).Draw(m.rt, "stale")]
	var g modelGroup
	for _, gg := range m.groups {
		if gg.name == z.lease.Group {
			g = gg
		}
	}
	h := m.host()
	live, err := h.coord.Acquire(m.ctx, g.name, m.topic, 0, z.lease.Member, 10*time.Second)
	if err != nil {
		m.rt.Fatalf("lease of incarnation %d: %v", m.live.n, err)
	}
	before, err := h.coord.Committed(m.ctx, g.name, m.topic, 0)
	if err != nil {
		m.rt.Fatal(err)
	}
	zh := m.host()
	m.zombies++
	st, err := m.newConsumer(g, zh, z.lease.Member).RunLease(m.ctx, z.lease, consumer.RunOptions{UntilCaughtUp: true})
	if !st.Fenced && !errors.Is(err, group.ErrFenced) {
		m.rt.Fatalf("run of deleted incarnation %d (generation %d) on incarnation %d (generation %d): stats %+v, %v; want fenced",
			z.inc.n, z.lease.Generation, m.live.n, live.Generation, st, err)
	}
	if st.Handled+st.DeadLettered+st.Parked+st.Dropped > 0 {
		m.rt.Fatalf("run of deleted incarnation %d acted on incarnation %d: stats %+v", z.inc.n, m.live.n, st)
	}
	after, err := h.coord.Committed(m.ctx, g.name, m.topic, 0)
	if err != nil {
		m.rt.Fatal(err)
	}
	if ptrStr(before) != ptrStr(after) {
		m.rt.Fatalf("run of deleted incarnation %d moved incarnation %d's position from %s to %s", z.inc.n, m.live.n, ptrStr(before), ptrStr(after))
	}
	if err := h.coord.Release(m.ctx, g.name, m.topic, 0, live.Member, live.Generation); err != nil {
		m.rt.Fatalf("release of incarnation %d's lease after the zombie: %v", m.live.n, err)
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
