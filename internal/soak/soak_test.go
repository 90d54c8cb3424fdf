package soak

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/stratalog/strata/pkg/awsfault"
	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/consumer"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/httpconsumer"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/store/awstest"
	"github.com/stratalog/strata/pkg/store/dynamo"
	s3store "github.com/stratalog/strata/pkg/store/s3"
)

// Environment of the soak.
const (
	// EnvDuration is how long producers run (Go duration; default 60s, 10s with -short).
	EnvDuration = "SOAK_DURATION"
	// EnvFaultRate is the injected fault rate (default 0.05).
	EnvFaultRate = "SOAK_FAULT_RATE"
	// EnvSeed seeds the faults and the load (default random, printed).
	EnvSeed = "SOAK_SEED"
)

const (
	topic      = "soak"
	partitions = 4
	producers  = 4 // the first half with Idempotency-Key
	leaseTTL   = 3 * time.Second
	maxTries   = 10
)

var groups = []string{"billing", "audit"}

// TestSoak runs a node (pkg/runtime, --backend aws on the emulator) behind its real HTTP
// server with 5% injected AWS faults (every kind, before and after the request), while
// producers append over HTTP (half with Idempotency-Key, retrying; half without,
// retrying only what was not acknowledged) and two consumer groups follow the topic
// with members started and stopped throughout. It then stops the faults, lets both
// groups catch up, reads the whole log back and asserts the audit (see Audit).
func TestSoak(t *testing.T) {
	duration := 60 * time.Second
	if testing.Short() {
		duration = 10 * time.Second
	}
	if s := os.Getenv(EnvDuration); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("%s=%q: %v", EnvDuration, s, err)
		}
		duration = d
	}
	rate := 0.05
	if s := os.Getenv(EnvFaultRate); s != "" {
		r, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", EnvFaultRate, s, err)
		}
		rate = r
	}
	seed := mrand.Uint64()
	if s := os.Getenv(EnvSeed); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", EnvSeed, s, err)
		}
		seed = v
	}
	t.Logf("soak: %s of load, fault rate %.3f, %s=%d", duration, rate, EnvSeed, seed)

	ctx := context.Background()
	ep := awstest.Endpoint(t)
	t.Setenv("AWS_ENDPOINT_URL", ep)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_REGION", awstest.Region)
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)

	faults, err := awsfault.New(awsfault.Config{Rate: rate, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	faults.SetEnabled(false)
	id := randomID()
	dcfg := dynamo.Config{TablePrefix: "soak" + id + "-", Bucket: "strata-soak-" + id}
	logs := &lineCounter{}
	rt, err := runtime.Open(ctx, runtime.Config{
		Addr: "127.0.0.1:0", RetentionInterval: -1,
		Node: node.Config{Backend: node.BackendAWS, AWS: node.AWSConfig{Bucket: dcfg.Bucket, TablePrefix: dcfg.TablePrefix, Bootstrap: true,
			APIOptions: []func(*middleware.Stack) error{faults.Middleware}}},
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx := context.Background()
		if err := s3store.DeleteBucket(cctx, awstest.S3Client(cctx, t), dcfg.Bucket); err != nil {
			t.Logf("cleanup bucket: %v", err)
		}
		if err := dynamo.Teardown(cctx, awstest.DynamoDBClient(cctx, t), dcfg); err != nil {
			t.Logf("cleanup tables: %v", err)
		}
	})
	serveCtx, stopServe := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- rt.Serve(serveCtx) }()
	defer func() {
		stopServe()
		<-served
		_ = rt.Close(context.Background())
	}()

	c, err := client.New(rt.URL())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, topic, client.TopicConfig{Partitions: partitions, Retention: 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	// The members' balancers talk to DynamoDB directly, as a consumer fleet would, with
	// the same injected faults.
	acfg := awstest.Config(ctx, t)
	acfg.APIOptions = append(acfg.APIOptions, faults.Middleware)
	rec := &recorder{failed: map[string]int{}, idempotent: map[string]bool{}, failures: map[string]int64{}}
	direct := dynamo.New(dynamodb.NewFromConfig(acfg), dcfg)
	balStore := recStore{Store: group.ByIncarnation(direct, group.TopicsOf(direct)), rec: rec}

	faults.SetEnabled(true)
	t0 := time.Now()
	// Consumers: two groups, two members each to begin with, churned until the load ends.
	var fleet []*memberSet
	churnCtx, stopChurn := context.WithCancel(ctx)
	var churnWG sync.WaitGroup
	for gi, g := range groups {
		ms := &memberSet{group: g, c: c, rec: rec, store: balStore, logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))}
		fleet = append(fleet, ms)
		ms.start(t)
		ms.start(t)
		churnWG.Go(func() { ms.churn(churnCtx, t, mrand.New(mrand.NewPCG(seed, uint64(100+gi)))) })
	}
	// Producers.
	loadCtx, stopLoad := context.WithTimeout(ctx, duration)
	defer stopLoad()
	var prodWG sync.WaitGroup
	for i := range producers {
		prodWG.Go(func() { produce(loadCtx, c, rec, i, i < producers/2, mrand.New(mrand.NewPCG(seed, uint64(i)))) })
	}
	prodWG.Wait()
	stopChurn()
	churnWG.Wait()
	loadTook := time.Since(t0)
	faults.SetEnabled(false)
	byFault, attempts := faults.ByFault()

	// Catch up: every group committed up to every partition's high watermark.
	hw := map[int32]int64{}
	top, err := c.DescribeTopic(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, pi := range top.PartitionInfo {
		hw[pi.Partition] = pi.HighWatermark
	}
	committed := map[string]map[int32]int64{}
	tc := time.Now()
	deadline := tc.Add(90 * time.Second)
	for {
		caughtUp := true
		for _, g := range groups {
			committed[g] = groupCommitted(ctx, c, g)
			for p, h := range hw {
				if committed[g][p] != h {
					caughtUp = false
				}
			}
		}
		if caughtUp || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	catchUp := time.Since(tc)
	for _, ms := range fleet {
		ms.stopAll(t)
	}
	for _, g := range groups {
		committed[g] = groupCommitted(ctx, c, g)
	}

	stored := readAll(ctx, t, c, hw)
	rec.mu.Lock()
	in := Input{Acks: rec.acks, Failed: rec.failed, IdempotentIDs: rec.idempotent, Log: stored, Grants: rec.grants,
		Commits: rec.commits, Deliveries: rec.deliveries, Groups: groups, Committed: committed, HighWatermarks: hw}
	rep := Audit(in)
	fig := fmt.Sprintf("load %s, fault rate %.3f, seed %d\n", loadTook.Round(time.Millisecond), rate, seed) +
		fmt.Sprintf("%-48s %d\n", "append requests", rec.requests) +
		fmt.Sprintf("%-48s %d (%.1f/s)\n", "append requests acknowledged", rec.ackedRequests, float64(rec.ackedRequests)/loadTook.Seconds()) +
		fmt.Sprintf("%-48s %s\n", "append failures by kind", SortedCounts(rec.failures)) +
		fmt.Sprintf("%-48s %d\n", "batches given up unacknowledged", rec.gaveUp) +
		fmt.Sprintf("%-48s %d of %d request attempts\n", "AWS faults injected", sum(byFault), attempts) +
		fmt.Sprintf("%-48s %s\n", "  by fault", SortedCounts(byFault)) +
		fmt.Sprintf("%-48s %d started, %d stopped\n", "group members", rec.memberStarts, rec.memberStops) +
		fmt.Sprintf("%-48s %d\n", "server warnings and errors logged", logs.n.Load()) +
		fmt.Sprintf("%-48s %v\n", "high watermarks", hw) +
		fmt.Sprintf("%-48s %v (catch-up %s)\n", "committed at the end", committed, catchUp.Round(time.Millisecond)) +
		rep.String()
	rec.mu.Unlock()
	t.Logf("soak figures:\n%s", fig)
	if path := os.Getenv("SOAK_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(fig), 0o644); err != nil {
			t.Error(err)
		}
	}
	for _, v := range rep.Violations {
		t.Errorf("audit: %s", v)
	}
	if t.Failed() {
		logs.mu.Lock()
		t.Logf("first lines logged by the node and the members:\n%s", logs.first.String())
		logs.mu.Unlock()
	}
	if rep.AckedRecords == 0 || rep.Deliveries == 0 || rep.CommitsAccepted == 0 {
		t.Errorf("the soak did nothing: %d acknowledged, %d delivered, %d commits", rep.AckedRecords, rep.Deliveries, rep.CommitsAccepted)
	}
	if rate > 0 && duration >= 30*time.Second {
		for _, f := range awsfault.AllFaults {
			if byFault[f.String()] == 0 {
				t.Errorf("no %s fault was injected", f)
			}
		}
	}
}

