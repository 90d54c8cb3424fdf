// Package scale is an analytical model of the deployed design past what one machine can
// run: for a workload (events/s of 1 KB) and a configuration (producers, linger,
// partitions, topics, groups; by default the headline design, the README's: the api
// function's URL, on Managed Instances with the append tier's window, consumers once a
// second) it derives the request flow with pkg/cost's model (the SDK producer's rounds,
// the tier's batches, the per-append counts pkg/cost/measure counts on the emulator),
// sets every rate against AWS's published limit for it and against the stack's own
// ceilings (the api's execution environments, the retention pass's time), and prices it
// with pkg/cost's prices. It answers: what saturates first, which knob moves it, at what
// cost and ack latency.
package scale

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/cost"
	"github.com/stratalog/strata/pkg/deploy"
)

// AWS's published limits the model checks, each with where it is stated. Per-key and
// per-prefix limits are hard (a design must spread load); account and table quotas are
// defaults that a request to AWS raises.
const (
	// DynamoWritesPerKey: one partition key takes at most 1,000 write units/s
	// (DynamoDB Developer Guide, "Best practices for designing and using partition keys
	// effectively": a single partition supports 3,000 RCU and 1,000 WCU).
	DynamoWritesPerKey = 1000
	// DynamoReadsPerKey: likewise 3,000 read units/s (strongly consistent, 4 KB each).
	DynamoReadsPerKey = 3000
	// DynamoTableWrites / DynamoTableReads: on-demand tables' default throughput quota,
	// 40,000 request units/s each per table (DynamoDB Developer Guide, "Service, account,
	// and table quotas": per-table, adjustable).
	DynamoTableWrites = 40000
	DynamoTableReads  = 40000
	// S3PutsPerPrefix / S3GetsPerPrefix: 3,500 PUT/COPY/POST/DELETE and 5,500 GET/HEAD
	// requests/s per partitioned prefix (S3 User Guide, "Best practices design patterns:
	// optimizing Amazon S3 performance"). Strata's segment keys are
	// v1/<topic>/<incarnation>/<ULID>: one prefix per topic until S3 splits it.
	S3PutsPerPrefix = 3500
	S3GetsPerPrefix = 5500
	// LambdaConcurrency: concurrent executions per account and region, default 1,000
	// (Lambda Developer Guide, "Lambda quotas"; adjustable).
	LambdaConcurrency = 1000
	// LambdaScalePer10s: each function adds at most 1,000 execution environments every
	// 10 seconds (Lambda Developer Guide, "Lambda scaling behavior").
	LambdaScalePer10s = 1000
	// DynamoWarmWrites / DynamoWarmReads: a new on-demand table serves 4,000 write and
	// 12,000 read units/s at once (its warm throughput), and at any time up to twice its
	// previous peak; more within 30 minutes throttles unless the table is pre-warmed
	// (DynamoDB Developer Guide, "DynamoDB on-demand capacity mode", "warm throughput").
	DynamoWarmWrites = 4000
	DynamoWarmReads  = 12000
	// APIGatewayRPS: HTTP API requests/s per account and region, 10,000 steady (burst
	// 5,000) (API Gateway Developer Guide, "Amazon API Gateway quotas"; adjustable).
	APIGatewayRPS = 10000
	// StreamReadersPerShard: at most two processes read one DynamoDB Streams shard at
	// once (DynamoDB Developer Guide, "Change data capture for DynamoDB Streams").
	StreamReadersPerShard = 2
	// StreamReaders is how many the stack attaches to the sequencer's stream: dispatch.
	StreamReaders = 1
	// S3DeleteObjectsKeys: one DeleteObjects request deletes at most 1,000 keys, and one
	// ListObjectsV2 page lists at most 1,000 (S3 API Reference).
	S3DeleteObjectsKeys = 1000
)

// The stack's own ceilings the model checks (infra/strata; pkg/deploy sizes them).
const (
	// RetentionInterval is the retention schedule's period and RetentionTimeout the
	// function's timeout: one pass must finish within both.
	RetentionInterval = 5 * time.Minute
	RetentionTimeout  = 5 * time.Minute
	// Request times the retention pass's duration is modelled with (typical same-region
	// medians, not measured): a LIST page, a DeleteObjects of 1,000 keys, a DynamoDB
	// request.
	ListPageTime      = 50 * time.Millisecond
	DeleteObjectsTime = 250 * time.Millisecond
	DynamoRequestTime = 8 * time.Millisecond
)

