package dynamo

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/stratalog/strata/pkg/store"
)

var _ store.IncarnationPurger = (*MetaStore)(nil)

// PurgeKeys deletes the incarnation's dirty counters by key, then finds its key entries
// with a scan of the index table (each key is its own partition key, so no query can
// list them) and deletes each page's with BatchWriteItem as the scan goes. A purge is
// rare, and a scan reads an item's bytes at half a read unit per 4 KB; nothing but a
// scan can find entries written on other hosts.
func (s *MetaStore) PurgeKeys(ctx context.Context, topic string, partitions int32) (int, error) {
	op := "purge key entries of " + topic
	counters := make([]item, 0, partitions)
	for p := range partitions {
		counters = append(counters, dirtyKey(topic, p))
	}
	if err := s.batchDelete(ctx, op+": dirty counters", s.index, counters); err != nil {
		return 0, err
	}
	pages := dynamodb.NewScanPaginator(s.client, &dynamodb.ScanInput{
		TableName:                 aws.String(s.index),
		ConsistentRead:            aws.Bool(true),
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
