// Package cost prices a Strata deployment and the logs users would pick instead
// (Kinesis Data Streams provisioned and on-demand, three-AZ Kafka on EC2) for one
// workload, from one price table (prices.go) and a Profile of the requests Strata makes
// per append and per poll — counted on the emulator by pkg/cost/measure, or the
// design's values when not measured. Everything here is arithmetic: no I/O, no clock.
package cost

import (
	"fmt"
	"math"
	"time"
)

const (
	secondsPerDay = 86400.0
	hoursPerMonth = 730.0 // AWS's billing month
	daysPerMonth  = hoursPerMonth / 24
	gib           = float64(1 << 30)
	mib           = float64(1 << 20)
)

// Workload is the target load.
type Workload struct {
	EventsPerSec float64
	EventBytes   float64
	Retention    time.Duration
	Groups       int // consumer groups, each reading everything
	Partitions   int
}

// DesignWorkload is the design brief's workload: 50,000 events/s of 1 KB retained 24 h,
// one consumer group, over 8 partitions.
func DesignWorkload() Workload {
	return Workload{EventsPerSec: 50000, EventBytes: 1024, Retention: 24 * time.Hour, Groups: 1, Partitions: 8}
}

// Shape is how producers cut their records into append requests.
type Shape int

const (
	// ShapeSDK is pkg/client today: one batch, hence one append, per partition.
	ShapeSDK Shape = iota
	// ShapeMulti is one append per producer flush holding records for every partition.
	ShapeMulti
)

func (s Shape) String() string {
	if s == ShapeMulti {
		return "multi-partition appends"
	}
	return "per-partition appends (SDK)"
}

// Producers describes the producer fleet and its batching.
type Producers struct {
	Count        int
	Linger       time.Duration
	BatchBytes   float64 // cap of one request's encoded records
	BatchRecords int     // cap of one request's records
	// EncodedRecordBytes is one record's size in the request body (base64 and JSON).
	EncodedRecordBytes float64
	Shape              Shape
}

// DefaultProducers are pkg/client's defaults with a 1 s linger and 1 KB records
// (1,024 bytes base64 → 1,368, plus about 32 bytes of JSON).
func DefaultProducers(n int) Producers {
	return Producers{Count: n, Linger: time.Second, BatchBytes: 1 << 20, BatchRecords: 1000,
		EncodedRecordBytes: 1400, Shape: ShapeSDK}
}

// Profile is what Strata's AWS backend sends per append and per poll; pkg/cost/measure
// counts it on the emulator. A "block" is one partition's part of an append.
type Profile struct {
	PutsPerAppend      float64 // S3 PutObject
	WritesPerAppend    float64 // DynamoDB writes not tied to a partition (idempotency claims…)
	UpdatesPerBlock    float64 // DynamoDB UpdateItem per block (the partition's sequencer)
	PutItemsPerBlock   float64 // DynamoDB PutItem per block (the index entry)
	ReadsPerAppend     float64 // DynamoDB reads of an append not tied to a partition
	ReadsPerAppendBlk  float64 // DynamoDB reads of an append per block (idempotent replay checks)
	ReadsPerPoll       float64 // DynamoDB reads of a tail poll that returns one block
	GetsPerBlock       float64 // S3 GetObject per block read
	StoredBytesPerByte float64 // segment object bytes per record value byte
	IndexItemBytes     float64 // bytes of one index item
	Measured           bool
}

// DesignProfile is docs/DESIGN.md §4 without idempotency keys: one PUT per append, per
// partition one sequencer UpdateItem and one index PutItem; a poll reads the partition's
// bounds and its index entries, then GETs each block.
func DesignProfile() Profile {
	return Profile{PutsPerAppend: 1, UpdatesPerBlock: 1, PutItemsPerBlock: 1, ReadsPerPoll: 2,
		GetsPerBlock: 1, StoredBytesPerByte: 1.05, IndexItemBytes: 300}
}

// Latency holds AWS service times the ack-latency floors assume (not measured here: the
// emulator's are not AWS's).
type Latency struct {
	API         time.Duration // API Gateway + Lambda overhead
	S3Put       time.Duration
	DynamoWrite time.Duration
}

