package cost

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// Driver is what a line of the deployment's cost grows with.
type Driver int

const (
	// PerAppend: the producers' append requests.
	PerAppend Driver = iota
	// PerBlock: partition batches of those requests.
	PerBlock
	// PerBlockRead: partition batches read, each group reading every one.
	PerBlockRead
	// PerObject: segment objects written, each one topic commit. On demand every
	// append request writes its own; on Managed Instances concurrent requests of one
	// execution environment merge into one (group commit): ObjectsOf.
	PerObject
	// PerObjectBlock: partitions of those objects, each one index entry (a merged
	// object's members share one per partition).
	PerObjectBlock
	// PerObjectBlockRead: the index entries read, each group reading every one.
	PerObjectBlockRead
	// PerProducerSecond: a second of one producer appending.
	PerProducerSecond
	// PerConsumerSecond: a second of one group's consumer invocation on one
	// partition, held whether or not records arrive.
	PerConsumerSecond
	// PerConsumerInvocation: invocations of the consumer function.
	PerConsumerInvocation
	// PerConsumerPoll: one group's polls of one partition (ConsumerPollsPerSecond).
	PerConsumerPoll
	// PerStreamBatch: dispatch invocations from the sequencer table's stream.
	PerStreamBatch
	// PerSweep: runs of dispatch's sweep schedule.
	PerSweep
	// PerRetentionPass: runs of the retention schedule (in a run, the retention
	// function's invocations started).
	PerRetentionPass
	// PerEnvironment: execution environments started (cold starts).
	PerEnvironment
	// PerEnvironmentSecond: a second of one execution environment of the function
	// (its aggregated metrics flush on a timer).
	PerEnvironmentSecond
	// PerSecond: a second of the deployment, whatever the load.
	PerSecond
	// PerCompactionPass: runs of the compaction function's schedule (each lists the
	// topics and fans out to the compacted ones' partitions).
	PerCompactionPass
	// PerCompactedTopicPass: a scheduled compaction pass over one compacted topic.
	PerCompactedTopicPass
	// PerCompactedPartitionPass: one compacted partition's pass, an invocation of the
	// compaction function of its own (the schedule's fan-out or the dirty-ratio trigger).
	PerCompactedPartitionPass
	// PerCompactedAppend: append requests to a compacted topic.
	PerCompactedAppend
	// PerCompactedKey: key index entries those appends write (a distinct key of a
	// request's partition each).
	PerCompactedKey
	// PerCompactedRemoved: superseded records a compaction pass removes.
	PerCompactedRemoved
	// PerRetentionCompactedTopic: a retention pass's fan-out to a compact-only topic
	// (its worker reads the topic and leaves: no record of it leaves by age).
	PerRetentionCompactedTopic
	// PerDescribe: describes of a topic (GET /v1/topics/{topic}): a producer's as it
	// starts, and again only after a refresh period without an append (the append
	// answers tell it the partition count).
	PerDescribe
)

// ProducerSessionsPerDay is how often a day each producer of the design workload
// starts (and describes its topic): its host replaced every hour (assumed; a producer
// appending steadily describes nothing else).
const ProducerSessionsPerDay = 24.0

var driverNames = [...]string{"append", "block", "block read", "object", "object block", "object block read", "producer-second", "consumer-second", "consumer invocation", "consumer poll",
	"stream batch", "sweep", "retention pass", "environment", "environment-second", "second",
	"compaction pass", "compacted topic pass", "compacted partition pass", "compacted append", "compacted key", "compacted record removed", "retention compacted topic",
	"describe"}

func (d Driver) String() string { return driverNames[d] }

// Sweeps and retention passes a day at the stack's default schedules (rate(1 minute)
// and rate(5 minutes), infra/strata).
const (
	SweepsPerDay          = 1440.0
	RetentionPassesPerDay = 1440.0 / 5
)

// CompactionPassesPerDay is the compaction function's scheduled passes a day at the
// stack's default schedule (strata:compactIntervalMinutes, 5).
const CompactionPassesPerDay = 1440.0 / 5

// StreamPollsPerSecond is how often Lambda's event source mapping polls a DynamoDB
// stream shard: at most one dispatch batch per poll.
const StreamPollsPerSecond = 4.0

// ConsumerHold is how long one consumer invocation lasts: the example consumer's
// 300 s timeout less pkg/lambdaconsumer's 3 s deadline margin.
const ConsumerHold = 297.0

// Consumer polling (pkg/lambdaconsumer): a poll takes commits whole until it holds
// ConsumerPollRecords records (log.PollOptions.WholeCommits), and a caught-up consumer
// polls every ConsumerPollGap.
const (
	ConsumerPollRecords = 500
	ConsumerPollGap     = 0.2 // seconds
)

