package dynamo

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stratalog/strata/pkg/store"
)

var _ store.KeyIndexStore = (*MetaStore)(nil)

// The key index shares the index table: an entry's partition key is
// "<topic ID>#<partition>#k#<base64url SHA-256 of the key>" (keyIndexTP), which no
// index entry's "<topic ID>#<partition>" can be, at sort key 0; the key itself is kept
// in the item and compared on read, so a key of any length fits DynamoDB's 2 KB key.
const (
	attrKeyBytes     = "key"
	attrKeyOffset    = "offset"
	attrKeyTombstone = "tombstone"
)

// keyIndexTP is the index-table partition key of key's entry.
func keyIndexTP(topic string, partition int32, key []byte) string {
	sum := sha256.Sum256(key)
	return tpKey(topic, partition) + "#k#" + base64.RawURLEncoding.EncodeToString(sum[:])
}

func keyIndexKey(topic string, partition int32, key []byte) item {
	return item{attrTP: avS(keyIndexTP(topic, partition, key)), attrBaseOffset: avN(0)}
}

// PutKey puts the entry on the condition that none is stored or the stored one's offset
// is lower: one conditional PutItem, whichever host's put lands last. The item stored
// before comes back in the same response (ReturnValues ALL_OLD, and on a failed
// condition ReturnValuesOnConditionCheckFailure ALL_OLD: no further capacity), which
// says whether the put superseded a record.
func (s *MetaStore) PutKey(ctx context.Context, e store.KeyEntry) (bool, bool, error) {
	it := keyIndexKey(e.Topic, e.Partition, e.Key)
	it[attrTopic] = avS(e.Topic)
	it[attrPartition] = avN(int64(e.Partition))
	if len(e.Key) > 0 {
		it[attrKeyBytes] = &types.AttributeValueMemberB{Value: e.Key} // absent: the empty key
	}
	it[attrKeyOffset] = avN(e.Offset)
	setTime(it, "appended_at", e.AppendedAt)
	if e.Tombstone {
		it[attrKeyTombstone] = &types.AttributeValueMemberBOOL{Value: true}
	}
	out, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(s.index),
		Item:                                it,
		ConditionExpression:                 aws.String("attribute_not_exists(#o) OR #o < :o"),
		ExpressionAttributeNames:            map[string]string{"#o": attrKeyOffset},
		ExpressionAttributeValues:           item{":o": avN(e.Offset)},
		ReturnValues:                        types.ReturnValueAllOld,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err != nil {
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			d := decoder{it: ccf.Item}
			return false, d.num(attrKeyOffset, false) > e.Offset, nil
		}
		err = mapError(fmt.Sprintf("put key entry of %s/%d at %d", e.Topic, e.Partition, e.Offset), err)
		if cf := (*conditionFailed)(nil); errors.As(err, &cf) {
			return false, false, nil
		}
		return false, false, err
	}
	_, replaced := out.Attributes[attrKeyOffset]
	return true, replaced, nil
}

// GetKey reads the key's entry strongly consistently.
func (s *MetaStore) GetKey(ctx context.Context, topic string, partition int32, key []byte) (store.KeyEntry, error) {
	op := fmt.Sprintf("get key entry of %s/%d", topic, partition)
	it, err := s.getItem(ctx, op, s.index, keyIndexKey(topic, partition, key))
	if err != nil {
		return store.KeyEntry{}, err
	}
	if it == nil {
		return store.KeyEntry{}, fmt.Errorf("dynamo: %s: %w", op, store.ErrNotFound)
	}
	d := decoder{it: it}
	e := store.KeyEntry{
		Topic:      d.str(attrTopic, true),
		Partition:  d.int32(attrPartition, true),
		Key:        d.bin(attrKeyBytes),
		Offset:     d.num(attrKeyOffset, true),
		Tombstone:  d.boolean(attrKeyTombstone),
		AppendedAt: d.time("appended_at"),
	}
	if d.err != nil {
		return store.KeyEntry{}, d.err
	}
	if e.Topic != topic || e.Partition != partition || string(e.Key) != string(key) {
		// Another key with the same SHA-256: not this key's entry.
		return store.KeyEntry{}, fmt.Errorf("dynamo: %s: %w", op, store.ErrNotFound)
	}
	return e, nil
}

// DeleteKey deletes the entry on the condition that its offset is offset.
func (s *MetaStore) DeleteKey(ctx context.Context, topic string, partition int32, key []byte, offset int64) (bool, error) {
	_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(s.index),
		Key:                       keyIndexKey(topic, partition, key),
		ConditionExpression:       aws.String("#o = :o"),
		ExpressionAttributeNames:  map[string]string{"#o": attrKeyOffset},
		ExpressionAttributeValues: item{":o": avN(offset)},
	})
	if err != nil {
		err = mapError(fmt.Sprintf("delete key entry of %s/%d at %d", topic, partition, offset), err)
		if cf := (*conditionFailed)(nil); errors.As(err, &cf) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}
