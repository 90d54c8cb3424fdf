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

var _ store.LagHistoryStore = (*MetaStore)(nil)

// Attributes of a lag history item: the encoded history (store.EncodeLagHistory, at
// most store.MaxLagHistoryBytes, well under the 400 KB item limit) and a version the
// conditional put checks.
const (
	attrLagHistory = "h"
	attrLagVersion = "ver"
)

// lagAttempts bounds RecordLag's optimistic retries when concurrent passes race.
const lagAttempts = 4

// RecordLag reads the group's history, computes its next step and puts it on the
// condition that nobody wrote it meanwhile (the version it read), retrying a lost race.
func (s *MetaStore) RecordLag(ctx context.Context, group string, at time.Time, lags []store.PartitionLag, keep int) error {
	op := "record lag of " + group
	for range lagAttempts {
		it, err := s.getItem(ctx, op, s.lag, item{attrGroup: avS(group)})
		if err != nil {
			return err
		}
		old, ver, err := decodeLagItem(it)
		if err != nil {
			return fmt.Errorf("dynamo: %s: %w", op, err)
		}
		next, changed := store.NextLagHistory(old, at, lags, keep)
		if !changed {
			return nil
		}
		in := &dynamodb.PutItemInput{
			TableName: aws.String(s.lag),
			Item: item{
				attrGroup:      avS(group),
				attrLagHistory: &types.AttributeValueMemberB{Value: store.EncodeLagHistory(next)},
				attrLagVersion: avN(ver + 1),
			},
			ExpressionAttributeNames: map[string]string{"#v": attrLagVersion},
		}
		if it == nil {
			in.ConditionExpression = aws.String("attribute_not_exists(#v)")
		} else {
			in.ConditionExpression = aws.String("#v = :v")
			in.ExpressionAttributeValues = item{":v": avN(ver)}
		}
		_, err = s.client.PutItem(ctx, in)
		if err == nil {
			return nil
		}
		if err = mapError(op, err); !errors.As(err, new(*conditionFailed)) {
			return err
		}
	}
	return fmt.Errorf("dynamo: %s: %d concurrent writers won: %w", op, lagAttempts, store.ErrUnavailable)
}

// LagHistory reads the group's history strongly consistently.
func (s *MetaStore) LagHistory(ctx context.Context, group string) ([]store.LagSeries, error) {
	op := "lag history of " + group
	it, err := s.getItem(ctx, op, s.lag, item{attrGroup: avS(group)})
	if err != nil {
		return nil, err
	}
	h, _, err := decodeLagItem(it)
	if err != nil {
		return nil, fmt.Errorf("dynamo: %s: %w", op, err)
	}
	if h == nil {
		h = []store.LagSeries{}
	}
	return h, nil
}

// DeleteLagHistory deletes the group's history item.
func (s *MetaStore) DeleteLagHistory(ctx context.Context, group string) error {
	_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(s.lag),
		Key:       item{attrGroup: avS(group)},
	})
	if err != nil {
		return mapError("delete lag history of "+group, err)
	}
	return nil
}

// decodeLagItem returns a lag history item's history and version; a missing item is
// an empty history at version 0.
func decodeLagItem(it item) ([]store.LagSeries, int64, error) {
	if it == nil {
		return nil, 0, nil
	}
	d := decoder{it: it}
	ver := d.num(attrLagVersion, true)
	if d.err != nil {
		return nil, 0, d.err
	}
	b, ok := it[attrLagHistory].(*types.AttributeValueMemberB)
	if !ok {
		return nil, 0, fmt.Errorf("dynamo: attribute %q: missing or not binary", attrLagHistory)
	}
	h, err := store.DecodeLagHistory(b.Value)
	if err != nil {
		return nil, 0, fmt.Errorf("dynamo: attribute %q: %w", attrLagHistory, err)
	}
	return h, ver, nil
}
