package dynamo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stratalog/strata/pkg/store"
)

var _ store.ParkStore = (*MetaStore)(nil)

// Attributes of parked rows besides the keys.
const (
	attrKey          = "key"
	attrReleaseAsked = "release_requested"
)

// partitionPrefix is the start of every parked sort key of partition: ten digits, so a
// begins_with query of one partition never matches another.
func partitionPrefix(partition int32) string { return fmt.Sprintf("%010d#", partition) }

// parkedItemKey is the row's key: gt, then the partition and 32 hex digits of SHA-256 of
// the record key (keys may be long binary; the key itself is an attribute).
func parkedItemKey(group, topic string, partition int32, key []byte) item {
	h := sha256.Sum256(key)
	return item{attrGT: avS(gtKey(group, topic)), attrPK: avS(partitionPrefix(partition) + hex.EncodeToString(h[:16]))}
}

func decodeParked(it item) (store.ParkedKey, error) {
	d := decoder{it: it}
	p := store.ParkedKey{
		Group:            d.str(attrGroup, true),
		Topic:            d.str(attrTopic, true),
		Partition:        d.int32(attrPartition, true),
		Key:              d.bin(attrKey),
		FirstOffset:      d.num("first_offset", true),
		LastOffset:       d.num("last_offset", true),
		Records:          d.num("records", true),
		Error:            d.str("error", false),
		Attempts:         int(d.num("attempts", false)),
		ParkedAt:         d.time("parked_at"),
		ParkPartition:    d.int32("park_partition", true),
		ParkOffset:       d.num("park_offset", true),
		ReleaseRequested: d.time(attrReleaseAsked),
	}
	return p, d.err
}

// ownerCheck is the ConditionCheck that member owns the assignment at generation.
func (s *MetaStore) ownerCheck(group, topic string, partition int32, member string, generation int64) types.TransactWriteItem {
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName:                 aws.String(s.assignments),
		Key:                       gtpKey(group, topic, partition),
		ConditionExpression:       aws.String(ownerAt),
		ExpressionAttributeNames:  map[string]string{"#owner": attrOwner, "#gen": attrGeneration},
		ExpressionAttributeValues: item{":m": avS(member), ":g": avN(generation)},
	}}
}

// fencedTx runs the owner check and one write as a transaction; the check failing is
// ErrFenced.
func (s *MetaStore) fencedTx(ctx context.Context, op string, check, write types.TransactWriteItem) error {
	_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{check, write}})
	return fencedOutcome(op, err, nil)
}

// PutParked is one transaction: the owner check and an update of every attribute of
// the row but its release request.
func (s *MetaStore) PutParked(ctx context.Context, p store.ParkedKey, member string, generation int64) error {
	op := fmt.Sprintf("put parked key of %s on %s/%d for %q generation %d", p.Group, p.Topic, p.Partition, member, generation)
	set := "SET #group = :group, #topic = :topic, #p = :p, #fo = :fo, #lo = :lo, #n = :n, #err = :err, #pp = :pp, #po = :po, #at_n = :at_n"
	names := map[string]string{"#group": attrGroup, "#topic": attrTopic, "#p": attrPartition, "#fo": "first_offset",
		"#lo": "last_offset", "#n": "records", "#err": "error", "#pp": "park_partition", "#po": "park_offset", "#at_n": "attempts"}
	vals := item{":group": avS(p.Group), ":topic": avS(p.Topic), ":p": avN(int64(p.Partition)), ":fo": avN(p.FirstOffset),
		":lo": avN(p.LastOffset), ":n": avN(p.Records), ":err": avS(p.Error), ":pp": avN(int64(p.ParkPartition)), ":po": avN(p.ParkOffset), ":at_n": avN(int64(p.Attempts))}
	if len(p.Key) > 0 {
		set += ", #key = :key"
		names["#key"] = attrKey
		vals[":key"] = &types.AttributeValueMemberB{Value: p.Key}
	}
	if !p.ParkedAt.IsZero() {
		set += ", #at = :at"
		names["#at"] = "parked_at"
		vals[":at"] = avN(p.ParkedAt.UnixMilli())
	}
	return s.fencedTx(ctx, op, s.ownerCheck(p.Group, p.Topic, p.Partition, member, generation),
		types.TransactWriteItem{Update: &types.Update{
			TableName:                 aws.String(s.parked),
			Key:                       parkedItemKey(p.Group, p.Topic, p.Partition, p.Key),
			UpdateExpression:          aws.String(set),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: vals,
		}})
}

