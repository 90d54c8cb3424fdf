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
	// ShapeSDK is pkg/client's producer: a batch per partition (BatchBytes and
	// BatchRecords cap each), and one request per round carrying every partition's
	// batch once one is due (full or lingered), up to RequestBytes and RequestRecords;
	// batches that do not fit go in further requests of the round.
	ShapeSDK Shape = iota
	// ShapeMulti is one append per producer flush holding records for every partition,
	// BatchBytes and BatchRecords capping the whole request.
	ShapeMulti
)

func (s Shape) String() string {
	if s == ShapeMulti {
		return "multi-partition appends"
	}
	return "SDK rounds (one request per round, a batch per partition)"
}

// Producers describes the producer fleet and its batching.
type Producers struct {
	Count        int
	Linger       time.Duration
	BatchBytes   float64 // cap of one batch's encoded records: a partition's (SDK), a request's (multi)
	BatchRecords int     // cap of one batch's records, likewise
	// RequestBytes and RequestRecords cap one SDK request, all its partitions' batches
	// together (pkg/client's MaxBatchBytes and wire.MaxRecordsPerBatch).
	RequestBytes   float64
	RequestRecords int
	// EncodedRecordBytes is one record's size in the request body as the producer
	// counts it against BatchBytes.
	EncodedRecordBytes float64
	Shape              Shape
	// AlignSlots is 0 for producers whose rounds start a linger after their first
	// record (their requests a Poisson stream at the tier), or the slots of SDK
	// producers with AlignLinger: their rounds go at their slot's tick of a shared
	// wall-clock grid, so a period's requests reach the tier in AlignSlots bursts.
	AlignSlots int
}

// Record sizes in a request body of 1 KB records without key or headers.
const (
	// BinaryRecordBytes is pkg/client's bound of a 1,024-byte value in a segment block
	// (the binary body its producer sends): value, length, offset and timestamp varints.
	BinaryRecordBytes = 1040
	// JSONRecordBytes is the JSON body's: 1,024 bytes base64 → 1,368, plus about 32 of JSON.
	JSONRecordBytes = 1400
)

// LambdaRequestBytes is the record bytes (with frame overheads) of one binary request
// pkg/client's producer sends to the api function behind Lambda (API Gateway, a function
// URL or Managed Instances): the function's 4 MiB body (deploy.MaxAPIBody, stated on
// its answers) less the body's 5-byte prologue, below the SDK's own 5 MiB cap
// (client.MaxBatchBytes). A test holds it equal to both.
const LambdaRequestBytes = 4<<20 - 5

// DefaultProducers are pkg/client's producers with a 1 s linger, 1 MiB batches and 1 KB
// records sent in the binary form, as its producer does; its request caps against the
// api function (LambdaRequestBytes, 10,000 records).
func DefaultProducers(n int) Producers {
	return Producers{Count: n, Linger: time.Second, BatchBytes: 1 << 20, BatchRecords: 1000,
		RequestBytes: LambdaRequestBytes, RequestRecords: 10000, EncodedRecordBytes: BinaryRecordBytes, Shape: ShapeSDK}
}

// Profile is what Strata's AWS backend sends per append and per poll; pkg/cost/measure
// counts it on the emulator. A "block" is one partition's part of an append.
type Profile struct {
	// Idempotent: the appends carry an Idempotency-Key, as pkg/client's producer's do.
	Idempotent      bool
	PutsPerAppend   float64 // S3 PutObject
	WritesPerAppend float64 // DynamoDB writes not tied to a partition beside the topic commit (the request's idempotency claim)
	// TopicCommitsPerAppend is the topic commit's UpdateItems per append: one sequencer
	// item per topic holding every partition's counters, billed by its size (TopicCommitWRU).
	TopicCommitsPerAppend float64
	UpdatesPerBlock       float64 // DynamoDB UpdateItem per block (a per-partition sequencer, before the topic commit)
	PutItemsPerBlock      float64 // DynamoDB PutItem per block for the index entry
	ClaimsPerBlock        float64 // DynamoDB PutItem per block for the partition's idempotency claim
	ReadsPerAppend        float64 // DynamoDB reads of an append not tied to a partition
	ReadsPerAppendBlk     float64 // DynamoDB reads of an append per block (idempotent replay checks)
	ReadsPerPoll          float64 // DynamoDB reads of a tail poll that returns one block
	GetsPerBlock          float64 // S3 GetObject per block read
	StoredBytesPerByte    float64 // segment object bytes per record value byte
	IndexItemBytes        float64 // bytes of one index item
	Group                 GroupProfile
	Measured              bool
}

