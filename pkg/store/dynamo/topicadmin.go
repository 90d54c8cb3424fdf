package dynamo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

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

// attrDeletedAt is the tombstone on a topic row: its deletion time in epoch ms.
const attrDeletedAt = "deleted_at"

// DeleteTopic sets the tombstone on the topic row unless it has one.
func (s *MetaStore) DeleteTopic(ctx context.Context, name string, at time.Time) error {
	op := "delete topic " + name
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.topics),
		Key:                       item{attrTopic: avS(name)},
		UpdateExpression:          aws.String("SET #d = if_not_exists(#d, :at)"),
		ConditionExpression:       aws.String("attribute_exists(#k)"),
		ExpressionAttributeNames:  map[string]string{"#d": attrDeletedAt, "#k": attrTopic},
		ExpressionAttributeValues: item{":at": avN(at.UnixMilli())},
	})
	if err != nil {
		err = mapError(op, err)
		if cf := (*conditionFailed)(nil); errors.As(err, &cf) {
			return fmt.Errorf("dynamo: topic %q: %w", name, store.ErrNotFound)
		}
		return err
	}
	return nil
}

// TopicTombstone reads the tombstone of the topic row.
func (s *MetaStore) TopicTombstone(ctx context.Context, name string) (time.Time, bool, error) {
	it, err := s.getItem(ctx, "tombstone of "+name, s.topics, item{attrTopic: avS(name)})
	if err != nil || it == nil {
		return time.Time{}, false, err
	}
	if _, ok := it[attrDeletedAt]; !ok {
		return time.Time{}, false, nil
	}
	d := decoder{it: it}
	at := d.time(attrDeletedAt)
	return at, d.err == nil, d.err
}

// DeletedTopics scans the topics table for rows with a tombstone.
func (s *MetaStore) DeletedTopics(ctx context.Context) ([]store.DeletedTopic, error) {
	items, err := s.scanAll(ctx, "list deleted topics", &dynamodb.ScanInput{
		TableName:                aws.String(s.topics),
		FilterExpression:         aws.String("attribute_exists(#d)"),
		ExpressionAttributeNames: map[string]string{"#d": attrDeletedAt},
	})
	if err != nil {
		return nil, err
	}
	out := make([]store.DeletedTopic, 0, len(items))
	for _, it := range items {
		t, err := decodeTopic(it)
		if err != nil {
			return nil, err
		}
		d := decoder{it: it}
		at := d.time(attrDeletedAt)
		if d.err != nil {
			return nil, d.err
		}
		out = append(out, store.DeletedTopic{Topic: t, DeletedAt: at})
	}
	slices.SortFunc(out, func(a, b store.DeletedTopic) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// PurgeTopic deletes a tombstoned topic row; the counters stay.
func (s *MetaStore) PurgeTopic(ctx context.Context, name string) error {
	op := "purge topic " + name
	_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                aws.String(s.topics),
		Key:                      item{attrTopic: avS(name)},
		ConditionExpression:      aws.String("attribute_not_exists(#k) OR attribute_exists(#d)"),
		ExpressionAttributeNames: map[string]string{"#d": attrDeletedAt, "#k": attrTopic},
	})
	if err != nil {
		err = mapError(op, err)
		if cf := (*conditionFailed)(nil); errors.As(err, &cf) {
			return fmt.Errorf("dynamo: %s: %w", op, store.ErrNotDeleted)
		}
		return err
	}
	return nil
}
