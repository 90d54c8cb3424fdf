package cost

import (
	"sort"
	"strings"
	"time"
)

// Run is what one cost run of the synthesized stack counted (internal/stackrun's
// TestCostRunMatchesTheModel): the scaled-down workload it drove and, per function,
// every AWS request through the function's proxy and every byte written to its log
// stream. Scale and Price turn it into a day of the design workload.
type Run struct {
	Date          string  `json:"date"`
	Seconds       float64 `json:"seconds"`        // wall time counted
	MinuteSeconds float64 `json:"minute_seconds"` // how long a schedule's minute lasted (the compressed clock)
	Partitions    int     `json:"partitions"`
	Groups        int     `json:"groups"`
	Producers     int     `json:"producers"`
	// Config names the stack configuration run: "" the default (API Gateway, the api
	// on demand), "headline" the function URL and the api on Lambda Managed Instances.
	Config string `json:"config,omitempty"`
	// FrontDoor is the stack's strata:frontDoor; ManagedInstances whether its api ran on
	// Lambda Managed Instances, APIConcurrency the invocations one of its execution
	// environments ran at once, GroupCommitWindowSeconds and GroupCommitBudgetBytes its
	// group commit (0: off).
	FrontDoor                string  `json:"front_door,omitempty"`
	ManagedInstances         bool    `json:"managed_instances,omitempty"`
	APIConcurrency           int     `json:"api_concurrency,omitempty"`
	GroupCommitWindowSeconds float64 `json:"group_commit_window_seconds,omitempty"`
	GroupCommitBudgetBytes   int64   `json:"group_commit_budget_bytes,omitempty"`
	// AlignSlots is the run's producers' AlignSlots when they aligned their rounds to
	// the clock (AlignLinger), 0 when not. At the target the fleet's slots are sized
	// for it (AlignSlotsFor).
	AlignSlots int `json:"align_slots,omitempty"`
	// AppendArrivals are the start times (seconds into the run) of the append
	// invocations the api answered, on Managed Instances: what its requests' merging
	// depends on (Run.MembersPerObject).
	AppendArrivals []float64 `json:"append_arrivals,omitempty"`
	// ProducerSeconds is the producers' time appending, all of them together.
	ProducerSeconds float64 `json:"producer_seconds"`
	LingerSeconds   float64 `json:"linger_seconds"`
	// Appends are the append requests the api function answered, Describes the topic
	// descriptions (the producers' partition refreshes), Blocks the partition batches
	// acknowledged, Records the records acknowledged. FailedInvocations are the api
	// invocations the harness failed (the emulator timing out under load; the
	// producers retried them): left out of the api's invocations.
	Appends           int64 `json:"appends"`
	Describes         int64 `json:"describes"`
	FailedInvocations int64 `json:"failed_invocations"`
	Blocks            int64 `json:"blocks"`
	Records           int64 `json:"records"`
	RecordBytes       int64 `json:"record_bytes"`
	// CompactedTopics and CompactedPartitions are the run's compacted topics and their
	// partitions; CompactedAppends the append requests to them (left out of Appends) and
	// CompactedKeys the key index entries those wrote (one per distinct key of a
	// request's partition). The design workload has none: compaction's own cost at a
	// compacted workload is CompactionCost's.
	CompactedTopics     int   `json:"compacted_topics,omitempty"`
	CompactedPartitions int   `json:"compacted_partitions,omitempty"`
	CompactedAppends    int64 `json:"compacted_appends,omitempty"`
	CompactedKeys       int64 `json:"compacted_keys,omitempty"`

	// Alarms and Dashboards are the template's CloudWatch alarms and dashboards.
	Alarms     int `json:"alarms"`
	Dashboards int `json:"dashboards"`

	Functions []RunFunction `json:"functions"`
	Requests  []RunRequest  `json:"requests"`
	Schedules []RunSchedule `json:"schedules"`
}

// RunFunction is one function's invocations and log stream over the run.
type RunFunction struct {
	Function    string `json:"function"`
	Invocations int64  `json:"invocations"`
	// MemoryMB and TimeoutSeconds are the template's.
	MemoryMB       int     `json:"memory_mb"`
	TimeoutSeconds float64 `json:"timeout_seconds"`
	// SystemLogLevel is the template's level of Lambda's own records in the function's
	// log stream (its LoggingConfig's SystemLogLevel): "" (a run from before the stack
	// set it) is Lambda's default, INFO.
	SystemLogLevel string `json:"system_log_level,omitempty"`
	// BusySeconds is the wall time of its invocations on the emulator (those still
	// running counted to the run's end); Environments how many execution
	// environments ran them.
	BusySeconds  float64 `json:"busy_seconds"`
	Environments int     `json:"environments"`
	LogLines     int64   `json:"log_lines"`
	LogBytes     int64   `json:"log_bytes"`
	EMFLines     int64   `json:"emf_lines"`
	EMFBytes     int64   `json:"emf_bytes"`
	// Metrics are the distinct custom metrics its EMF documents defined.
	Metrics []string `json:"metrics"`
}

