package cost

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// committedRun is the cost run docs/BENCHMARKS.md's tables come from
// (scripts/bench-cost.sh --run writes it).
func committedRun(t *testing.T) Run {
	t.Helper()
	return readRun(t, "testdata/costrun.json")
}

// committedHeadline is the cost run of the headline design (scripts/bench-cost.sh
// --run headline writes it).
func committedHeadline(t *testing.T) Run {
	t.Helper()
	return readRun(t, "testdata/costrun-headline.json")
}

// committedAligned is the cost run of the headline design with producers aligned to
// the clock (scripts/bench-cost.sh --run aligned writes it).
func committedAligned(t *testing.T) Run {
	t.Helper()
	return readRun(t, "testdata/costrun-aligned.json")
}

// committedURL is the cost run of the default stack behind the function URL
// (scripts/bench-cost.sh --run url writes it).
func committedURL(t *testing.T) Run {
	t.Helper()
	return readRun(t, "testdata/costrun-url.json")
}

// committedRuns are the committed cost runs: the default stack's, the headline
// design's, the headline design's with aligned producers, and the default stack's
// behind the function URL.
func committedRuns(t *testing.T) []Run {
	t.Helper()
	return []Run{committedRun(t), committedHeadline(t), committedAligned(t), committedURL(t)}
}

// committedManaged are the committed runs of the api on Managed Instances.
func committedManaged(t *testing.T) []Run {
	t.Helper()
	return []Run{committedHeadline(t), committedAligned(t)}
}