// DeleteParked is one transaction: the owner check and the delete.
func (s *MetaStore) DeleteParked(ctx context.Context, group, topic string, partition int32, key []byte, member string, generation int64) error {
	op := fmt.Sprintf("delete parked key of %s on %s/%d for %q generation %d", group, topic, partition, member, generation)
	return s.fencedTx(ctx, op, s.ownerCheck(group, topic, partition, member, generation),
		types.TransactWriteItem{Delete: &types.Delete{
			TableName: aws.String(s.parked),
			Key:       parkedItemKey(group, topic, partition, key),
		}})
}

// RequestRelease stamps the release request on an existing row (one conditional update).
func (s *MetaStore) RequestRelease(ctx context.Context, group, topic string, partition int32, key []byte, at time.Time) (store.ParkedKey, error) {
	op := fmt.Sprintf("request release of a parked key of %s on %s/%d", group, topic, partition)
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.parked),
		Key:                       parkedItemKey(group, topic, partition, key),
		UpdateExpression:          aws.String("SET #rr = :rr"),
		ConditionExpression:       aws.String("attribute_exists(#pk)"),
		ExpressionAttributeNames:  map[string]string{"#rr": attrReleaseAsked, "#pk": attrPK},
		ExpressionAttributeValues: item{":rr": avN(at.UnixMilli())},
		ReturnValues:              types.ReturnValueAllNew,
	})
	if err != nil {
		err = mapError(op, err)
		if cf := (*conditionFailed)(nil); errors.As(err, &cf) {
			return store.ParkedKey{}, fmt.Errorf("dynamo: %s: %w", op, store.ErrNotFound)
		}
		return store.ParkedKey{}, err
	}
	return decodeParked(out.Attributes)
}

// ListParked scans the parked table for the group's rows (a small table: keys are
// parked rarely and released).
func (s *MetaStore) ListParked(ctx context.Context, group string) ([]store.ParkedKey, error) {
	items, err := s.scanGroup(ctx, "list parked keys of "+group, s.parked, group)
	if err != nil {
		return nil, err
	}
	return decodeParkedRows(items)
}

// ListParkedPartition queries the rows of (group, topic) with the partition's prefix.
func (s *MetaStore) ListParkedPartition(ctx context.Context, group, topic string, partition int32) ([]store.ParkedKey, error) {
	op := fmt.Sprintf("list parked keys of %s on %s/%d", group, topic, partition)
	items, err := s.queryAll(ctx, op, &dynamodb.QueryInput{
		TableName:                 aws.String(s.parked),
		KeyConditionExpression:    aws.String("#gt = :gt AND begins_with(#pk, :pre)"),
		ExpressionAttributeNames:  map[string]string{"#gt": attrGT, "#pk": attrPK},
		ExpressionAttributeValues: item{":gt": avS(gtKey(group, topic)), ":pre": avS(partitionPrefix(partition))},
	}, 0)
	if err != nil {
		return nil, err
	}
	return decodeParkedRows(items)
}

func decodeParkedRows(items []item) ([]store.ParkedKey, error) {
	out := make([]store.ParkedKey, 0, len(items))
	for _, it := range items {
		p, err := decodeParked(it)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b store.ParkedKey) int {
		if c := cmpTopicPartition(a.Topic, a.Partition, b.Topic, b.Partition); c != 0 {
			return c
		}
		return bytes.Compare(a.Key, b.Key)
	})
	return out, nil
}
