package dynamo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/stratalog/strata/pkg/store"
)

var _ store.IncarnationPurger = (*MetaStore)(nil)

// PurgeKeys deletes the incarnation's dirty counters by key, then finds its key entries
// with a scan of the index table (each key is its own partition key, so no query can
// list them) and deletes each page's with BatchWriteItem as the scan goes. The scan runs
// in purgeScanSegments parallel segments, so a large table is read in a fraction of the
// time one segment takes, and eventually consistent, at half a read unit per 4 KB: the
// purge runs minutes after the incarnation's last write.
func (s *MetaStore) PurgeKeys(ctx context.Context, topic string, partitions int32) (int, error) {
	op := "purge key entries of " + topic
	counters := make([]item, 0, partitions)
	for p := range partitions {
		counters = append(counters, dirtyKey(topic, p))
	}
	if err := s.batchDelete(ctx, op+": dirty counters", s.index, counters); err != nil {
		return 0, err
	}
	var (
		wg    sync.WaitGroup
		total atomic.Int64
		errs  = make([]error, purgeScanSegments)
	)
	for seg := range int32(purgeScanSegments) {
		wg.Go(func() {
			n, err := s.purgeKeySegment(ctx, op, topic, seg)
			total.Add(int64(n))
			errs[seg] = err
		})
	}
	wg.Wait()
	return int(total.Load()), errors.Join(errs...)
}

// purgeScanSegments is how many segments PurgeKeys scans the index table in at once.
const purgeScanSegments = 8

// purgeKeySegment scans one segment of the index table for the incarnation's key
// entries and deletes each page's, returning how many it deleted.
func (s *MetaStore) purgeKeySegment(ctx context.Context, op, topic string, segment int32) (int, error) {
	pages := dynamodb.NewScanPaginator(s.client, &dynamodb.ScanInput{
		TableName:                 aws.String(s.index),
		Segment:                   aws.Int32(segment),
		TotalSegments:             aws.Int32(purgeScanSegments),
		ProjectionExpression:      aws.String("#tp, #bo"),
		FilterExpression:          aws.String("#t = :t AND begins_with(#tp, :pre) AND attribute_exists(#o)"),
		ExpressionAttributeNames:  map[string]string{"#tp": attrTP, "#bo": attrBaseOffset, "#t": attrTopic, "#o": attrKeyOffset},
		ExpressionAttributeValues: item{":t": avS(topic), ":pre": avS(topic + "#")},
	})
	n := 0
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return n, mapError(op, err)
		}
		keys := make([]item, 0, len(page.Items))
		for _, it := range page.Items {
			keys = append(keys, item{attrTP: it[attrTP], attrBaseOffset: it[attrBaseOffset]})
		}
		if err := s.batchDelete(ctx, op, s.index, keys); err != nil {
			return n, err
		}
		n += len(keys)
	}
	return n, nil
}

// PurgeParked queries the group's rows of the incarnation (one partition key) and
// deletes them with BatchWriteItem.
func (s *MetaStore) PurgeParked(ctx context.Context, group, topic string) (int, error) {
	op := fmt.Sprintf("purge parked keys of %s on %s", group, topic)
	items, err := s.queryAll(ctx, op, &dynamodb.QueryInput{
		TableName:                 aws.String(s.parked),
		KeyConditionExpression:    aws.String("#gt = :gt"),
		ProjectionExpression:      aws.String("#gt, #pk"),
		ExpressionAttributeNames:  map[string]string{"#gt": attrGT, "#pk": attrPK},
		ExpressionAttributeValues: item{":gt": avS(gtKey(group, topic))},
	}, 0)
	if err != nil {
		return 0, err
	}
	if err := s.batchDelete(ctx, op, s.parked, items); err != nil {
		return 0, err
	}
	return len(items), nil
}
