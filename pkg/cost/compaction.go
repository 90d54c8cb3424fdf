package cost

import (
	"fmt"
	"math"
	"strings"
)

// Compaction's request counts per removed record, from BenchmarkCompactionPass
// (docs/BENCHMARKS.md, "Compaction": 1,000 records removed at 10,000 live keys and 10%
// random updates in 19 swaps of at most 100 items, 38 PUTs). They are the same on both
// backends: the pass makes the same calls.
const (
	SwapsPerRemoved     = 19.0 / 1000
	SwapItemsPerRemoved = 1.9 // ≤ 100 items a swap, each one TransactWriteItems item
	PutsPerRemoved      = 38.0 / 1000
	// MaxRewritesPerPass is compact.Job.MaxRewrites' default: swaps of one partition in
	// one pass.
	MaxRewritesPerPass = 16
)

// Sizes the compaction model assumes (DynamoDB items as pkg/store/dynamo writes them).
const (
	keyEntryBytes   = 150.0 // a key index item: hashed key, the key, offset, time
	indexEntryBytes = 200.0 // an index entry item
	indexPageItems  = 100.0 // compact reads the index 100 entries a query page
)

// CompactionWorkload is one compacted topic in a steady state — the live key count
// stays constant, every update supersedes one record — and the deployment compacting
// it.
type CompactionWorkload struct {
	LiveKeys       float64 // keys with a live record
	UpdatesPerHour float64 // records appended an hour, each superseding its key's last
	Partitions     float64
	// RecordsPerRequest is the records of one append request (the producer's batch).
	RecordsPerRequest float64
	// RecordBytes is a record's bytes in a segment (key, value, header).
	RecordBytes float64
	// ScheduledPassesPerHour is each partition's scheduled passes an hour (12 at the
	// compaction function's default 5-minute schedule).
	ScheduledPassesPerHour float64
	// RecordsPerObject is the records one ranged GET of a pass reads (rewritten objects
	// hold the survivors of up to 32 entries each).
	RecordsPerObject float64
	// EntriesPerLiveKey is the index entries per live key once removals have fragmented
	// the index (a hole and a run per scattered removal: up to 2).
	EntriesPerLiveKey float64
	// ReadRecordsPerSecond is one pass's read rate (BenchmarkCompactionPass: ~10,000 on
	// one core).
	ReadRecordsPerSecond float64
	// FunctionGB is the compaction function's memory (strata:compactMemory, 1 GB).
	FunctionGB float64
	// LambdaTimeoutSeconds bounds one partition's pass (the function's 300 s).
	LambdaTimeoutSeconds float64
}

// IssueCompactionWorkload is the workload the cost run prices compaction at: 1,000,000
// live keys, 10% of them updated an hour, over 8 partitions, in appends of 100 records of
// ~110 bytes, on the stack's defaults.
func IssueCompactionWorkload() CompactionWorkload {
	return CompactionWorkload{LiveKeys: 1e6, UpdatesPerHour: 1e5, Partitions: 8, RecordsPerRequest: 100, RecordBytes: 110,
		ScheduledPassesPerHour: 12, RecordsPerObject: 500, EntriesPerLiveKey: 2, ReadRecordsPerSecond: 10000, FunctionGB: 1,
		LambdaTimeoutSeconds: 300}
}

// CompactionLine is one line of compaction's monthly cost.
type CompactionLine struct {
	Name     string
	Quantity float64 // a month
	Unit     string
	USD      float64 // a month
}

// CompactionEstimate is compaction's monthly cost at a workload and its ceilings.
type CompactionEstimate struct {
	Lines []CompactionLine
	// TriggeredPassesPerHour is each partition's passes the dirty-ratio trigger asks
	// for an hour (the ratio 0.5 is reached when the superseded records equal the live
	// ones).
	TriggeredPassesPerHour float64
	// RemovableCeilingPerHour is the superseded records one partition's passes can
	// remove an hour: passes × MaxRewritesPerPass swaps × records a swap removes.
	RemovableCeilingPerHour float64
	// ReadCeilingRecords is the most records (live and superseded) one partition may
	// hold for its pass to read it within the function's timeout.
	ReadCeilingRecords float64
	// MinPartitions is the fewest partitions that keep each under both ceilings at the
	// workload's update rate and live keys.
	MinPartitions float64
}

// USD is the estimate's monthly total.
func (e CompactionEstimate) USD() float64 {
	var t float64
	for _, l := range e.Lines {
		t += l.USD
	}
	return t
}

