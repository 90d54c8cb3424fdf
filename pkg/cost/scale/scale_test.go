package scale

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/stratalog/strata/pkg/cost/measure"
	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/store/awstest"
)

// TestInputsAreMeasured ties the model's per-append inputs to what the deployed code
// sends: the emulator's counts of idempotent appends (the SDK's) on one and four
// partitions, through pkg/cost/measure, must equal Profile's.
func TestInputsAreMeasured(t *testing.T) {
	ctx := context.Background()
	cfg := awstest.Config(ctx, t)
	res, err := measure.Run(ctx, cfg, measure.Options{Appends: 2, RecordsPerAppend: 4, Idempotent: true, Appenders: 2, GroupRounds: 1, NoRetry: true})
	if err != nil {
		t.Fatal(err)
	}
	got, want := res.Profile, Profile()
	t.Logf("measured %+v", got)
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"S3 PUT per append", got.PutsPerAppend, want.PutsPerAppend},
		{"DynamoDB writes per append beside the topic commit (a claim per request; none under fenced idempotency)", got.WritesPerAppend, want.WritesPerAppend},
		{"topic commit UpdateItem per append", got.TopicCommitsPerAppend, want.TopicCommitsPerAppend},
		{"per-partition sequencer UpdateItem per block", got.UpdatesPerBlock, want.UpdatesPerBlock},
		{"index PutItem per block", got.PutItemsPerBlock, want.PutItemsPerBlock},
		{"claim PutItem per block", got.ClaimsPerBlock, want.ClaimsPerBlock},
		{"DynamoDB reads per append", got.ReadsPerAppend, want.ReadsPerAppend},
		{"DynamoDB reads per append block", got.ReadsPerAppendBlk, want.ReadsPerAppendBlk},
		{"S3 GET per block read", got.GetsPerBlock, want.GetsPerBlock},
	} {
		if c.got != c.want {
			t.Errorf("%s: measured %v, the model uses %v", c.name, c.got, c.want)
		}
	}
	// What varies with the run is bounded from above.
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"DynamoDB reads per tail poll", got.ReadsPerPoll, want.ReadsPerPoll},
		{"index item bytes", got.IndexItemBytes, want.IndexItemBytes},
		{"stored bytes per value byte", got.StoredBytesPerByte, want.StoredBytesPerByte},
	} {
		if c.got > c.want {
			t.Errorf("%s: measured %v, above the model's bound %v", c.name, c.got, c.want)
		}
	}
}

// TestEvaluate checks the model's rates against hand-derived ones, case by case.
func TestEvaluate(t *testing.T) {
	rate := func(r Result, name string) float64 {
		for _, l := range r.Limits {
			if l.Name == name {
				return l.Rate
			}
		}
		t.Fatalf("no limit %q", name)
		return 0
	}
	for _, tc := range []struct {
		name  string
		c     Config
		limit string
		want  float64
	}{
		// Each SDK round touches every partition: a partition's commits/s are the
		// producers' rounds/s, whatever the partition count.
		{"commits per partition = rounds", Config{EventsPerSec: 5e6, Producers: 1000, Linger: 1e9, Partitions: 8, Topics: 1, Groups: 1},
			"index writes/s (one partition's key)", 1000},
		{"commits per partition at 2 s linger", Config{EventsPerSec: 5e6, Producers: 1000, Linger: 2e9, Partitions: 64, Topics: 1, Groups: 1},
			"index writes/s (one partition's key)", 500},
		// Every request is one batch: one write of the topic item, 1 WCU below 1 KB.
		{"topic item: one write per request", Config{EventsPerSec: 50000, Producers: 10, Linger: 1e9, Partitions: 8, Topics: 1, Groups: 1},
			"topic sequencer item writes/s (its partition key, WCU)", 20},
		// 64 partitions: 200 + 27·64 + 31·32 bytes = 2,920 (cost.TopicItemBytes), 3 WCU a write.
		{"topic item: billed by its size", Config{EventsPerSec: 50000, Producers: 10, Linger: 1e9, Partitions: 64, Topics: 1, Groups: 1},
			"topic sequencer item writes/s (its partition key, WCU)", 20 * 3},
		{"a partition's bytes", Config{EventsPerSec: 50000, Producers: 10, Linger: 1e9, Partitions: 8, Topics: 1, Groups: 1},
			"a partition's read bytes/s (one group's consumer)", 50000 * 1024 / 8},
		{"topics split the bytes", Config{EventsPerSec: 50000, Producers: 10, Linger: 1e9, Partitions: 8, Topics: 5, Groups: 1},
			"a partition's read bytes/s (one group's consumer)", 50000 * 1024 / 40},
		{"GETs per prefix: a block per partition per round per group", Config{EventsPerSec: 5e6, Producers: 1000, Linger: 1e9, Partitions: 8, Topics: 1, Groups: 3},
			"S3 GET/s (one topic's prefix)", 3 * 1000 * 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rate(Evaluate(tc.c), tc.limit); math.Abs(got-tc.want) > 1e-6*tc.want {
				t.Errorf("%s = %v, want %v", tc.limit, got, tc.want)
			}
		})
	}
}

