package stackrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// MappingSettings are an AWS::Lambda::EventSourceMapping's settings for a stream.
type MappingSettings struct {
	BatchSize int
	// Bisect is BisectBatchOnFunctionError.
	Bisect bool
	// MaxRetries is MaximumRetryAttempts (-1: until the records expire).
	MaxRetries int
	// MaxRecordAge is MaximumRecordAgeInSeconds (0: unlimited).
	MaxRecordAge time.Duration
	// StartingPosition is TRIM_HORIZON or LATEST.
	StartingPosition string
	// ParallelizationFactor is how many batches of one shard may run at once.
	ParallelizationFactor int
	// OnFailure is the ARN of the failure destination ("" for none).
	OnFailure string
	// BatchingWindow is MaximumBatchingWindowInSeconds: how long a shard's records are
	// gathered before the function is invoked with them, unless a batch fills first.
	BatchingWindow time.Duration
}

// Due reports whether a shard's pending records (the oldest read at first) go to the
// function at now: a full batch goes at once, and so does any without a batching
// window; otherwise they wait until the window since the first has passed, as
// Lambda's mapping does. Pure: the poller applies it.
func Due(s MappingSettings, pending int, first, now time.Time) bool {
	return pending > 0 && (pending >= s.BatchSize || s.BatchingWindow <= 0 || now.Sub(first) >= s.BatchingWindow)
}

// Batch is a contiguous run [Lo, Hi) of a shard's records being delivered, and how many
// retries of it have failed so far.
type Batch struct {
	Lo, Hi  int
	Retries int
}

// StepResult is what the mapping does after one invocation of a batch.
type StepResult struct {
	// Next are the batches to invoke next, in order (a retry, or the two halves of a
	// bisected batch); empty when the batch is done.
	Next []Batch
	// Discard, when set, is a batch given up on: described to the failure destination
	// and skipped.
	Discard *Batch
}

// Step decides what a stream event source mapping does after invoking b: nothing more
// when it succeeded; on a function error, bisect a batch of more than one record (a
// split does not count as a retry, as Lambda documents), else retry while retries
// remain, else discard it. Pure: the poller applies it.
func Step(s MappingSettings, b Batch, failed bool) StepResult {
	if !failed {
		return StepResult{}
	}
	if s.Bisect && b.Hi-b.Lo > 1 {
		mid := b.Lo + (b.Hi-b.Lo)/2
		return StepResult{Next: []Batch{{Lo: b.Lo, Hi: mid, Retries: b.Retries}, {Lo: mid, Hi: b.Hi, Retries: b.Retries}}}
	}
	if s.MaxRetries < 0 || b.Retries < s.MaxRetries {
		return StepResult{Next: []Batch{{Lo: b.Lo, Hi: b.Hi, Retries: b.Retries + 1}}}
	}
	return StepResult{Discard: &b}
}

// Expired reports whether a batch whose oldest record was written at oldest is past the
// mapping's maximum record age at now (it is then discarded without an invocation).
func Expired(s MappingSettings, oldest, now time.Time) bool {
	return s.MaxRecordAge > 0 && now.Sub(oldest) > s.MaxRecordAge
}

// mappingStats counts what a stream mapping did.
type mappingStats struct {
	Batches     int // invocations
	Records     int // records delivered (each once per invocation)
	Failures    int // failed invocations
	Discarded   int // records given up on (to the failure destination)
	Bisections  int
	LastErr     string
	Unprocessed int // records read but not yet delivered
}

// streamMapping polls a DynamoDB stream as Lambda's event source mapping does (one
// poller per shard, batches of BatchSize gathered over the batching window, in order)
// and invokes the function with each batch, applying Step to its errors.
type streamMapping struct {
	settings  MappingSettings
	streamARN string
	client    *dynamodbstreams.Client
	invoke    func(ctx context.Context, payload []byte) error
	// discard describes a discarded batch to the failure destination.
	discard func(ctx context.Context, records []events.DynamoDBEventRecord, reason string)
	poll    time.Duration

	mu    sync.Mutex
	stats mappingStats
}

func (m *streamMapping) Stats() mappingStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stats
}

// run polls until ctx ends.
func (m *streamMapping) run(ctx context.Context) {
	iters := map[string]*string{}                // shard id → next iterator
	done := map[string]bool{}                    // closed shards read to their end
	pending := map[string][]streamtypes.Record{} // shard id → records read, not yet delivered
	first := map[string]time.Time{}              // shard id → when its oldest pending record was read
	flush := func(id string) {
		recs := pending[id]
		delete(pending, id)
		delete(first, id)
		m.count(func(s *mappingStats) { s.Unprocessed -= len(recs) }) // deliver counts them while it runs
		m.deliver(ctx, recs)
	}
	for ctx.Err() == nil {
		desc, err := m.client.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(m.streamARN)})
		if err != nil {
			m.fail(err)
			sleep(ctx, m.poll)
			continue
		}
		progressed := false
		for _, sh := range desc.StreamDescription.Shards {
			id := aws.ToString(sh.ShardId)
			if done[id] {
				if len(pending[id]) > 0 {
					flush(id) // a closed shard's last records wait for nothing more
				}
				continue
			}
			if _, ok := iters[id]; !ok {
				it, err := m.client.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
					StreamArn: aws.String(m.streamARN), ShardId: sh.ShardId,
					ShardIteratorType: streamtypes.ShardIteratorType(m.settings.StartingPosition),
				})
				if err != nil {
					m.fail(err)
					continue
				}
				iters[id] = it.ShardIterator
			}
			out, err := m.client.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{
				ShardIterator: iters[id], Limit: aws.Int32(int32(max(1, m.settings.BatchSize-len(pending[id]))))})
			if err != nil {
				m.fail(err)
				continue
			}
			if out.NextShardIterator == nil {
				done[id] = true
			}
			iters[id] = out.NextShardIterator
			if len(out.Records) > 0 {
				if len(pending[id]) == 0 {
					first[id] = time.Now()
				}
				pending[id] = append(pending[id], out.Records...)
				m.count(func(s *mappingStats) { s.Unprocessed += len(out.Records) })
			}
			if Due(m.settings, len(pending[id]), first[id], time.Now()) {
				progressed = true
				flush(id)
			}
		}
		if !progressed {
			sleep(ctx, m.poll)
		}
	}
}