// recorder keeps everything the audit needs. Its fields are guarded by mu.
type recorder struct {
	mu            sync.Mutex
	acks          []Ack
	failed        map[string]int
	idempotent    map[string]bool
	grants        []Grant
	commits       []CommitCall
	deliveries    []Delivery
	requests      int64
	ackedRequests int64
	gaveUp        int64
	failures      map[string]int64
	memberStarts  int
	memberStops   int
}

// produce appends batches of 1–5 records until ctx ends. An idempotent producer resends
// the very same request (same key, same body) after a retryable failure; a plain one
// resends only the records not acknowledged. Either gives a batch up after maxTries.
func produce(ctx context.Context, c *client.Client, rec *recorder, i int, idempotent bool, rng *mrand.Rand) {
	for batch := 0; ctx.Err() == nil; batch++ {
		n := 1 + rng.IntN(5)
		recs := make([]client.Record, n)
		ids := make([]string, n)
		for j := range recs {
			ids[j] = fmt.Sprintf("p%d-b%d-r%d", i, batch, j)
			pad := make([]byte, rng.IntN(200))
			for k := range pad {
				pad[k] = 'a' + byte(rng.IntN(26))
			}
			recs[j] = client.Record{Key: fmt.Appendf(nil, "k%d-%d", i, rng.IntN(16)), Value: append([]byte(ids[j]+"|"), pad...)}
		}
		opt := client.AppendOptions{}
		if idempotent {
			opt.IdempotencyKey = fmt.Sprintf("p%d-b%d", i, batch)
			rec.mu.Lock()
			for _, id := range ids {
				rec.idempotent[id] = true
			}
			rec.mu.Unlock()
		}
		pending := make([]int, n)
		for j := range pending {
			pending[j] = j
		}
		for try := 1; ; try++ {
			send := pending
			if idempotent {
				send = make([]int, n)
				for j := range send {
					send[j] = j
				}
			}
			sub := make([]client.Record, len(send))
			for k, j := range send {
				sub[k] = recs[j]
			}
			// Each request gets its own deadline, not the load's: a batch started is
			// finished (acknowledged or given up) even after the load ends.
			rctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			res, err := c.Append(rctx, topic, sub, opt)
			cancel()
			var still []int
			rec.mu.Lock()
			rec.requests++
			if err == nil {
				rec.ackedRequests++
			} else {
				rec.failures[failureKind(err)]++
			}
			for k, j := range send {
				if res != nil && k < len(res) && res[k].Err == nil && res[k].Offset >= 0 {
					rec.acks = append(rec.acks, Ack{ID: ids[j], Partition: res[k].Partition, Offset: res[k].Offset,
						Key: recs[j].Key, Value: recs[j].Value, Idempotent: idempotent})
					continue
				}
				rec.failed[ids[j]]++
				still = append(still, j)
			}
			rec.mu.Unlock()
			if !idempotent {
				pending = still
			}
			if err == nil || len(still) == 0 {
				break
			}
			if !client.IsRetryable(err) || try >= maxTries {
				rec.mu.Lock()
				rec.gaveUp++
				rec.mu.Unlock()
				break
			}
			time.Sleep(time.Duration(20*try) * time.Millisecond)
		}
	}
}