// DesignProfile is docs/DESIGN.md §4 without idempotency keys, as built: one PUT and one
// topic commit (a conditional UpdateItem of the topic's sequencer item for every
// partition of the append) per append, one index PutItem per partition; a poll reads the
// partition's bounds and its index entries, then GETs each block.
func DesignProfile() Profile {
	return Profile{PutsPerAppend: 1, TopicCommitsPerAppend: 1, PutItemsPerBlock: 1, ReadsPerPoll: 2,
		GetsPerBlock: 1, StoredBytesPerByte: 1.05, IndexItemBytes: 300, Group: DesignGroupProfile()}
}

// IdempotentDesignProfile is DesignProfile with the SDK's producer requests as built
// (fenced idempotency, pkg/log's producer.go): an Idempotency-Key naming one request of a
// producer session (Strata-Idempotency: producer) whose first attempt writes no claim and
// reads none — the batch's object, its topic commit and its entries are all it costs,
// the members table in the object standing for the claim — so no write per append
// beside the topic commit (WritesPerAppend 0) and none per block beyond the entry. A
// retry fences the request on the topic item and searches the index and the batches'
// members tables; retries are too rare to price, and pkg/cost/measure reports their
// counts. In a group-commit batch producer members share the commits as members without
// a key do, and make no DynamoDB request of their own, so their CPU is a keyless
// member's. Options.Claims prices folded claims (one claim per request) over it.
func IdempotentDesignProfile() Profile {
	p := DesignProfile()
	p.Idempotent = true
	return p
}

// GroupProfile is what group commit (pkg/log/group.go) shares among the concurrent
// appends ("members") of one batch, as pkg/cost/measure counts it: Appenders concurrent
// appenders through one Log with a GroupCommitWindow of Window.
type GroupProfile struct {
	Appenders int
	Window    time.Duration
	// PutsPerAppend is S3 PutObject per acknowledged append in that run (one object per
	// batch): how full the emulator's batches were, not a figure the model extrapolates.
	PutsPerAppend float64
	// SharedCommitsPerBlock is sequencer commits per partition of a batch for members
	// without an Idempotency-Key: 1 when they all share one commit and index entry.
	SharedCommitsPerBlock float64
	// MemberCommitsPerBlock is sequencer commits per partition of an idempotent member:
	// 1 when each keeps its own (the per-partition claims before folding), about 1 /
	// members per batch when they share the batch's commits.
	MemberCommitsPerBlock float64
	// IdempotentShare: idempotent members share the batch's commits as members without
	// a key do (folded claims and fenced idempotency); measure sets it when the idempotent cases made as
	// many commits per partition of a batch as the cases without a key.
	IdempotentShare bool
	// TopicCommitsPerBatch is the topic commit's UpdateItems per batch (segment object):
	// one for all its members and partitions.
	TopicCommitsPerBatch float64
	// CPUPerAppend is the appending process's CPU per acknowledged append: the log, the
	// AWS SDK's marshalling and signing, HTTP without TLS. It sizes the tier's instances.
	CPUPerAppend time.Duration
	Measured     bool
}