// Model assumptions that are not AWS limits.
const (
	// PartitionReadBytes is what one group's consumer reads of one partition per second
	// at most: the model's 10 polls/s (cost.DefaultServing) of the 3 MiB poll cap.
	PartitionReadBytes = 10 * 3 << 20
	// EventsPerProducer sizes the fleet: one SDK producer per 5,000 events/s.
	EventsPerProducer = 5000
)

// Config is one deployment and fleet at one workload.
type Config struct {
	EventsPerSec float64
	Producers    int
	Linger       time.Duration
	Partitions   int
	Topics       int // the load spread evenly over this many topics (S3 prefixes)
	Groups       int
	// Tier is the api's group commit window on Managed Instances
	// (strata:groupCommitWindowMs); 0 is the api on demand, no tier.
	Tier time.Duration
	// ExpectedRPS is strata:expectedRequestsPerSecond, what the api's execution
	// environments are sized for on Managed Instances (0: the stack's default).
	ExpectedRPS float64
	// FunctionURL puts producers and consumers on the api function's URL, not API
	// Gateway; ConsumerWindow is strata:consumerBatchingWindowSeconds.
	FunctionURL    bool
	ConsumerWindow time.Duration
}

// HeadlineTier is the README's deployment's tier window (infra/README.md, "The
// configuration priced against Kinesis": strata:groupCommitWindowMs=500, budget 16 MiB).
const HeadlineTier = 500 * time.Millisecond

// Default is the headline design as the README deploys it at a rate: the api's URL on
// Managed Instances, tier window HeadlineTier with cost.TierBudget, consumers once per
// cost.ConsumerWindow, the environments at the stack's default sizing; 8 partitions, one
// topic, one group, SDK producers at linger 1 s, one per EventsPerProducer.
func Default(eventsPerSec float64) Config {
	return Config{EventsPerSec: eventsPerSec, Producers: max(1, int(eventsPerSec/EventsPerProducer)),
		Linger: time.Second, Partitions: 8, Topics: 1, Groups: 1,
		Tier: HeadlineTier, FunctionURL: true, ConsumerWindow: cost.ConsumerWindow}
}

// design is the cost model's design of c.
func (c Config) design() cost.Design {
	if c.Tier > 0 {
		return cost.Aggregation
	}
	return cost.Baseline
}

// expectedRPS is what the api's environments are sized for.
func (c Config) expectedRPS() float64 {
	if c.ExpectedRPS > 0 {
		return c.ExpectedRPS
	}
	return deploy.DefaultExpectedRequestsPerSecond
}

// Limit is one rate set against its limit.
type Limit struct {
	Name  string
	Rate  float64 // per second (or units in use)
	Max   float64
	Quota bool // an adjustable default: request more from AWS
	// Static: the use does not grow with the rate (a request's size, the stream's
	// readers); checked by Fits, never the limit that saturates first.
	Static bool
	Knob   string
}

// Use is Rate / Max.
func (l Limit) Use() float64 { return l.Rate / l.Max }

// Result is the model's answer for one Config.
type Result struct {
	Config     Config
	Flow       cost.Flow
	Limits     []Limit // by use, highest first
	CostPerDay float64
	AckFloor   time.Duration
}

// First is the limit that grows with the rate closest to (or furthest past) saturation.
func (r Result) First() Limit {
	for _, l := range r.Limits {
		if !l.Static {
			return l
		}
	}
	return r.Limits[0]
}

// Fits reports whether every hard limit is below use and every quota below use once
// raised (quotas are reported, not failed).
func (r Result) Fits(use float64) bool {
	for _, l := range r.Limits {
		if !l.Quota && l.Use() > use {
			return false
		}
	}
	return true
}

// Profile is the per-append counts the model uses: the SDK producer's idempotent
// appends to a topic of the topic commit layout (every topic created now), as
// pkg/cost/measure counts them on the emulator — per append 1 PUT and the topic commit
// (one UpdateItem for all its partitions), no claim (fenced idempotency: the SDK's
// producer requests write none); per partition block the index entry
// (TestInputsAreMeasured ties them). A tail
// poll's reads and an index item's bytes vary with the run, so the model takes bounds
// above what the emulator measured (3.12–3.5 reads per poll against DesignProfile's 2;
// 612.5-byte items since folded claims, 563–567 before, against its 300; 1.064 stored
// bytes per value byte against its 1.05).
func Profile() cost.Profile {
	p := cost.IdempotentDesignProfile()
	p.ReadsPerPoll, p.IndexItemBytes, p.StoredBytesPerByte = ReadsPerPollBound, IndexItemBytesBound, StoredBytesPerByteBound
	return p
}

