package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stratalog/strata/pkg/store"
)

var _ store.DirtyCounterStore = (*MetaStore)(nil)

// A partition's dirty counter shares the index table, as the key index does: partition
// key "<topic ID>#<partition>#dirty" (no index entry's "<topic ID>#<partition>" and no
// key entry's "...#k#<hash>" can be it), sort key 0.
const (
	attrOverwrites  = "overwrites"
	attrRemoved     = "removed"
	attrRequestedAt = "requested_at"
)

func dirtyKey(topic string, partition int32) item {
	return item{attrTP: avS(tpKey(topic, partition) + "#dirty"), attrBaseOffset: avN(0)}
}

// AddOverwrites is one UpdateItem (ADD), answering the item after it (ALL_NEW).
func (s *MetaStore) AddOverwrites(ctx context.Context, topic string, partition int32, n int64) (store.DirtyCounter, error) {
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.index),
		Key:                       dirtyKey(topic, partition),
		UpdateExpression:          aws.String("ADD #o :n"),
		ExpressionAttributeNames:  map[string]string{"#o": attrOverwrites},
		ExpressionAttributeValues: item{":n": avN(n)},
		ReturnValues:              types.ReturnValueAllNew,
	})
	op := fmt.Sprintf("add overwrites of %s/%d", topic, partition)
	if err != nil {
		return store.DirtyCounter{}, mapError(op, err)
	}
	c, err := decodeDirty(out.Attributes)
	if err != nil {
		return store.DirtyCounter{}, fmt.Errorf("dynamo: %s: %w", op, err)
	}
	return c, nil
}

// decodeDirty decodes a dirty counter item (absent attributes are zero).
func decodeDirty(it item) (store.DirtyCounter, error) {
	d := decoder{it: it}
	c := store.DirtyCounter{Overwrites: d.num(attrOverwrites, false), Removed: d.num(attrRemoved, false), RequestedAt: d.time(attrRequestedAt)}
	return c, d.err
}

// AddRemoved is one UpdateItem (ADD).
func (s *MetaStore) AddRemoved(ctx context.Context, topic string, partition int32, n int64) error {
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.index),
		Key:                       dirtyKey(topic, partition),
		UpdateExpression:          aws.String("ADD #r :n"),
		ExpressionAttributeNames:  map[string]string{"#r": attrRemoved},
		ExpressionAttributeValues: item{":n": avN(n)},
	})
	if err != nil {
		return mapError(fmt.Sprintf("add removed of %s/%d", topic, partition), err)
	}
	return nil
}

// ClaimCompaction is one conditional UpdateItem on the requested time seen.
func (s *MetaStore) ClaimCompaction(ctx context.Context, topic string, partition int32, seen, at time.Time) (bool, error) {
	in := &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.index),
		Key:                       dirtyKey(topic, partition),
		UpdateExpression:          aws.String("SET #q = :at"),
		ConditionExpression:       aws.String("attribute_not_exists(#q)"),
		ExpressionAttributeNames:  map[string]string{"#q": attrRequestedAt},
		ExpressionAttributeValues: item{":at": avN(at.UnixMilli())},
	}
	if !seen.IsZero() {
		in.ConditionExpression = aws.String("#q = :seen")
		in.ExpressionAttributeValues[":seen"] = avN(seen.UnixMilli())
	}
	_, err := s.client.UpdateItem(ctx, in)
	if err != nil {
		err = mapError(fmt.Sprintf("claim compaction of %s/%d", topic, partition), err)
		if cf := (*conditionFailed)(nil); errors.As(err, &cf) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}
