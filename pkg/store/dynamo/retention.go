package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stratalog/strata/pkg/store"
)

var (
	_ store.RetentionStore = (*MetaStore)(nil)
	_ store.CleanupStore   = (*MetaStore)(nil)
)

// SetRetention sets the live topic row's retention in one conditional update (the row
// exists and is not a legacy deleted one).
func (s *MetaStore) SetRetention(ctx context.Context, name string, retention time.Duration) (store.Topic, error) {
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.topics),
		Key:                                 item{attrTopic: avS(name)},
		UpdateExpression:                    aws.String("SET #r = :r"),
		ConditionExpression:                 aws.String("attribute_exists(#k) AND attribute_not_exists(#d)"),
		ExpressionAttributeNames:            map[string]string{"#r": "retention_ms", "#k": attrTopic, "#d": attrDeletedAt},
		ExpressionAttributeValues:           item{":r": &types.AttributeValueMemberN{Value: durationMillis(retention)}},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureNone,
	})
	if err != nil {
		err = mapError("set retention of "+name, err)
		if cf := (*conditionFailed)(nil); errors.As(err, &cf) {
			return store.Topic{}, fmt.Errorf("dynamo: topic %q: %w", name, store.ErrNotFound)
		}
		return store.Topic{}, err
	}
	return decodeTopic(out.Attributes)
}

// SetCleanup sets the cleanup attributes of the live topic row (removing those unset) in
// one conditional update.
func (s *MetaStore) SetCleanup(ctx context.Context, name string, c store.TopicCleanup) (store.Topic, error) {
	set := cleanupAttrs(c)
	names := map[string]string{"#k": attrTopic, "#d": attrDeletedAt}
	vals := item{}
	var sets, removes []string
	for i, attr := range []string{attrCleanup, attrMinCompactionLag, attrMaxCompactionLag, attrDeleteRetention} {
		n := fmt.Sprintf("#c%d", i)
		names[n] = attr
		if v, ok := set[attr]; ok {
			vals[fmt.Sprintf(":c%d", i)] = v
			sets = append(sets, fmt.Sprintf("%s = :c%d", n, i))
		} else {
			removes = append(removes, n)
		}
	}
	var expr []string
	if len(sets) > 0 {
		expr = append(expr, "SET "+strings.Join(sets, ", "))
	}
	if len(removes) > 0 {
		expr = append(expr, "REMOVE "+strings.Join(removes, ", "))
	}
	in := &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.topics),
		Key:                                 item{attrTopic: avS(name)},
		UpdateExpression:                    aws.String(strings.Join(expr, " ")),
		ConditionExpression:                 aws.String("attribute_exists(#k) AND attribute_not_exists(#d)"),
		ExpressionAttributeNames:            names,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureNone,
	}
	if len(vals) > 0 {
		in.ExpressionAttributeValues = vals
	}
	out, err := s.client.UpdateItem(ctx, in)
	if err != nil {
		err = mapError("set cleanup policy of "+name, err)
		if cf := (*conditionFailed)(nil); errors.As(err, &cf) {
			return store.Topic{}, fmt.Errorf("dynamo: topic %q: %w", name, store.ErrNotFound)
		}
		return store.Topic{}, err
	}
	return decodeTopic(out.Attributes)
}
