package lambdafn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stratalog/strata/pkg/dispatch"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/metrics/emf"
	"github.com/stratalog/strata/pkg/retention"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/store/dynamo"
)

// ErrUnknownEvent is returned for a payload that is none of the events a function takes.
var ErrUnknownEvent = errors.New("lambdafn: unknown event")

// DecodeCommit turns a sequencer item's stream image into the commits to dispatch (a
// topic item's image carries every commit of its newest batch).
type DecodeCommit func(map[string]types.AttributeValue) ([]dispatch.Commit, error)

// Dispatch is the dispatch function's handler: a DynamoDB stream batch of the sequencer
// table is materialised and dispatched (dispatch.HandleCommits); a scheduled event
// sweeps (dispatch.Sweep).
type Dispatch struct {
	d       *dispatch.Dispatcher
	decode  DecodeCommit
	metrics *emf.Sink
	groups  dispatch.Groups
}

// WithHealth makes every scheduled sweep also emit, per subscription, the group's lag,
// time to data loss, records expired unread and parked keys (dispatch.Health), described
// by groups.
// It needs metrics.
func (x *Dispatch) WithHealth(groups dispatch.Groups) *Dispatch {
	x.groups = groups
	return x
}

// NewDispatch returns the handler; metrics may be nil. With an aggregating sink
// (emf.NewAggregated) a stream batch's invocation ends with FlushIfDue and a scheduled
// sweep's with Flush, so the subscriptions' health reaches the alarms each sweep.
func NewDispatch(d *dispatch.Dispatcher, decode DecodeCommit, metrics *emf.Sink) *Dispatch {
	return &Dispatch{d: d, decode: decode, metrics: metrics}
}

// DispatchResult is what one invocation did.
type DispatchResult struct {
	Trigger string         `json:"trigger"` // "stream" or "schedule"
	Stats   dispatch.Stats `json:"stats"`
}

// Invoke implements lambda.Handler. A stream batch that fails (a record that cannot be
// decoded, a materialisation that fails; not a consumer's invocation, which dispatch counts) returns an error,
// so Lambda retries the batch: every step is idempotent.
func (x *Dispatch) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	kind, err := classify(payload)
	if err != nil {
		return nil, err
	}
	var res DispatchResult
	switch kind {
	case kindStream:
		commits, err := x.commits(payload)
		if err != nil {
			return nil, err
		}
		res.Trigger = "stream"
		res.Stats, err = x.d.HandleCommits(ctx, commits)
		x.emit(res)
		if x.metrics != nil {
			x.metrics.FlushIfDue()
		}
		if err != nil {
			return nil, err
		}
	case kindSchedule:
		res.Trigger = "schedule"
		res.Stats, err = x.d.Sweep(ctx)
		x.emit(res)
		x.emitHealth(ctx)
		if x.metrics != nil {
			x.metrics.Flush()
		}
		if err != nil {
			return nil, err
		}
	}
	return json.Marshal(res)
}

// commits decodes the batch's INSERT and MODIFY records, in order.
func (x *Dispatch) commits(payload []byte) ([]dispatch.Commit, error) {
	var ev events.DynamoDBEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, fmt.Errorf("%w: DynamoDB stream batch: %w", ErrUnknownEvent, err)
	}
	var out []dispatch.Commit
	for i, r := range ev.Records {
		if r.EventSource != "aws:dynamodb" {
			return nil, fmt.Errorf("%w: record %d comes from %q, not a DynamoDB stream", ErrUnknownEvent, i, r.EventSource)
		}
		if r.EventName == string(events.DynamoDBOperationTypeRemove) {
			continue // a sequencer item is never deleted by Strata; nothing to dispatch
		}
		if len(r.Change.NewImage) == 0 {
			return nil, fmt.Errorf("%w: record %d (%s) has no NEW_IMAGE: the stream must be NEW_IMAGE", ErrBadImage, i, r.EventID)
		}
		img, err := ConvertImage(r.Change.NewImage)
		if err != nil {
			return nil, fmt.Errorf("record %d (%s): %w", i, r.EventID, err)
		}
		cs, err := x.decode(img)
		if err != nil {
			return nil, fmt.Errorf("%w: record %d (%s): %w", ErrBadImage, i, r.EventID, err)
		}
		out = append(out, cs...)
	}
	return out, nil
}

func (x *Dispatch) emit(r DispatchResult) {
	if x.metrics == nil {
		return
	}
	x.metrics.Emit([][2]string{{"trigger", r.Trigger}},
		emf.Metric{Name: emf.DispatchCommits, Unit: emf.UnitCount, Value: float64(r.Stats.Commits)},
		emf.Metric{Name: emf.DispatchLeaseChecks, Unit: emf.UnitCount, Value: float64(r.Stats.LeaseChecks)},
		emf.Metric{Name: emf.DispatchInvocations, Unit: emf.UnitCount, Value: float64(r.Stats.Invocations)},
		emf.Metric{Name: emf.DispatchInvokeErrors, Unit: emf.UnitCount, Value: float64(r.Stats.InvokeErrors)})
}

