package cost

import (
	"math"
	"sort"
	"strings"
)

// PlatformLogBytes is what Lambda itself writes to a function's log stream per
// invocation at the system log level INFO (Lambda's default), in the JSON log format
// the stack sets: a platform.start record (about 130 bytes) and a platform.report
// record (about 300), CloudWatch's 26 bytes of event overhead each included. At WARN
// (the stack's default) Lambda writes them for failed invocations only. The emulator
// writes its own text lines instead, so the run counts invocations and this prices
// them.
const PlatformLogBytes = 2*26 + 130 + 300

// LogEventOverhead is the bytes CloudWatch Logs counts per log event beside its message.
const LogEventOverhead = 26

// Priced is one line of a day of the target workload.
type Priced struct {
	Function, API, Resource string
	Driver                  Driver
	// RunCount is what the run counted (0 when only the model has the line) and
	// RunRate that per unit of Driver; ModelRate is the model's.
	RunCount, RunRate, ModelRate float64
	Measured                     bool
	// PerDay is requests (bytes for logs, invocations) a day at the target.
	PerDay float64
	// Units are the billed units a day (write or read units, GB, GB-seconds).
	Units float64
	Unit  string
	USD   float64
}

// Deployment is a day of the target workload on the deployed stack.
type Deployment struct {
	Lines  []Priced
	Flow   Flow
	Design Design
}

// PerDay is the deployment's $/day.
func (d Deployment) PerDay() float64 {
	var t float64
	for _, l := range d.Lines {
		t += l.USD
	}
	return t
}