func failureKind(err error) string {
	var apiErr *client.APIError
	switch {
	case errors.As(err, &apiErr):
		return fmt.Sprintf("%d_%s", apiErr.Status, apiErr.Code)
	case errors.Is(err, context.DeadlineExceeded):
		return "client_timeout"
	}
	return "transport"
}

// memberSet is one group's members, started and stopped during the run.
type memberSet struct {
	group  string
	c      *client.Client
	rec    *recorder
	store  recStore
	logger *slog.Logger

	mu      sync.Mutex
	next    int
	running []*member
}

type member struct {
	name   string
	cancel context.CancelFunc
	done   chan error
}

func (ms *memberSet) start(t *testing.T) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	name := fmt.Sprintf("%s-m%d", ms.group, ms.next)
	ms.next++
	ad := httpconsumer.NewConsumerAdapter(ms.c)
	h := func(_ context.Context, r consumer.Record) error {
		ms.rec.mu.Lock()
		ms.rec.deliveries = append(ms.rec.deliveries, Delivery{Group: ms.group, Partition: r.Partition, Offset: r.Offset, ID: RecordID(r.Value)})
		ms.rec.mu.Unlock()
		return nil
	}
	cons, err := consumer.New(ad, recCoord{Coordinator: ad, rec: ms.rec}, consumer.Config{Group: ms.group, Topic: topic, Member: name,
		Handler: h, LeaseTTL: leaseTTL, PollWait: 250 * time.Millisecond, CommitInterval: 250 * time.Millisecond, Logger: ms.logger})
	if err != nil {
		t.Fatal(err)
	}
	bal, err := group.NewBalancer(group.BalancerConfig{Store: ms.store, Group: ms.group, Topic: topic, Member: name,
		Partitions: partitions, TTL: leaseTTL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &member{name: name, cancel: cancel, done: make(chan error, 1)}
	go func() { m.done <- cons.RunMember(ctx, bal, leaseTTL/3) }()
	ms.running = append(ms.running, m)
	ms.rec.mu.Lock()
	ms.rec.memberStarts++
	ms.rec.mu.Unlock()
}

// stop stops the i-th running member and waits for it.
func (ms *memberSet) stop(t *testing.T, i int) {
	ms.mu.Lock()
	m := ms.running[i]
	ms.running = append(ms.running[:i], ms.running[i+1:]...)
	ms.mu.Unlock()
	m.cancel()
	select {
	case err := <-m.done:
		if err != nil {
			t.Errorf("member %s ended with %v", m.name, err)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("member %s did not stop within 30 s", m.name)
	}
	ms.rec.mu.Lock()
	ms.rec.memberStops++
	ms.rec.mu.Unlock()
}

// churn starts or stops a member every 2–5 s, keeping 1 to 4 running.
func (ms *memberSet) churn(ctx context.Context, t *testing.T, rng *mrand.Rand) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(2*time.Second + time.Duration(rng.IntN(3000))*time.Millisecond):
		}
		ms.mu.Lock()
		n := len(ms.running)
		ms.mu.Unlock()
		switch {
		case n <= 1 || (n < 4 && rng.IntN(2) == 0):
			ms.start(t)
		default:
			ms.stop(t, rng.IntN(n))
		}
	}
}

