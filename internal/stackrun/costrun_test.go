package stackrun_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/stackrun"
	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/cost"
	"github.com/stratalog/strata/pkg/deploy"
)

// The cost run's scaled-down workload: producers of the SDK lingering as the design's
// do, 1 KB order records over a two-partition topic consumed by the example consumer,
// on the stack's own schedules (a minute lasting costRunMinute).
const (
	costRunPartitions = 2
	costRunMinute     = 2 * time.Second
)

// The cost run's compacted topic: a few keys of one partition overwritten in a few
// rounds as the run starts, so that the api writes the key index and the dirty-ratio
// trigger's counter and claim (the second round supersedes half the partition) and
// asks for a pass, and every scheduled pass fans out to the partition and reads it. No
// record of the run is older than compact.HeadGuard (10 minutes), so no pass rewrites:
// the rewrites' requests are compaction's model (pkg/cost.CompactionCost), not counted.
const (
	costRunCompactedTopic = "profiles"
	costRunCompactedKeys  = 4
	costRunCompactedRound = 3
)

// costRunConfig is one stack configuration the cost run measures: its CDK context
// beside the example's, and how many producers drive it at what rate each.
type costRunConfig struct {
	name      string // "" the default stack
	context   map[string]string
	producers int
	every     time.Duration // between one producer's records
	linger    time.Duration
	// alignSlots > 0: the producers align their rounds to the clock in that many slots
	// (client.ProducerConfig.AlignLinger, AlignSlots).
	alignSlots int
}

// costRunConfigs: the default stack (API Gateway, the api on demand: one object per
// request) and the headline design — the function URL, the api on Lambda Managed
// Instances with a 30 ms group-commit window (its ack floor within 50 ms of the KPL's at
// the same linger) and a 4 MiB budget — driven by enough producers that the requests
// of one execution environment merge, with few records a request (the example
// consumer's transaction per record is what a loaded emulator keeps up with least).
// Its producers linger 2 s, longer than a loaded
// emulator's append takes, and start at random phases: their requests arrive spread as
// independent producers' do (each round due a linger after its first record), not in
// step with the acknowledgements of a slow store, which would keep the requests of
// one batch together round after round and merge more than the design's producers.
// "aligned" is the headline design with the same producers aligning their rounds to the
// clock (AlignLinger) in 4 slots: each round goes at its slot's tick of the shared 2 s
// grid, whatever the producer's phase or the store's speed, so a slot's requests reach
// the api together as a fleet's aligned producers' do, a burst every 0.5 s (the
// target's at 100 producers, 2 slots of a 1 s linger), which keeps the consumer from
// going idle between bursts. "url" is the default stack's api and workload behind the
// function URL instead of API Gateway: the api on demand, an object per request, which
// at a low request rate (nothing to merge) costs less than Managed Instances' floor.
var costRunConfigs = map[string]costRunConfig{
	"":         {producers: 2, every: time.Second / 40, linger: 250 * time.Millisecond},
	"url":      {name: "url", producers: 2, every: time.Second / 40, linger: 250 * time.Millisecond, context: map[string]string{"strata:frontDoor": "function-url"}},
	"headline": {name: "headline", producers: 24, every: 666 * time.Millisecond, linger: 2 * time.Second, context: headlineContext},
	"aligned":  {name: "aligned", producers: 24, every: 666 * time.Millisecond, linger: 2 * time.Second, alignSlots: 4, context: headlineContext},
}

// headlineContext is the headline design's stack configuration.
var headlineContext = map[string]string{
	"strata:frontDoor": "function-url", "strata:managedInstances": "true", "strata:expectedRequestsPerSecond": "100",
	"strata:groupCommitWindowMs": "30", "strata:groupCommitBudgetBytes": "4194304",
}

// costRunConfigOf is the configuration STRATA_COST_RUN_CONFIG names ("" or "default":
// the default stack).
func costRunConfigOf(t *testing.T) costRunConfig {
	name := os.Getenv("STRATA_COST_RUN_CONFIG")
	if name == "default" {
		name = ""
	}
	c, ok := costRunConfigs[name]
	if !ok {
		t.Fatalf("STRATA_COST_RUN_CONFIG=%q: want default, url, headline or aligned", name)
	}
	return c
}