// PriceDeployment prices a day of o's workload on the stack as r ran it: each line the
// run counted at the run's rate per unit of its driver, each model line the run did
// not reach at the model's rate, scaled to o's drivers (TargetDrivers); then what no
// request shows — invocations' GB-seconds (the api's at the modelled service time, the
// consumer's held all day, dispatch's and retention's at their requests' service
// time), Lambda's platform log records (of every invocation of a function at the
// system log level INFO or DEBUG; none at WARN, RunFunction.PlatformRecords), API
// Gateway, storage, custom metrics, alarms and the dashboard.
//
// The design is the run's (Run.Design, Run.Configure): the default stack's one object
// per request behind API Gateway, or the headline design's merged objects behind the
// function URL, where the api's Managed Instances are billed by the instance-hour
// instead of its GB-seconds.
func PriceDeployment(o Options, model []ModelLine, r Run) Deployment {
	o = r.Configure(o)
	pr, w := o.Prices, o.Workload
	design := r.Design()
	target := TargetDrivers(o, design)
	dep := Deployment{Flow: FlowOf(o, design), Design: design}
	byKey := map[string]ModelLine{}
	for _, l := range model {
		byKey[l.Key()] = l
	}
	seen := map[string]bool{}
	fns := map[string]RunFunction{}
	for _, f := range r.Functions {
		fns[f.Function] = f
	}
	add := func(p Priced) { dep.Lines = append(dep.Lines, p) }
	for _, ob := range r.Lines() {
		m, ok := byKey[ob.Key()]
		if !ok {
			m = line(ob.Function, ob.API, ob.Resource, PerSecond, 0, "not in the model")
		}
		seen[ob.Key()] = true
		// The run's count scaled by the model's mix of drivers: the model's count at
		// the target times the run's count over the model's at the run.
		runDrivers := r.Drivers(ob.Function)
		modelRun := m.Count(runDrivers)
		perDay := ob.Count / math.Max(runDrivers[m.Driver()], 1e-9) * target[m.Driver()]
		if modelRun > 0 {
			perDay = m.Count(target) * ob.Count / modelRun
		}
		p := Priced{Function: ob.Function, API: ob.API, Resource: ob.Resource, Driver: m.Driver(),
			RunCount: ob.Count, RunRate: ob.Count / math.Max(runDrivers[m.Driver()], 1e-9), ModelRate: m.Terms[0].Rate,
			Measured: true, PerDay: perDay}
		priceLine(&p, ob, dep.Flow, w, pr)
		add(p)
	}
	for _, m := range model {
		if seen[m.Key()] {
			continue
		}
		p := Priced{Function: m.Function, API: m.API, Resource: m.Resource, Driver: m.Driver(), ModelRate: m.Terms[0].Rate,
			PerDay: m.Count(target)}
		priceLine(&p, Observed{Function: m.Function, API: m.API, Resource: m.Resource, Count: 1, Items: 1}, dep.Flow, w, pr)
		add(p)
	}

	// Invocations: GB-seconds and Lambda's platform records.
	for _, f := range r.Functions {
		var inv float64
		for _, l := range dep.Lines {
			if l.Function == f.Function && l.API == InvokedAPI {
				inv = l.PerDay
			}
		}
		gb := float64(f.MemoryMB) / 1024
		var seconds float64
		switch {
		case f.Function == "api" && design.aggregated():
			// Managed Instances: the instances' hours and Lambda's management fee on
			// them, whatever the invocations' durations.
			hours := float64(dep.Flow.Instances) * 24
			add(Priced{Function: f.Function, API: "Managed Instances", Driver: PerSecond, PerDay: hours, Units: hours,
				Unit: pr.ManagedInstanceHour.Unit, USD: hours * pr.ManagedInstanceHour.USD * (1 + pr.LambdaMIFee.USD)})
		case f.Function == "api":
			recs := dep.Flow.RecordsPerRequest
			seconds = inv * (o.Latency.Service().Seconds() + recs*o.Serving.CPUPerRecord.Seconds())
		case f.Function == "consumer":
			seconds = target[PerConsumerSecond] // held the whole time, caught up or not
		default:
			// Its AWS requests one after another at a DynamoDB request's service time,
			// plus Lambda's own overhead: the emulator's timings (BusySeconds) are a
			// loaded machine's, not Lambda's.
			if f.Invocations > 0 {
				var reqs float64
				for _, q := range r.Requests {
					if q.Function == f.Function && !strings.HasPrefix(q.API, "DynamoDBStreams.") {
						reqs += float64(q.Requests)
					}
				}
				per := reqs / float64(f.Invocations)
				seconds = inv * (per*o.Latency.DynamoWrite.Seconds() + o.Latency.API.Seconds())
			}
		}
		if seconds > 0 || !design.aggregated() || f.Function != "api" {
			add(Priced{Function: f.Function, API: "Lambda.GB-seconds", Driver: PerSecond, PerDay: seconds,
				Units: seconds * gb, Unit: "GB-second", USD: seconds * gb * pr.LambdaGBSecondArm.USD})
		}
		if f.PlatformRecords() {
			bytes := inv * PlatformLogBytes
			add(Priced{Function: f.Function, API: "CloudWatchLogs.platform", Driver: PerSecond, PerDay: bytes,
				Units: bytes / 1e9, Unit: "GB ingested", USD: bytes / 1e9 * pr.LogsIngestGB.USD})
		}
	}

	// API Gateway: each append request, metered per 512 KB.
	reqUnits := math.Max(1, math.Ceil(dep.Flow.RecordsPerRequest*o.Producers.EncodedRecordBytes/(512*1024)))
	if !o.Serving.FunctionURL {
		n := target[PerAppend]
		add(Priced{Function: "HTTP API", API: "APIGateway.requests", Driver: PerAppend, PerDay: n,
			Units: n * reqUnits, Unit: pr.APIGatewayHTTP.Unit, USD: n * reqUnits * pr.APIGatewayHTTP.USD})
	}

	// Storage: the segment objects and the index entries retained, the log groups'
	// stored logs (compressed about 5×, kept LogRetention).
	retainSec := w.Retention.Seconds()
	storedGB := w.EventsPerSec * w.EventBytes * o.Profile.StoredBytesPerByte * retainSec / gib
	add(Priced{Function: "storage", API: "S3 storage", Resource: "bucket", PerDay: storedGB, Units: storedGB / daysPerMonth,
		Unit: "GB-month", USD: storedGB / daysPerMonth * pr.S3StorageGBMonth.USD})
	indexGB := target[PerObjectBlock] / secondsPerDay * retainSec * o.Profile.IndexItemBytes / gib
	add(Priced{Function: "storage", API: "DynamoDB storage", Resource: "index", PerDay: indexGB, Units: indexGB / daysPerMonth,
		Unit: "GB-month", USD: indexGB / daysPerMonth * pr.DynamoStorageGBMonth.USD})
	// Expired index entries: retention leaves them to the table's TTL, whose deletes
	// are free (one a day per entry written a day, once the retention has passed).
	ttl := target[PerObjectBlock]
	add(Priced{Function: "storage", API: "DynamoDB TTL deletes", Resource: "index", PerDay: ttl, Units: ttl,
		Unit: "delete (free: DynamoDB TTL)"})

	// CloudWatch: the custom metrics the functions' EMF documents define (those of a
	// group once per group), the template's alarms and dashboards.
	var metrics, groupMetrics float64
	distinct := map[string]bool{}
	for _, f := range r.Functions {
		for _, m := range f.Metrics {
			if distinct[m] {
				continue
			}
			distinct[m] = true
			if strings.Contains(m, "group=") {
				groupMetrics++
			} else {
				metrics++
			}
		}
	}
	groups := math.Max(1, float64(r.Groups))
	n := metrics + groupMetrics/groups*float64(w.Groups)
	add(Priced{Function: "CloudWatch", API: "custom metrics", PerDay: n, Units: n / daysPerMonth, Unit: "metric-month",
		USD: n / daysPerMonth * pr.CustomMetricMonth.USD})
	alarms := float64(r.Alarms)
	add(Priced{Function: "CloudWatch", API: "alarms", PerDay: alarms, Units: alarms / daysPerMonth, Unit: "alarm-month",
		USD: alarms / daysPerMonth * pr.AlarmMonth.USD})
	dash := float64(r.Dashboards)
	add(Priced{Function: "CloudWatch", API: "dashboards", PerDay: dash, Units: dash / daysPerMonth, Unit: "dashboard-month",
		USD: dash / daysPerMonth * pr.DashboardMonth.USD})
	sort.SliceStable(dep.Lines, func(i, j int) bool { return dep.Lines[i].USD > dep.Lines[j].USD })
	return dep
}