// ConsumerPollsPerSecond is one group's polls of one partition a second: enough to
// carry the partition's records at ConsumerPollRecords a poll, or a commit a poll when
// commits are larger (a poll never cuts one, so each block is read once), and otherwise
// one per partition batch as batches arrive, at most one per ConsumerPollGap.
func ConsumerPollsPerSecond(recordsPerSec, blocksPerSec float64) float64 {
	perPoll := float64(ConsumerPollRecords)
	if blocksPerSec > 0 {
		perPoll = math.Max(perPoll, recordsPerSec/blocksPerSec)
	}
	return math.Max(recordsPerSec/perPoll, math.Min(blocksPerSec, 1/ConsumerPollGap))
}

// EnvironmentsPerDay is the cold starts a day of one function's steadily busy
// execution environment: Lambda recycles environments after some hours (not
// published; two hours assumed).
const EnvironmentsPerDay = 12.0

// LogsAPI is the API name of a function's log stream line: its bytes are what
// CloudWatch Logs ingests from it.
const LogsAPI = "CloudWatchLogs.ingest"

// InvokedAPI is the API name of a function's invocations line.
const InvokedAPI = "Lambda.invocations"

// Term is one driver of a model line and the line's rate per unit of it.
type Term struct {
	Driver Driver
	Rate   float64
}

// ModelLine is one line the deployment pays: a function's requests of one AWS API
// on one resource (or the bytes of its log stream, or its invocations), the sum of
// its terms.
type ModelLine struct {
	Function, API, Resource string
	Terms                   []Term
	// Why says where the rates come from.
	Why string
}

// Key names the line as a run names what it counted.
func (l ModelLine) Key() string { return l.Function + " " + l.API + " " + l.Resource }

// Driver is the line's first driver, the one its table row names.
func (l ModelLine) Driver() Driver { return l.Terms[0].Driver }

// Count is the line's count at drivers.
func (l ModelLine) Count(drivers map[Driver]float64) float64 {
	var n float64
	for _, t := range l.Terms {
		n += t.Rate * drivers[t.Driver]
	}
	return n
}

func line(fn, api, res string, d Driver, rate float64, why string) ModelLine {
	return ModelLine{Function: fn, API: api, Resource: res, Terms: []Term{{d, rate}}, Why: why}
}

// DeploymentModel is what each function of the stack does per unit of its driver,
// for every line a cost run reaches (internal/stackrun's TestCostRunMatchesTheModel
// holds each within Tolerance of what the functions do) and the lines a short run
// cannot reach at the design workload.
func DeploymentModel() []ModelLine { return DeploymentModelOf(Baseline) }

// DeploymentModelOf is DeploymentModel for the stack of design d: on the aggregation
// tier (the api on Managed Instances behind its function URL) a few lines differ from
// the default stack's, as its cost run counts them (managedLines).
func DeploymentModelOf(d Design) []ModelLine {
	lines := defaultLines()
	if !d.aggregated() {
		return lines
	}
	return overlay(lines, managedLines())
}

// ModelOf is the deployment model of run r's stack and producers: DeploymentModelOf
// its design, with producers aligned to the clock the lines their bursts change
// (alignedLines). The default stack's api behind its function URL has the default
// stack's lines: its front door changes no request a function makes.
func (r Run) ModelOf() []ModelLine {
	lines := DeploymentModelOf(r.Design())
	if r.AlignSlots > 0 && r.Design().aggregated() {
		lines = overlay(lines, alignedLines())
	}
	return lines
}

// overlay replaces the lines of base that over has by over's, and adds over's others.
func overlay(base, over []ModelLine) []ModelLine {
	by := map[string]ModelLine{}
	for _, l := range over {
		by[l.Key()] = l
	}
	for i, l := range base {
		if m, ok := by[l.Key()]; ok {
			base[i] = m
			delete(by, l.Key())
		}
	}
	for _, l := range over {
		if _, ok := by[l.Key()]; ok {
			base = append(base, l)
		}
	}
	return base
}