// DesignGroupProfile is group.go's design: one commit per partition of a batch, shared
// by every member, idempotent or not (fenced idempotency, folded claims), all in one topic commit; CPU per append without a key as
// measure counted it on the project's 2-core machine (about 0.3 ms; docs/BENCHMARKS.md).
func DesignGroupProfile() GroupProfile {
	return GroupProfile{SharedCommitsPerBlock: 1, TopicCommitsPerBatch: 1, IdempotentShare: true, CPUPerAppend: 300 * time.Microsecond}
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
// topic commit and the index writes. It is wall time spent waiting on AWS; the CPU of
// decoding the body comes on top (Serving.CPUPerRecord).
func (l Latency) Service() time.Duration { return l.API + l.S3Put + 2*l.DynamoWrite }

// Serving prices the API and consumer side.
type Serving struct {
	LambdaMemoryMB    float64
	PollDuration      time.Duration // billed duration of one poll invocation
	MaxPollsPerSecond float64       // per partition per group (long polls return at once when data waits)
	// ConsumerWindow is dispatch's stream batching window (strata:consumerBatchingWindowSeconds):
	// each consumer is invoked at most once per partition per window, so polls per
	// partition per group are at most 1 / window. It adds up to the window to delivery
	// (ConsumerDelay), not to the producer's ack. 0: no window.
	ConsumerWindow time.Duration
	// FunctionURL puts producers and consumers on the api function's URL instead of
	// API Gateway (function URLs cost nothing beyond the invocation).
	FunctionURL bool
	// CPUPerRecord is the api function's CPU to take one record of a request body
	// before the log sees it: it lengthens an on-demand append's billed duration and
	// loads the tier's instances.
	CPUPerRecord time.Duration
}

// PollsPerSecond is the most polls per partition per group: MaxPollsPerSecond, and at
// most one per consumer window.
func (s Serving) PollsPerSecond() float64 {
	if s.ConsumerWindow > 0 {
		return math.Min(s.MaxPollsPerSecond, 1/s.ConsumerWindow.Seconds())
	}
	return s.MaxPollsPerSecond
}

// Body CPU per 1 KB record, from `go test -run '^$' -bench AppendBody ./pkg/httpapi`
// (1,000 records per body): the binary form is split and CRC-checked, the JSON form
// strictly decoded and base64-decoded.
const (
	BinaryCPUPerRecord = 70 * time.Nanosecond
	JSONCPUPerRecord   = 11 * time.Microsecond
)

// DefaultServing: 1,024 MB arm64 functions, 20 ms polls, at most 10 polls/s per
// partition, binary request bodies.
func DefaultServing() Serving {
	return Serving{LambdaMemoryMB: 1024, PollDuration: 20 * time.Millisecond, MaxPollsPerSecond: 10,
		CPUPerRecord: BinaryCPUPerRecord}
}

// Aggregator is the aggregation tier: group commit in the api function on Lambda
// Managed Instances, coalescing producers' requests into few appends.
type Aggregator struct {
	// Instances is the fewest instances; more run when the CPU of the requests needs
	// them (VCPUs each, loaded to MaxUtilisation).
	Instances      int
	VCPUs          float64
	MaxUtilisation float64
	Window         time.Duration
	BudgetBytes    float64 // a batch is cut when its members' records reach this many bytes
	// Concurrency is the invocations an instance's execution environment holds at once
	// (deploy.DefaultPerEnvironmentConcurrency): a burst of aligned requests needs
	// that many instances per Concurrency requests.
	Concurrency int
}

// MinManagedInstances is the fewest execution environments a Lambda Managed Instances
// capacity provider runs: AWS starts at least three (spread over Availability Zones),
// busy or idle, so the tier's idle floor is three instance-hours an hour plus the 15 %
// management fee.
const MinManagedInstances = 3

// DefaultAggregator: at least MinManagedInstances m7g.large instances (2 vCPUs, loaded
// to 70 %), a 50 ms window, 4 MiB batches.
func DefaultAggregator() Aggregator {
	return Aggregator{Instances: MinManagedInstances, VCPUs: 2, MaxUtilisation: 0.7, Window: 50 * time.Millisecond, BudgetBytes: 4 << 20,
		Concurrency: 32}
}

// AlignSlotsFor is the slots an operator sets for a fleet of aligned producers (SDK
// AlignLinger): the fewest whose burst, a period's requests over the slots, fits the
// tier's least instances at their concurrency, so that no burst needs more instances
// than the floor.
func AlignSlotsFor(o Options) int {
	f := FlowOf(o, Baseline)
	perPeriod := f.ProducerRequestsPerSec * o.Producers.Linger.Seconds()
	return max(1, int(math.Ceil(perPeriod/float64(o.Aggregator.Instances*o.Aggregator.Concurrency))))
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
	// Claims is how an idempotent profile's claim writes are priced: as counted
	// (ClaimsProfiled), or as folded claims or fenced idempotency whatever the profile
	// counted, to set one beside the other.
	Claims Claims
	// Built are the levers built (BuiltLevers by default): the targets table counts a
	// configuration needing any other as modelled.
	Built []Lever
}

// Claims is how an estimate prices the claims of idempotent appends.
type Claims int

const (
	// ClaimsProfiled prices the claims the profile counted (Profile.WritesPerAppend,
	// ClaimsPerBlock and ReadsPerAppendBlk, Profile.Group's sharing).
	ClaimsProfiled Claims = iota
	// ClaimsFolded prices folded claims, the code before fenced idempotency: one claim
	// PutItem per request carrying every partition's offsets (1 WRU), none per partition
	// and no per-partition replay read, idempotent members sharing a batch's commits.
	ClaimsFolded
	// ClaimsFenced prices fenced idempotency (producer requests): no claim at all, the
	// members sharing a batch's commits; retries, too rare to price, are not.
	ClaimsFenced
)

func (c Claims) String() string {
	return [...]string{"as profiled", "folded claims (one per request)", "fenced (no claim)"}[c]
}

// ParseClaims reads a Claims by the name the CLI takes: profiled, folded or fenced.
func ParseClaims(s string) (Claims, error) {
	switch s {
	case "profiled":
		return ClaimsProfiled, nil
	case "folded":
		return ClaimsFolded, nil
	case "fenced":
		return ClaimsFenced, nil
	}
	return 0, fmt.Errorf("cost: claims %q, want profiled, folded or fenced", s)
}

// claimsPerRequest is the claim writes of one idempotent request and whether its
// per-partition claims and replay reads are priced (only as profiled).
func (o Options) claimsPerRequest() (float64, bool) {
	pf := o.Profile
	switch {
	case !pf.Idempotent:
		return pf.WritesPerAppend, true
	case o.Claims == ClaimsFolded:
		return 1, false
	case o.Claims == ClaimsFenced:
		return 0, false
	}
	return pf.WritesPerAppend, true
}

// Defaults returns the design workload with n producers and every default.
func Defaults(n int) Options {
	return Options{Prices: USEast1(), Workload: DesignWorkload(), Producers: DefaultProducers(n),
		Profile: DesignProfile(), Latency: DefaultLatency(), Serving: DefaultServing(),
		Aggregator: DefaultAggregator(), Kafka: DefaultKafka(), Built: BuiltLevers()}
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
	case p.Count < 1 || p.Linger < 0 || p.BatchBytes <= 0 || p.BatchRecords < 1 || p.EncodedRecordBytes <= 0 ||
		p.RequestBytes <= 0 || p.RequestRecords < 1:
		return fmt.Errorf("cost: producers, batch and request bytes and records must be positive, linger not negative")
	case o.Aggregator.Instances < MinManagedInstances:
		return fmt.Errorf("cost: the aggregation tier runs at least %d Managed Instances (AWS's minimum), got %d", MinManagedInstances, o.Aggregator.Instances)
	case p.AlignSlots < 0 || (p.AlignSlots > 0 && p.Linger <= 0) || o.Aggregator.Concurrency < 1:
		return fmt.Errorf("cost: aligned producers need a linger and slots not negative, the aggregator a concurrency")
	case o.Aggregator.Window <= 0 || o.Aggregator.BudgetBytes <= 0 ||
		o.Aggregator.VCPUs <= 0 || o.Aggregator.MaxUtilisation <= 0 || o.Aggregator.MaxUtilisation > 1:
		return fmt.Errorf("cost: the aggregator needs instances, vCPUs, a utilisation in (0,1], a window and a byte budget")
	case o.Serving.CPUPerRecord < 0 || o.Profile.Group.CPUPerAppend < 0:
		return fmt.Errorf("cost: CPU per record and per append must not be negative")
	case o.Claims < ClaimsProfiled || o.Claims > ClaimsFenced:
		return fmt.Errorf("cost: unknown claims pricing %d", o.Claims)
	case o.Kafka.Replication < 1 || o.Kafka.BrokerMiBps <= 0 || o.Kafka.DiskFill <= 0 || o.Kafka.DiskFill > 1:
		return fmt.Errorf("cost: kafka replication, broker MiB/s and disk fill (0,1] are required")
	}
	return nil
}

