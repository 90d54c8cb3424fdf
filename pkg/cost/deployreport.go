package cost

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// KinesisConsumerSeconds is the billed duration of one Lambda invocation of a Kinesis
// event source mapping's batch (about 1 MB of 1 KB records, one shard-second's): an
// assumption, not measured; KinesisConsumerMemoryMB its memory (the example
// consumer's).
const (
	KinesisConsumerSeconds  = 0.1
	KinesisConsumerMemoryMB = 256
)

// KinesisWithConsumers prices Kinesis provisioned with the KPL (KinesisProvisioned)
// and each group's consumer a Lambda function behind an event source mapping per
// shard: the mapping polls each shard once a second (its GetRecords are free) and
// invokes the function with what it read, so an invocation per shard-second per
// group, with Lambda's platform records in its log stream (the default system log
// level, INFO).
func KinesisWithConsumers(o Options) Estimate { return KinesisWithConsumersAt(o, true) }

// KinesisWithConsumersAt is KinesisWithConsumers with the consumer function's platform
// records priced only when platformRecords says its system log level writes them: a
// comparison sets the Kinesis consumer's level as Strata's consumer function has it.
func KinesisWithConsumersAt(o Options, platformRecords bool) Estimate {
	e := KinesisProvisioned(o, true)
	e.Name = "Kinesis provisioned, KPL + Lambda consumers"
	pr, w := o.Prices, o.Workload
	shards := KPLFlowOf(o).Shards
	shards = math.Max(shards, math.Ceil(float64(w.Groups)*w.EventsPerSec*w.EventBytes/(2*mib)))
	inv := shards * float64(w.Groups) * secondsPerDay
	e.add("consumer Lambda requests", inv, pr.LambdaRequest)
	e.add("consumer Lambda GB-seconds", inv*KinesisConsumerSeconds*KinesisConsumerMemoryMB/1024, pr.LambdaGBSecondArm)
	if platformRecords {
		e.add("consumer platform log records (GB)", inv*PlatformLogBytes/1e9, pr.LogsIngestGB)
	}
	return e
}

// MSKProvisioned prices Amazon MSK provisioned over three AZs, brokers sized as
// KafkaEC2's (kafka.m5.2xlarge, 150 MiB/s each), storage for the replicas, and
// consumers fetching from followers in their own AZ: replication inside the cluster is
// not billed, producers reach a leader in another AZ two times in three.
func MSKProvisioned(o Options) Estimate {
	pr, w, k := o.Prices, o.Workload, o.Kafka
	in := w.EventsPerSec * w.EventBytes / mib
	rf := float64(k.Replication)
	traffic := in*rf + in*(rf-1) + in*float64(w.Groups)
	brokers := math.Max(3, 3*math.Ceil(math.Ceil(traffic/k.BrokerMiBps)/3))
	gbDay := w.EventsPerSec * w.EventBytes * secondsPerDay / gib
	diskGB := gbDay * w.Retention.Hours() / 24 * rf / k.DiskFill
	e := Estimate{Name: "MSK provisioned, fetch from follower"}
	e.add(fmt.Sprintf("broker-hours (%.0f kafka.m5.2xlarge)", brokers), brokers*24, pr.MSKBrokerHour)
	e.add("storage (GB-month)", diskGB/daysPerMonth, pr.MSKStorageGBMonth)
	e.add("cross-AZ transfer, producers (GB)", gbDay*2/3, pr.CrossAZGB)
	return e
}

// MSKServerless prices Amazon MSK Serverless: the cluster, its partitions, data in and
// out, and storage of one copy.
func MSKServerless(o Options) Estimate {
	pr, w := o.Prices, o.Workload
	gbDay := w.EventsPerSec * w.EventBytes * secondsPerDay / gib
	e := Estimate{Name: "MSK Serverless"}
	e.add("cluster-hours", 24, pr.MSKSClusterHour)
	e.add("partition-hours", float64(w.Partitions)*24, pr.MSKSPartitionHour)
	e.add("data in (GB)", gbDay, pr.MSKSInGB)
	e.add("data out (GB)", gbDay*float64(w.Groups), pr.MSKSOutGB)
	e.add("storage (GB-month)", gbDay*w.Retention.Hours()/24/daysPerMonth, pr.MSKSStorageGBMonth)
	return e
}