// costRunSeconds is how long the cost run drives the stack; STRATA_COST_RUN_SECONDS
// lengthens it for the tables of docs/BENCHMARKS.md (scripts/bench-cost.sh --run).
func costRunSeconds(t *testing.T) time.Duration {
	if s := os.Getenv("STRATA_COST_RUN_SECONDS"); s != "" {
		d, err := time.ParseDuration(s + "s")
		if err != nil {
			t.Fatalf("STRATA_COST_RUN_SECONDS=%q: %v", s, err)
		}
		return d
	}
	return 40 * time.Second
}

// TestCostRunMatchesTheModel drives a scaled-down workload through the synthesized
// stack (every function from the cloud assembly, the schedules, the stream mapping,
// the example consumer as deployed), counts every AWS request each function makes and
// every byte it writes to its log stream, and holds pkg/cost's deployment model to it:
// each (function, API, resource) and log line the run observes must have a model
// line, within 10% of the run's count. It runs only with STRATA_COST_RUN=1
// (scripts/bench-cost.sh --run): the stack takes minutes to synthesize and start, too
// long for every test run. STRATA_COST_RUN_OUT names a file to write the
// run's counts to (the input of docs/BENCHMARKS.md's cost tables);
// STRATA_COST_RUN_CONFIG names another configuration (url, headline, aligned: costRunConfigs).
func TestCostRunMatchesTheModel(t *testing.T) {
	if os.Getenv("STRATA_COST_RUN") != "1" {
		t.Skip("the cost run synthesizes and runs the stack for minutes: scripts/bench-cost.sh --run runs it (STRATA_COST_RUN=1); " +
			"pkg/cost's TestDeploymentModelHoldsToTheCommittedRun checks the model against the committed run on every test run")
	}
	cfg := costRunConfigOf(t)
	cdk := map[string]string{
		"strata:exampleTopic": exampleTopic,
		"strata:exampleGroup": exampleGroup,
		"strata:apiGrants":    operatorGrants,
	}
	for k, v := range cfg.context {
		cdk[k] = v
	}
	st := stackrun.Start(t, stackrun.Options{
		Context: cdk,
		Callers: []stackrun.Caller{{Principal: operator, Statements: []stackrun.Statement{{Effect: "Allow",
			Actions: []string{"execute-api:Invoke", "lambda:InvokeFunctionUrl", "lambda:InvokeFunction"}, Resources: []string{"{api}/*", "{function}"}}}}},
		Minute:    costRunMinute,
		Instances: costRunPartitions + 1,
	})
	defer func() {
		if t.Failed() {
			t.Logf("stack run summary:\n%s", st.Summary())
		}
	}()
	ctx := context.Background()
	var op *client.Client
	if st.APIURL != "" {
		op = sdk(t, st.APIURL, signed(operator, nil))
	} else {
		op = sdk(t, st.FunctionURL, signedLambda(operator))
	}
	if _, err := op.CreateTopic(ctx, exampleTopic, client.TopicConfig{Partitions: costRunPartitions}); err != nil {
		t.Fatal(err)
	}
	if _, err := op.SetGroupSettings(ctx, exampleGroup, client.GroupSettings{ResetPolicy: "earliest", MaxAttempts: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := op.CreateTopic(ctx, costRunCompactedTopic, client.TopicConfig{Partitions: 1, Cleanup: client.CleanupCompact}); err != nil {
		t.Fatal(err)
	}
	for _, f := range st.Functions {
		f.Proxy.ResetRequests()
		f.ResetLogs()
	}
	st.ResetRoutes()
	start := time.Now()
	zero := int32(0)
	for round := range costRunCompactedRound {
		recs := make([]client.Record, costRunCompactedKeys)
		for k := range recs {
			recs[k] = client.Record{Key: fmt.Appendf(nil, "profile-%d", k), Value: fmt.Appendf(nil, `{"round":%d}`, round), Partition: &zero}
		}
		if _, err := op.Append(ctx, costRunCompactedTopic, recs, client.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	producersBegan := time.Now()
	dur := costRunSeconds(t)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		stats client.ProducerStats
	)
	pad := strings.Repeat("x", 1024-len(`{"order_id":"o-00-000000","amount":1,"pad":""}`))
	var producing time.Duration
	for i := range cfg.producers {
		wg.Go(func() {
			if cfg.producers > 2 {
				time.Sleep(rand.N(cfg.linger))
			}
			began := time.Now()
			p, err := client.NewProducer(ctx, op, exampleTopic, client.ProducerConfig{Linger: cfg.linger,
				AlignLinger: cfg.alignSlots > 0, AlignSlots: cfg.alignSlots})
			if err != nil {
				t.Error(err)
				return
			}
			tick := time.NewTicker(cfg.every)
			defer tick.Stop()
			for n := 0; time.Since(start) < dur; n++ {
				<-tick.C
				v := fmt.Sprintf(`{"order_id":"o-%02d-%06d","amount":1,"pad":"%s"}`, i, n, pad)
				if _, err := p.Send(ctx, client.Record{Key: fmt.Appendf(nil, "customer-%d", n%16), Value: []byte(v)}); err != nil {
					t.Error(err)
					return
				}
			}
			if err := p.Close(ctx); err != nil {
				t.Error(err)
			}
			s := p.Stats()
			mu.Lock()
			producing += time.Since(began)
			stats.Requests += s.Requests
			stats.Retries += s.Retries
			stats.Frames += s.Frames
			stats.Batches += s.Batches
			stats.RecordsSent += s.RecordsSent
			mu.Unlock()
		})
	}
	wg.Wait()
	// Let the consumer catch up (on a loaded machine it lags: until it has read as many
	// index entries as the api wrote for its topic, at most a minute) and the schedules
	// tick once more before counting.
	tally := func(role, api, resource string) (n int64) {
		for _, f := range st.Functions {
			if functionRole(f.Description) == role {
				for _, r := range f.Proxy.Requests() {
					if r.API == api && r.Resource != "" && strings.Contains(r.Resource, resource) {
						n += r.Requests
					}
				}
			}
		}
		return n
	}
	for caught := time.Now().Add(time.Minute); time.Now().Before(caught); time.Sleep(time.Second) {
		// The compacted topic's index entries and key entries share the index table: no
		// consumer reads them.
		if tally("consumer", "S3.GetObject", "") >= tally("api", "DynamoDB.PutItem", "index")-costRunCompactedRound*(1+costRunCompactedKeys) {
			break
		}
	}
	time.Sleep(2 * costRunMinute)
	elapsed := time.Since(start)
	if stats.Retries > 0 {
		t.Logf("the producers retried %d requests (a loaded emulator): counted as sent", stats.Retries)
	}

	routes := st.RouteInvocations()
	appends, describes := routes["POST /v1/topics/{topic}/records"], routes["GET /v1/topics/{topic}"]
	run := cost.Run{
		Date: time.Now().UTC().Format("2006-01-02"), Seconds: elapsed.Seconds(), MinuteSeconds: costRunMinute.Seconds(),
		Partitions: costRunPartitions, Groups: 1, Producers: cfg.producers, ProducerSeconds: producing.Seconds(), Config: cfg.name,
		LingerSeconds: cfg.linger.Seconds(), Appends: int64(appends[0]) - costRunCompactedRound, Describes: int64(describes[0]),
		Blocks: stats.Batches, Records: stats.RecordsSent, RecordBytes: 1024, FailedInvocations: int64(appends[1] + describes[1]),
		CompactedTopics: 1, CompactedPartitions: 1, CompactedAppends: costRunCompactedRound, CompactedKeys: costRunCompactedRound * costRunCompactedKeys,
	}
	t.Logf("invocations by route (answered, failed): %v; producer stats %+v", routes, stats)
	run.FrontDoor = cfg.context["strata:frontDoor"]
	run.AlignSlots = cfg.alignSlots
	if cfg.context["strata:managedInstances"] == "true" {
		for _, a := range st.RouteArrivals("POST /v1/topics/{topic}/records") {
			if a.Before(producersBegan) {
				continue // the compacted topic's rounds, before the producers started
			}
			run.AppendArrivals = append(run.AppendArrivals, math.Round(a.Sub(start).Seconds()*1e4)/1e4)
		}
	}
	prefix := st.Name + "-"
	roles := map[string]string{}
	for _, f := range st.Functions {
		roles[f.Name] = functionRole(f.Description)
	}
	var resource func(name string) string
	resource = func(name string) string {
		if parts := strings.Split(name, "+"); len(parts) > 1 {
			for i, p := range parts {
				parts[i] = resource(p)
			}
			return strings.Join(parts, "+")
		}
		if r, ok := roles[name]; ok {
			return r
		}
		for _, id := range st.Template.OfType("AWS::S3::Bucket") {
			if st.Template.Name(id) == name {
				return "bucket"
			}
		}
		if name == businessTable(t, st) {
			return "business"
		}
		return strings.ReplaceAll(strings.TrimPrefix(name, prefix), prefix, "")
	}
	for _, f := range st.Functions {
		role := roles[f.Name]
		if role == "api" && f.Concurrency > 1 {
			run.ManagedInstances, run.APIConcurrency = true, f.Concurrency
			if w, err := time.ParseDuration(f.Env[deploy.EnvGroupCommitWindow]); err == nil {
				run.GroupCommitWindowSeconds = w.Seconds()
			}
			fmt.Sscan(f.Env[deploy.EnvGroupCommitBudget], &run.GroupCommitBudgetBytes)
		}
		n, _ := f.Invocations()
		ls := f.LogStream()
		if role == "api" {
			n -= int(run.FailedInvocations)
		}
		run.Functions = append(run.Functions, cost.RunFunction{Function: role, Invocations: int64(n),
			MemoryMB: f.MemoryMB, TimeoutSeconds: f.Timeout.Seconds(), SystemLogLevel: f.SystemLogLevel, BusySeconds: f.Busy().Seconds(), Environments: f.Environments(),
			LogLines: ls.Lines, LogBytes: ls.Bytes, EMFLines: ls.EMFLines, EMFBytes: ls.EMFBytes, Metrics: ls.Metrics})
		for _, r := range f.Proxy.Requests() {
			run.Requests = append(run.Requests, cost.RunRequest{Function: role, API: r.API, Resource: resource(r.Resource),
				Requests: r.Requests, Items: r.Items, BytesSent: r.BytesSent, BytesReceived: r.BytesReceived,
				WriteUnits: r.WriteUnits, EventualReads: r.EventualReads})
		}
	}
	for id, r := range st.ScheduleRuns() {
		var n int64
		fmt.Sscan(r[0], &n)
		run.Schedules = append(run.Schedules, cost.RunSchedule{Rule: id, Runs: n})
	}
	run.Alarms = len(st.Template.OfType("AWS::CloudWatch::Alarm"))
	run.Dashboards = len(st.Template.OfType("AWS::CloudWatch::Dashboard"))
	run.Normalise()
	b, _ := json.MarshalIndent(run, "", "  ")
	t.Logf("cost run:\n%s", b)
	if run.ManagedInstances {
		var puts int64
		for _, q := range run.Requests {
			if q.Function == "api" && q.API == "S3.PutObject" {
				puts += q.Requests
			}
		}
		t.Logf("cost: members per object: run %.3f (%d appends, %d objects), model %.3f", float64(run.Appends)/float64(max(puts, 1)), run.Appends, puts, run.MembersPerObject())
	}
	if out := os.Getenv("STRATA_COST_RUN_OUT"); out != "" {
		if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, err := range cost.CheckRun(run.ModelOf(), run) {
		t.Error(err)
	}
}

// functionRole names a function of the template by what it is for: api, dispatch,
// retention, consumer.
func functionRole(desc string) string {
	switch {
	case strings.HasPrefix(desc, "Strata example order consumer"):
		return "consumer"
	case strings.HasPrefix(desc, "Strata "):
		return strings.Fields(strings.TrimPrefix(desc, "Strata "))[0]
	}
	return desc
}