// alignedLines are the lines of the headline design's run with producers aligned to
// the clock (4 slots of a 2 s linger: a burst every 0.5 s) that differ from its run
// with independent producers. The counts per poll are per poll the model counts (one
// per partition batch, at most one per ConsumerPollGap): a caught-up consumer's long
// poll re-reads the partition's bounds every ConsumerPollGap until a burst lands, so
// polls between bursts read more than once.
func alignedLines() []ModelLine {
	const counted = "as the aligned producers' cost run counts it"
	return []ModelLine{
		line("api", "DynamoDB.GetItem", "topics", PerProducerSecond, 0.036,
			"the topic's configuration, "+counted+" (0.021 with independent producers; each environment reads the compacted topic's once)").with(PerAppend, 0.02).with(PerCompactedAppend, 1),
		line("consumer", "DynamoDB.GetItem", "sequencer", PerConsumerPoll, 2.83, "polls read the partition's bounds, and a long poll between bursts re-reads them every 0.2 s, "+counted+" (0.55 with independent producers; 1.4 in the run before)"),
		line("consumer", "DynamoDB.Query", "index", PerConsumerPoll, 0.78, "a poll that finds new entries reads them, and a long poll between bursts looks again, "+counted+" (0.29 with independent producers; 0.59 in the run before)"),
		line("dispatch", LogsAPI, "", PerEnvironmentSecond, 213, "EMF aggregated per environment, flushed when due, and start-up lines, "+counted+" (152 with independent producers)"),
		line("dispatch", "DynamoDB.GetItem", "groups", PerStreamBatch, 0.62, counted+" (0.77 on the default stack)"),
		line("retention", "DynamoDB.Query", "index", PerRetentionPass, 5.5, "the oldest entries of each partition, "+counted+" (4.8 with independent producers)"),
		line("retention", "DynamoDB.GetItem", "topics", PerRetentionPass, 2, "the per-topic worker reads its topic, the lag sample the group's, "+counted).with(PerRetentionCompactedTopic, 1),
		line("dispatch", "DynamoDBStreams.GetRecords", "sequencer", PerStreamBatch, 1.83, "the stream mapping's reads (free from a Lambda trigger), "+counted+" (1.59 with independent producers)"),
		line("dispatch", "DynamoDBStreams.DescribeStream", "sequencer", PerStreamBatch, 1.83, "the harness's stream mapping describes the stream per read (Lambda's own reads, free)"),
	}
}

// managedLines are the lines of the headline design's run that differ from the
// default stack's.
func managedLines() []ModelLine {
	const counted = "as the headline design's cost run counts it"
	return []ModelLine{
		line("api", "DynamoDB.GetItem", "sequencer", PerDescribe, 1,
			"a describe of the topic reads its sequencer item (a producer's as it starts), and appends re-read it when an environment's copy is stale, "+counted+" (0.046 and 0.033 an append in the runs with independent and aligned producers)").with(PerAppend, 0.038),
		line("api", "DynamoDB.GetItem", "topics", PerProducerSecond, 0.0155,
			"the topic's configuration: one environment's cached copy serves most of the concurrent appends, "+counted+" (each environment reads the compacted topic's once)").with(PerAppend, 0.02).with(PerCompactedAppend, 1),
		line("api", LogsAPI, "", PerEnvironmentSecond, 106, "one environment serving every request: the aggregated documents and its per-request warnings on the emulator, "+counted+" (111 and 101 with independent and aligned producers; an upper bound)"),
		line("consumer", "DynamoDB.GetItem", "groups", PerConsumerInvocation, 2, "the group's settings, read as an invocation starts and refreshed on a timer, "+counted).with(PerConsumerSecond, 0.04),
		line("consumer", "DynamoDB.GetItem", "sequencer", PerConsumerPoll, 0.71, "polls read the partition's bounds (eventually consistently), "+counted+" (0.39, 0.15 and 0.21 in the runs before, 0.59 in one on a busier machine, where more requests merged)"),
		line("consumer", "DynamoDB.Query", "index", PerConsumerPoll, 0.29, "a poll that finds new entries reads them (fewer, larger entries than on demand), "+counted+" (0.22, 0.086 and 0.14 in the runs before)"),
		line("dispatch", LogsAPI, "", PerEnvironmentSecond, 178, "EMF aggregated per environment, flushed when due, and start-up lines, "+counted+" (152, 94 and 114 in the runs before)"),
		line("dispatch", "DynamoDB.GetItem", "groups", PerStreamBatch, 0.65, counted+" (0.77 on the default stack)"),
		line("dispatch", "DynamoDB.GetItem", "topics", PerStreamBatch, 0.48, counted+" (0.635 in the run before)"),
		line("dispatch", "DynamoDB.GetItem", "sequencer", PerStreamBatch, 1.3, counted+" (1.24 and 1.42 with independent producers, the run before 1.42 and 1.41)"),
		line("dispatch", "DynamoDB.Query", "index", PerStreamBatch, 2.8, counted+": the woken partitions' new entries (fewer, larger entries than on demand)"),
		line("dispatch", "DynamoDBStreams.GetRecords", "sequencer", PerStreamBatch, 1.55, "the stream mapping's reads (free from a Lambda trigger), "+counted+" (1.65 in the run before)"),
		line("dispatch", "DynamoDBStreams.DescribeStream", "sequencer", PerStreamBatch, 1.55, "the harness's stream mapping describes the stream per read (Lambda's own reads, free)"),
		line("retention", "DynamoDB.Query", "index", PerRetentionPass, 4.8, "the oldest entries of each partition (fewer, larger entries than on demand), "+counted),
		line("retention", "DynamoDB.GetItem", "topics", PerRetentionPass, 1.6, "the per-topic worker reads its topic, the lag sample the group's, "+counted+" (one pass of seven read the compacted topic's only once; 2 on the default stack)").with(PerRetentionCompactedTopic, 1),
	}
}