// Bounds the model takes for what varies with a run (see Profile). An index PutItem's
// request is about 690 bytes since entries locate their batch's members table (fenced
// idempotency's m_off and m_len): still one write unit per entry.
const (
	ReadsPerPollBound       = 4
	IndexItemBytesBound     = 720
	StoredBytesPerByteBound = 1.07
)

// Options are pkg/cost's options for c (one topic's share of the load).
func Options(c Config) cost.Options {
	o := cost.Defaults(max(1, c.Producers/c.Topics))
	o.Workload.EventsPerSec = c.EventsPerSec / float64(c.Topics)
	o.Workload.Partitions, o.Workload.Groups = c.Partitions, c.Groups
	o.Producers.Linger = c.Linger
	// The SDK's default buffer bounds what one round can carry: a request is at most it.
	o.Producers.RequestBytes = client.DefaultBufferBytes
	o.Profile = Profile()
	o.Serving.FunctionURL, o.Serving.ConsumerWindow = c.FunctionURL, c.ConsumerWindow
	o.Claims = cost.ClaimsFenced
	if c.Tier > 0 {
		o.Aggregator.Window, o.Aggregator.BudgetBytes = c.Tier, cost.TierBudget
		// One tier for the whole fleet: its instances' share of one topic's requests.
		o.Aggregator.Instances = max(cost.MinManagedInstances, o.Aggregator.Instances)
	}
	return o
}