// Design is one of the append designs the tool prices.
type Design int

const (
	Baseline         Design = iota // built: one topic commit UpdateItem per append + one index PutItem per partition
	TopicManifest                  // one topic UpdateItem + one manifest item per append (modelled)
	Aggregation                    // group commit on Lambda Managed Instances in front of Baseline
	AggTopicManifest               // the aggregation tier in front of TopicManifest
)

// aggregated reports whether design d has the aggregation tier.
func (d Design) aggregated() bool { return d == Aggregation || d == AggTopicManifest }

// manifest reports whether design d indexes a commit with one manifest item.
func (d Design) manifest() bool { return d == TopicManifest || d == AggTopicManifest }

// Designs lists every design in print order.
var Designs = []Design{Baseline, TopicManifest, Aggregation, AggTopicManifest}

func (d Design) String() string {
	return [...]string{"baseline (topic commit)", "topic commit + manifest",
		"aggregation tier (group commit, Lambda MI)", "aggregation tier + topic commit + manifest"}[d]
}

// Flow is the request flow a workload makes.
type Flow struct {
	ProducerRequestsPerSec float64 // producer → API requests
	RecordsPerRequest      float64
	BlocksPerRequest       float64 // partitions one request touches
	AppendsPerSec          float64 // appends reaching storage (objects written): requests, or the tier's batches
	RecordsPerAppend       float64
	BlocksPerAppend        float64       // partitions one object holds
	MembersPerAppend       float64       // producer requests per object: 1 without the tier
	Instances              int           // the tier's Managed Instances; 0 without the tier
	AckFloor               time.Duration // batching wait + service, the least ack latency
	// BudgetBound: the tier's byte budget, not its window, cut the batches (fewer
	// members than the window gathers).
	BudgetBound bool
	// Burst is the requests of aligned producers that reach the tier at once (a
	// slot's); 0 for requests arriving as a Poisson stream.
	Burst float64
}

