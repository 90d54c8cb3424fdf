package dynamo

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stratalog/strata/pkg/store"
)

// swapCondition holds an old entry in place for SwapIndexEntries: stored as read.
const swapCondition = "#c = :c AND object_key = :k AND byte_offset = :bo AND byte_length = :bl"

// SwapIndexEntries replaces old with new in one TransactWriteItems: a conditional put
// over each old entry whose base a new entry reuses, a conditional delete of each other
// old entry, and a put-if-absent of each new entry at a fresh base. A failed condition
// cancels the whole transaction (store.ErrConflict).
func (s *MetaStore) SwapIndexEntries(ctx context.Context, topic string, partition int32, old, new []store.IndexEntry) error {
	if err := store.CheckSwap(topic, partition, old, new); err != nil {
		return err
	}
	if n := len(old) + len(new); n > s.cfg.maxTransactItems() {
		return fmt.Errorf("dynamo: swap of %s/%d: %d entries exceed the transaction's %d items", topic, partition, n, s.cfg.maxTransactItems())
	}
	olds := make(map[int64]store.IndexEntry, len(old))
	for _, e := range old {
		olds[e.BaseOffset] = e
	}
	held := func(e store.IndexEntry) (map[string]string, map[string]types.AttributeValue) {
		return map[string]string{"#c": "count"}, map[string]types.AttributeValue{
			":c": avN(e.Count), ":k": avS(e.ObjectKey), ":bo": avN(e.ByteOffset), ":bl": avN(e.ByteLength),
		}
	}
	var items []types.TransactWriteItem
	reused := make(map[int64]bool, len(new))
	for _, e := range new {
		put := &types.Put{TableName: aws.String(s.index), Item: indexItem(e)}
		if o, ok := olds[e.BaseOffset]; ok {
			reused[e.BaseOffset] = true
			names, values := held(o)
			put.ConditionExpression, put.ExpressionAttributeNames, put.ExpressionAttributeValues = aws.String(swapCondition), names, values
		} else {
			put.ConditionExpression = aws.String(indexPutCondition)
			put.ExpressionAttributeNames = map[string]string{"#bo": attrBaseOffset}
		}
		items = append(items, types.TransactWriteItem{Put: put})
	}
	for _, o := range old {
		if reused[o.BaseOffset] {
			continue
		}
		names, values := held(o)
		items = append(items, types.TransactWriteItem{Delete: &types.Delete{
			TableName: aws.String(s.index), Key: indexKey(topic, partition, o.BaseOffset),
			ConditionExpression: aws.String(swapCondition), ExpressionAttributeNames: names, ExpressionAttributeValues: values,
		}})
	}
	op := fmt.Sprintf("swap index entries %s/%d@%d", topic, partition, old[0].BaseOffset)
	_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if err == nil {
		return nil
	}
	err = mapError(op, err)
	var tx *txConditionFailed
	if errors.As(err, &tx) {
		return fmt.Errorf("dynamo: %s: an entry changed: %w", op, store.ErrConflict)
	}
	return err
}