// DefaultLatency are typical same-region medians.
func DefaultLatency() Latency {
	return Latency{API: 10 * time.Millisecond, S3Put: 30 * time.Millisecond, DynamoWrite: 8 * time.Millisecond}
}

// Service is one append's time after its batch is cut: the API hop, the object PUT, the
// sequencer write and the index write.
func (l Latency) Service() time.Duration { return l.API + l.S3Put + 2*l.DynamoWrite }

// Serving prices the API and consumer side.
type Serving struct {
	LambdaMemoryMB    float64
	PollDuration      time.Duration // billed duration of one poll invocation
	MaxPollsPerSecond float64       // per partition per group (long polls return at once when data waits)
	// FunctionURL puts producers and consumers on the api function's URL instead of
	// API Gateway (function URLs cost nothing beyond the invocation).
	FunctionURL bool
}

// DefaultServing: 1,024 MB arm64 functions, 20 ms polls, at most 10 polls/s per partition.
func DefaultServing() Serving {
	return Serving{LambdaMemoryMB: 1024, PollDuration: 20 * time.Millisecond, MaxPollsPerSecond: 10}
}

// Aggregator is the aggregation tier: group commit in the api function on Lambda
// Managed Instances, coalescing producers' requests into few appends.
type Aggregator struct {
	Instances   int
	Window      time.Duration
	BudgetBytes float64 // a batch is cut when it holds this many encoded bytes
}

// DefaultAggregator: two m7g.large instances, a 50 ms window, 4 MiB batches.
func DefaultAggregator() Aggregator {
	return Aggregator{Instances: 2, Window: 50 * time.Millisecond, BudgetBytes: 4 << 20}
}

// Kafka sizes the three-AZ Kafka cluster.
type Kafka struct {
	Replication       int
	BrokerMiBps       float64 // network a broker sustains, in + out
	DiskFill          float64 // fraction of EBS filled by retained data
	FetchFromFollower bool    // consumers read in their own AZ (KIP-392)
}

// DefaultKafka: replication 3, 150 MiB/s per m5.2xlarge broker, disks half full.
func DefaultKafka() Kafka { return Kafka{Replication: 3, BrokerMiBps: 150, DiskFill: 0.5} }

// Options is everything one estimate depends on.
type Options struct {
	Prices     Prices
	Workload   Workload
	Producers  Producers
	Profile    Profile
	Latency    Latency
	Serving    Serving
	Aggregator Aggregator
	Kafka      Kafka
}

// Defaults returns the design workload with n producers and every default.
func Defaults(n int) Options {
	return Options{Prices: USEast1(), Workload: DesignWorkload(), Producers: DefaultProducers(n),
		Profile: DesignProfile(), Latency: DefaultLatency(), Serving: DefaultServing(),
		Aggregator: DefaultAggregator(), Kafka: DefaultKafka()}
}

// Validate reports the first option that makes an estimate meaningless.
func (o Options) Validate() error {
	w, p := o.Workload, o.Producers
	switch {
	case w.EventsPerSec <= 0 || w.EventBytes <= 0:
		return fmt.Errorf("cost: events/s and event bytes must be positive")
	case w.Partitions < 1 || w.Groups < 0:
		return fmt.Errorf("cost: partitions must be at least 1 and groups not negative")
	case w.Retention <= 0:
		return fmt.Errorf("cost: retention must be positive")
	case p.Count < 1 || p.Linger < 0 || p.BatchBytes <= 0 || p.BatchRecords < 1 || p.EncodedRecordBytes <= 0:
		return fmt.Errorf("cost: producers, batch bytes and records must be positive, linger not negative")
	case o.Aggregator.Instances < 1 || o.Aggregator.Window <= 0 || o.Aggregator.BudgetBytes <= 0:
		return fmt.Errorf("cost: the aggregator needs instances, a window and a byte budget")
	case o.Kafka.Replication < 1 || o.Kafka.BrokerMiBps <= 0 || o.Kafka.DiskFill <= 0 || o.Kafka.DiskFill > 1:
		return fmt.Errorf("cost: kafka replication, broker MiB/s and disk fill (0,1] are required")
	}
	return nil
}

// Design is one of the append designs the tool prices.
type Design int