// CompactionCost prices compaction of w a month at prices p: the append path's key
// index puts and dirty counter writes, the trigger's claims and invocations, every pass's
// reads (a pass reads its partition whole: index pages and ranged GETs) and compute, the
// rewrites' transactions and PUTs, and storage.
func CompactionCost(w CompactionWorkload, p Prices) CompactionEstimate {
	var e CompactionEstimate
	live := w.LiveKeys / w.Partitions
	updates := w.UpdatesPerHour / w.Partitions
	if live > 0 {
		e.TriggeredPassesPerHour = updates / live
	}
	passes := w.ScheduledPassesPerHour + e.TriggeredPassesPerHour
	e.RemovableCeilingPerHour = passes * MaxRewritesPerPass / SwapsPerRemoved
	e.ReadCeilingRecords = w.ReadRecordsPerSecond * w.LambdaTimeoutSeconds
	// The scheduled passes alone bound the removals (a triggered pass comes only once
	// the superseded records equal the live ones); a partition holds its live keys and
	// up to as many superseded records.
	byRemovals := w.UpdatesPerHour / (w.ScheduledPassesPerHour * MaxRewritesPerPass / SwapsPerRemoved)
	byReads := 2 * w.LiveKeys / e.ReadCeilingRecords
	e.MinPartitions = math.Ceil(math.Max(byRemovals, byReads))
	add := func(name string, qty float64, unit string, price Price) {
		e.Lines = append(e.Lines, CompactionLine{Name: name, Quantity: qty, Unit: unit, USD: qty * price.USD})
	}
	month := hoursPerMonth
	requests := w.UpdatesPerHour / math.Max(w.RecordsPerRequest, 1)
	touched := math.Min(w.Partitions, math.Max(w.RecordsPerRequest, 1))
	add("key index puts (append path, one per record)", w.UpdatesPerHour*month, "WRU", p.DynamoWRU)
	add("dirty counter writes (append path, one per request and partition superseding)", requests*touched*month, "WRU", p.DynamoWRU)
	trig := e.TriggeredPassesPerHour * w.Partitions * month
	add("trigger claims", trig, "WRU", p.DynamoWRU)
	add("trigger invocations", trig, "request", p.LambdaRequest)
	// Every pass reads the partition whole: its entries, then its records.
	entries := live * w.EntriesPerLiveKey
	pageRRU := math.Ceil(indexPageItems * indexEntryBytes / 4096)
	visible := live + updates/math.Max(passes, 1)/2 // the superseded records awaiting a pass, on average
	partPasses := passes * w.Partitions * month
	add("pass index reads (whole partition)", partPasses*math.Ceil(entries/indexPageItems)*pageRRU, "RRU", p.DynamoRRU)
	add("pass segment reads (whole partition)", partPasses*math.Ceil(visible/w.RecordsPerObject), "GET", p.S3Get)
	add("pass invocations", partPasses+w.ScheduledPassesPerHour*month, "request", p.LambdaRequest) // and the scheduled fan-outs
	add("pass compute", partPasses*visible/w.ReadRecordsPerSecond*w.FunctionGB, "GB-second", p.LambdaGBSecondArm)
	removed := w.UpdatesPerHour * month
	add("swaps (TransactWriteItems, 2 WRU an item)", removed*SwapItemsPerRemoved*2, "WRU", p.DynamoWRU)
	add("rewrite objects and garbage markers", removed*PutsPerRemoved, "PUT", p.S3Put)
	add("garbage marker reads at collection", removed*PutsPerRemoved/2, "GET", p.S3Get)
	add("segment storage (1.05× the live records)", w.LiveKeys*w.RecordBytes*1.05/1e9, "GB-month", p.S3StorageGBMonth)
	add("key index and index entry storage", w.LiveKeys*(keyEntryBytes+w.EntriesPerLiveKey*indexEntryBytes)/1e9, "GB-month", p.DynamoStorageGBMonth)
	return e
}

// Report is the estimate as a table with its ceilings.
func (e CompactionEstimate) Report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "| line | a month | unit | USD a month |\n|---|---|---|---|\n")
	for _, l := range e.Lines {
		fmt.Fprintf(&b, "| %s | %.4g | %s | %.2f |\n", l.Name, l.Quantity, l.Unit, l.USD)
	}
	fmt.Fprintf(&b, "| **total** | | | **%.2f** |\n\n", e.USD())
	fmt.Fprintf(&b, "Triggered passes: %.2f a partition an hour. Ceilings per partition: %.0f superseded records removed an hour; %.0f records read by one pass within the timeout. Fewest partitions under both: %.0f.\n",
		e.TriggeredPassesPerHour, e.RemovableCeilingPerHour, e.ReadCeilingRecords, e.MinPartitions)
	return b.String()
}