// Evaluate runs the model for c.
func Evaluate(c Config) Result {
	o := Options(c)
	pf := o.Profile
	f := cost.FlowOf(o, c.design())
	topics := float64(c.Topics)
	reqs := f.ProducerRequestsPerSec // per topic
	batches := f.AppendsPerSec       // per topic: objects and topic commits
	blocks := batches * f.BlocksPerAppend
	perPartCommits := blocks / float64(c.Partitions)
	polls := float64(c.Groups) * math.Min(perPartCommits, o.Serving.PollsPerSecond()) // per partition
	consumers := float64(c.Groups * c.Partitions * c.Topics)
	// The topic's sequencer item: every batch writes it, every poll reads it whole.
	seqWCU := batches * cost.TopicCommitWRU(c.Partitions, f.BlocksPerAppend)
	seqRCU := float64(c.Partitions) * polls * math.Ceil(cost.TopicItemBytes(c.Partitions, f.BlocksPerAppend)/4096)
	idxWRU := blocks * pf.PutItemsPerBlock * math.Ceil(pf.IndexItemBytes/1024) * topics
	claimWRU := batches * (pf.WritesPerAppend + f.BlocksPerAppend*pf.ClaimsPerBlock) * topics // none under fenced idempotency
	tableWRU := slices.Max([]float64{seqWCU * topics, idxWRU, claimWRU})
	reads := (float64(c.Partitions)*polls*pf.ReadsPerPoll + batches*(pf.ReadsPerAppend+f.BlocksPerAppend*pf.ReadsPerAppendBlk)) * topics
	body := f.RecordsPerRequest * o.Producers.EncodedRecordBytes
	partBytes := c.EventsPerSec / topics / float64(c.Partitions) * o.Workload.EventBytes
	ls := []Limit{
		{"topic sequencer item writes/s (its partition key, WCU)", seqWCU, DynamoWritesPerKey, false, false,
			"fewer batches per topic: a longer tier window (strata:groupCommitWindowMs) or linger, fewer larger producers; more topics"},
		{"topic sequencer item reads/s (its partition key, RCU)", seqRCU, DynamoReadsPerKey, false, false,
			"fewer partitions per topic (every poll reads the whole item), fewer groups, a longer consumer window"},
		{"index writes/s (one partition's key)", perPartCommits * math.Ceil(pf.IndexItemBytes/1024), DynamoWritesPerKey, false, false,
			"fewer batches per partition: a longer tier window or linger, fewer larger producers"},
		{"S3 PUT/s (one topic's prefix)", batches * pf.PutsPerAppend, S3PutsPerPrefix, false, false, "more topics (prefixes), a longer tier window or linger"},
		{"S3 GET/s (one topic's prefix)", float64(c.Groups) * blocks * pf.GetsPerBlock, S3GetsPerPrefix, false, false, "more topics (prefixes): a poll GETs each block, and each batch writes one block per partition it touches"},
		{"a partition's read bytes/s (one group's consumer)", partBytes, PartitionReadBytes, false, false, "more partitions"},
		{"request body (Lambda payload, as sent)", body, deploy.MaxAPIBody, false, true, "smaller batches (the SDK's buffer caps them)"},
		{"DynamoDB table write units/s (largest table)", tableWRU, DynamoTableWrites, true, false,
			"request a table quota; fewer blocks per batch (fewer partitions per topic)"},
		{"DynamoDB table write units/s a new table serves at once (warm throughput)", tableWRU, DynamoWarmWrites, true, false,
			fmt.Sprintf("pre-warm the tables (WarmThroughput) or ramp: on-demand serves twice its previous peak, %s", ramp(tableWRU, DynamoWarmWrites))},
		{"DynamoDB table read units/s (sequencer)", reads, DynamoTableReads, true, false, "request a table quota"},
		{"DynamoDB table read units/s a new table serves at once (warm throughput)", reads, DynamoWarmReads, true, false,
			fmt.Sprintf("pre-warm the tables (WarmThroughput) or ramp: %s", ramp(reads, DynamoWarmReads))},
		{"sequencer stream readers per shard", StreamReaders, StreamReadersPerShard, false, true, "one more reader is all a shard takes"},
		{"Lambda scaling: a group's consumer function's environments (per 10 s)", float64(c.Partitions * c.Topics), LambdaScalePer10s, false, false,
			"fewer partitions per group's function (each partition holds one environment): past 1,000 it takes 10 s per 1,000 more to start"},
	}
	onDemand := consumers + 2 + topics // dispatch, the scheduled retention pass and one per topic
	if c.Tier > 0 {
		envs := deploy.ManagedEnvironments(c.expectedRPS(), c.Tier, deploy.DefaultPerEnvironmentConcurrency, 0)
		inFlight := deploy.APIInFlight(reqs*topics, c.Tier)
		ls = append(ls,
			Limit{"api invocations in flight on Managed Instances (environments × 32)", inFlight, float64(envs * deploy.DefaultPerEnvironmentConcurrency), false, false,
				"strata:expectedRequestsPerSecond (sizes the environments; the default 1,000 gives " + fmt.Sprint(envs) + ")"},
			Limit{"api vCPUs on Managed Instances (the tier's CPU against the provider's cap)", tierVCPUs(c, o), float64(max(16, envs)), false, false,
				"strata:expectedRequestsPerSecond (the cap follows the environments), or Props.ManagedInstances.MaxVCPUs"})
	} else {
		onDemand += reqs * topics * o.Latency.Service().Seconds()
	}
	ls = append(ls, Limit{"Lambda concurrent executions (the on-demand functions)",
		onDemand, LambdaConcurrency, true, false, "request a concurrency quota; Managed Instances for the api function"})
	if !c.FunctionURL {
		ls = append(ls, Limit{"API Gateway requests/s (account)", reqs * topics, APIGatewayRPS, true, false, "request a quota; the function URL front door"})
	}
	ls = append(ls, retentionLimit(c))
	slices.SortStableFunc(ls, func(a, b Limit) int {
		switch {
		case a.Use() > b.Use():
			return -1
		case a.Use() < b.Use():
			return 1
		}
		return 0
	})
	var usd float64
	for i := 0; i < c.Topics; i++ {
		usd += cost.Strata(o, c.design()).PerDay()
	}
	return Result{Config: c, Flow: f, Limits: ls, CostPerDay: usd, AckFloor: f.AckFloor}
}

// tierVCPUs is the vCPUs the tier's instances hold for the whole fleet's requests: the
// CPU of every topic's appends and records at the aggregator's utilisation, and at least
// cost.MinManagedInstances instances.
func tierVCPUs(c Config, o cost.Options) float64 {
	f := cost.FlowOf(o, c.design())
	cpu := float64(c.Topics) * (f.ProducerRequestsPerSec*o.Profile.Group.CPUPerAppend.Seconds() + o.Workload.EventsPerSec*o.Serving.CPUPerRecord.Seconds())
	a := o.Aggregator
	return a.VCPUs * math.Max(cost.MinManagedInstances, math.Ceil(cpu/(a.VCPUs*a.MaxUtilisation)))
}

