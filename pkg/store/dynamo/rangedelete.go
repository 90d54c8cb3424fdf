package dynamo

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stratalog/strata/pkg/store"
)

const (
	// batchWriteMax is DynamoDB's limit of requests in one BatchWriteItem call.
	batchWriteMax = 25
	// rangeDeleteParallel bounds the BatchWriteItem calls of one range delete in flight.
	rangeDeleteParallel = 4
	// unprocessedRetries bounds the retries of a batch's unprocessed items (throttling)
	// before the range delete gives up with ErrUnavailable; the next pass resumes.
	unprocessedRetries = 8
	unprocessedBackoff = 50 * time.Millisecond
)

// DeleteIndexRange queries the keys (and counts) of the partition's entries below
// below, then deletes those lying wholly below it with BatchWriteItem, 25 keys a call,
// a few calls in parallel, retrying unprocessed items with backoff: a pass's cost is
// that of the entries it deletes.
func (s *MetaStore) DeleteIndexRange(ctx context.Context, topic string, partition int32, below int64) (int, error) {
	op := fmt.Sprintf("delete index range %s/%d below %d", topic, partition, below)
	items, err := s.queryAll(ctx, op, &dynamodb.QueryInput{
		TableName:                 aws.String(s.index),
		KeyConditionExpression:    aws.String("#tp = :tp AND #bo < :below"),
		ProjectionExpression:      aws.String("#tp, #bo, #c"),
		ExpressionAttributeNames:  map[string]string{"#tp": attrTP, "#bo": attrBaseOffset, "#c": "count"},
		ExpressionAttributeValues: item{":tp": avS(tpKey(topic, partition)), ":below": avN(below)},
		ScanIndexForward:          aws.Bool(true),
	}, 0)
	if err != nil {
		return 0, err
	}
	var keys []item
	for _, it := range items {
		d := decoder{it: it}
		base, count := d.num(attrBaseOffset, true), d.num("count", true)
		if d.err != nil {
			return 0, fmt.Errorf("dynamo: %s: %w", op, d.err)
		}
		if base+count <= below {
			keys = append(keys, indexKey(topic, partition, base))
		}
	}
	if err := s.batchDelete(ctx, op, s.index, keys); err != nil {
		return 0, err
	}
	return len(keys), nil
}

// batchDelete deletes keys from table in BatchWriteItem calls of at most 25, at most
// rangeDeleteParallel at once; the first error stops the calls not yet started.
func (s *MetaStore) batchDelete(ctx context.Context, op, table string, keys []item) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		slots = make(chan struct{}, rangeDeleteParallel)
	)
	for i := 0; i < len(keys); i += batchWriteMax {
		chunk := keys[i:min(i+batchWriteMax, len(keys))]
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-slots }()
			if err := s.batchDeleteChunk(ctx, op, table, chunk); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
				cancel()
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("dynamo: %s: %w", op, err)
	}
	return nil
}

// batchDeleteChunk is one BatchWriteItem of at most 25 deletes, retrying what DynamoDB
// leaves unprocessed.
func (s *MetaStore) batchDeleteChunk(ctx context.Context, op, table string, keys []item) error {
	reqs := make([]types.WriteRequest, len(keys))
	for i, k := range keys {
		reqs[i] = types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: k}}
	}
	pending := map[string][]types.WriteRequest{table: reqs}
	backoff := unprocessedBackoff
	for attempt := 0; ; attempt++ {
		out, err := s.client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: pending})
		if err != nil {
			return mapError(op, err)
		}
		if len(out.UnprocessedItems[table]) == 0 {
			return nil
		}
		if attempt == unprocessedRetries {
			return fmt.Errorf("dynamo: %s: %d deletes still unprocessed after %d retries: %w",
				op, len(out.UnprocessedItems[table]), unprocessedRetries, store.ErrUnavailable)
		}
		pending = map[string][]types.WriteRequest{table: out.UnprocessedItems[table]}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("dynamo: %s: %w", op, ctx.Err())
		case <-t.C:
		}
		backoff *= 2
	}
}
