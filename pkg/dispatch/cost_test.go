package dispatch_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/internal/clocktest"
	"github.com/stratalog/strata/pkg/awscount"
	"github.com/stratalog/strata/pkg/dispatch"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/lambdaconsumer"
	"github.com/stratalog/strata/pkg/log"
)

// meter counts the AWS requests of the consumer and dispatch, leaving out those of the
// test's own appends. It counts the requests the code made (awscount.Op.Answered): an
// attempt the SDK retried after a reset connection on a loaded emulator is not one.
type meter struct {
	c        *awscount.Counter
	mu       sync.Mutex
	excluded map[string]int64
}

// without runs fn, its requests left out of the counts.
func (m *meter) without(fn func()) {
	before, _ := m.c.Snapshot()
	fn()
	after, keys := m.c.Snapshot()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range keys {
		m.excluded[k] += after[k].Answered() - before[k].Answered()
	}
}

func (m *meter) reset() {
	m.c.Reset()
	m.mu.Lock()
	m.excluded = map[string]int64{}
	m.mu.Unlock()
}

// counts returns the requests counted by operation, and their sum.
func (m *meter) counts() (map[string]int64, int64) {
	snap, keys := m.c.Snapshot()
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]int64{}
	var total int64
	for _, k := range keys {
		if n := snap[k].Answered() - m.excluded[k]; n > 0 {
			out[k] = n
			total += n
		}
	}
	return out, total
}

func (m *meter) line() string {
	by, total := m.counts()
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "%d requests:", total)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s %d", strings.TrimPrefix(k, "DynamoDB."), by[k])
	}
	snap, all := m.c.Snapshot()
	var retried int64
	for _, k := range all {
		retried += snap[k].Requests - snap[k].Answered()
	}
	if retried > 0 {
		fmt.Fprintf(&b, " (and %d attempts retried, not counted)", retried)
	}
	return b.String()
}

// busyLog appends one record before each poll while busy is positive, one simulated
// second apart: the partition always has something new when the consumer looks.
type busyLog struct {
	*log.Log
	clock *clocktest.Clock
	m     *meter
	busy  *atomic.Int64
	t     testing.TB
}

func (l busyLog) Poll(ctx context.Context, topic string, partition int32, offset int64, opt log.PollOptions) (log.PollResult, error) {
	if l.busy.Add(-1) >= 0 {
		l.clock.Advance(time.Second)
		l.m.without(func() {
			p := int32(0)
			if _, err := l.Log.Append(ctx, "orders", []log.Record{{Value: []byte("v"), Partition: &p}}, log.AppendOptions{}); err != nil {
				l.t.Error(err)
			}
		})
	}
	return l.Log.Poll(ctx, topic, partition, offset, opt)
}

// TestConsumerRequestsPerPartitionHour counts, on the emulator, the AWS requests of the
// consumer function with its defaults, on a clock the test moves (the idle window is
// real time): one wake-up for one record; a busy partition with a new record at every
// poll for 60 simulated seconds in one invocation; and an hour of the dispatcher's
// one-minute sweeps over the caught-up partition. docs/BENCHMARKS.md ("Consumer requests
// per partition-hour") has the figures.
func TestConsumerRequestsPerPartitionHour(t *testing.T) {
	const busySeconds = 60
	ctx := context.Background()
	m := &meter{c: awscount.New(), excluded: map[string]int64{}}
	s := backendtest.AWSWith(ctx, t, func(c *aws.Config) { c.APIOptions = append(c.APIOptions, m.c.Middleware) })
	clock := clocktest.New(time.Now())
	l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.CreateTopic(ctx, "orders", 1, time.Hour); err != nil {
		t.Fatal(err)
	}
	coord := group.New(s.Meta, l, clock.Now)
	var busy atomic.Int64
	h := lambdaconsumer.Handler(lambdaconsumer.Config{Clock: clock.Now, Metrics: nopMetrics{},
		Open: func(context.Context) (lambdaconsumer.Backend, error) {
			return lambdaconsumer.Backend{Log: busyLog{Log: l, clock: clock, m: m, busy: &busy, t: t}, Groups: coord}, nil
		},
	}, func(context.Context, lambdaconsumer.Record) error { return nil })
	invoke := func(name string) lambdaconsumer.Result {
		t.Helper()
		ictx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		res, err := h(ictx, lambdaconsumer.Event{Topic: "orders", Partition: 0, Group: "billing"})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	n := &node{meta: s.Meta, log: l, coord: coord}
	n.appendN(t, "orders", 0, 1)
	invoke("warm-up") // the group's creation and the caches of a warm environment

	n.appendN(t, "orders", 0, 1)
	m.reset()
	if res := invoke("wake-up"); res.Handled != 1 {
		t.Fatalf("wake-up handled %d records, want 1", res.Handled)
	}
	wake, wakeTotal := m.counts()
	t.Logf("one wake-up for one record: %s", m.line())

	m.reset()
	busy.Store(busySeconds)
	if res := invoke("busy"); res.Handled != busySeconds {
		t.Fatalf("busy invocation handled %d records, want %d", res.Handled, busySeconds)
	}
	busyCounts, _ := m.counts()
	t.Logf("busy, %d simulated seconds with a record at every poll: %s", busySeconds, m.line())

	m.reset()
	inv := &inProcess{timeout: time.Minute, handler: h}
	d, err := dispatch.New(dispatch.Config{Subscriptions: subs("orders", "billing", "fn"), Leases: s.Meta, Offsets: l, Invoker: inv, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	var sweeps dispatch.Stats
	for range 60 {
		clock.Advance(time.Minute)
		st, err := d.Sweep(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sweeps = sweeps.Add(st)
	}
	inv.wg.Wait()
	_, idleTotal := m.counts()
	t.Logf("idle hour, 60 sweeps: %d invocations, %s", sweeps.Invocations, m.line())

	// A commit (a two-item transaction) once per commit interval (LeaseTTL/3 = 10 s)
	// carrying the renewal, and the last one the release: no renewal or release alone.
	interval := int64(group.DefaultTTL / 3 / time.Second)
	if got, want := busyCounts["DynamoDB.TransactWriteItems"], busySeconds/interval+1; got > want {
		t.Errorf("busy: %d commits in %d s, want at most %d (one per %d s and the last)", got, busySeconds, want, interval)
	}
	if got := busyCounts["DynamoDB.UpdateItem"]; got > 1 {
		t.Errorf("busy: %d lease writes besides the commits, want the acquire alone", got)
	}
	if got := wake["DynamoDB.UpdateItem"] + wake["DynamoDB.TransactWriteItems"]; got > 2 {
		t.Errorf("wake-up: %d writes, want the acquire and the releasing commit", got)
	}
	if wakeTotal > 16 {
		t.Errorf("wake-up: %d requests, want at most 16", wakeTotal)
	}
	if sweeps.Invocations != 0 || idleTotal > 60*4 {
		t.Errorf("idle hour: %d invocations and %d requests, want none and at most 4 reads a sweep", sweeps.Invocations, idleTotal)
	}
}