// priceLine prices p's requests a day by its API: S3 requests at their class's
// price (deletes free), DynamoDB writes at the write units the run's proxy sized from
// their items (ob.WriteUnits, transactions' already twice) or, for a run
// recorded without them, in write units of the run's request bytes per item (an upper
// bound of the item: the request holds expressions and names too; transactions
// twice), reads in 4 KB read units of the answer (the eventually consistent share of
// the requests, ob.EventualReads, at half), streams reads free from a Lambda trigger,
// Lambda's Invoke billed as the invoked function's invocation, log bytes (with
// CloudWatch's per-event overhead) at the ingestion price.
func priceLine(p *Priced, ob Observed, flow Flow, w Workload, pr Prices) {
	perReq := func(x float64) float64 { return x / math.Max(ob.Count, 1) }
	items := math.Max(1, perReq(ob.Items))
	switch api := p.API; {
	case api == InvokedAPI:
		p.Units, p.Unit, p.USD = p.PerDay, "request", p.PerDay*pr.LambdaRequest.USD
	case api == LogsAPI:
		lines := perReq(ob.LogLines) * p.PerDay / math.Max(perReq(ob.Count), 1)
		bytes := p.PerDay + lines*LogEventOverhead
		p.Units, p.Unit, p.USD = bytes/1e9, "GB ingested", bytes/1e9*pr.LogsIngestGB.USD
	case api == "S3.PutObject" || strings.HasPrefix(api, "S3.List") || api == "S3.CopyObject" || api == "S3.MultipartUpload":
		p.Units, p.Unit, p.USD = p.PerDay, "request", p.PerDay*pr.S3Put.USD
	case api == "S3.GetObject" || api == "S3.HeadObject":
		p.Units, p.Unit, p.USD = p.PerDay, "request", p.PerDay*pr.S3Get.USD
	case strings.HasPrefix(api, "S3.Delete"):
		p.Units, p.Unit = p.PerDay, "request (free)"
	case api == "DynamoDB.UpdateItem" && p.Function == "api" && p.Resource == "sequencer":
		// The topic commit: billed by the topic item's size at the target's partitions
		// (those of one object).
		u := TopicCommitWRU(w.Partitions, flow.BlocksPerAppend)
		p.Units, p.Unit, p.USD = p.PerDay*u, "write unit", p.PerDay*u*pr.DynamoWRU.USD
	case api == "DynamoDB.PutItem" || api == "DynamoDB.UpdateItem" || api == "DynamoDB.DeleteItem" || api == "DynamoDB.BatchWriteItem" ||
		api == "DynamoDB.TransactWriteItems":
		wru := items * itemWRU(perReq(ob.BytesSent)/items)
		if api == "DynamoDB.TransactWriteItems" {
			wru *= 2
		}
		if ob.WriteUnits > 0 {
			wru = perReq(ob.WriteUnits)
		}
		p.Units, p.Unit, p.USD = p.PerDay*wru, "write unit", p.PerDay*wru*pr.DynamoWRU.USD
	case api == "DynamoDB.GetItem" || api == "DynamoDB.Query" || api == "DynamoDB.Scan" || api == "DynamoDB.BatchGetItem":
		rru := math.Max(1, math.Ceil(perReq(ob.BytesRecv)/4096))
		rru *= 1 - math.Min(1, perReq(ob.EventualReads))/2
		p.Units, p.Unit, p.USD = p.PerDay*rru, "read unit", p.PerDay*rru*pr.DynamoRRU.USD
	case api == "DynamoDB.TransactGetItems":
		rru := 2 * items * math.Max(1, math.Ceil(perReq(ob.BytesRecv)/items/4096))
		p.Units, p.Unit, p.USD = p.PerDay*rru, "read unit", p.PerDay*rru*pr.DynamoRRU.USD
	case strings.HasPrefix(api, "DynamoDBStreams."):
		p.Units, p.Unit = p.PerDay, "request (free from a Lambda trigger)"
	case api == "Lambda.Invoke":
		p.Units, p.Unit = p.PerDay, "request (billed as the invoked function's invocation)"
	case strings.HasPrefix(api, "ssm:"), strings.HasPrefix(api, "SSM."):
		p.Units, p.Unit = p.PerDay, "request (standard parameters: free)"
	default:
		p.Units, p.Unit = p.PerDay, "request (not priced: unknown API)"
	}
}