// defaultLines are the default stack's lines.
func defaultLines() []ModelLine {
	const (
		counted = "as the cost run counts it"
		flush   = "EMF aggregated per environment, flushed when due (30 s): the documents and a few start-up lines, as counted"
	)
	return []ModelLine{
		line("api", "S3.PutObject", "bucket", PerObject, 1, "one segment object per batch of merged requests (pkg/log; one per request on demand), and per compacted append").with(PerCompactedAppend, 1),
		line("api", "DynamoDB.UpdateItem", "sequencer", PerObject, 1, "the topic commit: a conditional UpdateItem of the topic's sequencer item, one per object").with(PerCompactedAppend, 1),
		line("api", "DynamoDB.PutItem", "index", PerObjectBlock, 1, "one index entry per partition of an object; on a compacted topic also one conditional key index entry per distinct key of a request's partition (the key index shares the table)").
			with(PerCompactedAppend, 1).with(PerCompactedKey, 1),
		line("api", "DynamoDB.UpdateItem", "index", PerCompactedAppend, 1, "the dirty-ratio trigger (compact.Trigger) on a compacted partition: its counter, once per request that superseded records (the run's rounds after the first), and the claim of the request finding it due (the second round supersedes half the partition; the 10-minute cooldown outlasts the run): 3 for the run's 3 rounds"),
		line("api", "Lambda.Invoke", "compact", PerCompactedAppend, 1.0/3, "the claim's asynchronous Invoke of the compaction function for the partition: once in the run (3 rounds)"),
		line("api", "DynamoDB.GetItem", "sequencer", PerDescribe, 1,
			"a describe of the topic reads its sequencer item (a producer's as it starts: its append answers tell it the partition count after that); appends re-read it when an environment's copy is stale, as counted (before the answers told the count, a producer's refresh every 5 s read it: 0.2 a producer-second)").with(PerAppend, 0.035),
		line("api", "DynamoDB.GetItem", "topics", PerProducerSecond, 0.2, "and the topic's configuration (appends now and then too, as counted; each environment reads the compacted topic's once)").with(PerAppend, 0.04).with(PerCompactedAppend, 1),
		line("api", InvokedAPI, "", PerAppend, 1, "one invocation per append and per describe of the topic (a producer's as it starts)").with(PerDescribe, 1).with(PerCompactedAppend, 1),
		line("api", LogsAPI, "", PerEnvironmentSecond, 60, flush+" (a short run's start-up and last flush weigh in: from 38 to 63 a second in the last runs)"),

		line("dispatch", "DynamoDBStreams.GetRecords", "sequencer", PerStreamBatch, 1.13, "the stream mapping's reads, empty ones included (free from a Lambda trigger), as counted (1.1, 1.31 and 1.66 in the runs before)"),
		line("dispatch", "DynamoDBStreams.DescribeStream", "sequencer", PerStreamBatch, 1.13, "the harness's stream mapping describes the stream per read (Lambda's own reads, free)"),
		line("dispatch", InvokedAPI, "", PerStreamBatch, 1, "one invocation per stream batch and per sweep").with(PerSweep, 1),
		line("dispatch", "DynamoDB.GetItem", "assignments", PerStreamBatch, 2.6, counted+" (the sweep's reads folded in: an upper bound)"),
		line("dispatch", "DynamoDB.GetItem", "sequencer", PerStreamBatch, 1.39, counted),
		line("dispatch", "DynamoDB.GetItem", "topics", PerStreamBatch, 0.57, counted+" (0.73 and 0.92 in the runs before)"),
		line("dispatch", "DynamoDB.GetItem", "groups", PerStreamBatch, 0.68, counted+" (0.87 in the run before)"),
		line("dispatch", "DynamoDB.GetItem", "commits", PerSweep, 0.125, counted),
		line("dispatch", "DynamoDB.Query", "index", PerStreamBatch, 3.25, counted+": the woken partitions' new entries"),
		line("dispatch", "DynamoDB.PutItem", "index", PerStreamBatch, 0, "an entry the api did not write (crash recovery): rare"),
		line("dispatch", "S3.GetObject", "bucket", PerStreamBatch, 0, "reading a crashed append's object back: rare"),
		line("dispatch", "DynamoDB.Scan", "assignments", PerSweep, 1, "the sweep scans the leases"),
		line("dispatch", "DynamoDB.Scan", "commits", PerSweep, 1, "the groups' commits"),
		line("dispatch", "DynamoDB.Scan", "parked", PerSweep, 1, "and the parked keys"),
		line("dispatch", "Lambda.Invoke", "consumer", PerConsumerInvocation, 1, "each consumer invocation is dispatch's asynchronous Invoke"),
		line("dispatch", "ssm:GetParametersByPath", "/strata/subscriptions", PerEnvironment, 2, "the subscriptions, read as an environment starts and refreshed, as counted"),
		line("dispatch", LogsAPI, "", PerEnvironmentSecond, 177, flush+" (a short run's start-up lines weigh in: an upper bound; 120 in the run before)"),

		line("consumer", "DynamoDB.TransactWriteItems", "assignments+commits", PerConsumerSecond, 0.097, "the group commit (two items: the lease's fence and the offset), made on progress with the lease's renewal inside it, as counted: about one every 10 s per partition"),
		line("consumer", "DynamoDB.UpdateItem", "assignments", PerConsumerInvocation, 1, "the lease taken when an invocation starts (renewals ride in the commit)"),
		line("consumer", "DynamoDB.GetItem", "sequencer", PerConsumerPoll, 0.73, "polls read the partition's bounds, eventually consistently (log.PollOptions.EventualBounds: the run's proxy counts which reads are), as counted (long polls: one per batch at the run's rate, the idle window 1 s when caught up; 0.6 and 0.65 to 0.76 in the runs before, 0.93 in one on a busier machine)"),
		line("consumer", "DynamoDB.GetItem", "topics", PerConsumerSecond, 0.43, "the topic's configuration, cached for log.TopicCacheTTL (5 s) in each environment (and a second Log's copy): a rate per second held, not per poll, as counted (0.41 to 0.44 in the four configurations' runs, where per poll they spread from 0.085 to 0.22 in the runs before)"),
		line("consumer", "DynamoDB.GetItem", "groups", PerConsumerInvocation, 2, "the group's settings, read as an invocation starts and refreshed on a timer, as counted").with(PerConsumerSecond, 0.02),
		line("consumer", "DynamoDB.GetItem", "commits", PerConsumerInvocation, 1, "the committed offset read when an invocation starts"),
		line("consumer", "DynamoDB.Query", "index", PerConsumerPoll, 0.525, "a poll that finds new entries reads them, eventually consistently (read again strongly when a replica's answer stops short), as counted"),
		line("consumer", "S3.GetObject", "bucket", PerObjectBlockRead, 1, "one GET per index entry read"),
		line("consumer", InvokedAPI, "", PerConsumerInvocation, 1, "held until 3 s before the 300 s timeout, then invoked again"),
		line("consumer", LogsAPI, "", PerConsumerSecond, 0, "the example consumer writes nothing per record"),

		line("retention", InvokedAPI, "", PerRetentionPass, 2, "one invocation per pass and one per topic it fans out to (the run's delete topic; its compacted one too)").with(PerRetentionCompactedTopic, 1),
		line("retention", "Lambda.Invoke", "retention", PerRetentionPass, 1, "the pass invokes itself asynchronously once per topic").with(PerRetentionCompactedTopic, 1),
		line("retention", "DynamoDB.GetItem", "groups", PerRetentionPass, 1, counted),
		line("retention", "DynamoDB.GetItem", "laghistory", PerRetentionPass, 0.92, counted),
		line("retention", "DynamoDB.PutItem", "laghistory", PerRetentionPass, 0.92, "the pass records the groups' lag"),
		line("retention", "DynamoDB.GetItem", "sequencer", PerRetentionPass, 3.7, counted),
		line("retention", "DynamoDB.GetItem", "topics", PerRetentionPass, 2, "the per-topic worker reads its topic, the lag sample the group's, as counted").with(PerRetentionCompactedTopic, 1),
		line("retention", "DynamoDB.Query", "index", PerRetentionPass, 4.85, "the oldest entries of each partition, as counted"),
		line("retention", "DynamoDB.Scan", "assignments", PerRetentionPass, 1, counted),
		line("retention", "DynamoDB.Scan", "commits", PerRetentionPass, 1, counted),
		line("retention", "DynamoDB.Scan", "groups", PerRetentionPass, 1, counted),
		line("retention", "DynamoDB.Scan", "topics", PerRetentionPass, 2, "the pass lists the topics and the deleted topics (the compaction pass, which listed them once more, is the compaction function's now)"),
		line("retention", "S3.ListObjectsV2", "bucket", PerRetentionPass, 0.95, "a page of the expired objects per topic, as counted; a page per 1,000 expired at the target").with(PerObject, 0.001),
		line("retention", "S3.DeleteObjects", "bucket", PerObject, 0.001, "objects deleted 1,000 a request (free); the expired index entries are left to DynamoDB TTL (free deletes, priced as the storage line of that name)"),
		line("retention", LogsAPI, "", PerRetentionPass, 1120, "the pass's and its per-topic worker's EMF documents, as counted (1,160 and 580 in the runs before)").with(PerRetentionCompactedTopic, 560),

		line("compact", InvokedAPI, "", PerCompactionPass, 1, "one invocation per scheduled pass and one per compacted partition's pass (the pass's fan-out, the dirty-ratio trigger's)").with(PerCompactedPartitionPass, 1),
		line("compact", "DynamoDB.Scan", "topics", PerCompactionPass, 1, "the scheduled pass lists the topics, as counted"),
		line("compact", "DynamoDB.GetItem", "topics", PerCompactionPass, 1, "the scheduled pass reads every topic (the run's delete topic; the target's one), each compacted one too, and a partition's pass its topic").
			with(PerCompactedTopicPass, 1).with(PerCompactedPartitionPass, 1),
		line("compact", "Lambda.Invoke", "compact", PerCompactedTopicPass, 1, "the scheduled pass invokes the function itself once per partition of a compacted topic (the run's has one)"),
		line("compact", "S3.ListObjectsV2", "bucket", PerCompactedTopicPass, 1, "the scheduled pass lists a compacted topic's garbage markers (collection)"),
		line("compact", "DynamoDB.GetItem", "sequencer", PerCompactedPartitionPass, 1, "a partition's pass reads its bounds"),
		line("compact", "DynamoDB.Query", "index", PerCompactedPartitionPass, 1, "and its index entries, 100 a page: one page for the run's 3 (none while the partition is empty)"),
		line("compact", "S3.GetObject", "bucket", PerCompactedPartitionPass, 2.75, "and its records, one ranged GET per object (the pass reads the partition whole: the run's 3 objects once its rounds are in, fewer for a pass that came before: 3 and 2.5 a pass in the runs); at collection each garbage marker is read (not reached: see PerCompactedRemoved)").
			with(PerCompactedRemoved, PutsPerRemoved/2),
		line("compact", "S3.PutObject", "bucket", PerCompactedRemoved, PutsPerRemoved, "a rewrite's object and its garbage marker (BenchmarkCompactionPass; not reached in a run: no record of it is older than compact.HeadGuard, 10 minutes)"),
		line("compact", "DynamoDB.TransactWriteItems", "index", PerCompactedRemoved, SwapsPerRemoved, "a rewrite's swap of at most 100 index entries (BenchmarkCompactionPass; not reached in a run)"),
		line("compact", "DynamoDB.UpdateItem", "index", PerCompactedRemoved, SwapsPerRemoved/MaxRewritesPerPass, "the partition's dirty counter told what a pass removed (AddRemoved), once per pass that removed records: at least one per 16 swaps (not reached in a run)"),
		line("compact", LogsAPI, "", PerCompactionPass, 585, "one EMF document per invocation, as counted (547 to 620 bytes an invocation in the four runs: an invocation that wrote none weighs in)").with(PerCompactedPartitionPass, 585),
	}
}