func (ms *memberSet) stopAll(t *testing.T) {
	for {
		ms.mu.Lock()
		n := len(ms.running)
		ms.mu.Unlock()
		if n == 0 {
			return
		}
		ms.stop(t, 0)
	}
}

// recCoord records every commit call and its outcome.
type recCoord struct {
	consumer.Coordinator
	rec *recorder
}

func (c recCoord) Commit(ctx context.Context, grp, topic string, partition int32, member string, generation, nextOffset int64, completed ...store.OffsetRange) error {
	start := time.Now()
	err := c.Coordinator.Commit(ctx, grp, topic, partition, member, generation, nextOffset, completed...)
	c.rec.mu.Lock()
	c.rec.commits = append(c.rec.commits, CommitCall{Group: grp, Partition: partition, Member: member, Generation: generation,
		Next: nextOffset, Start: start, Accepted: err == nil})
	c.rec.mu.Unlock()
	return err
}

func (c recCoord) Acquire(ctx context.Context, grp, topic string, partition int32, member string, ttl time.Duration) (group.Lease, error) {
	l, err := c.Coordinator.Acquire(ctx, grp, topic, partition, member, ttl)
	if err == nil {
		c.rec.grant(grp, partition, l.Generation)
	}
	return l, err
}

func (r *recorder) grant(grp string, partition int32, generation int64) {
	r.mu.Lock()
	r.grants = append(r.grants, Grant{Group: grp, Partition: partition, Generation: generation, At: time.Now()})
	r.mu.Unlock()
}

