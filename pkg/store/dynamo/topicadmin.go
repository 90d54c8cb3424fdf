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
		ConditionExpression:                 aws.String("attribute_exists(#k) AND attribute_not_exists(#d) AND #p < :n"),
		ExpressionAttributeNames:            map[string]string{"#p": "partitions", "#k": attrTopic, "#d": attrDeletedAt},
		ExpressionAttributeValues:           item{":n": avN(int64(partitions))},
		ReturnValues:                        types.ReturnValueAllOld,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err != nil {
		err = mapError(op, err)
		var cf *conditionFailed
		if errors.As(err, &cf) {
			if _, deleted := cf.item[attrDeletedAt]; cf.item == nil || deleted {
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
		_ = s.putCounter(ctx, old.ID(), p, 0, 0)
	}
	old.Partitions = partitions
	return old, nil
}

// SetRetentionPin sets (or, for 0, removes) the pin attribute of the live topic row.
func (s *MetaStore) SetRetentionPin(ctx context.Context, name string, pin time.Duration) (store.Topic, error) {
	in := &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.topics),
		Key:                                 item{attrTopic: avS(name)},
		UpdateExpression:                    aws.String("REMOVE #pin"),
		ConditionExpression:                 aws.String("attribute_exists(#k) AND attribute_not_exists(#d)"),
		ExpressionAttributeNames:            map[string]string{"#pin": attrRetentionPin, "#k": attrTopic, "#d": attrDeletedAt},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureNone,
	}
	if pin > 0 {
		in.UpdateExpression = aws.String("SET #pin = :pin")
		in.ExpressionAttributeValues = item{":pin": &types.AttributeValueMemberN{Value: durationMillis(pin)}}
	}
	out, err := s.client.UpdateItem(ctx, in)
	if err != nil {
		err = mapError("set retention pin of "+name, err)
		if cf := (*conditionFailed)(nil); errors.As(err, &cf) {
			return store.Topic{}, fmt.Errorf("dynamo: topic %q: %w", name, store.ErrNotFound)
		}
		return store.Topic{}, err
	}
	return decodeTopic(out.Attributes)
}

// attrDeletedAt is the tombstone of a deleted incarnation, in epoch ms: on its graveyard
// row, or (the legacy delete, before incarnations) on the topic row itself.
const attrDeletedAt = "deleted_at"

// graveKey is the topics-table key of a deleted incarnation's row: names cannot contain
// '#', so it never collides with a live row's key.
func graveKey(name, incarnation string) string { return name + "#" + incarnation }

// DeleteTopic moves the live row to the graveyard in one transaction: the row is read,
// then deleted on the condition that it is unchanged (no concurrent delete, re-create
// or partition increase) while its copy is put under graveKey with the tombstone.
func (s *MetaStore) DeleteTopic(ctx context.Context, name string, at time.Time) error {
	op := "delete topic " + name
	for attempt := 0; ; attempt++ {
		t, err := s.GetTopic(ctx, name)
		if err != nil {
			return err
		}
		grave := topicItem(t)
		grave[attrTopic] = avS(graveKey(t.Name, t.Incarnation))
		grave[attrDeletedAt] = avN(at.UnixMilli())
		unchanged := "attribute_exists(#k) AND attribute_not_exists(#d) AND #p = :p AND "
		vals := item{":p": avN(int64(t.Partitions))}
		if t.Incarnation == "" {
			unchanged += "attribute_not_exists(#i)"
		} else {
			unchanged += "#i = :i"
			vals[":i"] = avS(t.Incarnation)
		}
		_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Delete: &types.Delete{
				TableName:                 aws.String(s.topics),
				Key:                       item{attrTopic: avS(name)},
				ConditionExpression:       aws.String(unchanged),
				ExpressionAttributeNames:  map[string]string{"#k": attrTopic, "#d": attrDeletedAt, "#p": "partitions", "#i": attrIncarnation},
				ExpressionAttributeValues: vals,
			}},
			{Put: &types.Put{TableName: aws.String(s.topics), Item: grave}},
		}})
		if err == nil {
			return nil
		}
		err = mapError(op, err)
		if tx := (*txConditionFailed)(nil); errors.As(err, &tx) && attempt < 3 {
			continue // changed meanwhile: read it again
		}
		return err
	}
}

// DeletedTopics scans the topics table for rows with a tombstone: graveyard rows and
// legacy tombstoned rows.
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
	slices.SortFunc(out, func(a, b store.DeletedTopic) int {
		return strings.Compare(graveKey(a.Name, a.Incarnation), graveKey(b.Name, b.Incarnation))
	})
	return out, nil
}

// PurgeTopic deletes a deleted incarnation's counters, then its graveyard row (and, for
// the legacy incarnation, a tombstoned topic row). Its idempotency claims are left to
// their TTL: the table is keyed by claim, and no other incarnation can match them.
func (s *MetaStore) PurgeTopic(ctx context.Context, name, incarnation string) error {
	op := "purge topic " + graveKey(name, incarnation)
	it, err := s.getItem(ctx, op, s.topics, item{attrTopic: avS(graveKey(name, incarnation))})
	if err != nil {
		return err
	}
	if it == nil {
		// Not in the graveyard: the live row (refused), a legacy delete (which kept the
		// tombstone on the topic row itself), or nothing.
		if it, err = s.getItem(ctx, op, s.topics, item{attrTopic: avS(name)}); err != nil || it == nil {
			return err
		}
		t, err := decodeTopic(it)
		if err != nil || t.Incarnation != incarnation {
			return err
		}
		if _, deleted := it[attrDeletedAt]; !deleted {
			return fmt.Errorf("dynamo: %s: %w", op, store.ErrNotDeleted)
		}
	}
	t, err := decodeTopic(it)
	if err != nil {
		return err
	}
	if store.TopicCommits(t.ID()) {
		if _, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName: aws.String(s.sequencer),
			Key:       topicItemKey(t.ID()),
		}); err != nil {
			return mapError(op+": topic item", err)
		}
	}
	for p := int32(0); p < t.Partitions && !store.TopicCommits(t.ID()); p++ {
		if _, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName: aws.String(s.sequencer),
			Key:       seqKey(t.ID(), p),
		}); err != nil {
			return mapError(fmt.Sprintf("%s: counter %d", op, p), err)
		}
	}
	_, err = s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                aws.String(s.topics),
		Key:                      item{attrTopic: it[attrTopic]},
		ConditionExpression:      aws.String("attribute_exists(#d)"),
		ExpressionAttributeNames: map[string]string{"#d": attrDeletedAt},
	})
	if err != nil {
		err = mapError(op, err)
		if cf := (*conditionFailed)(nil); errors.As(err, &cf) {
			return nil // purged meanwhile
		}
		return err
	}
	return nil
}