func (l ModelLine) with(d Driver, rate float64) ModelLine {
	l.Terms = append(append([]Term(nil), l.Terms...), Term{d, rate})
	return l
}

// TargetDrivers is how many of each driver a day of o's workload has on design d.
// The objects are the flow's (FlowOf): one per request on demand, the merged batches of
// the aggregation tier on Managed Instances.
func TargetDrivers(o Options, d Design) map[Driver]float64 {
	f := FlowOf(o, d)
	w := o.Workload
	appends := f.ProducerRequestsPerSec * secondsPerDay
	objects := f.AppendsPerSec * secondsPerDay
	held := float64(w.Groups*w.Partitions) * secondsPerDay
	return map[Driver]float64{
		PerAppend:             appends,
		PerBlock:              appends * f.BlocksPerRequest,
		PerBlockRead:          appends * f.BlocksPerRequest * float64(w.Groups),
		PerObject:             objects,
		PerObjectBlock:        objects * f.BlocksPerAppend,
		PerObjectBlockRead:    objects * f.BlocksPerAppend * float64(w.Groups),
		PerProducerSecond:     float64(o.Producers.Count) * secondsPerDay,
		PerConsumerSecond:     held,
		PerConsumerInvocation: held / ConsumerHold,
		PerConsumerPoll: held * ConsumerPollsPerSecond(w.EventsPerSec/float64(w.Partitions),
			f.AppendsPerSec*f.BlocksPerAppend/float64(w.Partitions)),
		PerStreamBatch:       math.Min(f.AppendsPerSec, StreamPollsPerSecond) * secondsPerDay,
		PerSweep:             SweepsPerDay,
		PerRetentionPass:     RetentionPassesPerDay,
		PerEnvironment:       EnvironmentsPerDay,
		PerEnvironmentSecond: secondsPerDay,
		PerSecond:            secondsPerDay,
		PerCompactionPass:    CompactionPassesPerDay,
		// The design workload has no compacted topic: compaction's own lines at one are
		// CompactionCost's (a model of the rewrites no short run reaches).
		PerCompactedTopicPass:      0,
		PerCompactedPartitionPass:  0,
		PerCompactedAppend:         0,
		PerCompactedKey:            0,
		PerCompactedRemoved:        0,
		PerRetentionCompactedTopic: 0,
		PerDescribe:                float64(o.Producers.Count) * ProducerSessionsPerDay,
	}
}

