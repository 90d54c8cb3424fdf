package lambdafn

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/stratalog/strata/pkg/compact"
	"github.com/stratalog/strata/pkg/dispatch/invoke"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/metrics/emf"
)

// Triggers of a compaction pass, as CompactPartitionEvent.Trigger and the runs metric's
// trigger dimension name them.
const (
	// CompactTriggerSchedule is the scheduled invocation (the fan-out and the topics'
	// garbage collection, or the whole pass when it does not fan out).
	CompactTriggerSchedule = "schedule"
	// CompactTriggerFanout is one partition's pass the schedule started.
	CompactTriggerFanout = "fanout"
	// CompactTriggerDirty is one partition's pass an append started when it found the
	// partition's dirty ratio past the threshold (compact.Trigger).
	CompactTriggerDirty = "dirty"
)

// CompactPartitionEvent is the event that runs one partition's compaction pass: the
// compaction function's scheduled fan-out invokes the function with one per partition
// of each compacted topic, and the dirty-ratio trigger one for the partition it found
// dirty.
type CompactPartitionEvent struct {
	Topic     string `json:"strata_compact_topic"`
	Partition int32  `json:"strata_compact_partition"`
	// Trigger is CompactTriggerFanout or CompactTriggerDirty (metrics only).
	Trigger string `json:"strata_compact_trigger,omitempty"`
}

// Compaction is the compaction function's handler: each scheduled event runs the
// scheduled pass, each CompactPartitionEvent one partition's pass. Any other event is
// ErrUnknownEvent, with nothing run.
type Compaction struct {
	scheduled func(context.Context) (compact.Stats, error)
	partition func(context.Context, string, int32) (compact.Stats, error)
	metrics   *emf.Sink
}

// NewCompaction returns the handler over the scheduled pass and the partition pass
// (node.Node.RunCompactionFanout or RunCompaction, and RunCompactionPartition); metrics
// may be nil. Each pass's metrics are flushed as it ends.
func NewCompaction(scheduled func(context.Context) (compact.Stats, error), partition func(context.Context, string, int32) (compact.Stats, error), metrics *emf.Sink) *Compaction {
	return &Compaction{scheduled: scheduled, partition: partition, metrics: metrics}
}

// Invoke implements lambda.Handler.
func (x *Compaction) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	run, trigger, err := x.route(payload)
	if err != nil {
		return nil, err
	}
	st, err := run(ctx)
	if x.metrics != nil {
		x.metrics.CompactionRun(trigger, st, err)
		x.metrics.Flush()
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(st)
}

func (x *Compaction) route(payload []byte) (func(context.Context) (compact.Stats, error), string, error) {
	var ev struct { // CompactPartitionEvent, telling a missing partition from 0
		Topic     string `json:"strata_compact_topic"`
		Partition *int32 `json:"strata_compact_partition"`
		Trigger   string `json:"strata_compact_trigger"`
	}
	if json.Unmarshal(payload, &ev) == nil && (ev.Topic != "" || ev.Partition != nil) {
		switch {
		case !log.ValidName(ev.Topic):
			return nil, "", fmt.Errorf("%w: compaction of topic %q: not a topic name", ErrUnknownEvent, ev.Topic)
		case ev.Partition == nil || *ev.Partition < 0 || *ev.Partition >= log.MaxPartitions:
			return nil, "", fmt.Errorf("%w: compaction of topic %s: want a partition from 0 to %d", ErrUnknownEvent, ev.Topic, log.MaxPartitions-1)
		}
		trigger := ev.Trigger
		if trigger != CompactTriggerDirty {
			trigger = CompactTriggerFanout
		}
		topic, p := ev.Topic, *ev.Partition
		return func(ctx context.Context) (compact.Stats, error) { return x.partition(ctx, topic, p) }, trigger, nil
	}
	kind, err := classify(payload)
	if err != nil {
		return nil, "", err
	}
	if kind != kindSchedule {
		return nil, "", fmt.Errorf("%w: the compaction function takes scheduled events and partition passes", ErrUnknownEvent)
	}
	return x.scheduled, CompactTriggerSchedule, nil
}

// CompactInvoker starts one partition's compaction pass as an asynchronous invocation
// (InvocationType Event) of the compaction function with a CompactPartitionEvent: how
// its scheduled pass fans out per partition, and how the dirty-ratio trigger asks for a
// pass. Lambda queues it and retries a failed one; the next schedule passes the
// partition again whatever became of it.
type CompactInvoker struct {
	Client invoke.API
	// Function is the compaction function's name or ARN (its own
	// AWS_LAMBDA_FUNCTION_NAME for the fan-out).
	Function string
}

// Start queues the pass of topic's partition, for trigger (CompactTrigger*).
func (c CompactInvoker) Start(ctx context.Context, topic string, partition int32, trigger string) error {
	if c.Client == nil {
		return fmt.Errorf("invoke %s for %s/%d: no Lambda client", c.Function, topic, partition)
	}
	if err := invoke.Event(ctx, c.Client, c.Function, CompactPartitionEvent{Topic: topic, Partition: partition, Trigger: trigger}); err != nil {
		return fmt.Errorf("pass of %s/%d: %w", topic, partition, err)
	}
	return nil
}
