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

var _ store.GroupBarrierStore = (*MetaStore)(nil)

// Attributes of the group row that hold its barrier: the state (binary, at most
// store.MaxBarrierBytes) and the version a swap compares. They ride on the group's own
// row, so DeleteGroup removes them with it and settings updates leave them alone.
const (
	attrBarrier        = "kb"
	attrBarrierVersion = "kbv"
)

// GetBarrier reads the barrier attributes of the group row, strongly consistently.
func (s *MetaStore) GetBarrier(ctx context.Context, group string) (store.Barrier, error) {
	op := "get barrier of " + group
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                aws.String(s.groups),
		Key:                      item{attrGroup: avS(group)},
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String("#k, #b, #v"),
		ExpressionAttributeNames: map[string]string{"#k": attrGroup, "#b": attrBarrier, "#v": attrBarrierVersion},
	})
	if err != nil {
		return store.Barrier{}, mapError(op, err)
	}
	if len(out.Item) == 0 {
		return store.Barrier{}, fmt.Errorf("dynamo: group %q: %w", group, store.ErrNotFound)
	}
	return decodeBarrier(group, out.Item)
}

// SwapBarrier updates the barrier attributes on condition that the row exists and its
// version is still version; a failed condition reads the row to tell a missing group
// from a lost race.
func (s *MetaStore) SwapBarrier(ctx context.Context, group string, version int64, state []byte) (store.Barrier, error) {
	op := "swap barrier of " + group
	if len(state) > store.MaxBarrierBytes {
		return store.Barrier{}, fmt.Errorf("dynamo: %s: %d bytes: %w", op, len(state), store.ErrBarrierTooLarge)
	}
	names := map[string]string{"#k": attrGroup, "#v": attrBarrierVersion, "#b": attrBarrier}
	vals := item{":nv": avN(version + 1)}
	expr := "SET #v = :nv"
	if len(state) > 0 {
		expr += ", #b = :b"
		vals[":b"] = &types.AttributeValueMemberB{Value: state}
	} else {
		expr += " REMOVE #b"
	}
	cond := "attribute_exists(#k) AND attribute_not_exists(#v)"
	if version != 0 {
		cond = "attribute_exists(#k) AND #v = :v"
		vals[":v"] = avN(version)
	}
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.groups),
		Key:                       item{attrGroup: avS(group)},
		UpdateExpression:          aws.String(expr),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: vals,
	})
	if err == nil {
		return store.Barrier{Group: group, Version: version + 1, State: state}, nil
	}
	if err = mapError(op, err); !errors.As(err, new(*conditionFailed)) {
		return store.Barrier{}, err
	}
	cur, gerr := s.GetBarrier(ctx, group)
	if gerr != nil {
		return store.Barrier{}, gerr
	}
	return store.Barrier{}, fmt.Errorf("dynamo: %s: at version %d, not %d: %w", op, cur.Version, version, store.ErrBarrierConflict)
}

func decodeBarrier(group string, it item) (store.Barrier, error) {
	d := decoder{it: it}
	b := store.Barrier{Group: group, Version: d.num(attrBarrierVersion, false)}
	if d.err != nil {
		return store.Barrier{}, d.err
	}
	if v, ok := it[attrBarrier]; ok {
		bv, ok := v.(*types.AttributeValueMemberB)
		if !ok {
			return store.Barrier{}, fmt.Errorf("dynamo: barrier of %q: attribute %q is not binary", group, attrBarrier)
		}
		b.State = bv.Value
	}
	return b, nil
}