// Drivers is how many of each driver the run had; the environment drivers are the
// function's (fn).
func (r Run) Drivers(fn string) map[Driver]float64 {
	sweeps, compactions := 0.0, 0.0
	for _, s := range r.Schedules {
		switch {
		case strings.Contains(s.Rule, "Sweep"):
			sweeps += float64(s.Runs)
		case strings.Contains(s.Rule, "Compact"):
			compactions += float64(s.Runs)
		}
	}
	by := map[string]RunFunction{}
	for _, f := range r.Functions {
		by[f.Function] = f
	}
	var fanouts float64 // the retention pass's invocations of itself, one per topic
	for _, q := range r.Requests {
		if q.Function == "retention" && q.API == "Lambda.Invoke" && q.Resource == "retention" {
			fanouts += float64(q.Requests)
		}
	}
	objects, objectBlocks := r.Objects()
	retentionPasses := math.Max(0, float64(by["retention"].Invocations)-fanouts)
	return map[Driver]float64{
		PerAppend:             float64(r.Appends),
		PerBlock:              float64(r.Blocks),
		PerBlockRead:          float64(r.Blocks * int64(r.Groups)),
		PerObject:             objects,
		PerObjectBlock:        objectBlocks,
		PerObjectBlockRead:    objectBlocks * float64(r.Groups),
		PerProducerSecond:     r.ProducerSeconds,
		PerConsumerSecond:     by["consumer"].BusySeconds,
		PerConsumerInvocation: float64(by["consumer"].Invocations),
		PerConsumerPoll:       r.consumerPolls(by["consumer"].BusySeconds, objectBlocks),
		PerStreamBatch:        math.Max(0, float64(by["dispatch"].Invocations)-sweeps),
		PerSweep:              sweeps,
		PerRetentionPass:      retentionPasses,
		PerEnvironment:        float64(by[fn].Environments),
		PerEnvironmentSecond:  float64(by[fn].Environments) * r.Seconds,
		PerSecond:             r.Seconds,
		PerCompactionPass:     compactions,
		PerCompactedTopicPass: compactions * float64(r.CompactedTopics),
		// The function's invocations other than the scheduled ones: the fan-out's and
		// the trigger's partition passes.
		PerCompactedPartitionPass:  math.Max(0, float64(by["compact"].Invocations)-compactions),
		PerCompactedAppend:         float64(r.CompactedAppends),
		PerCompactedKey:            float64(r.CompactedKeys),
		PerCompactedRemoved:        0, // no record of a run is old enough (compact.HeadGuard)
		PerRetentionCompactedTopic: retentionPasses * float64(r.CompactedTopics),
		PerDescribe:                float64(r.Describes),
	}
}