func readRun(t *testing.T, path string) Run {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r Run
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestDeploymentModelHoldsToTheCommittedRun: every line of the committed cost runs (the
// default stack's and the headline design's) has a model line within Tolerance (the
// live check is internal/stackrun's TestCostRunMatchesTheModel).
func TestDeploymentModelHoldsToTheCommittedRun(t *testing.T) {
	for _, r := range committedRuns(t) {
		for _, err := range CheckRun(r.ModelOf(), r) {
			t.Errorf("run %q: %v", r.Config, err)
		}
	}
}

// TestObjectsMergeAsTheRunDid: on demand every request is its own object; in the
// headline run the requests of one environment merged, and the objects the api wrote
// (its S3 PutObject and topic commits) are the merge model's within Tolerance; a wider
// window merges more, an empty budget nothing.
func TestObjectsMergeAsTheRunDid(t *testing.T) {
	def := committedRun(t)
	if n, b := def.Objects(); n != float64(def.Appends) || b != float64(def.Blocks) {
		t.Errorf("default stack: %v objects of %v blocks from %d appends of %d blocks: want one per append", n, b, def.Appends, def.Blocks)
	}
	for _, h := range committedManaged(t) {
		objectsMerged(t, h)
	}
	if u := committedURL(t); u.ManagedInstances || !u.OnFunctionURL() {
		t.Errorf("the function URL run: front door %q, Managed Instances %v: want the function URL and the api on demand", u.FrontDoor, u.ManagedInstances)
	} else if n, _ := u.Objects(); n != float64(u.Appends) {
		t.Errorf("the function URL run: %v objects from %d appends: want one per append", n, u.Appends)
	}
	// Aligned producers' requests reach the api together: many more merge.
	if h, a := committedHeadline(t), committedAligned(t); a.AlignSlots == 0 || a.MembersPerObject() < 2*h.MembersPerObject() {
		t.Errorf("aligned run (%d slots): %.2f members per object, independent producers %.2f: want at least twice as many",
			a.AlignSlots, a.MembersPerObject(), h.MembersPerObject())
	}
}

// objectsMerged checks run h of the headline design as TestObjectsMergeAsTheRunDid says.
func objectsMerged(t *testing.T, h Run) {
	t.Helper()
	if !h.ManagedInstances || h.GroupCommitWindowSeconds <= 0 {
		t.Fatalf("the headline run is not on Managed Instances with a window: %+v", h.Config)
	}
	want, _ := h.Objects()
	var puts, commits float64
	for _, q := range h.Requests {
		switch {
		case q.Function == "api" && q.API == "S3.PutObject":
			puts += float64(q.Requests)
		case q.Function == "api" && q.API == "DynamoDB.UpdateItem" && q.Resource == "sequencer":
			commits += float64(q.Requests)
		}
	}
	// The compacted topic's appends are left out of Appends: one object and commit each.
	puts -= float64(h.CompactedAppends)
	commits -= float64(h.CompactedAppends)
	if h.MembersPerObject() <= 1.1 || float64(h.Appends)/puts <= 1.1 {
		t.Errorf("run %q: %.2f members per object by the model, %.2f counted: the requests did not merge", h.Config, h.MembersPerObject(), float64(h.Appends)/puts)
	}
	for name, got := range map[string]float64{"S3 PutObject": puts, "topic commits": commits} {
		if d := got - want; d > Tolerance*got || d < -Tolerance*got {
			t.Errorf("run %q: %s %v, the merge model's objects %.1f: more than %.0f%% apart", h.Config, name, got, want, 100*Tolerance)
		}
	}
	wide := h
	wide.GroupCommitWindowSeconds *= 2
	if wide.MembersPerObject() <= h.MembersPerObject() {
		t.Errorf("a window twice as wide merges %v members, not more than %v", wide.MembersPerObject(), h.MembersPerObject())
	}
	tight := h
	tight.GroupCommitBudgetBytes = 1
	if tight.MembersPerObject() != 1 {
		t.Errorf("a 1-byte budget merges %v members, want 1", tight.MembersPerObject())
	}
}

// TestCheckRunFailsOnWhatTheModelLacks: a request the model has no line for, a log
// line per append the model does not price, and a count 20% off each fail the check, on
// both committed runs.
func TestCheckRunFailsOnWhatTheModelLacks(t *testing.T) {
	base := committedRun(t)
	cases := []struct {
		name   string
		change func(*Run)
		want   string
	}{
		{"new API", func(r *Run) {
			r.Requests = append(r.Requests, RunRequest{Function: "api", API: "DynamoDB.GetItem", Resource: "leases", Requests: r.Appends, Items: r.Appends})
		}, "model has no line"},
		{"log line per append", func(r *Run) {
			for i := range r.Functions {
				if r.Functions[i].Function == "api" {
					r.Functions[i].LogLines += r.Appends
					r.Functions[i].LogBytes += 200 * r.Appends
				}
			}
		}, "api CloudWatchLogs.ingest"},
		{"a request more per append", func(r *Run) {
			for i := range r.Requests {
				if r.Requests[i].Function == "api" && r.Requests[i].API == "S3.PutObject" {
					r.Requests[i].Requests += r.Appends / 5
				}
			}
		}, "api S3.PutObject"},
	}
	for _, base := range append([]Run{base}, committedRuns(t)[1:]...) {
		for _, c := range cases {
			t.Run(c.name+" "+base.Config, func(t *testing.T) {
				r := base
				r.Requests = append([]RunRequest(nil), base.Requests...)
				r.Functions = append([]RunFunction(nil), base.Functions...)
				c.change(&r)
				errs := CheckRun(r.ModelOf(), r)
				var found bool
				for _, err := range errs {
					found = found || strings.Contains(err.Error(), c.want)
				}
				if !found {
					t.Fatalf("CheckRun = %v, want an error naming %q", errs, c.want)
				}
			})
		}
	}
}

// TestEveryCountedLineIsPriced: each API the committed run counted has a price (or a
// stated reason it costs nothing), none falls through as unknown.
func TestEveryCountedLineIsPriced(t *testing.T) {
	for _, r := range committedRuns(t) {
		d := PriceDeployment(Defaults(10), r.ModelOf(), r)
		for _, l := range d.Lines {
			if strings.Contains(l.Unit, "unknown") {
				t.Errorf("run %q: %s %s on %q is not priced", r.Config, l.Function, l.API, l.Resource)
			}
		}
	}
}

const docsBegin, docsEnd = "<!-- cost-run:begin (generated by pkg/cost DeploymentTables) -->\n", "<!-- cost-run:end -->"

// TestCostRunTablesInTheDocs: docs/BENCHMARKS.md's cost-run tables are
// DeploymentTables' output for the committed run; STRATA_UPDATE_DOCS=1 rewrites them.
func TestCostRunTablesInTheDocs(t *testing.T) {
	var want bytes.Buffer
	u, h, a := committedURL(t), committedHeadline(t), committedAligned(t)
	DeploymentTables(&want, Defaults(10), CostRuns{Default: committedRun(t), URL: &u, Headline: &h, Aligned: &a})
	path := "../../docs/BENCHMARKS.md"
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i, j := strings.Index(s, docsBegin), strings.Index(s, docsEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q … %q section", path, docsBegin, docsEnd)
	}
	got := s[i+len(docsBegin) : j]
	if got == want.String() {
		return
	}
	if os.Getenv("STRATA_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(path, []byte(s[:i+len(docsBegin)]+want.String()+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's cost-run tables are not DeploymentTables' output: rerun STRATA_UPDATE_DOCS=1 go test ./pkg/cost -run TestCostRunTablesInTheDocs\nwant:\n%s", path, want.String())
}

// TestHeadlineAtEqualAckFloors: every headline row compares Strata and Kinesis at ack
// floors within 50 ms of each other, both paying for their consumers.
func TestHeadlineAtEqualAckFloors(t *testing.T) {
	for _, r := range committedRuns(t) {
		for _, h := range Headlines(Defaults(10), r) {
			if d := h.StrataAck - h.KinesisAck; d > 50*time.Millisecond || d < -50*time.Millisecond {
				t.Errorf("run %q, %d groups, %v, %d producers: ack floors %v and %v are more than 50 ms apart", r.Config, h.Groups, h.Retention, h.Producers, h.StrataAck, h.KinesisAck)
			}
		}
	}
	o := Defaults(10)
	k, bare := KinesisWithConsumers(o), KinesisProvisioned(o, true)
	if k.PerDay() <= bare.PerDay() {
		t.Errorf("Kinesis with consumers $%.2f/day, without $%.2f: the consumers cost nothing", k.PerDay(), bare.PerDay())
	}
	if warn := KinesisWithConsumersAt(o, false); warn.PerDay() >= k.PerDay() || warn.PerDay() <= bare.PerDay() {
		t.Errorf("Kinesis consumers at WARN $%.2f/day, at INFO $%.2f, without consumers $%.2f: WARN must drop the platform records only",
			warn.PerDay(), k.PerDay(), bare.PerDay())
	}
	// Both sides at one level: the committed runs' consumers log at WARN, and so is the
	// Kinesis consumer priced beside them.
	for _, r := range committedRuns(t) {
		if r.ConsumerPlatformRecords() {
			continue
		}
		for _, h := range Headlines(Defaults(10), r) {
			o := Defaults(10)
			o.Workload.Groups, o.Workload.Retention, o.Producers.Count = h.Groups, h.Retention, h.Producers
			if want := KinesisWithConsumersAt(o, false).PerDay(); h.Kinesis != want {
				t.Errorf("run %q, %d groups, %d producers: Kinesis $%.2f/day, want $%.2f at the consumer's WARN", r.Config, h.Groups, h.Producers, h.Kinesis, want)
			}
		}
	}
}

// TestWindowBatchesOfAPoissonStream: requests arriving as a Poisson stream at rate λ
// are cut by a window w into batches of 1 + λw on average — the merge the target's
// independent producers get — and the budget caps a batch's members.
func TestWindowBatchesOfAPoissonStream(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct{ rate, w float64 }{{20, 0.03}, {100, 0.03}, {333, 0.03}, {50, 0.2}} {
		var times []float64
		for at := 0.0; len(times) < 200000; {
			at += rng.ExpFloat64() / c.rate
			times = append(times, at)
		}
		got := float64(len(times)) / float64(WindowBatches(times, c.w, 1<<30))
		if want := 1 + c.rate*c.w; math.Abs(got-want) > 0.02*want {
			t.Errorf("λ %v, w %v: %.3f members a batch, want 1 + λw = %.3f", c.rate, c.w, got, want)
		}
	}
	times := []float64{0.5, 0, 0.01, 0.02, 0.05}
	for fit, want := range map[int]int{1 << 30: 3, 2: 3, 1: 5} {
		// {0, 0.01, 0.02} {0.05} {0.5}; two at most: {0, 0.01} {0.02, 0.05} {0.5}.
		if n := WindowBatches(times, 0.03, fit); n != want {
			t.Errorf("window 30 ms, at most %d members: %d batches, want %d", fit, n, want)
		}
	}
}

// TestPlatformRecordsPricedAtTheSystemLogLevel: Lambda's platform records are priced
// for every invocation of a function at the system log level INFO or DEBUG, and for
// none at WARN (the run's only failed invocations are the emulator's); a run whose
// functions name no level (one from before the stack set it) prices as INFO.
func TestPlatformRecordsPricedAtTheSystemLogLevel(t *testing.T) {
	var legacy Run
	if err := json.Unmarshal([]byte(`{"functions":[{"function":"api","invocations":3}]}`), &legacy); err != nil {
		t.Fatal(err)
	}
	if f := legacy.Functions[0]; f.SystemLogLevel != "" || !f.PlatformRecords() {
		t.Errorf("a run function without system_log_level: level %q, platform records %v; want \"\" (INFO), true", f.SystemLogLevel, f.PlatformRecords())
	}
	o := Defaults(10)
	for _, base := range committedRuns(t) {
		at := func(level string) Deployment {
			r := base
			r.Functions = slices.Clone(base.Functions)
			for i := range r.Functions {
				r.Functions[i].SystemLogLevel = level
			}
			return PriceDeployment(o, r.ModelOf(), r)
		}
		info := at("INFO")
		for _, c := range []struct {
			level    string
			platform bool
		}{{"", true}, {"INFO", true}, {"DEBUG", true}, {"WARN", false}} {
			d := at(c.level)
			var platform float64
			for _, l := range d.Lines {
				if l.API != "CloudWatchLogs.platform" {
					continue
				}
				platform += l.USD
				var inv float64
				for _, m := range d.Lines {
					if m.Function == l.Function && m.API == InvokedAPI {
						inv = m.PerDay
					}
				}
				if want := inv * PlatformLogBytes / 1e9 * o.Prices.LogsIngestGB.USD; math.Abs(l.USD-want) > 1e-9 {
					t.Errorf("run %q, level %q: %s platform records $%.4f, want %.0f invocations × %d B = $%.4f", base.Config, c.level, l.Function, l.USD, inv, PlatformLogBytes, want)
				}
			}
			if c.platform && platform == 0 {
				t.Errorf("run %q, level %q: no platform records priced", base.Config, c.level)
			}
			if !c.platform && platform != 0 {
				t.Errorf("run %q, level %q: platform records priced at $%.4f, want none", base.Config, c.level, platform)
			}
			if want := info.PerDay(); c.platform && math.Abs(d.PerDay()-want) > 1e-9 {
				t.Errorf("run %q, level %q: $%.4f/day, want INFO's $%.4f", base.Config, c.level, d.PerDay(), want)
			}
			if !c.platform {
				var infoPlatform float64
				for _, l := range info.Lines {
					if l.API == "CloudWatchLogs.platform" {
						infoPlatform += l.USD
					}
				}
				if want := info.PerDay() - infoPlatform; math.Abs(d.PerDay()-want) > 1e-9 {
					t.Errorf("run %q, level %q: $%.4f/day, want INFO's less its platform records, $%.4f", base.Config, c.level, d.PerDay(), want)
				}
			}
		}
	}
}

// TestCompactionAtTheDesignWorkload: the design workload has no compacted topic, so the
// compaction function's lines are its scheduled passes' alone (CompactionPassesPerDay
// invocations, a topic listing each), every line driven by a compacted topic prices
// nothing, and the committed runs, which had one, counted its partition passes.
func TestCompactionAtTheDesignWorkload(t *testing.T) {
	for _, r := range committedRuns(t) {
		if r.CompactedTopics == 0 || r.Drivers("compact")[PerCompactedPartitionPass] == 0 {
			t.Errorf("run %q: no compacted topic or no partition pass of it (%d topics)", r.Config, r.CompactedTopics)
		}
		d := PriceDeployment(Defaults(10), r.ModelOf(), r)
		var invocations float64
		for _, l := range d.Lines {
			if l.Function == "compact" && l.API == InvokedAPI {
				invocations = l.PerDay
			}
		}
		if math.Abs(invocations-CompactionPassesPerDay) > 1e-6 {
			t.Errorf("run %q: compaction invocations %.1f a day at the design workload, want its %.0f scheduled passes", r.Config, invocations, CompactionPassesPerDay)
		}
		target := TargetDrivers(Defaults(10), r.Design())
		for _, m := range r.ModelOf() {
			if m.Function == "compact" && m.Driver() != PerCompactionPass && m.Count(target) != 0 {
				t.Errorf("run %q: %s prices %.1f a day without a compacted topic", r.Config, m.Key(), m.Count(target))
			}
		}
	}
}