// FlowOf derives the flow of design d. A producer's records spread evenly over the
// partitions. SDK: each partition's batch fills at rate/P and is due when full or
// lingered, all together; a round sends every partition's batch (one in flight per
// partition, so a round lasts at least one service time), as few requests as the
// request caps allow, whole batches each. Multi: one batch for all partitions, one
// request each. In the tier, each instance takes an equal share of the requests; a
// batch opens with a request and takes those arriving within the window after it (1 +
// rate × window members on average), fewer when their records reach the byte budget.
// Aligned producers whose rounds go at the linger (their batches do not fill first)
// send a period's requests in AlignSlots bursts, each spread over as many instances as
// hold it at Concurrency invocations each, and a batch takes an instance's share of a
// burst (clocks agreeing within the window). A batch of m members touching k of P
// partitions each holds P·(1 − (1 − k/P)^m) partitions.
func FlowOf(o Options, d Design) Flow {
	w, p := o.Workload, o.Producers
	perProducer := w.EventsPerSec / float64(p.Count)
	parts := float64(w.Partitions)
	capRecs := math.Max(1, math.Min(float64(p.BatchRecords), math.Floor(p.BatchBytes/p.EncodedRecordBytes)))
	service := o.Latency.Service().Seconds()
	var wait, recs, k float64
	if p.Shape == ShapeMulti {
		wait = math.Min(p.Linger.Seconds(), capRecs/perProducer)
		recs = clamp(perProducer*math.Max(wait, service), 1, capRecs) // one request in flight
		k = math.Min(recs, parts)
	} else {
		wait = math.Min(p.Linger.Seconds(), capRecs*parts/perProducer)
		round := clamp(perProducer*math.Max(wait, service), 1, capRecs*parts)
		touched := math.Min(round, parts)
		batch := round / touched
		reqCap := math.Max(1, math.Min(float64(p.RequestRecords), math.Floor(p.RequestBytes/p.EncodedRecordBytes)))
		perReq := clamp(math.Floor(reqCap/batch), 1, touched) // whole batches a request holds
		reqs := math.Ceil(touched / perReq)
		recs, k = round/reqs, touched/reqs
	}
	f := Flow{ProducerRequestsPerSec: w.EventsPerSec / recs, RecordsPerRequest: recs, BlocksPerRequest: k}
	f.AppendsPerSec, f.RecordsPerAppend, f.BlocksPerAppend, f.MembersPerAppend = f.ProducerRequestsPerSec, recs, k, 1
	ack := wait + service
	if d.aggregated() {
		a := o.Aggregator
		cpu := f.ProducerRequestsPerSec*o.Profile.Group.CPUPerAppend.Seconds() + w.EventsPerSec*o.Serving.CPUPerRecord.Seconds()
		f.Instances = max(a.Instances, int(math.Ceil(cpu/(a.VCPUs*a.MaxUtilisation))))
		fit := math.Max(1, math.Floor(a.BudgetBytes/(recs*p.EncodedRecordBytes)))
		var gathered float64
		if p.AlignSlots > 0 && p.Shape == ShapeSDK && wait >= p.Linger.Seconds() {
			f.Burst = f.ProducerRequestsPerSec * p.Linger.Seconds() / float64(p.AlignSlots)
			f.Instances = max(f.Instances, int(math.Ceil(f.Burst/float64(a.Concurrency))))
			gathered = math.Max(1, f.Burst/float64(f.Instances))
		} else {
			gathered = 1 + f.ProducerRequestsPerSec/float64(f.Instances)*a.Window.Seconds()
		}
		m := math.Min(gathered, fit)
		f.BudgetBound = fit < gathered
		f.MembersPerAppend = m
		f.AppendsPerSec, f.RecordsPerAppend = f.ProducerRequestsPerSec/m, recs*m
		f.BlocksPerAppend = parts * (1 - math.Pow(1-k/parts, m))
		ack += a.Window.Seconds()
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

// The names of the DynamoDB write lines of a Strata estimate: the commits (topic
// commits, sequencer updates, index entries or manifests) and the idempotency claims.
const (
	LineCommitWrites = "DynamoDB write units (topic commit, index)"
	LineClaimWrites  = "DynamoDB write units (idempotency claims)"
)

// itemWRU is the write units of an item of the given bytes (1 KB each, at least one).
func itemWRU(bytes float64) float64 { return math.Max(1, math.Ceil(bytes/1024)) }

// Strata prices design d of Strata's AWS deployment.
//
// Writes are counted in commits: one sequencer commit and what it indexes, and the topic
// commit that sequences them, one per request without the tier and one per batch in it,
// priced by the topic item's size (TopicCommitWRU). Without the tier each request is one
// commit per partition it touches. In the tier the members of
// a batch share one commit per partition of the batch — idempotent ones too when the
// profile says so (Profile.Group.IdempotentShare) or Options.Claims prices folded claims
// or fenced idempotency; otherwise an idempotent member keeps its own (Profile.Group,
// counted by pkg/cost/measure). The idempotency claims are a line of their own (zero
// under fenced idempotency). A consumer GETs each commit's range.
func Strata(o Options, d Design) Estimate {
	pr, w, pf := o.Prices, o.Workload, o.Profile
	f := FlowOf(o, d)
	e := Estimate{Name: "Strata, " + d.String(), Flow: &f}
	reqs := f.ProducerRequestsPerSec * secondsPerDay
	objects := f.AppendsPerSec * secondsPerDay
	e.add("S3 PUT (segment objects)", objects*pf.PutsPerAppend, pr.S3Put)

	claims, profiled := o.claimsPerRequest()
	claimReads := pf.ReadsPerAppend
	if profiled {
		claims += f.BlocksPerRequest * pf.ClaimsPerBlock
		claimReads += f.BlocksPerRequest * pf.ReadsPerAppendBlk
	}
	commits, k := reqs, f.BlocksPerRequest // commit units a day, partitions each
	topics := reqs * pf.TopicCommitsPerAppend
	if d.aggregated() {
		topics = objects * pf.Group.TopicCommitsPerBatch
		if pf.Idempotent && profiled && !pf.Group.IdempotentShare {
			commits = reqs * pf.Group.MemberCommitsPerBlock
		} else {
			commits, k = objects*pf.Group.SharedCommitsPerBlock, f.BlocksPerAppend
		}
	}
	if d.manifest() {
		topics = commits // one topic commit per manifest
	}
	e.add(LineCommitWrites, commits*commitWrites(d, k, pf)+topics*TopicCommitWRU(w.Partitions, k), pr.DynamoWRU)
	e.add(LineClaimWrites, reqs*claims, pr.DynamoWRU)

	// Consumers: per group and partition, one poll per new commit up to the poll cap
	// (and at most one per consumer window).
	blocks := commits * k // ranges to read a day
	commitRate := blocks / secondsPerDay / float64(w.Partitions)
	polls := float64(w.Groups*w.Partitions) * math.Min(commitRate, o.Serving.PollsPerSecond()) * secondsPerDay
	e.add("DynamoDB read units (polls, append checks)", polls*pf.ReadsPerPoll+reqs*claimReads, pr.DynamoRRU)
	e.add("S3 GET (blocks read)", float64(w.Groups)*blocks*pf.GetsPerBlock, pr.S3Get)

	retainSec := w.Retention.Seconds()
	storedGB := w.EventsPerSec * w.EventBytes * pf.StoredBytesPerByte * retainSec / gib
	e.add("S3 storage (GB-month)", storedGB/daysPerMonth, pr.S3StorageGBMonth)
	indexItems := blocks / secondsPerDay * retainSec
	if d.manifest() {
		indexItems = commits / secondsPerDay * retainSec
	}
	e.add("DynamoDB storage (GB-month)", indexItems*pf.IndexItemBytes/gib/daysPerMonth, pr.DynamoStorageGBMonth)

	// API Gateway and Lambda: producer requests (metered per 512 KB) and polls.
	reqUnits := math.Max(1, math.Ceil(f.RecordsPerRequest*o.Producers.EncodedRecordBytes/(512*1024)))
	if !o.Serving.FunctionURL {
		e.add("API Gateway HTTP API requests", reqs*reqUnits+polls, pr.APIGatewayHTTP)
	}
	e.add("Lambda requests", reqs+polls, pr.LambdaRequest)
	memGB := o.Serving.LambdaMemoryMB / 1024
	pollGBs := polls * o.Serving.PollDuration.Seconds() * memGB
	if d.aggregated() {
		e.add("Lambda GB-seconds (polls)", pollGBs, pr.LambdaGBSecondArm)
		hours := float64(f.Instances) * 24
		e.add("Managed Instances (instance-hours)", hours, pr.ManagedInstanceHour)
		e.Lines = append(e.Lines, Line{Item: "Managed Instances fee", Quantity: hours, Unit: "instance-hour",
			USD: hours * pr.ManagedInstanceHour.USD * pr.LambdaMIFee.USD})
	} else {
		billed := o.Latency.Service().Seconds() + f.RecordsPerRequest*o.Serving.CPUPerRecord.Seconds()
		e.add("Lambda GB-seconds (appends + polls)", reqs*billed*memGB+pollGBs, pr.LambdaGBSecondArm)
	}
	return e
}

// commitWrites is the DynamoDB write units of one commit of design d over k
// partitions, the topic commit and idempotency claims aside.
func commitWrites(d Design, k float64, pf Profile) float64 {
	if d.manifest() {
		return itemWRU(200 + 40*k) // one block reference per touched partition
	}
	return k * (pf.UpdatesPerBlock + pf.PutItemsPerBlock*itemWRU(pf.IndexItemBytes))
}

// TopicCommitWRU is the write units of one topic commit touching k of a topic's
// partitions: DynamoDB bills the larger of the old and new item, which holds every
// partition's counters (about 27 bytes each at offsets in the hundreds of millions) and
// the batch's commits (about 31 bytes per partition touched) over about 200 bytes of key
// and batch reference — a fit to pkg/store/dynamo's TestTopicItemSize, whose eight
// measured items it prices to the unit (TestTopicCommitWRUMatchesTheItem).
func TopicCommitWRU(partitions int, k float64) float64 {
	return itemWRU(TopicItemBytes(partitions, k))
}

// TopicItemBytes is the size of a topic's sequencer item with partitions written and a
// newest batch of k commits (TopicCommitWRU's fit): what a topic commit writes and what
// a poll reads whole. The scale model sizes the item's reads and writes by it too.
func TopicItemBytes(partitions int, k float64) float64 {
	return 200 + 27*float64(partitions) + 31*math.Ceil(k)
}

// KPLAggregationMaxBytes is the KPL's AggregationMaxSize default: an aggregated
// Kinesis record holds at most this many bytes of user records.
const KPLAggregationMaxBytes = 51200

// kinesisUnitBytes is one PUT payload unit (25 KB).
const kinesisUnitBytes = 25 * 1024

// KPLFlow is what Kinesis producers using the KPL send: each of Options.Producers
// buffers its records for RecordMaxBufferedTime = the linger (at least one service
// time, as Strata's producer) and then puts, per shard its records map to, aggregated
// records of up to KPLAggregationMaxBytes; each aggregated record is billed in whole
// 25 KB PUT payload units and counts once against the shard's 1,000 records/s.
type KPLFlow struct {
	Shards              float64 // shards the stream needs: write MiB/s, reads, and aggregated records/s
	ShardsPerFlush      float64 // shards one producer's flush touches
	BytesPerShardFlush  float64 // user record bytes one producer puts per shard per flush
	UnitsPerShardFlush  float64
	AggregatedPerSecond float64 // aggregated records/s, the whole fleet
	UnitsPerSecond      float64
	AckFloor            time.Duration // buffered time + one put
}

// KPLFlowOf derives the KPL's flow at o's producers and linger: a producer's R records
// per flush spread over S shards touch S·(1 − (1 − 1/S)^R) of them (keys at random).
func KPLFlowOf(o Options) KPLFlow {
	w, p := o.Workload, o.Producers
	in := w.EventsPerSec * w.EventBytes
	shards := math.Max(math.Ceil(in/mib), math.Ceil(float64(w.Groups)*in/(2*mib)))
	flush := math.Max(p.Linger.Seconds(), o.Latency.Service().Seconds())
	recs := math.Max(1, w.EventsPerSec/float64(p.Count)*flush)
	var f KPLFlow
	for range 3 { // more shards spread a flush thinner: settle the count
		f.Shards = shards
		f.ShardsPerFlush = shards * (1 - math.Pow(1-1/shards, recs))
		f.BytesPerShardFlush = recs / f.ShardsPerFlush * w.EventBytes
		full := math.Floor(f.BytesPerShardFlush / KPLAggregationMaxBytes)
		rem := f.BytesPerShardFlush - full*KPLAggregationMaxBytes
		aggs := full
		f.UnitsPerShardFlush = full * math.Ceil(KPLAggregationMaxBytes/kinesisUnitBytes)
		if rem > 0 {
			aggs++
			f.UnitsPerShardFlush += math.Ceil(rem / kinesisUnitBytes)
		}
		flushes := float64(p.Count) * f.ShardsPerFlush / flush // producer-shard flushes a second
		f.AggregatedPerSecond = flushes * aggs
		f.UnitsPerSecond = flushes * f.UnitsPerShardFlush
		next := math.Max(shards, math.Ceil(f.AggregatedPerSecond/1000-1e-9))
		if next == shards {
			break
		}
		shards = next
	}
	f.AckFloor = time.Duration((flush + o.Latency.API.Seconds() + o.Latency.S3Put.Seconds()) * float64(time.Second))
	return f
}

// KinesisProvisioned prices Kinesis Data Streams in provisioned mode, sized for writes
// (1 MiB/s or 1,000 records/s per shard) and shared-throughput reads (2 MiB/s per shard
// for all consumers together). With aggregation the producers use the KPL at the same
// buffering as Strata's (KPLFlowOf): its PUT payload units grow with the producer count
// as each producer's flush is spread over the shards. Without it every 1 KB event is a
// record and a unit.
func KinesisProvisioned(o Options, aggregated bool) Estimate {
	pr, w := o.Prices, o.Workload
	in := w.EventsPerSec * w.EventBytes
	shards := math.Ceil(in / mib)
	units := w.EventsPerSec * math.Ceil(w.EventBytes/kinesisUnitBytes)
	name := "Kinesis provisioned, no aggregation"
	if aggregated {
		f := KPLFlowOf(o)
		shards, units = f.Shards, f.UnitsPerSecond
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
