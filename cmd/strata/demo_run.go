package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/httpconsumer"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
	"github.com/stratalog/strata/pkg/store"
)

const (
	demoTopic      = "orders"
	demoPartitions = 8
	demoLeaseTTL   = 2 * time.Second
)

// demoSize is how much the demo produces.
type demoSize struct {
	Events, Orders, ValueBytes int
	// KillAfter is how many records the doomed billing consumer handles before it dies.
	KillAfter int64
}

// fullDemo is the README's run: about 100 MB of order events.
var fullDemo = demoSize{Events: 100_000, Orders: 1_000, ValueBytes: 1_000, KillAfter: 3_000}

// runDemo runs the full demo; progress (nil: none) receives the progress bar.
func runDemo(ctx context.Context, w, progress io.Writer) error {
	return runDemoSize(ctx, w, progress, fullDemo)
}

// runDemoSize starts a node in-process on a temporary directory, produces order events
// over HTTP, runs two consumer groups, kills a consumer mid-batch, shows a zombie being
// fenced and prints a summary.
func runDemoSize(ctx context.Context, w, progress io.Writer, size demoSize) error {
	started := time.Now()
	dir, err := os.MkdirTemp("", "strata-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	rt, err := runtime.Open(ctx, runtime.Config{Node: node.Config{DataDir: dir}, Addr: "127.0.0.1:0"})
	if err != nil {
		return err
	}
	defer rt.Close(context.WithoutCancel(ctx))
	serveCtx, stopServe := context.WithCancel(ctx)
	defer stopServe()
	go func() { _ = rt.Serve(serveCtx) }()
	fmt.Fprintf(w, "strata dev (in-process) listening on %s, data in %s\n", rt.URL(), dir)

	c, err := client.New(rt.URL())
	if err != nil {
		return err
	}
	if _, err := c.CreateTopic(ctx, demoTopic, client.TopicConfig{Partitions: demoPartitions}); err != nil {
		return err
	}
	if _, err := c.CreateTopic(ctx, demoTopic+".dlq", client.TopicConfig{Partitions: 1}); err != nil {
		return err
	}
	// billing's dead-letter topic is the group's setting, as an operator sets it: every
	// consumer of the group reads it (a consumer's own DeadLetterTopic would override it,
	// and say so in a log line per partition run).
	if _, err := c.SetGroupSettings(ctx, "billing", client.GroupSettings{ResetPolicy: "earliest", MaxAttempts: 5, DeadLetterTopic: demoTopic + ".dlq"}); err != nil {
		return err
	}
	fmt.Fprintf(w, "created topic %q with %d partitions\n\n", demoTopic, demoPartitions)

	appended, err := produceOrders(ctx, w, progress, c, size)
	if err != nil {
		return err
	}

	d := &demo{w: w, rt: rt, c: c, sink: newIdempotentSink(), size: size}
	fmt.Fprintln(w, "\nconsuming: billing (in-process, 4 workers per partition, idempotent sink) and shipping (over HTTP, deliberately slow)")
	shipCtx, stopShipping := context.WithCancel(ctx)
	var shipWG sync.WaitGroup
	shipWG.Add(1)
	go func() { defer shipWG.Done(); d.runShipping(shipCtx) }()

	if err := d.runBilling(ctx); err != nil {
		stopShipping()
		return err
	}
	if err := d.showZombie(ctx); err != nil {
		stopShipping()
		return err
	}
	if d.park, err = d.showParking(ctx); err != nil {
		stopShipping()
		return err
	}
	stopShipping()
	shipWG.Wait()
	return d.summary(ctx, appended, time.Since(started))
}

// produceOrders sends demoEvents events for demoOrders orders through the batching
// producer, with a progress bar on progress (when not nil), and returns how many were
// acknowledged.
func produceOrders(ctx context.Context, w, progress io.Writer, c *client.Client, size demoSize) (int64, error) {
	p, err := client.NewProducer(ctx, c, demoTopic, client.ProducerConfig{Linger: 5 * time.Millisecond})
	if err != nil {
		return 0, err
	}
	bar := newDemoBar(progress, size.Events)
	seq := make([]int, size.Orders)
	pad := strings.Repeat("x", max(size.ValueBytes-120, 1))
	futures := make([]*client.Future, 0, size.Events)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for i := 0; i < size.Events; i++ {
		order := i % size.Orders
		ev := orderEvent{OrderID: fmt.Sprintf("order-%04d", order), Seq: seq[order], Amount: 100 + i%9000, Note: pad}
		seq[order]++
		value, err := json.Marshal(ev)
		if err != nil {
			return 0, err
		}
		f, err := p.Send(ctx, client.Record{Key: []byte(ev.OrderID), Value: value})
		if err != nil {
			return 0, err
		}
		futures = append(futures, f)
		select {
		case <-tick.C:
			bar.set(p.Stats().RecordsSent)
		default:
		}
	}
	if err := p.Close(ctx); err != nil {
		return 0, err
	}
	var acked int64
	var failed error
	for _, f := range futures {
		if _, err := f.Wait(ctx); err != nil {
			failed = errors.Join(failed, err)
			continue
		}
		acked++
	}
	bar.finish(acked)
	st := p.Stats()
	fmt.Fprintf(w, "appended %d events in %d requests (largest batch %d records, %d retries)\n",
		acked, st.Requests, st.MaxBatchRecord, st.Retries)
	return acked, failed
}

type demo struct {
	w    io.Writer
	rt   *runtime.Runtime
	c    *client.Client
	sink *idempotentSink
	size demoSize

	billingHandled  atomic.Int64
	shippingHandled atomic.Int64
	killedAt        int64 // committed offset of the killed consumer's partition when it died
	replayed        int64
	zombieRefused   int // the zombie's business writes the fenced store refused
	park            parkResult
}

// runBilling consumes every partition with 4 workers each (keys in order) into the
// idempotent sink. The consumer of partition 0 is killed mid-batch; a replacement takes
// the partition over once the dead one's lease lapses and replays from its last commit.
func (d *demo) runBilling(ctx context.Context) error {
	handler := func(ctx context.Context, r consumer.Record) error {
		d.billingHandled.Add(1)
		return d.sink.put(r.Topic, r.Partition, r.Offset, r.Value)
	}
	mk := func(member string, coord consumer.Coordinator, h consumer.Handler) (*consumer.Consumer, error) {
		return consumer.New(d.rt.Log(), coord, consumer.Config{Group: "billing", Topic: demoTopic, Member: member,
			Handler: h, Workers: 4, OrderedKeys: true,
			LeaseTTL: demoLeaseTTL, CommitInterval: 200 * time.Millisecond, PollWait: 100 * time.Millisecond,
			Metrics: d.rt.Metrics()})
	}
	errs := make(chan error, demoPartitions+1)
	var wg sync.WaitGroup
	for p := int32(1); p < demoPartitions; p++ {
		cons, err := mk(fmt.Sprintf("billing-%d", p), d.rt.Groups(), handler)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := cons.Run(ctx, p, consumer.RunOptions{UntilCaughtUp: true}); err != nil {
				errs <- err
			}
		}()
	}

	// Partition 0: its consumer dies (no final commit, no release) mid-batch.
	victim := &killable{Coordinator: d.rt.Groups()}
	var seenByVictim atomic.Int64
	killCtx, kill := context.WithCancel(ctx)
	victimHandler := func(ctx context.Context, r consumer.Record) error {
		// Die mid-batch, once at least one commit went through, so the replay starts
		// from a real checkpoint.
		if seenByVictim.Add(1) >= d.size.KillAfter && victim.lastCommit.Load() > 0 && victim.dead.CompareAndSwap(false, true) {
			kill()
		}
		return handler(ctx, r)
	}
	cons, err := mk("billing-0", victim, victimHandler)
	if err != nil {
		return err
	}
	_, _ = cons.Run(killCtx, 0, consumer.RunOptions{UntilCaughtUp: true})
	committed, err := d.rt.Coordinator().Committed(ctx, "billing", demoTopic, 0)
	if err != nil || committed == nil {
		return fmt.Errorf("demo: committed offset after the kill: %v", err)
	}
	d.killedAt = *committed
	_, dupBefore, _ := d.sink.counts()
	fmt.Fprintf(d.w, "killed billing-0 mid-batch after handling %d records; its last commit is offset %d\n",
		seenByVictim.Load(), *committed)

	replacement, err := mk("billing-0b", d.rt.Groups(), handler)
	if err != nil {
		return err
	}
	waitStart := time.Now()
	for {
		_, err := replacement.Run(ctx, 0, consumer.RunOptions{UntilCaughtUp: true})
		if !errors.Is(err, group.ErrLeaseHeld) {
			if err != nil {
				return err
			}
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	_, dupAfter, _ := d.sink.counts()
	d.replayed = dupAfter - dupBefore
	fmt.Fprintf(d.w, "billing-0b took partition 0 over after %.1fs (the dead lease's TTL), resumed at %d and replayed %d records; the sink absorbed them\n",
		time.Since(waitStart).Seconds(), d.killedAt, d.replayed)
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	return nil
}

// runShipping handles records slowly (2ms each, one worker per partition) until ctx
// ends. Unlike billing (in-process, as a consumer Lambda runs), it consumes over the
// HTTP API, as a remote service would: one group member, which takes every partition.
func (d *demo) runShipping(ctx context.Context) {
	gc, err := httpconsumer.NewGroupConsumer(d.c, "shipping", demoTopic,
		func(ctx context.Context, r httpconsumer.Record) error {
			select {
			case <-time.After(2 * time.Millisecond):
			case <-ctx.Done():
				return ctx.Err()
			}
			d.shippingHandled.Add(1)
			return nil
		},
		httpconsumer.WithMember("shipping-1"), httpconsumer.WithLeaseTTL(demoLeaseTTL),
		httpconsumer.WithLogger(slog.New(slog.DiscardHandler)),
		httpconsumer.WithConsumerConfig(func(c *consumer.Config) { c.PollWait = 100 * time.Millisecond }))
	if err != nil {
		fmt.Fprintln(d.w, "shipping:", err)
		return
	}
	_ = gc.Run(ctx)
}

// showZombie plays the reassignment scenario over HTTP: a consumer leases a
// partition, stalls past its lease, another member takes the partition (generation + 1),
// and the stalled one's commit is fenced.
func (d *demo) showZombie(ctx context.Context) error {
	const grp, ttl = "audit", 200 * time.Millisecond
	zombie, err := d.c.Lease(ctx, grp, demoTopic, 3, "audit-zombie", ttl)
	if err != nil {
		return err
	}
	if _, err := d.c.Poll(ctx, demoTopic, 3, 0, client.PollOptions{MaxRecords: 10}); err != nil {
		return err
	}
	time.Sleep(2 * ttl) // a long GC pause: no renewals
	fresh, err := d.c.Lease(ctx, grp, demoTopic, 3, "audit-new", 30*time.Second)
	if err != nil {
		return err
	}
	if _, err := d.c.Commit(ctx, grp, demoTopic, 3, "audit-new", fresh.Generation, 10); err != nil {
		return err
	}
	_, err = d.c.Commit(ctx, grp, demoTopic, 3, "audit-zombie", zombie.Generation, 10)
	if !errors.Is(err, client.ErrFenced) {
		return fmt.Errorf("demo: the zombie's commit was not fenced: %v", err)
	}
	var apiErr *client.APIError
	errors.As(err, &apiErr)
	// Its side effect too: a write to the fenced business store under its generation is
	// refused, while the new owner's write of the same record lands.
	es, err := d.rt.Node().Effects("")
	if err != nil {
		return err
	}
	fx := group.NewEffects(es, d.rt.Log())
	fence := group.Fence{Group: grp, Topic: demoTopic, Partition: 3, Generation: zombie.Generation}
	werr := fx.Apply(ctx, fence, 0, "audit/orders/3/0", []byte("zombie"))
	if !errors.Is(werr, group.ErrFenced) {
		return fmt.Errorf("demo: the zombie's business write was not fenced: %v", werr)
	}
	d.zombieRefused++
	fence.Generation = fresh.Generation
	if err := fx.Apply(ctx, fence, 0, "audit/orders/3/0", []byte("audit-new")); err != nil {
		return fmt.Errorf("demo: the new owner's business write: %w", err)
	}
	fmt.Fprintf(d.w, "zombie audit-zombie (generation %d) woke after partition 3 moved to audit-new (generation %d): its commit got %d %s and its business write was refused as fenced\n",
		zombie.Generation, fresh.Generation, apiErr.Status, apiErr.Code)
	return d.c.Release(ctx, grp, demoTopic, 3, "audit-new", fresh.Generation)
}

func (d *demo) summary(ctx context.Context, appended int64, took time.Duration) error {
	applied, dups, outOfOrder := d.sink.counts()
	lag := map[string]int64{}
	for _, g := range []string{"billing", "shipping"} {
		info, err := d.c.DescribeGroup(ctx, g)
		if err != nil {
			return err
		}
		for _, p := range info.Partitions {
			lag[g] += p.LagRecords
		}
	}
	lost := appended - int64(applied)
	tw := tabwriter.NewWriter(d.w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nSUMMARY\t")
	fmt.Fprintf(tw, "appended\t%d\n", appended)
	fmt.Fprintf(tw, "consumed by billing (deliveries)\t%d\n", d.billingHandled.Load())
	fmt.Fprintf(tw, "consumed by shipping (slow)\t%d\n", d.shippingHandled.Load())
	fmt.Fprintf(tw, "replayed after the kill\t%d\n", d.replayed)
	fmt.Fprintf(tw, "duplicates absorbed by the sink\t%d\n", dups)
	fmt.Fprintf(tw, "applied by the sink\t%d\n", applied)
	fmt.Fprintf(tw, "per-order sequence violations\t%d\n", outOfOrder)
	fmt.Fprintf(tw, "zombie business writes refused\t%d\n", d.zombieRefused)
	fmt.Fprintf(tw, "lag billing / shipping (records)\t%d / %d\n", lag["billing"], lag["shipping"])
	fmt.Fprintf(tw, "parked / released and replayed\t%d / %d (order %s)\n", d.park.parked, d.park.replayed, d.park.key)
	fmt.Fprintf(tw, "records lost\t%d\n", lost)
	fmt.Fprintf(tw, "took\t%.1fs\n", took.Seconds())
	if err := tw.Flush(); err != nil {
		return err
	}
	if lost != 0 || outOfOrder != 0 || lag["billing"] != 0 {
		return fmt.Errorf("demo: %d records lost, %d out of order, billing lag %d", lost, outOfOrder, lag["billing"])
	}
	return nil
}

// killable is a coordinator that stops answering once its process is "killed": the
// consumer's final commit and release never reach the store, as after kill -9.
type killable struct {
	consumer.Coordinator
	dead       atomic.Bool
	lastCommit atomic.Int64
}

var errKilled = errors.New("process killed")

func (k *killable) Renew(ctx context.Context, g, t string, p int32, m string, gen int64, ttl time.Duration) (group.Lease, error) {
	if k.dead.Load() {
		return group.Lease{}, errKilled
	}
	return k.Coordinator.Renew(ctx, g, t, p, m, gen, ttl)
}

func (k *killable) Commit(ctx context.Context, g, t string, p int32, m string, gen, next int64, completed ...store.OffsetRange) error {
	if k.dead.Load() {
		return errKilled
	}
	if err := k.Coordinator.Commit(ctx, g, t, p, m, gen, next, completed...); err != nil {
		return err
	}
	k.lastCommit.Store(next)
	return nil
}

func (k *killable) Release(ctx context.Context, g, t string, p int32, m string, gen int64) error {
	if k.dead.Load() {
		return errKilled
	}
	return k.Coordinator.Release(ctx, g, t, p, m, gen)
}
