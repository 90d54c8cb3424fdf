package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/lambdaconsumer"
)

// orderTable applies order events to the business table.
type orderTable struct {
	client *dynamodb.Client
	table  string
}

// order is the event's value; unknown fields are kept in the raw value stored beside.
type order struct {
	OrderID string  `json:"order_id"`
	Amount  float64 `json:"amount"`
}

// errNotAnOrder is a poison record: retrying it cannot help, and the group's settings
// (max attempts, dead-letter topic) decide what becomes of it.
var errNotAnOrder = errors.New("not an order (want a JSON object with an order_id)")

// apply writes the order once: the put succeeds only if no item has the record's
// topic/partition/offset, and an item already there means an earlier delivery applied
// it. A value that is not an order is an error: the consumer library retries it up to
// the group's max attempts, then dead-letters it to the group's dead-letter topic (or
// drops it, counted, without one), so a poison value never stalls the partition.
func (t *orderTable) apply(ctx context.Context, r lambdaconsumer.Record) error {
	var o order
	if json.Unmarshal(r.Value, &o) != nil || o.OrderID == "" {
		return fmt.Errorf("orders: %s/%d@%d: %w", r.Topic, r.Partition, r.Offset, errNotAnOrder)
	}
	item := map[string]types.AttributeValue{
		deploy.BusinessKey: &types.AttributeValueMemberS{Value: deploy.BusinessID(r.Topic, r.Partition, r.Offset)},
		"topic":            &types.AttributeValueMemberS{Value: r.Topic},
		"partition":        &types.AttributeValueMemberN{Value: strconv.Itoa(int(r.Partition))},
		"offset":           &types.AttributeValueMemberN{Value: strconv.FormatInt(r.Offset, 10)},
		"value":            &types.AttributeValueMemberB{Value: append([]byte(nil), r.Value...)},
		"order_id":         &types.AttributeValueMemberS{Value: o.OrderID},
		"amount":           &types.AttributeValueMemberN{Value: strconv.FormatFloat(o.Amount, 'f', -1, 64)},
	}
	if len(r.Key) > 0 {
		item["key"] = &types.AttributeValueMemberB{Value: append([]byte(nil), r.Key...)}
	}
	_, err := t.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(t.table),
		Item:                     item,
		ConditionExpression:      aws.String("attribute_not_exists(#id)"),
		ExpressionAttributeNames: map[string]string{"#id": deploy.BusinessKey},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil // applied by an earlier delivery
	}
	if err != nil {
		return fmt.Errorf("orders: put %s/%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
	}
	return nil
}