const (
	Baseline         Design = iota // today: per partition one sequencer UpdateItem + one index PutItem
	PerTopicCommit                 // one UpdateItem adding every touched partition's count, then the index entries
	Manifest                       // per-partition sequencer, one manifest item per append instead of index entries
	TopicManifest                  // one topic UpdateItem + one manifest item per append
	Aggregation                    // group commit on Lambda Managed Instances in front of Baseline
	AggTopicManifest               // the aggregation tier in front of TopicManifest
)

// aggregated reports whether design d has the aggregation tier.
func (d Design) aggregated() bool { return d == Aggregation || d == AggTopicManifest }

// Designs lists every design in print order.
var Designs = []Design{Baseline, PerTopicCommit, Manifest, TopicManifest, Aggregation, AggTopicManifest}

func (d Design) String() string {
	return [...]string{"baseline", "per-topic commit", "per-append manifest", "topic commit + manifest",
		"aggregation tier (group commit, Lambda MI)", "aggregation tier + topic commit + manifest"}[d]
}

// Flow is the request flow a workload makes.
type Flow struct {
	ProducerRequestsPerSec float64 // producer → API requests
	RecordsPerRequest      float64
	AppendsPerSec          float64 // appends reaching storage (objects written)
	RecordsPerAppend       float64
	BlocksPerAppend        float64
	AckFloor               time.Duration // batching wait + service, the least ack latency
}

// FlowOf derives the flow of design d.
func FlowOf(o Options, d Design) Flow {
	w, p := o.Workload, o.Producers
	perProducer := w.EventsPerSec / float64(p.Count)
	streams := 1.0
	if p.Shape == ShapeSDK {
		streams = float64(w.Partitions)
	}
	rate := perProducer / streams // records/s into one batch stream
	capRecs := math.Max(1, math.Min(float64(p.BatchRecords), math.Floor(p.BatchBytes/p.EncodedRecordBytes)))
	wait := math.Min(p.Linger.Seconds(), capRecs/rate)
	service := o.Latency.Service().Seconds()
	interval := math.Max(wait, service) // one request in flight per stream
	recs := clamp(rate*interval, 1, capRecs)
	f := Flow{ProducerRequestsPerSec: w.EventsPerSec / recs, RecordsPerRequest: recs}
	f.AppendsPerSec, f.RecordsPerAppend = f.ProducerRequestsPerSec, recs
	ack := wait + service
	if d.aggregated() {
		a := o.Aggregator
		perInstance := w.EventsPerSec / float64(a.Instances)
		tier := math.Max(recs, math.Min(perInstance*a.Window.Seconds(), math.Max(1, math.Floor(a.BudgetBytes/p.EncodedRecordBytes))))
		f.AppendsPerSec, f.RecordsPerAppend = w.EventsPerSec/tier, tier
		ack += a.Window.Seconds()
	}
	f.BlocksPerAppend = 1
	if p.Shape == ShapeMulti || d.aggregated() {
		f.BlocksPerAppend = math.Min(f.RecordsPerAppend, float64(w.Partitions))
	}
	f.AckFloor = time.Duration(ack * float64(time.Second))
	return f
}

func clamp(x, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, x)) }

// Line is one item of an estimate, per day.
type Line struct {
	Item     string
	Quantity float64 // units per day
	Unit     string
	USD      float64 // per day
}

// Estimate is one system's cost of the workload.
type Estimate struct {
	Name  string
	Lines []Line
	Flow  *Flow // Strata only
}

// PerDay is the estimate's total $/day.
func (e Estimate) PerDay() float64 {
	var t float64
	for _, l := range e.Lines {
		t += l.USD
	}
	return t
}

// PerMonth is PerDay over AWS's 730-hour month.
func (e Estimate) PerMonth() float64 { return e.PerDay() * daysPerMonth }

func (e *Estimate) add(item string, qty float64, p Price) {
	e.Lines = append(e.Lines, Line{Item: item, Quantity: qty, Unit: p.Unit, USD: qty * p.USD})
}

// itemWRU is the write units of an item of the given bytes (1 KB each, at least one).
func itemWRU(bytes float64) float64 { return math.Max(1, math.Ceil(bytes/1024)) }

