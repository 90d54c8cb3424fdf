package stackrun_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stratalog/strata/internal/stackrun"
	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/cost"
)

// The cost run's scaled-down workload: a few producers of the SDK lingering as the
// design's do, 1 KB order records over a two-partition topic consumed by the example
// consumer, on the stack's own schedules (a minute lasting costRunMinute).
const (
	costRunPartitions = 2
	costRunProducers  = 2
	costRunRate       = 40 // records/s per producer
	costRunLinger     = 250 * time.Millisecond
	costRunMinute     = 2 * time.Second
)

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
// run's counts to (the input of docs/BENCHMARKS.md's cost tables).
func TestCostRunMatchesTheModel(t *testing.T) {
	if os.Getenv("STRATA_COST_RUN") != "1" {
		t.Skip("the cost run synthesizes and runs the stack for minutes: scripts/bench-cost.sh --run runs it (STRATA_COST_RUN=1); " +
			"pkg/cost's TestDeploymentModelHoldsToTheCommittedRun checks the model against the committed run on every test run")
	}
	st := stackrun.Start(t, stackrun.Options{
		Context: map[string]string{
			"strata:exampleTopic": exampleTopic,
			"strata:exampleGroup": exampleGroup,
			"strata:apiGrants":    operatorGrants,
		},
		Callers: []stackrun.Caller{{Principal: operator, Statements: []stackrun.Statement{{Effect: "Allow",
			Actions: []string{"execute-api:Invoke"}, Resources: []string{"{api}/*"}}}}},
		Minute:    costRunMinute,
		Instances: costRunPartitions + 1,
	})
	defer func() {
		if t.Failed() {
			t.Logf("stack run summary:\n%s", st.Summary())
		}
	}()
	ctx := context.Background()
	op := sdk(t, st.APIURL, signed(operator, nil))
	if _, err := op.CreateTopic(ctx, exampleTopic, client.TopicConfig{Partitions: costRunPartitions}); err != nil {
		t.Fatal(err)
	}
	if _, err := op.SetGroupSettings(ctx, exampleGroup, client.GroupSettings{ResetPolicy: "earliest", MaxAttempts: 3}); err != nil {
		t.Fatal(err)
	}
	for _, f := range st.Functions {
		f.Proxy.ResetRequests()
		f.ResetLogs()
	}
	st.ResetRoutes()
	start := time.Now()
	dur := costRunSeconds(t)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		stats client.ProducerStats
	)
	pad := strings.Repeat("x", 1024-len(`{"order_id":"o-00-000000","amount":1,"pad":""}`))
	for i := range costRunProducers {
		wg.Go(func() {
			p, err := client.NewProducer(ctx, op, exampleTopic, client.ProducerConfig{Linger: costRunLinger})
			if err != nil {
				t.Error(err)
				return
			}
			tick := time.NewTicker(time.Second / costRunRate)
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
			stats.Requests += s.Requests
			stats.Retries += s.Retries
			stats.Frames += s.Frames
			stats.Batches += s.Batches
			stats.RecordsSent += s.RecordsSent
			mu.Unlock()
		})
	}
	wg.Wait()
	// Let the consumer catch up and the schedules tick once more before counting.
	time.Sleep(2 * costRunMinute)
	elapsed := time.Since(start)
	if stats.Retries > 0 {
		t.Logf("the producers retried %d requests (a loaded emulator): counted as sent", stats.Retries)
	}

	routes := st.RouteInvocations()
	appends, describes := routes["POST /v1/topics/{topic}/records"], routes["GET /v1/topics/{topic}"]
	run := cost.Run{
		Date: time.Now().UTC().Format("2006-01-02"), Seconds: elapsed.Seconds(), MinuteSeconds: costRunMinute.Seconds(),
		Partitions: costRunPartitions, Groups: 1, Producers: costRunProducers, ProducerSeconds: float64(costRunProducers) * dur.Seconds(),
		LingerSeconds: costRunLinger.Seconds(), Appends: int64(appends[0]), Describes: int64(describes[0]),
		Blocks: stats.Batches, Records: stats.RecordsSent, RecordBytes: 1024, FailedInvocations: int64(appends[1] + describes[1]),
	}
	t.Logf("HTTP API invocations by route (answered, failed): %v; producer stats %+v", routes, stats)
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
		n, _ := f.Invocations()
		ls := f.LogStream()
		if role == "api" {
			n -= int(run.FailedInvocations)
		}
		run.Functions = append(run.Functions, cost.RunFunction{Function: role, Invocations: int64(n),
			MemoryMB: f.MemoryMB, TimeoutSeconds: f.Timeout.Seconds(), BusySeconds: f.Busy().Seconds(), Environments: f.Environments(),
			LogLines: ls.Lines, LogBytes: ls.Bytes, EMFLines: ls.EMFLines, EMFBytes: ls.EMFBytes, Metrics: ls.Metrics})
		for _, r := range f.Proxy.Requests() {
			run.Requests = append(run.Requests, cost.RunRequest{Function: role, API: r.API, Resource: resource(r.Resource),
				Requests: r.Requests, Items: r.Items, BytesSent: r.BytesSent, BytesReceived: r.BytesReceived})
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
	if out := os.Getenv("STRATA_COST_RUN_OUT"); out != "" {
		if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, err := range cost.CheckRun(cost.DeploymentModel(), run) {
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