// RetentionPass is the time one scheduled retention pass takes, as built: the scheduled
// invocation starts one invocation per live topic (the fan-out), so the pass takes one
// topic's time, the topics running side by side. Per topic it LISTs the expired objects
// and one page more, deletes them with DeleteObjects of 1,000 keys, and per partition
// reads the sequencer item and the index from the log start (a page of 100 entries) and
// advances the log start — its expired entries left to DynamoDB's TTL, no write each.
// Objects expire at the rate they are written.
func RetentionPass(c Config) time.Duration {
	o := Options(c)
	f := cost.FlowOf(o, c.design())
	perPass := f.AppendsPerSec * RetentionInterval.Seconds() // objects of one topic expiring per pass
	batches := math.Ceil(perPass / S3DeleteObjectsKeys)
	entries := f.AppendsPerSec * f.BlocksPerAppend / float64(c.Partitions) * RetentionInterval.Seconds()
	perPartition := (2 + math.Ceil(entries/100)) * DynamoRequestTime.Seconds()
	topic := (batches+1)*ListPageTime.Seconds() + batches*DeleteObjectsTime.Seconds() + float64(c.Partitions)*perPartition
	return time.Duration(topic * float64(time.Second))
}

// retentionLimit is the retention pass's time against its schedule and timeout: a pass
// that cannot finish leaves objects to the bucket's lifecycle backstop.
func retentionLimit(c Config) Limit {
	return Limit{"retention pass time (one topic's invocation, topics side by side) against its 5-minute schedule and timeout",
		RetentionPass(c).Seconds(), math.Min(RetentionInterval.Seconds(), RetentionTimeout.Seconds()), false, false,
		"fewer partitions or objects per topic: more topics (each its own invocation), a longer tier window"}
}

// ramp is how long on-demand takes to reach rate from warm by doubling its peak every
// 30 minutes.
func ramp(rate, warm float64) string {
	if rate <= warm {
		return "served at once"
	}
	n := math.Ceil(math.Log2(rate / warm))
	return fmt.Sprintf("%.0f doublings, ≥ %.0f min from a new table", n, 30*n)
}

// Tune searches the knobs for eventsPerSec, from Default: partitions and topics (up to
// maxTopics) at the shortest linger (1, 2, then 5 s) where some configuration keeps
// every hard limit at or under use, the cheapest of those. Without one it returns the
// configuration whose nearest limit is least used, and false. The quotas a result needs
// are in its Limits.
func Tune(eventsPerSec, use float64, maxTopics int) (Result, bool) {
	base := Default(eventsPerSec)
	var best *Result
	for _, linger := range []time.Duration{time.Second, 2 * time.Second, 5 * time.Second} {
		for parts := 8; parts <= 1024; parts *= 2 {
			for topics := 1; topics <= maxTopics; topics *= 2 {
				c := sized(base, linger, parts, topics)
				if r := Evaluate(c); r.Fits(use) && (best == nil || r.CostPerDay < best.CostPerDay) {
					best = &r
				}
			}
		}
		if best != nil {
			return *best, true
		}
	}
	for parts := 8; parts <= 1024; parts *= 2 {
		for topics := 1; topics <= maxTopics; topics *= 2 {
			c := sized(base, time.Second, parts, topics)
			if r := Evaluate(c); best == nil || hardUse(r) < hardUse(*best) {
				best = &r
			}
		}
	}
	return *best, false
}

// sized is base at linger, parts and topics, with the api's environments sized for its
// request rate (strata:expectedRequestsPerSecond set to it, when above the default).
func sized(base Config, linger time.Duration, parts, topics int) Config {
	c := base
	c.Linger, c.Partitions, c.Topics = linger, parts, topics
	f := cost.FlowOf(Options(c), c.design())
	c.ExpectedRPS = math.Max(deploy.DefaultExpectedRequestsPerSecond, math.Ceil(f.ProducerRequestsPerSec*float64(topics)))
	return c
}

// hardUse is the highest use of r's hard limits.
func hardUse(r Result) float64 {
	u := 0.0
	for _, l := range r.Limits {
		if !l.Quota {
			u = math.Max(u, l.Use())
		}
	}
	return u
}

// Scales are the rates the report models: the brief's, ten and a hundred times it.
var Scales = []float64{50000, 500000, 5000000}

// Describe is a one-line summary of a configuration.
func (c Config) Describe() string {
	d := fmt.Sprintf("%d producers, linger %s, %d partitions × %d topic(s), %d group(s)", c.Producers, c.Linger, c.Partitions, c.Topics, c.Groups)
	if c.Tier > 0 {
		d += fmt.Sprintf(", tier %s, sized for %.0f requests/s", c.Tier, c.expectedRPS())
	}
	return d
}