// WarpStreamAgents is the agents an estimate of WarpStream runs: one m7g.xlarge per AZ.
const WarpStreamAgents = 3

// WarpStream estimates WarpStream BYOC from its published pricing (estimated: not
// re-read here): the write fee per uncompressed GiB and the cluster fee, plus what runs
// in the user's account — the agents, S3 storage and the agents' S3 requests (each
// agent PUTs a file every 250 ms and readers GET each about once per group).
func WarpStream(o Options) Estimate {
	pr, w := o.Prices, o.Workload
	gbDay := w.EventsPerSec * w.EventBytes * secondsPerDay / gib
	puts := WarpStreamAgents * 4 * secondsPerDay
	e := Estimate{Name: "WarpStream BYOC (estimated)"}
	e.add("write fee (GiB)", gbDay, pr.WarpStreamWriteGiB)
	e.add("cluster fee (hours)", 24, pr.WarpStreamClusterHr)
	e.add("agent instance-hours", WarpStreamAgents*24, pr.WarpStreamAgentHour)
	e.add("S3 storage (GB-month)", gbDay*w.Retention.Hours()/24/daysPerMonth, pr.S3StorageGBMonth)
	e.add("S3 PUT", puts, pr.S3Put)
	e.add("S3 GET", puts*float64(w.Groups), pr.S3Get)
	return e
}

// Headline is one row of the headline comparison: Strata's deployment against
// Kinesis with its consumers at the same linger, and the anchors.
type Headline struct {
	Groups                   int
	Retention                time.Duration
	Producers                int
	Strata, Kinesis          float64 // $/day
	StrataAck, KinesisAck    time.Duration
	Members                  float64 // producer requests per segment object
	Design                   Design
	MSK, MSKServerless, Warp float64
	Ratio                    float64 // Strata / Kinesis
}

// Headlines prices the deployment as r ran it at 10, 100 and 1,000 producers, 1 and 3
// groups, 24 h and 7 days, beside Kinesis (KPL + Lambda consumers) at the same linger,
// its consumer functions at the system log level of r's consumer.
func Headlines(base Options, r Run) []Headline {
	var out []Headline
	for _, g := range []int{1, 3} {
		for _, ret := range []time.Duration{24 * time.Hour, 7 * 24 * time.Hour} {
			for _, n := range []int{10, 100, 1000} {
				o := base
				o.Workload.Groups, o.Workload.Retention, o.Producers.Count = g, ret, n
				d := PriceDeployment(o, r.ModelOf(), r)
				k := KinesisWithConsumersAt(o, r.ConsumerPlatformRecords())
				h := Headline{Groups: g, Retention: ret, Producers: n, Strata: d.PerDay(), Kinesis: k.PerDay(),
					StrataAck: d.Flow.AckFloor, KinesisAck: KPLFlowOf(o).AckFloor, Members: d.Flow.MembersPerAppend, Design: d.Design,
					MSK: MSKProvisioned(o).PerDay(), MSKServerless: MSKServerless(o).PerDay(), Warp: WarpStream(o).PerDay()}
				h.Ratio = h.Strata / h.Kinesis
				out = append(out, h)
			}
		}
	}
	return out
}

// CostRunCommand is the command that reruns the cost run and rewrites its tables.
const CostRunCommand = "scripts/bench-cost.sh --run"

// CostRuns are the committed cost runs docs/BENCHMARKS.md's tables come from: the
// default stack's (API Gateway, the api on demand), and when not nil the default stack's
// api behind the function URL (URL), the headline design with independent producers
// (Headline) and with producers aligned to the clock (Aligned).
type CostRuns struct {
	Default                Run
	URL, Headline, Aligned *Run
}

