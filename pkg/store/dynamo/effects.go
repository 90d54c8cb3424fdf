package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stratalog/strata/pkg/store"
)

// EffectKeyAttribute is the partition key (a string) of a fenced business table: the
// example order table's (deploy.BusinessKey), so that table serves as one.
const EffectKeyAttribute = "id"

// Attributes of a business table's items.
const (
	attrEffectValue = "value"
	// effectMarkerPrefix starts the key of a record's marker item, which no business
	// key can collide with: ApplyEffect refuses business keys with this prefix.
	effectMarkerPrefix = "strata-applied#"
)

// EffectTTLAttribute is the marker items' TTL attribute (epoch seconds, rounded up): the
// business table enables TTL on it (CreateEffectsTable; the stack's OrdersTable,
// deploy.BusinessTTLAttribute), so DynamoDB deletes a marker once its record can no
// longer be redelivered. Business items never carry it.
const EffectTTLAttribute = "strata_ttl"

// EffectStore is a store.EffectStore over a business table of the user's (partition
// key EffectKeyAttribute, a string) and Strata's assignments table: each write is one
// TransactWriteItems of a ConditionCheck on the assignment's generation, a Put of the
// record's marker item conditional on its absence, and the Put of the business item.
// Its role needs dynamodb:ConditionCheckItem on the assignments table and
// dynamodb:PutItem, dynamodb:GetItem on the business table.
type EffectStore struct {
	client      *dynamodb.Client
	assignments string
	table       string
}

var _ store.EffectStore = (*EffectStore)(nil)

// Effects returns the EffectStore writing to table, fenced by this store's assignments.
func (s *MetaStore) Effects(table string) *EffectStore {
	return &EffectStore{client: s.client, assignments: s.assignments, table: table}
}

// CreateEffectsTable creates an on-demand business table for EffectStore, waits until
// it is active and enables TTL on EffectTTLAttribute (unless TTL is on already); an
// existing table is otherwise left as it is.
func CreateEffectsTable(ctx context.Context, client *dynamodb.Client, table string) error {
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		BillingMode:          types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(EffectKeyAttribute), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(EffectKeyAttribute), KeyType: types.KeyTypeHash}},
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return mapError("create effects table "+table, err)
	}
	w := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 200*time.Millisecond, 2*time.Second
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, 2*time.Minute); err != nil {
		return fmt.Errorf("dynamo: wait for effects table %s: %w", table, err)
	}
	return enableTTL(ctx, client, table, EffectTTLAttribute, err == nil)
}

func effectMarkerKey(topic string, partition int32, offset int64) string {
	return effectMarkerPrefix + topic + "#" + strconv.Itoa(int(partition)) + "#" + strconv.FormatInt(offset, 10)
}

// ApplyEffect implements store.EffectStore.
func (e *EffectStore) ApplyEffect(ctx context.Context, f store.Fence, offset int64, key string, value []byte, markerExpiresAt time.Time) error {
	op := fmt.Sprintf("apply effect of %s/%d@%d for %s generation %d", f.Topic, f.Partition, offset, f.Group, f.Generation)
	if key == "" || len(key) >= len(effectMarkerPrefix) && key[:len(effectMarkerPrefix)] == effectMarkerPrefix {
		return fmt.Errorf("dynamo: %s: business key %q is empty or reserved", op, key)
	}
	marker := item{EffectKeyAttribute: avS(effectMarkerKey(f.Topic, f.Partition, offset))}
	if !markerExpiresAt.IsZero() {
		marker[EffectTTLAttribute] = avN(ttlSeconds(markerExpiresAt))
	}
	_, err := e.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{
			{ConditionCheck: &types.ConditionCheck{
				TableName:                 aws.String(e.assignments),
				Key:                       gtpKey(f.Group, f.Topic, f.Partition),
				ConditionExpression:       aws.String("#gen = :g"),
				ExpressionAttributeNames:  map[string]string{"#gen": attrGeneration},
				ExpressionAttributeValues: item{":g": avN(f.Generation)},
			}},
			{Put: &types.Put{
				TableName:                aws.String(e.table),
				Item:                     marker,
				ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
				ExpressionAttributeNames: map[string]string{"#pk": EffectKeyAttribute},
			}},
			{Put: &types.Put{
				TableName: aws.String(e.table),
				Item:      item{EffectKeyAttribute: avS(key), attrEffectValue: &types.AttributeValueMemberB{Value: value}},
			}},
		},
	})
	return fencedOutcome(op, err, store.ErrApplied)
}

// GetEffect implements store.EffectStore.
func (e *EffectStore) GetEffect(ctx context.Context, key string) ([]byte, error) {
	op := fmt.Sprintf("get effect %q", key)
	out, err := e.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(e.table), Key: item{EffectKeyAttribute: avS(key)}, ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, mapError(op, err)
	}
	if out.Item == nil {
		return nil, fmt.Errorf("dynamo: %s: %w", op, store.ErrNotFound)
	}
	v, ok := out.Item[attrEffectValue].(*types.AttributeValueMemberB)
	if !ok {
		return nil, fmt.Errorf("dynamo: %s: attribute %q is not binary", op, attrEffectValue)
	}
	return v.Value, nil
}