// recStore records every lease the balancers were granted.
type recStore struct {
	group.Store
	rec *recorder
}

func (s recStore) AcquireLease(ctx context.Context, grp, topic string, partition int32, member string, now, expiresAt time.Time) (store.Assignment, error) {
	a, err := s.Store.AcquireLease(ctx, grp, topic, partition, member, now, expiresAt)
	if err == nil {
		s.rec.grant(grp, partition, a.Generation)
	}
	return a, err
}

// groupCommitted is the group's committed offset per partition of the topic (0 when none).
func groupCommitted(ctx context.Context, c *client.Client, g string) map[int32]int64 {
	out := map[int32]int64{}
	desc, err := c.DescribeGroup(ctx, g)
	if err != nil {
		return out
	}
	for _, p := range desc.Partitions {
		if p.Topic == topic && p.CommittedOffset != nil {
			out[p.Partition] = *p.CommittedOffset
		}
	}
	return out
}

// readAll reads every partition from 0 to its high watermark.
func readAll(ctx context.Context, t *testing.T, c *client.Client, hw map[int32]int64) []Stored {
	t.Helper()
	var out []Stored
	for p, h := range hw {
		next := int64(0)
		for next < h {
			res, err := c.Poll(ctx, topic, p, next, client.PollOptions{MaxRecords: 1000, Wait: time.Second})
			if err != nil {
				t.Fatalf("read %d@%d: %v", p, next, err)
			}
			for _, r := range res.Records {
				if r.Offset < next {
					t.Fatalf("read %d@%d returned offset %d", p, next, r.Offset)
				}
				out = append(out, Stored{Partition: p, Offset: r.Offset, Key: r.Key, Value: r.Value})
			}
			if res.NextOffset <= next && len(res.Records) == 0 {
				t.Fatalf("read %d@%d made no progress below the high watermark %d", p, next, h)
			}
			next = res.NextOffset
		}
	}
	return out
}

// lineCounter counts the lines the server logged (warnings and errors) and keeps the
// first few for the report.
type lineCounter struct {
	n     atomic.Int64
	mu    sync.Mutex
	first bytes.Buffer
}

func (w *lineCounter) Write(b []byte) (int, error) {
	w.n.Add(int64(bytes.Count(b, []byte("\n"))))
	w.mu.Lock()
	// The SDK's warnings (e.g. a checksum not verified on a lost answer's body) are
	// counted, not kept.
	if w.first.Len() < 16<<10 && !bytes.Contains(b, []byte("source=aws-sdk")) {
		w.first.Write(b)
	}
	w.mu.Unlock()
	return len(b), nil
}

func sum(m map[string]int64) int64 {
	var s int64
	for _, v := range m {
		s += v
	}
	return s
}

func randomID() string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