// DeploymentTables writes docs/BENCHMARKS.md's cost-run section in Markdown from runs:
// each run's workload and its per-line table at 10 producers, 1 group, 24 h, then the
// headline comparison of them. base is the design workload's options.
func DeploymentTables(out io.Writer, base Options, runs CostRuns) {
	r := runs.Default
	fmt.Fprintf(out, "Cost run of %s: `%s` drove %d producers (linger %s) appending %d records of %d B in %d requests (%d partition batches) "+
		"over %d partitions for %.0f s through the synthesized stack, one group consuming (the example consumer, its own table's writes left out), "+
		"schedules on a clock where a minute lasts %.0f s%s. Scaled to 50,000 events/s of 1 KB, %d partitions, us-east-1 list prices (pkg/cost/prices.go).\n\n",
		r.Date, CostRunCommand, r.Producers, time.Duration(r.LingerSeconds*float64(time.Second)), r.Records, r.RecordBytes, r.Appends, r.Blocks,
		r.Partitions, r.Seconds, r.MinuteSeconds, compactedWorkload(r), base.Workload.Partitions)
	perLine(out, base, r)
	if u := runs.URL; u != nil {
		fmt.Fprintf(out, "Cost run of the default stack behind the function URL, %s: `%s %s` synthesized the stack with `strata:frontDoor=function-url` "+
			"(no API Gateway; the api on demand, an object per request) and drove the default run's workload: %d producers (linger %s) appending %d records "+
			"in %d requests (%d partition batches) for %.0f s.\n\n",
			u.Date, CostRunCommand, u.Config, u.Producers, time.Duration(u.LingerSeconds*float64(time.Second)), u.Records, u.Appends, u.Blocks, u.Seconds)
		perLine(out, base, *u)
	}
	for _, run := range []*Run{runs.Headline, runs.Aligned} {
		if run == nil {
			continue
		}
		h := *run
		var puts int64
		envs := 0
		for _, q := range h.Requests {
			if q.Function == "api" && q.API == "S3.PutObject" {
				puts += q.Requests
			}
		}
		puts -= h.CompactedAppends // the compacted topic's, one object each
		for _, f := range h.Functions {
			if f.Function == "api" {
				envs = f.Environments
			}
		}
		fmt.Fprintf(out, "Cost run of the headline design%s, %s: `%s %s` synthesized the stack with the function URL as its front door and the api "+
			"on Lambda Managed Instances (group-commit window %.0f ms, budget %d B), ran the api in %d execution environment(s) of %d concurrent invocations "+
			"each (the template's minimum and its per-environment concurrency) and drove %d producers (linger %s) appending %d records in %d requests "+
			"for %.0f s. The requests of one environment merged into %d segment objects: %.2f members per object, the model's %.2f "+
			"(`Run.MembersPerObject`: the batches the window cuts the run's arrival times into; a Poisson stream at the run's %.1f requests/s would merge "+
			"1 + λW = %.2f%s). %s\n\n",
			alignedName(h), h.Date, CostRunCommand, h.Config, h.GroupCommitWindowSeconds*1000, h.GroupCommitBudgetBytes, envs, h.APIConcurrency, h.Producers,
			time.Duration(h.LingerSeconds*float64(time.Second)), h.Records, h.Appends, h.Seconds, puts, float64(h.Appends)/math.Max(float64(puts), 1),
			h.MembersPerObject(), h.AppendRatePerEnvironment(), 1+h.AppendRatePerEnvironment()*h.GroupCommitWindowSeconds, arrivals(h), atTarget(base, h))
		perLine(out, base, h)
	}

	fmt.Fprintln(out, "Headline, equal linger (1 s; the ack floors below), both sides paying for their consumers. The default stack is API Gateway and the "+
		"api on demand (an object per request); the function URL column the same api on demand behind its function URL (the default stack's ack floor: "+
		"the front door adds no wait); the headline design the function URL and the api on Managed Instances, requests merging per environment "+
		"(the tier's flow: at least 3 environments at the target, more as the requests' CPU needs), its producers independent (a round a linger after "+
		"its first record) or aligned to the clock (`AlignLinger`, the slots `AlignSlotsFor` sizes). The goal is held to the cheapest of the "+
		"function URL, headline and aligned columns: a choice of the stack's settings and the producers' configuration, per cell:")
	fmt.Fprintln(out)
	headline, aligned, url := runs.Headline, runs.Aligned, runs.URL
	if headline == nil {
		headline = &r
	}
	if aligned == nil {
		aligned = headline
	}
	if url == nil {
		url = headline
	}
	fmt.Fprintln(out, "| groups | retention | producers | default stack $/day | ack floor | ÷ Kinesis | function URL, on demand $/day | ÷ Kinesis | "+
		"headline design $/day | ack floor | members per object | ÷ Kinesis | aligned producers $/day | members per object | ÷ Kinesis | goal (cheapest) | "+
		"Kinesis KPL + Lambda consumers $/day | ack floor | MSK provisioned | MSK Serverless | WarpStream (estimated) |")
	fmt.Fprintln(out, "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	def, fu, best, al := Headlines(base, r), Headlines(base, *url), Headlines(base, *headline), Headlines(base, *aligned)
	for i, d := range def {
		u, h, a := fu[i], best[i], al[i]
		goal := "—"
		if g, ok := HeadlineGoal(h.Groups, h.Retention, h.Producers); ok {
			goal = fmt.Sprintf("≤ %.1f×: ", g)
			if min(u.Ratio, h.Ratio, a.Ratio) <= g {
				goal += "met"
			} else {
				goal += "**not met**"
			}
		}
		fmt.Fprintf(out, "| %d | %s | %d | %s | %s | %.2f× | %s | %.2f× | %s | %s | %.2f | %.2f× | %s | %.2f | %.2f× | %s | %s | %s | %s | %s | %s |\n",
			h.Groups, retention(h.Retention), h.Producers, usd(d.Strata), ms(d.StrataAck), d.Ratio, usd(u.Strata), u.Ratio,
			usd(h.Strata), ms(h.StrataAck), h.Members, h.Ratio, usd(a.Strata), a.Members, a.Ratio, goal,
			usd(h.Kinesis), ms(h.KinesisAck), usd(h.MSK), usd(h.MSKServerless), usd(h.Warp))
	}
	fmt.Fprintln(out)
	pr := base.Prices
	fmt.Fprintf(out, "Anchors' prices: MSK %s (%s), MSK Serverless (%s), WarpStream %s (%s); every price's source and date is in pkg/cost/prices.go.\n",
		pr.MSKBrokerHour.Unit, pr.MSKBrokerHour.Source, pr.MSKSClusterHour.Source, pr.WarpStreamWriteGiB.Unit, pr.WarpStreamWriteGiB.Date)
}

// alignedName names a run of aligned producers in its table's caption.
func alignedName(r Run) string {
	if r.AlignSlots > 0 {
		return " with producers aligned to the clock"
	}
	return ""
}

// arrivals says how the run's producers sent: aligned to the clock, or a linger after
// their first record.
func arrivals(r Run) string {
	if r.AlignSlots > 0 {
		return fmt.Sprintf(": its producers aligned their rounds to the clock (the SDK's AlignLinger, %d slot(s)), so each period's requests "+
			"arrived together and merged", r.AlignSlots)
	}
	return ", the loaded emulator's slow acknowledgements bunched the producers' requests"
}

// atTarget says how the requests of the headline design's producers reach its api at
// the target, for the caption of r's table.
func atTarget(base Options, r Run) string {
	if r.AlignSlots == 0 {
		return "At the target the requests of many independent producers arrive as a Poisson stream: 1 + λW members, λ the requests per environment."
	}
	var slots []string
	for _, n := range []int{10, 100, 1000} {
		o := base
		o.Producers.Count = n
		slots = append(slots, fmt.Sprint(r.Configure(o).Producers.AlignSlots))
	}
	return "At the target the fleet's aligned producers send a period's requests in bursts, the slots `AlignSlotsFor` sizes to fit the tier's " +
		"least instances (" + strings.Join(slots, " / ") + " at 10 / 100 / 1,000 producers); a batch takes an instance's share of a burst, " +
		"at most the budget."
}

// compactedWorkload describes the run's compacted topic for its table's caption: ""
// when it had none.
func compactedWorkload(r Run) string {
	if r.CompactedTopics == 0 {
		return ""
	}
	return fmt.Sprintf("; beside it a compacted topic of %d partition(s) took %d keyed records in %d requests as the run started "+
		"(the same keys overwritten: the dirty-ratio trigger's writes and a pass it asked for, and every scheduled compaction pass reading the partition; "+
		"none rewrites, as no record is older than compact.HeadGuard, 10 minutes). The design workload has no compacted topic: "+
		"the compaction lines' drivers are zero at the target, and compaction at a compacted workload is `CompactionCost`'s model (docs/BENCHMARKS.md, \"Compaction\")",
		r.CompactedPartitions, r.CompactedKeys, r.CompactedAppends)
}

// perLine writes run r's per-line table at 10 producers, 1 group, 24 h.
func perLine(out io.Writer, base Options, r Run) {
	o := base
	o.Workload.Groups, o.Producers.Count = 1, 10
	d := PriceDeployment(o, r.ModelOf(), r)
	bytes := map[string][2]int64{}
	for _, q := range r.Requests {
		k := q.Function + " " + q.API + " " + q.Resource
		b := bytes[k]
		bytes[k] = [2]int64{b[0] + q.BytesSent, b[1] + q.BytesReceived}
	}
	fmt.Fprintf(out, "Per line, %s, 10 producers, 1 group, 24 h (%d requests/s, %.3g objects/s; GB-seconds are priced at the modelled "+
		"service times, not the run's timings, which on a shared 2-core machine are upper bounds; instance-hours at the tier's instances; "+
		"Lambda's platform records at the functions' system log level, %s):\n\n", d.Design, int(math.Round(d.Flow.ProducerRequestsPerSec)), d.Flow.AppendsPerSec, r.SystemLogLevels())
	fmt.Fprintln(out, "| function | API / item | resource | driver | run count | run bytes out / in | per driver (run) | per driver (model) | per day | billed | $/day |")
	fmt.Fprintln(out, "|---|---|---|---|--:|--:|--:|--:|--:|--:|--:|")
	for _, l := range d.Lines {
		run, rate, bio := "—", "—", "—"
		if l.Measured {
			run, rate = fmt.Sprintf("%.0f", l.RunCount), fmt.Sprintf("%.3g", l.RunRate)
			if b, ok := bytes[l.Function+" "+l.API+" "+l.Resource]; ok {
				bio = fmt.Sprintf("%d / %d", b[0], b[1])
			}
		}
		model := "—"
		if l.API != "" && !strings.Contains(l.API, " ") && l.Function != "CloudWatch" && l.Function != "storage" && l.Function != "HTTP API" &&
			l.API != "Lambda.GB-seconds" && l.API != "CloudWatchLogs.platform" {
			model = fmt.Sprintf("%.3g", l.ModelRate)
		}
		drv := l.Driver.String()
		if !l.Measured && model == "—" {
			drv = "—"
		}
		fmt.Fprintf(out, "| %s | %s | %s | %s | %s | %s | %s | %s | %.4g | %.4g %s | %s |\n", l.Function, l.API, l.Resource, drv,
			run, bio, rate, model, l.PerDay, l.Units, l.Unit, usd(l.USD))
	}
	fmt.Fprintf(out, "| **total** | | | | | | | | | | **%s** |\n\n", usd(d.PerDay()))
}

// HeadlineGoal is the deployment's cost goal against Kinesis with its consumers at
// equal ack floor, 24 h retention: at most 1.0× at 10 and 100 producers and 1.5× at
// 1,000 with one group, 0.8× at 10 and 100 with three; ok is false where none is set.
func HeadlineGoal(groups int, ret time.Duration, producers int) (float64, bool) {
	if ret != 24*time.Hour {
		return 0, false
	}
	switch {
	case groups == 1 && (producers == 10 || producers == 100):
		return 1.0, true
	case groups == 1 && producers == 1000:
		return 1.5, true
	case groups == 3 && (producers == 10 || producers == 100):
		return 0.8, true
	}
	return 0, false
}

func retention(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%d d", d/(24*time.Hour))
	}
	return d.String()
}
