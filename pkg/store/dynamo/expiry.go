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

var _ store.IndexExpiryClearer = (*MetaStore)(nil)

// ClearIndexExpiry removes the entry's expiry and its TTL attribute with one UpdateItem
// conditional on the entry being stored as e (swapCondition, which a missing item fails,
// so the update never creates one): 1 WCU for an entry up to 1 KB.
func (s *MetaStore) ClearIndexExpiry(ctx context.Context, e store.IndexEntry) error {
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.index),
		Key:                 indexKey(e.Topic, e.Partition, e.BaseOffset),
		UpdateExpression:    aws.String("REMOVE expires_at, #ttl"),
		ConditionExpression: aws.String(swapCondition),
		ExpressionAttributeNames: map[string]string{
			"#c": "count", "#ttl": attrTTL,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":c": avN(e.Count), ":k": avS(e.ObjectKey), ":bo": avN(e.ByteOffset), ":bl": avN(e.ByteLength),
		},
	})
	if err != nil {
		err = mapError(fmt.Sprintf("clear the expiry of %s/%d@%d", e.Topic, e.Partition, e.BaseOffset), err)
		if cf := (*conditionFailed)(nil); errors.As(err, &cf) {
			return fmt.Errorf("dynamo: entry %s/%d@%d is not stored as read: %w", e.Topic, e.Partition, e.BaseOffset, store.ErrConflict)
		}
		return err
	}
	return nil
}