// TestTune: the brief's rate fits as deployed; at each scale the tuned configuration
// with topics fits, and a scale's first limit is named.
func TestTune(t *testing.T) {
	if r := Evaluate(Default(50000)); !r.Fits(Use) {
		t.Errorf("the brief's rate does not fit the default shape: %s at %.0f%%", r.First().Name, 100*r.First().Use())
	}
	for _, s := range Scales {
		r, ok := Tune(s, Use, 64)
		if !ok || !r.Fits(Use) {
			t.Errorf("%v events/s: no tuned configuration fits (%s at %.0f%%)", s, r.First().Name, 100*r.First().Use())
		}
		if r.CostPerDay <= 0 || r.AckFloor <= 0 {
			t.Errorf("%v events/s: cost %v, ack floor %v", s, r.CostPerDay, r.AckFloor)
		}
	}
	if r := Evaluate(Default(5e6)); r.Fits(1) {
		t.Errorf("5M events/s fits the default shape: the model lost a limit")
	}
}

// TestBenchmarksTableIsGenerated: docs/BENCHMARKS.md's scale tables are the generator's
// output (`go run ./internal/benchscale --doc docs/BENCHMARKS.md` rewrites them), so a
// change to the model that does not regenerate them fails here.
func TestBenchmarksTableIsGenerated(t *testing.T) {
	b, err := os.ReadFile("../../../docs/BENCHMARKS.md")
	if err != nil {
		t.Fatal(err)
	}
	got, err := InDoc(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if want := Generated(); got != want {
		t.Fatalf("docs/BENCHMARKS.md's scale tables differ from the model's; run go run ./internal/benchscale --doc docs/BENCHMARKS.md\n--- doc\n%s\n--- model\n%s", got, want)
	}
}

// TestRetentionAndManagedCeilings: at every scale, default and tuned, a retention pass
// (one topic's invocation) finishes within its schedule, and the api's ceiling on
// Managed Instances is the stack's own sizing (deploy.ManagedEnvironments × 32), which
// a tuned configuration's request rate fits.
func TestRetentionAndManagedCeilings(t *testing.T) {
	for _, s := range Scales {
		d := Evaluate(Default(s))
		tuned, _ := Tune(s, Use, 64)
		for _, r := range []Result{d, tuned} {
			if p := RetentionPass(r.Config); p <= 0 || p > RetentionInterval {
				t.Errorf("%v events/s, %s: a retention pass takes %s, past its %s schedule", s, r.Config.Describe(), p, RetentionInterval)
			}
			var mi *Limit
			for i, l := range r.Limits {
				if strings.HasPrefix(l.Name, "api invocations in flight") {
					mi = &r.Limits[i]
				}
			}
			want := deploy.ManagedEnvironments(r.Config.expectedRPS(), r.Config.Tier, deploy.DefaultPerEnvironmentConcurrency, 0) * deploy.DefaultPerEnvironmentConcurrency
			if mi == nil || mi.Max != float64(want) {
				t.Fatalf("%v events/s: Managed Instances ceiling %+v, want %d in flight", s, mi, want)
			}
			if r.Config == tuned.Config && mi.Use() > Use {
				t.Errorf("%v events/s tuned: %.0f in flight of %.0f", s, mi.Rate, mi.Max)
			}
		}
	}
	// The README's deployment at 5M events/s: 1,000 producers' requests, each held the
	// 500 ms window + 100 ms, fill the default sizing's ceiling.
	if r := Evaluate(Default(5e6)); !strings.HasPrefix(r.Limits[1].Name, "api invocations in flight") {
		t.Errorf("5M events/s as deployed: the second limit is %q, want the api's invocations in flight", r.Limits[1].Name)
	}
}