// consumerPolls is the run's polls by ConsumerPollsPerSecond over held
// consumer-seconds (each group reading every partition batch).
func (r Run) consumerPolls(held, objectBlocks float64) float64 {
	if held <= 0 || r.Partitions == 0 {
		return 0
	}
	perPart := held / float64(r.Partitions*max(r.Groups, 1))
	recs := float64(r.Records) / float64(r.Partitions) / perPart
	blocks := objectBlocks / float64(r.Partitions) / perPart
	return held * ConsumerPollsPerSecond(recs, blocks)
}

// Objects is the segment objects the run's appends made and their partitions (index
// entries), by the model of group commit FlowOf prices the aggregation tier with, not
// by counting them (the run's S3 PutObject and index PutItem lines are held to it):
// on demand each request is an object; with a group-commit window W, an execution
// environment taking requests at rate λ opens a batch with a request and takes those
// arriving within W after it, 1 + λW members (fewer when their bytes reach the budget),
// and a batch of m members each touching k of P partitions holds P·(1 − (1 − k/P)^m).
// λ is the run's append rate over the api's environments.
func (r Run) Objects() (objects, blocks float64) {
	appends := float64(r.Appends)
	m := r.MembersPerObject()
	if appends == 0 || m <= 1 {
		return appends, float64(r.Blocks)
	}
	p := float64(r.Partitions)
	k := float64(r.Blocks) / appends
	objects = appends / m
	return objects, objects * p * (1 - math.Pow(1-k/p, m))
}

// MembersPerObject is the requests merged into one object, by the model (Objects): 1
// on demand. With the run's append arrivals in one environment it is the batches the
// window cuts them into (WindowBatches); otherwise, and at the target, where
// independent producers' requests arrive as a Poisson stream, 1 + λW.
func (r Run) MembersPerObject() float64 {
	if r.GroupCommitWindowSeconds <= 0 || r.Appends == 0 || r.ProducerSeconds <= 0 {
		return 1
	}
	fit := math.Inf(1)
	if r.GroupCommitBudgetBytes > 0 && r.Records > 0 {
		perRequest := float64(r.Records) / float64(r.Appends) * float64(r.RecordBytes)
		fit = math.Max(1, math.Floor(float64(r.GroupCommitBudgetBytes)/perRequest))
	}
	if envs := r.apiEnvironments(); envs == 1 && len(r.AppendArrivals) > 0 {
		n := WindowBatches(r.AppendArrivals, r.GroupCommitWindowSeconds, int(math.Min(fit, 1e9)))
		return float64(len(r.AppendArrivals)) / float64(n)
	}
	return math.Min(1+r.AppendRatePerEnvironment()*r.GroupCommitWindowSeconds, fit)
}

