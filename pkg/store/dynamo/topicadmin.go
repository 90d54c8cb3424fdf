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

var _ store.TopicAdminStore = (*MetaStore)(nil)

// IncreasePartitions raises the partitions attribute of the topic row on the condition
// that it is lower, then seeds the new partitions' counters (put only if absent, like
// a new topic's; a counter it fails to create is seeded from the index on first use).
func (s *MetaStore) IncreasePartitions(ctx context.Context, name string, partitions int32) (store.Topic, error) {
	op := fmt.Sprintf("increase partitions of %s to %d", name, partitions)
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.topics),
		Key:                                 item{attrTopic: avS(name)},
		UpdateExpression:                    aws.String("SET #p = :n"),
		ConditionExpression:                 aws.String("attribute_exists(#k) AND #p < :n"),
		ExpressionAttributeNames:            map[string]string{"#p": "partitions", "#k": attrTopic},
		ExpressionAttributeValues:           item{":n": avN(int64(partitions))},
		ReturnValues:                        types.ReturnValueAllOld,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err != nil {
		err = mapError(op, err)
		var cf *conditionFailed
		if errors.As(err, &cf) {
			if cf.item == nil {
				return store.Topic{}, fmt.Errorf("dynamo: topic %q: %w", name, store.ErrNotFound)
			}
			return store.Topic{}, fmt.Errorf("dynamo: %s: %w", op, store.ErrPartitionsNotRaised)
		}
		return store.Topic{}, err
	}
	old, err := decodeTopic(out.Attributes)
	if err != nil {
		return store.Topic{}, err
	}
	for p := old.Partitions; p < partitions; p++ {
		_ = s.putCounter(ctx, name, p, 0, 0)
	}
	old.Partitions = partitions
	return old, nil
}