// Strata prices design d of Strata's AWS deployment.
func Strata(o Options, d Design) Estimate {
	pr, w, pf := o.Prices, o.Workload, o.Profile
	f := FlowOf(o, d)
	e := Estimate{Name: "Strata, " + d.String(), Flow: &f}
	appends := f.AppendsPerSec * secondsPerDay
	blocks := appends * f.BlocksPerAppend
	e.add("S3 PUT (segment objects)", appends*pf.PutsPerAppend, pr.S3Put)

	k := f.BlocksPerAppend
	topicWRU := itemWRU(100 + 24*k)    // one counter per touched partition
	manifestWRU := itemWRU(200 + 40*k) // one block reference per touched partition
	perAppend := pf.WritesPerAppend
	switch d {
	case Baseline, Aggregation:
		perAppend += k * (pf.UpdatesPerBlock + pf.PutItemsPerBlock*itemWRU(pf.IndexItemBytes))
	case PerTopicCommit:
		perAppend += topicWRU + k*pf.PutItemsPerBlock*itemWRU(pf.IndexItemBytes)
	case Manifest:
		perAppend += k*pf.UpdatesPerBlock + manifestWRU
	case TopicManifest, AggTopicManifest:
		perAppend += topicWRU + manifestWRU
	}
	e.add("DynamoDB write units (sequencer, index, claims)", appends*perAppend, pr.DynamoWRU)

	// Consumers: per group and partition, one poll per new block up to the poll cap.
	blockRate := f.AppendsPerSec * f.BlocksPerAppend / float64(w.Partitions)
	polls := float64(w.Groups*w.Partitions) * math.Min(blockRate, o.Serving.MaxPollsPerSecond) * secondsPerDay
	appendReads := appends * (pf.ReadsPerAppend + k*pf.ReadsPerAppendBlk)
	e.add("DynamoDB read units (polls, append checks)", polls*pf.ReadsPerPoll+appendReads, pr.DynamoRRU)
	e.add("S3 GET (blocks read)", float64(w.Groups)*blocks*pf.GetsPerBlock, pr.S3Get)

	retainSec := w.Retention.Seconds()
	storedGB := w.EventsPerSec * w.EventBytes * pf.StoredBytesPerByte * retainSec / gib
	e.add("S3 storage (GB-month)", storedGB/daysPerMonth, pr.S3StorageGBMonth)
	indexItems := blocks / secondsPerDay * retainSec
	if d == Manifest || d == TopicManifest || d == AggTopicManifest {
		indexItems = appends / secondsPerDay * retainSec
	}
	e.add("DynamoDB storage (GB-month)", indexItems*pf.IndexItemBytes/gib/daysPerMonth, pr.DynamoStorageGBMonth)

	// API Gateway and Lambda: producer requests (metered per 512 KB) and polls.
	reqUnits := math.Max(1, math.Ceil(f.RecordsPerRequest*o.Producers.EncodedRecordBytes/(512*1024)))
	producerReqs := f.ProducerRequestsPerSec * secondsPerDay
	if !o.Serving.FunctionURL {
		e.add("API Gateway HTTP API requests", producerReqs*reqUnits+polls, pr.APIGatewayHTTP)
	}
	e.add("Lambda requests", producerReqs+polls, pr.LambdaRequest)
	memGB := o.Serving.LambdaMemoryMB / 1024
	pollGBs := polls * o.Serving.PollDuration.Seconds() * memGB
	if d.aggregated() {
		a := o.Aggregator
		e.add("Lambda GB-seconds (polls)", pollGBs, pr.LambdaGBSecondArm)
		hours := float64(a.Instances) * 24
		e.add("Managed Instances (instance-hours)", hours, pr.ManagedInstanceHour)
		e.Lines = append(e.Lines, Line{Item: "Managed Instances fee", Quantity: hours, Unit: "instance-hour",
			USD: hours * pr.ManagedInstanceHour.USD * pr.LambdaMIFee.USD})
	} else {
		appendGBs := appends * o.Latency.Service().Seconds() * memGB
		e.add("Lambda GB-seconds (appends + polls)", appendGBs+pollGBs, pr.LambdaGBSecondArm)
	}
	return e
}