// WindowBatches is how many batches group commit cuts requests arriving at times
// (seconds) into with window w: a request finding no open batch opens one, which takes
// the requests arriving within w after it, at most fit of them. For a Poisson stream at
// rate λ it tends to 1 + λw requests a batch.
func WindowBatches(times []float64, w float64, fit int) int {
	t := append([]float64(nil), times...)
	sort.Float64s(t)
	n := 0
	for i := 0; i < len(t); {
		j := i + 1
		for j < len(t) && t[j] <= t[i]+w && j-i < fit {
			j++
		}
		n++
		i = j
	}
	return n
}

func (r Run) apiEnvironments() int {
	for _, f := range r.Functions {
		if f.Function == "api" {
			return f.Environments
		}
	}
	return 0
}

// AppendRatePerEnvironment is the run's append requests a second of producing over the
// api's execution environments.
func (r Run) AppendRatePerEnvironment() float64 {
	if r.ProducerSeconds <= 0 {
		return 0
	}
	drive := r.ProducerSeconds / float64(max(r.Producers, 1))
	return float64(r.Appends) / drive / float64(max(r.apiEnvironments(), 1))
}

// Observed is one line a run counted: requests (or log bytes, or invocations) and
// the bytes behind them.
type Observed struct {
	Function, API, Resource string
	Count                   float64
	Items                   float64 // items written (DynamoDB), keys deleted (S3 DeleteObjects)
	BytesSent, BytesRecv    float64
	LogLines                float64
	// WriteUnits are the DynamoDB write units the proxy sized from the requests' items
	// (0 in a run recorded without them); EventualReads the eventually consistent reads.
	WriteUnits, EventualReads float64
}

// Key names the line as ModelLine.Key does.
func (o Observed) Key() string { return o.Function + " " + o.API + " " + o.Resource }

// Lines are the run's counts as lines: every request tally, every function's log
// stream and its invocations. The example consumer's own table ("business", alone or
// in a transaction with the lease it is fenced by) is the user's effect, not
// Strata's: it is left out.
func (r Run) Lines() []Observed {
	var out []Observed
	for _, q := range r.Requests {
		if slices.Contains(strings.Split(q.Resource, "+"), "business") {
			continue
		}
		out = append(out, Observed{Function: q.Function, API: q.API, Resource: q.Resource, Count: float64(q.Requests),
			Items: float64(q.Items), BytesSent: float64(q.BytesSent), BytesRecv: float64(q.BytesReceived),
			WriteUnits: q.WriteUnits, EventualReads: float64(q.EventualReads)})
	}
	for _, f := range r.Functions {
		out = append(out, Observed{Function: f.Function, API: InvokedAPI, Count: float64(f.Invocations)})
		out = append(out, Observed{Function: f.Function, API: LogsAPI, Count: float64(f.LogBytes), LogLines: float64(f.LogLines)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out
}

// Tolerance is how far a model line may be from the run's count, as a fraction of it;
// Slack the counts it may miss by whatever the fraction (a short run's start-up: a
// schedule tick or a refresh more or less).
const (
	Tolerance = 0.10
	Slack     = 2
)

// CheckRun holds model to run: each line the run observed must have a model line
// predicting its count within Tolerance (or Slack). It returns one error per line
// that does not hold.
func CheckRun(model []ModelLine, r Run) []error {
	byKey := map[string]ModelLine{}
	for _, l := range model {
		byKey[l.Key()] = l
	}
	var errs []error
	for _, o := range r.Lines() {
		l, ok := byKey[o.Key()]
		if !ok {
			if o.Count == 0 {
				continue
			}
			errs = append(errs, fmt.Errorf("cost: the run counted %s %s on %q %.0f times and the model has no line for it",
				o.Function, o.API, o.Resource, o.Count))
			continue
		}
		drivers := r.Drivers(o.Function)
		want := l.Count(drivers)
		if math.Abs(want-o.Count) > math.Max(Tolerance*o.Count, Slack) {
			errs = append(errs, fmt.Errorf("cost: %s %s on %q: the run counted %.0f (%.4g per %s), the model %.0f: more than %.0f%% apart",
				o.Function, o.API, o.Resource, o.Count, o.Count/math.Max(drivers[l.Driver()], 1e-9), l.Driver(), want, 100*Tolerance))
		}
	}
	return errs
}
