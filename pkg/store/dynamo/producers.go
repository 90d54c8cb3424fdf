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

var _ store.ProducerStore = (*MetaStore)(nil)

// The Kafka front's producer state lives in the idempotency table (whose TTL forgets an
// idle producer), under keys starting with producerKeyPrefix: no claim key starts with
// '!' (a topic ID or '@'), so the two never meet.
const (
	producerKeyPrefix  = "!kafka-producer!"
	producerCounterKP  = producerKeyPrefix + "counter"
	attrProducerData   = "d"
	attrProducerVer    = "ver"
	attrProducerNextID = "n"
)

func producerKP(key string) item { return item{attrKP: avS(producerKeyPrefix + "row!" + key)} }

// NextProducerID adds one to the counter item and returns the sum: one UpdateItem, so
// no two callers get the same number. An SDK retry of an add whose answer was lost
// skips a number, which is harmless.
func (s *MetaStore) NextProducerID(ctx context.Context) (int64, error) {
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.idem),
		Key:                       item{attrKP: avS(producerCounterKP)},
		UpdateExpression:          aws.String("ADD #n :one"),
		ExpressionAttributeNames:  map[string]string{"#n": attrProducerNextID},
		ExpressionAttributeValues: item{":one": avN(1)},
		ReturnValues:              types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return 0, mapError("next producer id", err)
	}
	n, ok := out.Attributes[attrProducerNextID].(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("dynamo: next producer id: the answer has no counter")
	}
	id, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("dynamo: next producer id: %w", err)
	}
	return id, nil
}

// GetProducerRow reads the row strongly consistently.
func (s *MetaStore) GetProducerRow(ctx context.Context, key string) ([]byte, int64, error) {
	op := "producer row " + key
	it, err := s.getItem(ctx, op, s.idem, producerKP(key))
	if err != nil {
		return nil, 0, err
	}
	if it == nil {
		return nil, 0, fmt.Errorf("dynamo: %s: %w", op, store.ErrNotFound)
	}
	d := decoder{it: it}
	ver := d.num(attrProducerVer, true)
	data := d.bin(attrProducerData)
	if d.err != nil {
		return nil, 0, fmt.Errorf("dynamo: %s: %w", op, d.err)
	}
	return data, ver, nil
}

// PutProducerRow puts the row on the condition that it is at version prev (absent for 0).
func (s *MetaStore) PutProducerRow(ctx context.Context, key string, data []byte, prev int64, expires time.Time) error {
	op := "put producer row " + key
	if len(data) > store.MaxProducerRowBytes {
		return fmt.Errorf("dynamo: %s: %d bytes, at most %d", op, len(data), store.MaxProducerRowBytes)
	}
	it := producerKP(key)
	it[attrProducerData] = &types.AttributeValueMemberB{Value: data}
	it[attrProducerVer] = avN(prev + 1)
	if !expires.IsZero() {
		it[attrTTL] = avN(ttlSeconds(expires))
	}
	in := &dynamodb.PutItemInput{
		TableName:                aws.String(s.idem),
		Item:                     it,
		ExpressionAttributeNames: map[string]string{"#v": attrProducerVer},
	}
	if prev == 0 {
		in.ConditionExpression = aws.String("attribute_not_exists(#v)")
	} else {
		in.ConditionExpression = aws.String("#v = :v")
		in.ExpressionAttributeValues = item{":v": avN(prev)}
	}
	_, err := s.client.PutItem(ctx, in)
	if err == nil {
		return nil
	}
	if err = mapError(op, err); errors.As(err, new(*conditionFailed)) {
		return fmt.Errorf("dynamo: %s: not at version %d: %w", op, prev, store.ErrVersionMismatch)
	}
	return err
}