func (m *streamMapping) fail(err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	m.mu.Lock()
	m.stats.LastErr = err.Error()
	m.mu.Unlock()
}

// deliver invokes the function with recs as one batch, applying Step until every record
// was delivered or discarded.
func (m *streamMapping) deliver(ctx context.Context, recs []streamtypes.Record) {
	lrecs := make([]events.DynamoDBEventRecord, len(recs))
	for i, r := range recs {
		lrecs[i] = LambdaRecord(r, m.streamARN)
	}
	m.count(func(s *mappingStats) { s.Unprocessed += len(recs) })
	defer m.count(func(s *mappingStats) { s.Unprocessed -= len(recs) })
	queue := []Batch{{Lo: 0, Hi: len(recs)}}
	for len(queue) > 0 && ctx.Err() == nil {
		b := queue[0]
		queue = queue[1:]
		oldest := time.Time{}
		if d := recs[b.Lo].Dynamodb; d != nil && d.ApproximateCreationDateTime != nil {
			oldest = *d.ApproximateCreationDateTime
		}
		if !oldest.IsZero() && Expired(m.settings, oldest, time.Now()) {
			m.discard(ctx, lrecs[b.Lo:b.Hi], "older than MaximumRecordAgeInSeconds")
			m.count(func(s *mappingStats) { s.Discarded += b.Hi - b.Lo })
			continue
		}
		payload, err := json.Marshal(events.DynamoDBEvent{Records: lrecs[b.Lo:b.Hi]})
		if err == nil {
			err = m.invoke(ctx, payload)
		}
		if ctx.Err() != nil {
			return
		}
		m.count(func(s *mappingStats) {
			s.Batches++
			s.Records += b.Hi - b.Lo
			if err != nil {
				s.Failures++
				s.LastErr = err.Error()
			}
		})
		step := Step(m.settings, b, err != nil)
		if len(step.Next) == 2 {
			m.count(func(s *mappingStats) { s.Bisections++ })
		}
		if step.Discard != nil {
			m.discard(ctx, lrecs[b.Lo:b.Hi], fmt.Sprintf("retries exhausted: %v", err))
			m.count(func(s *mappingStats) { s.Discarded += b.Hi - b.Lo })
		}
		queue = append(step.Next, queue...)
	}
}

func (m *streamMapping) count(f func(*mappingStats)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f(&m.stats)
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// LambdaRecord shapes a DynamoDB Streams record as the Lambda event of a stream trigger
// carries it.
func LambdaRecord(r streamtypes.Record, arn string) events.DynamoDBEventRecord {
	rec := events.DynamoDBEventRecord{
		AWSRegion: Region, EventID: aws.ToString(r.EventID), EventName: string(r.EventName),
		EventSource: "aws:dynamodb", EventVersion: "1.1", EventSourceArn: arn,
	}
	if d := r.Dynamodb; d != nil {
		rec.Change = events.DynamoDBStreamRecord{
			Keys: ConvertImage(d.Keys), NewImage: ConvertImage(d.NewImage), OldImage: ConvertImage(d.OldImage),
			SequenceNumber: aws.ToString(d.SequenceNumber), SizeBytes: aws.ToInt64(d.SizeBytes),
			StreamViewType: string(d.StreamViewType),
		}
		if d.ApproximateCreationDateTime != nil {
			rec.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: *d.ApproximateCreationDateTime}
		}
	}
	return rec
}

// ConvertImage turns a DynamoDB Streams image, as GetRecords returns it, into the
// attributes Lambda's event source mapping delivers (every attribute type).
func ConvertImage(m map[string]streamtypes.AttributeValue) map[string]events.DynamoDBAttributeValue {
	if m == nil {
		return nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(m))
	for k, v := range m {
		out[k] = convertValue(v)
	}
	return out
}

func convertValue(v streamtypes.AttributeValue) events.DynamoDBAttributeValue {
	switch x := v.(type) {
	case *streamtypes.AttributeValueMemberS:
		return events.NewStringAttribute(x.Value)
	case *streamtypes.AttributeValueMemberN:
		return events.NewNumberAttribute(x.Value)
	case *streamtypes.AttributeValueMemberB:
		return events.NewBinaryAttribute(x.Value)
	case *streamtypes.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(x.Value)
	case *streamtypes.AttributeValueMemberNULL:
		return events.NewNullAttribute()
	case *streamtypes.AttributeValueMemberSS:
		return events.NewStringSetAttribute(x.Value)
	case *streamtypes.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(x.Value)
	case *streamtypes.AttributeValueMemberBS:
		return events.NewBinarySetAttribute(x.Value)
	case *streamtypes.AttributeValueMemberL:
		l := make([]events.DynamoDBAttributeValue, len(x.Value))
		for i, e := range x.Value {
			l[i] = convertValue(e)
		}
		return events.NewListAttribute(l)
	case *streamtypes.AttributeValueMemberM:
		return events.NewMapAttribute(ConvertImage(x.Value))
	}
	return events.NewNullAttribute()
}