// PlatformRecords reports whether Lambda writes its platform records (START, END,
// REPORT: PlatformLogBytes) for every invocation of f: at the system log level INFO
// (the default) or DEBUG; at WARN only a failed invocation's, and the run's only
// failures are the emulator's (Run.FailedInvocations, left out of the invocations).
func (f RunFunction) PlatformRecords() bool {
	return f.SystemLogLevel == "" || f.SystemLogLevel == "INFO" || f.SystemLogLevel == "DEBUG"
}

// ConsumerPlatformRecords reports whether the run's consumer function writes Lambda's
// platform records (RunFunction.PlatformRecords); a run without one is priced as INFO.
func (r Run) ConsumerPlatformRecords() bool {
	for _, f := range r.Functions {
		if f.Function == "consumer" {
			return f.PlatformRecords()
		}
	}
	return true
}

// SystemLogLevels says the system log levels of the run's functions, for a report:
// "WARN (none written)" when every function's is WARN, "INFO (START/REPORT of every
// invocation)" when every one's writes them, else each function's.
func (r Run) SystemLogLevels() string {
	levels := map[string][]string{}
	for _, f := range r.Functions {
		l := f.SystemLogLevel
		if l == "" {
			l = "INFO"
		}
		levels[l] = append(levels[l], f.Function)
	}
	if len(levels) == 1 {
		for l := range levels {
			if l == "WARN" {
				return "WARN (none written)"
			}
			return l + " (START/REPORT of every invocation)"
		}
	}
	var parts []string
	for _, f := range r.Functions {
		l := f.SystemLogLevel
		if l == "" {
			l = "INFO"
		}
		parts = append(parts, f.Function+" "+l)
	}
	return strings.Join(parts, ", ")
}

// RunRequest is one function's requests of one AWS API on one resource (a table by
// its suffix, "bucket", a function by its role, "business" for the example
// consumer's own table).
type RunRequest struct {
	Function      string `json:"function"`
	API           string `json:"api"`
	Resource      string `json:"resource"`
	Requests      int64  `json:"requests"`
	Items         int64  `json:"items"`
	BytesSent     int64  `json:"bytes_sent"`
	BytesReceived int64  `json:"bytes_received"`
	// WriteUnits are the write units DynamoDB bills for the requests, sized from their
	// items (a transaction's twice); 0 for other APIs and in runs recorded before the
	// proxy sized them, whose writes are priced by their request bytes.
	WriteUnits float64 `json:"write_units,omitempty"`
	// EventualReads are the DynamoDB read requests among Requests that were eventually
	// consistent (billed half the read units of a strongly consistent one).
	EventualReads int64 `json:"eventual_reads,omitempty"`
}

// RunSchedule is how often one schedule fired.
type RunSchedule struct {
	Rule string `json:"rule"`
	Runs int64  `json:"runs"`
}

// Design is the append design the run's stack is: the aggregation tier when its api
// ran on Lambda Managed Instances (group commit merging concurrent requests), the
// baseline otherwise.
func (r Run) Design() Design {
	if r.ManagedInstances {
		return Aggregation
	}
	return Baseline
}

// FrontDoorFunctionURL is the strata:frontDoor value that puts callers on the api's
// function URL instead of API Gateway.
const FrontDoorFunctionURL = "function-url"

// OnFunctionURL reports whether the run's callers reached the api on its function URL
// rather than through API Gateway.
func (r Run) OnFunctionURL() bool { return r.FrontDoor == FrontDoorFunctionURL }

// Configure sets in o what the run's stack was configured with: the front door, and on
// Managed Instances the group-commit window and budget the tier's flow uses.
func (r Run) Configure(o Options) Options {
	o.Serving.FunctionURL = r.OnFunctionURL()
	if r.ManagedInstances {
		if r.GroupCommitWindowSeconds > 0 {
			o.Aggregator.Window = time.Duration(r.GroupCommitWindowSeconds * float64(time.Second))
		}
		if r.GroupCommitBudgetBytes > 0 {
			o.Aggregator.BudgetBytes = float64(r.GroupCommitBudgetBytes)
		}
		if r.AlignSlots > 0 {
			o.Producers.AlignSlots = AlignSlotsFor(o)
		}
	}
	return o
}

// Normalise sorts the run's lists so that two runs of the same counts compare equal.
func (r *Run) Normalise() {
	sort.Slice(r.Functions, func(i, j int) bool { return r.Functions[i].Function < r.Functions[j].Function })
	sort.Slice(r.Requests, func(i, j int) bool {
		a, b := r.Requests[i], r.Requests[j]
		if a.Function != b.Function {
			return a.Function < b.Function
		}
		if a.API != b.API {
			return a.API < b.API
		}
		return a.Resource < b.Resource
	})
	sort.Slice(r.Schedules, func(i, j int) bool { return r.Schedules[i].Rule < r.Schedules[j].Rule })
}