// KinesisProvisioned prices Kinesis Data Streams in provisioned mode, sized for writes
// (1 MiB/s or 1,000 records/s per shard) and shared-throughput reads (2 MiB/s per shard
// for all consumers together). With aggregation producers pack records into 25 KB
// payload units as the KPL does (the per-shard record limit then binds no longer).
func KinesisProvisioned(o Options, aggregated bool) Estimate {
	pr, w := o.Prices, o.Workload
	in := w.EventsPerSec * w.EventBytes
	shards := math.Ceil(in / mib)
	units := w.EventsPerSec * math.Ceil(w.EventBytes/(25*1024))
	name := "Kinesis provisioned, no aggregation"
	if aggregated {
		units = math.Ceil(in / (25 * 1024))
		name = "Kinesis provisioned, KPL aggregation"
	} else {
		shards = math.Max(shards, math.Ceil(w.EventsPerSec/1000))
	}
	shards = math.Max(shards, math.Ceil(float64(w.Groups)*in/(2*mib)))
	e := Estimate{Name: name}
	e.add(fmt.Sprintf("shard-hours (%.0f shards)", shards), shards*24, pr.KinesisShardHour)
	e.add("PUT payload units", units*secondsPerDay, pr.KinesisPayloadUnit)
	if w.Retention > 24*time.Hour {
		e.add("extended retention", shards*24, pr.KinesisExtendedRetain)
	}
	return e
}

// KinesisOnDemand prices Kinesis Data Streams on-demand (one stream).
func KinesisOnDemand(o Options) Estimate {
	pr, w := o.Prices, o.Workload
	gbDay := w.EventsPerSec * w.EventBytes * secondsPerDay / gib
	e := Estimate{Name: "Kinesis on-demand"}
	e.add("stream-hours", 24, pr.KinesisODStreamHour)
	e.add("GB ingested", gbDay, pr.KinesisODIngestGB)
	e.add("GB retrieved", gbDay*float64(w.Groups), pr.KinesisODRetrievalGB)
	return e
}

// KafkaEC2 prices self-run Kafka over three AZs: brokers (a multiple of three, sized by
// network), gp3 volumes for the retained replicas, and cross-AZ transfer: producers
// reach a leader in another AZ two times in three, each follower copy crosses, and
// consumers cross two times in three unless they fetch from followers.
func KafkaEC2(o Options) Estimate {
	pr, w, k := o.Prices, o.Workload, o.Kafka
	in := w.EventsPerSec * w.EventBytes / mib
	rf := float64(k.Replication)
	traffic := in*rf + in*(rf-1) + in*float64(w.Groups) // MiB/s in and out of all brokers
	brokers := math.Max(3, 3*math.Ceil(math.Ceil(traffic/k.BrokerMiBps)/3))
	gbDay := w.EventsPerSec * w.EventBytes * secondsPerDay / gib
	diskGB := gbDay * w.Retention.Hours() / 24 * rf / k.DiskFill
	consumerCross := 2.0 / 3 * float64(w.Groups)
	if k.FetchFromFollower {
		consumerCross = 0
	}
	e := Estimate{Name: "Kafka on EC2, 3 AZ"}
	e.add(fmt.Sprintf("broker-hours (%.0f brokers)", brokers), brokers*24, pr.KafkaBrokerHour)
	e.add("EBS gp3 (GB-month)", diskGB/daysPerMonth, pr.EBSgp3GBMonth)
	e.add("cross-AZ transfer (GB)", gbDay*(2.0/3+(rf-1)+consumerCross), pr.CrossAZGB)
	return e
}

// Alternatives prices every alternative to Strata, in print order.
func Alternatives(o Options) []Estimate {
	return []Estimate{KinesisProvisioned(o, true), KinesisProvisioned(o, false), KinesisOnDemand(o), KafkaEC2(o)}
}

// ProducerGrid is the producer counts Crossing scans: 1 to 100,000, about 10% apart.
func ProducerGrid() []int {
	var g []int
	for x := 1.0; x <= 100000; x *= 1.1 {
		n := int(math.Round(x))
		if len(g) == 0 || n > g[len(g)-1] {
			g = append(g, n)
		}
	}
	return g
}

// Crossing returns the fewest producers (on ProducerGrid) at which design d of Strata
// costs more per day than limit, or 0 if it never does up to 100,000.
func Crossing(o Options, d Design, limit float64) int {
	for _, n := range ProducerGrid() {
		o.Producers.Count = n
		if Strata(o, d).PerDay() > limit {
			return n
		}
	}
	return 0
}