// emitHealth emits the subscriptions' health. A group that cannot be described is
// counted (strata_dispatch_health_errors_total), never a failure of the sweep.
func (x *Dispatch) emitHealth(ctx context.Context) {
	if x.metrics == nil || x.groups == nil {
		return
	}
	hs, err := x.d.Health(ctx, x.groups)
	for _, h := range hs {
		x.metrics.SubscriptionHealth(h)
	}
	if err != nil {
		x.metrics.Emit(nil, emf.Metric{Name: emf.DispatchHealthErrors, Unit: emf.UnitCount, Value: 1})
	}
}

type eventKind int

const (
	kindStream eventKind = iota + 1
	kindSchedule
)

// classify tells a stream batch from a scheduled event by their shapes.
func classify(payload []byte) (eventKind, error) {
	var probe struct {
		Records    []json.RawMessage `json:"Records"`
		Source     string            `json:"source"`
		DetailType string            `json:"detail-type"`
	}
	if err := json.Unmarshal(payload, &probe); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrUnknownEvent, err)
	}
	switch {
	case probe.Records != nil:
		return kindStream, nil
	case probe.Source == "aws.events" && probe.DetailType == "Scheduled Event":
		return kindSchedule, nil
	}
	return 0, fmt.Errorf("%w: neither a DynamoDB stream batch nor a scheduled event", ErrUnknownEvent)
}

// Retention is the retention function's handler: each scheduled event runs one pass
// and, with WithTopicPass, each RetentionTopicEvent one topic's pass (the pass fanned
// out per topic).
type Retention struct {
	run     func(context.Context) (retention.Stats, error)
	topic   func(context.Context, string) (retention.Stats, error)
	metrics *emf.Sink
}

// RetentionTopicEvent is the event the retention function's scheduled pass invokes the
// function with, once per live topic: that topic's pass.
type RetentionTopicEvent struct {
	Topic string `json:"strata_retention_topic"`
}

// WithTopicPass makes x take RetentionTopicEvents, each passing its topic with topic
// (node.Node.RunRetentionTopic).
func (x *Retention) WithTopicPass(topic func(context.Context, string) (retention.Stats, error)) *Retention {
	x.topic = topic
	return x
}

// NewRetention returns the handler over run (runtime.Runtime.RunRetention); metrics
// may be nil. Each pass's metrics are flushed as it ends (an aggregating sink's too).
func NewRetention(run func(context.Context) (retention.Stats, error), metrics *emf.Sink) *Retention {
	return &Retention{run: run, metrics: metrics}
}

// Invoke implements lambda.Handler.
func (x *Retention) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	run := x.run
	var ev RetentionTopicEvent
	if x.topic != nil && json.Unmarshal(payload, &ev) == nil && ev.Topic != "" {
		if !log.ValidName(ev.Topic) {
			return nil, fmt.Errorf("%w: retention of topic %q: not a topic name", ErrUnknownEvent, ev.Topic)
		}
		run = func(ctx context.Context) (retention.Stats, error) { return x.topic(ctx, ev.Topic) }
	} else if kind, err := classify(payload); err != nil {
		return nil, err
	} else if kind != kindSchedule {
		return nil, fmt.Errorf("%w: the retention function takes scheduled events and topic passes", ErrUnknownEvent)
	}
	st, err := run(ctx)
	if x.metrics != nil {
		x.metrics.RetentionRun(st, err)
		x.metrics.Flush()
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(st)
}

// DecodeSequencerImage decodes a sequencer item's stream image (dynamo's decoder) into
// commits whose payloads are the commits' store.SeqState, for LogMaterializer: one for
// a partition item, one per commit of the newest batch for a topic item.
func DecodeSequencerImage(it map[string]types.AttributeValue) ([]dispatch.Commit, error) {
	sts, err := dynamo.DecodeSequencerImages(it)
	if err != nil {
		return nil, err
	}
	out := make([]dispatch.Commit, 0, len(sts))
	for _, st := range sts {
		// The store's decoder checks types and offsets; a partition or topic no append
		// can have written must not reach dispatch either. The item is keyed by the
		// topic's incarnation (store.TopicID); dispatch wakes the groups of the name.
		name, inc := store.SplitTopicID(st.Topic)
		if st.Partition < 0 || !log.ValidName(name) || (inc != "" || strings.Contains(st.Topic, "#")) && !store.ValidIncarnation(inc) {
			return nil, fmt.Errorf("sequencer item names topic %q partition %d", st.Topic, st.Partition)
		}
		out = append(out, dispatch.Commit{Topic: name, Partition: st.Partition, HighWatermark: st.NextOffset, Payload: st})
	}
	return out, nil
}

// LogMaterializer writes the index entries of a batch's commits through the log
// (log.Log.Materialize: idempotent, only entries still missing).
type LogMaterializer struct {
	Log interface {
		Materialize(ctx context.Context, states []store.SeqState) (int, error)
	}
}

// Materialize implements dispatch.Materializer; every commit's payload must be the
// store.SeqState DecodeSequencerImage put there.
func (m LogMaterializer) Materialize(ctx context.Context, commits []dispatch.Commit) error {
	states := make([]store.SeqState, 0, len(commits))
	for _, c := range commits {
		st, ok := c.Payload.(store.SeqState)
		if !ok {
			return fmt.Errorf("lambdafn: commit %s/%d@%d carries no sequencer state", c.Topic, c.Partition, c.HighWatermark)
		}
		states = append(states, st)
	}
	_, err := m.Log.Materialize(ctx, states)
	return err
}
