package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/stratalog/strata/internal/ctxtime"
	"github.com/stratalog/strata/pkg/store"
)

// CommitStream reads the sequencer table's stream: every commit exactly once per
// record, in order per partition (one partition's items live in one shard lineage). In
// AWS the dispatch function receives the same records from its event source mapping;
// CommitStream serves `strata dev --backend aws` and the tests, so they materialise
// commits the same way.
type CommitStream struct {
	ddb     *dynamodb.Client
	streams *dynamodbstreams.Client
	table   string
	// Interval is the pause after a round that returned no records (default 100ms).
	Interval time.Duration
}

// NewCommitStream returns a reader of cfg's sequencer table stream.
func NewCommitStream(ddb *dynamodb.Client, streams *dynamodbstreams.Client, cfg Config) *CommitStream {
	return &CommitStream{ddb: ddb, streams: streams, table: cfg.TableName(SequencerTable), Interval: 100 * time.Millisecond}
}

// StreamRecordImage converts a stream record's NEW_IMAGE into the sequencer states of
// the commits it carries (DecodeSequencerImages: one for a partition item, one per
// commit of the newest batch for a topic item).
func StreamRecordImage(image map[string]streamtypes.AttributeValue) ([]store.SeqState, error) {
	it, err := attributevalue.FromDynamoDBStreamsMap(image)
	if err != nil {
		return nil, fmt.Errorf("dynamo: stream image: %w", err)
	}
	return DecodeSequencerImages(it)
}

type shardCursor struct {
	iterator string
	lastSeq  string
}

// Run reads every shard from its oldest retained record (TRIM_HORIZON), a parent shard
// before its children, and calls fn with each batch of decoded commits until ctx ends
// (then it returns nil). A batch fn fails is offered again: delivery is at least once,
// so fn must be idempotent (materialising is).
func (cs *CommitStream) Run(ctx context.Context, fn func(context.Context, []store.SeqState) error) error {
	desc, err := cs.ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(cs.table)})
	if err != nil {
		return mapError("describe "+cs.table, err)
	}
	if desc.Table == nil || desc.Table.LatestStreamArn == nil {
		return fmt.Errorf("dynamo: table %s has no stream", cs.table)
	}
	arn := desc.Table.LatestStreamArn
	open := map[string]*shardCursor{}
	done := map[string]bool{}
	for ctx.Err() == nil {
		if err := cs.discover(ctx, arn, open, done); err != nil && ctx.Err() == nil {
			if err := ctxtime.Sleep(ctx, cs.Interval); err != nil {
				return nil
			}
			continue
		}
		got := 0
		for id, c := range open {
			n, err := cs.readShard(ctx, arn, id, c, fn)
			got += n
			if err != nil && ctx.Err() == nil {
				continue // retried next round from the same position
			}
			if c.iterator == "" {
				done[id] = true
				delete(open, id)
			}
		}
		if got == 0 {
			if err := ctxtime.Sleep(ctx, cs.Interval); err != nil {
				return nil
			}
		}
	}
	return nil
}

// discover opens the shards not yet read whose parent is finished or gone.
func (cs *CommitStream) discover(ctx context.Context, arn *string, open map[string]*shardCursor, done map[string]bool) error {
	var shards []streamtypes.Shard
	in := &dynamodbstreams.DescribeStreamInput{StreamArn: arn}
	for {
		out, err := cs.streams.DescribeStream(ctx, in)
		if err != nil {
			return mapError("describe stream", err)
		}
		if out.StreamDescription == nil {
			break
		}
		shards = append(shards, out.StreamDescription.Shards...)
		if out.StreamDescription.LastEvaluatedShardId == nil {
			break
		}
		in.ExclusiveStartShardId = out.StreamDescription.LastEvaluatedShardId
	}
	listed := map[string]bool{}
	for _, s := range shards {
		listed[aws.ToString(s.ShardId)] = true
	}
	for _, s := range shards {
		id := aws.ToString(s.ShardId)
		if open[id] != nil || done[id] {
			continue
		}
		if p := aws.ToString(s.ParentShardId); p != "" && listed[p] && !done[p] {
			continue
		}
		out, err := cs.streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{
			StreamArn: arn, ShardId: s.ShardId, ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon,
		})
		if err != nil {
			return mapError("shard iterator", err)
		}
		open[id] = &shardCursor{iterator: aws.ToString(out.ShardIterator)}
	}
	return nil
}

// readShard reads one batch of a shard, hands it to fn and moves the cursor past it
// only when fn succeeded. It returns the number of records read.
func (cs *CommitStream) readShard(ctx context.Context, arn *string, id string, c *shardCursor,
	fn func(context.Context, []store.SeqState) error) (int, error) {
	out, err := cs.streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: aws.String(c.iterator), Limit: aws.Int32(1000)})
	var expired *streamtypes.ExpiredIteratorException
	if errors.As(err, &expired) {
		in := &dynamodbstreams.GetShardIteratorInput{StreamArn: arn, ShardId: aws.String(id), ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon}
		if c.lastSeq != "" {
			in.ShardIteratorType, in.SequenceNumber = streamtypes.ShardIteratorTypeAfterSequenceNumber, aws.String(c.lastSeq)
		}
		it, err := cs.streams.GetShardIterator(ctx, in)
		if err != nil {
			return 0, mapError("renew shard iterator", err)
		}
		c.iterator = aws.ToString(it.ShardIterator)
		return 0, nil
	}
	if err != nil {
		return 0, mapError("get stream records", err)
	}
	batch := make([]store.SeqState, 0, len(out.Records))
	for _, r := range out.Records {
		if r.Dynamodb == nil || r.Dynamodb.NewImage == nil {
			continue
		}
		sts, err := StreamRecordImage(r.Dynamodb.NewImage)
		if err != nil {
			return 0, err
		}
		batch = append(batch, sts...)
	}
	if len(batch) > 0 {
		if err := fn(ctx, batch); err != nil {
			return 0, err
		}
	}
	if n := len(out.Records); n > 0 && out.Records[n-1].Dynamodb != nil {
		c.lastSeq = aws.ToString(out.Records[n-1].Dynamodb.SequenceNumber)
	}
	c.iterator = aws.ToString(out.NextShardIterator)
	return len(out.Records), nil
}
