package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stratalog/strata/pkg/store"
)

func indexKey(topic string, partition int32, base int64) item {
	return item{attrTP: avS(tpKey(topic, partition)), attrBaseOffset: avN(base)}
}

func indexItem(e store.IndexEntry) item {
	it := indexKey(e.Topic, e.Partition, e.BaseOffset)
	it[attrTopic] = avS(e.Topic)
	it[attrPartition] = avN(int64(e.Partition))
	it["count"] = avN(e.Count)
	it["object_key"] = avS(e.ObjectKey)
	it["byte_offset"] = avN(e.ByteOffset)
	it["byte_length"] = avN(e.ByteLength)
	setTime(it, "max_timestamp", e.MaxTimestamp)
	setTime(it, "appended_at", e.AppendedAt)
	setExpiry(it, "expires_at", e.ExpiresAt)
	if e.Duplicate {
		it["duplicate"] = &types.AttributeValueMemberBOOL{Value: true}
	}
	if e.Skip != "" {
		it["skip"] = avS(e.Skip)
	}
	if e.MembersLength > 0 {
		it[attrMembersOff], it[attrMembersLen] = avN(e.MembersOffset), avN(e.MembersLength)
	}
	if e.Batch > 0 {
		it[attrEntryBatch] = avN(e.Batch)
	}
	return it
}

// attrEntryBatch is an entry's batch number (IndexEntry.Batch), absent on entries of
// other layouts and on those written before entries kept it.
const attrEntryBatch = "bn"

// An entry's members table location (IndexEntry.MembersOffset, MembersLength): two
// short number attributes, absent when the batch has no members table.
const (
	attrMembersOff = "m_off"
	attrMembersLen = "m_len"
)

func decodeIndex(it item) (store.IndexEntry, error) {
	d := decoder{it: it}
	e := store.IndexEntry{
		Topic:        d.str(attrTopic, true),
		Partition:    d.int32(attrPartition, true),
		BaseOffset:   d.num(attrBaseOffset, true),
		Count:        d.num("count", true),
		ObjectKey:    d.str("object_key", false),
		ByteOffset:   d.num("byte_offset", true),
		ByteLength:   d.num("byte_length", true),
		MaxTimestamp: d.time("max_timestamp"),
		AppendedAt:   d.time("appended_at"),
		ExpiresAt:    d.time("expires_at"),
		Duplicate:    d.boolean("duplicate"),
		Skip:         d.str("skip", false),
	}
	e.MembersOffset, e.MembersLength = d.num(attrMembersOff, false), d.num(attrMembersLen, false)
	if e.Batch = d.num(attrEntryBatch, false); d.err == nil && e.Batch < 0 {
		d.fail(attrEntryBatch, "batch %d", e.Batch)
	}
	if d.err == nil {
		if _, err := e.SkipRanges(); err != nil {
			d.fail("skip", "%v", err)
		}
	}
	_, hasOff := it[attrMembersOff]
	_, hasLen := it[attrMembersLen]
	if d.err == nil && (hasOff != hasLen || hasLen && (e.MembersOffset < 0 || e.MembersLength < 1)) {
		d.fail(attrMembersLen, "members table at %d of length %d", e.MembersOffset, e.MembersLength)
	}
	return e, d.err
}

func decodeIndexItems(items []item) ([]store.IndexEntry, error) {
	es := make([]store.IndexEntry, 0, len(items))
	for _, it := range items {
		e, err := decodeIndex(it)
		if err != nil {
			return nil, err
		}
		es = append(es, e)
	}
	return es, nil
}

// indexPutCondition is the condition of every put into the index: the sequencer's one
// write succeeds only on a free (tp, base_offset) key. #bo names attrBaseOffset.
const indexPutCondition = "attribute_not_exists(#bo)"

// indexPut is the sequencer's conditional put of e, alone or inside a transaction: it
// returns the existing item when the key is taken.
func (s *MetaStore) indexPut(e store.IndexEntry) *types.Put {
	return &types.Put{
		TableName:                           aws.String(s.index),
		Item:                                indexItem(e),
		ConditionExpression:                 aws.String(indexPutCondition),
		ExpressionAttributeNames:            map[string]string{"#bo": attrBaseOffset},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

// PutIndexEntry is the sequencer's single conditional put: the entry is written only if
// its (tp, base_offset) key is free. A loser gets the winner's entry back from the failed
// condition (ReturnValuesOnConditionCheckFailure ALL_OLD), so it can retry at the
// winner's end without another read.
//
// The SDK retries a put whose response was lost; the retry then finds the caller's own
// entry and reports it as a conflict. Callers recognise their own object key in
// ConflictError.Existing.
func (s *MetaStore) PutIndexEntry(ctx context.Context, e store.IndexEntry) error {
	op := fmt.Sprintf("put index entry %s/%d@%d", e.Topic, e.Partition, e.BaseOffset)
	p := s.indexPut(e)
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           p.TableName,
		Item:                                p.Item,
		ConditionExpression:                 p.ConditionExpression,
		ExpressionAttributeNames:            p.ExpressionAttributeNames,
		ReturnValuesOnConditionCheckFailure: p.ReturnValuesOnConditionCheckFailure,
	})
	if err == nil {
		return nil
	}
	err = mapError(op, err)
	var cf *conditionFailed
	if !errors.As(err, &cf) {
		return err
	}
	return s.conflict(ctx, op, e, cf.item)
}

// conflict builds the *ConflictError for a put that found e's key taken, from the
// winner's item when the failed write returned it, else from a consistent read.
func (s *MetaStore) conflict(ctx context.Context, op string, e store.IndexEntry, old item) error {
	old, err := s.holder(ctx, op, s.index, indexKey(e.Topic, e.Partition, e.BaseOffset), old)
	if err != nil {
		return err
	}
	existing, err := decodeIndex(old)
	if err != nil {
		return fmt.Errorf("dynamo: %s: decode the existing entry: %w", op, err)
	}
	return &store.ConflictError{Existing: existing}
}

// holder returns the item that made a put-if-absent fail: old when the failed write
// returned it (ALL_OLD), else a consistent read of key. An item deleted in between means
// the key is free again, so the caller's retry is right: ErrUnavailable.
func (s *MetaStore) holder(ctx context.Context, op, table string, key, old item) (item, error) {
	if old != nil {
		return old, nil
	}
	old, err := s.getItem(ctx, op, table, key)
	if err == nil && old == nil {
		err = fmt.Errorf("dynamo: %s: the item holding the key vanished: %w", op, store.ErrUnavailable)
	}
	return old, err
}

func idemKey(key string, partition int32) item { return item{attrKP: avS(kpKey(key, partition))} }

func idemItem(r store.IdempotencyRecord) item {
	it := idemKey(r.Key, r.Partition)
	it["key"] = avS(r.Key)
	it[attrPartition] = avN(int64(r.Partition))
	it["body_hash"] = avS(r.BodyHash)
	it[attrBaseOffset] = avN(r.BaseOffset)
	it["count"] = avN(r.Count)
	if r.Partitions > 0 {
		it["partitions"] = avN(int64(r.Partitions))
	}
	setExpiry(it, "expires_at", r.ExpiresAt)
	return it
}

// requestClaimItem is a folded claim's row: the request-claim row (partition -1) with
// its slots in "parts" ("partition:base:count" comma separated) and a version the
// merge's conditional write checks.
func requestClaimItem(c store.RequestClaim, ver int64) item {
	it := idemItem(store.IdempotencyRecord{Key: c.Key, Partition: -1, BodyHash: c.BodyHash, BaseOffset: -1,
		Count: c.Count, Partitions: c.Partitions, ExpiresAt: c.ExpiresAt})
	var b strings.Builder
	for i, p := range c.Parts {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d:%d:%d", p.Partition, p.BaseOffset, p.Count)
	}
	it["parts"] = avS(b.String())
	it["ver"] = avN(ver)
	return it
}

// decodeRequestClaim decodes a request-claim row; folded is false for a row of the
// per-partition format (no parts).
func decodeRequestClaim(it item) (c store.RequestClaim, ver int64, folded bool, err error) {
	rec, err := decodeIdem(it)
	if err != nil {
		return c, 0, false, err
	}
	c = store.RequestClaim{Key: rec.Key, BodyHash: rec.BodyHash, Count: rec.Count, Partitions: rec.Partitions, ExpiresAt: rec.ExpiresAt}
	if _, ok := it["parts"]; !ok {
		return c, 0, false, nil
	}
	d := decoder{it: it}
	parts, ver := d.str("parts", false), d.num("ver", true)
	if d.err != nil {
		return c, 0, false, d.err
	}
	last := int32(-1)
	for _, f := range strings.Split(parts, ",") {
		var pc store.PartClaim
		if n, _ := fmt.Sscanf(f, "%d:%d:%d", &pc.Partition, &pc.BaseOffset, &pc.Count); n != 3 ||
			pc.Partition <= last || pc.BaseOffset < 0 || pc.Count < 1 {
			return c, 0, false, fmt.Errorf("dynamo: claim %q: bad parts %q", c.Key, parts)
		}
		last = pc.Partition
		c.Parts = append(c.Parts, pc)
	}
	return c, ver, true, nil
}

func decodeIdem(it item) (store.IdempotencyRecord, error) {
	d := decoder{it: it}
	r := store.IdempotencyRecord{
		Key:        d.str("key", true),
		Partition:  d.int32(attrPartition, true),
		BodyHash:   d.str("body_hash", false),
		BaseOffset: d.num(attrBaseOffset, true),
		Count:      d.num("count", true),
		Partitions: d.int32("partitions", false),
		ExpiresAt:  d.time("expires_at"),
	}
	return r, d.err
}

// LastIndexEntry queries the partition's newest entry: descending, one item, consistent.
func (s *MetaStore) LastIndexEntry(ctx context.Context, topic string, partition int32) (store.IndexEntry, bool, error) {
	items, err := s.queryAll(ctx, fmt.Sprintf("last index entry of %s/%d", topic, partition), &dynamodb.QueryInput{
		TableName:                 aws.String(s.index),
		KeyConditionExpression:    aws.String("#tp = :tp"),
		ExpressionAttributeNames:  map[string]string{"#tp": attrTP},
		ExpressionAttributeValues: item{":tp": avS(tpKey(topic, partition))},
		ScanIndexForward:          aws.Bool(false),
	}, 1)
	if err != nil || len(items) == 0 {
		return store.IndexEntry{}, false, err
	}
	e, err := decodeIndex(items[0])
	return e, err == nil, err
}

// IndexEntries is the entries from the one holding from: one query of the entries at
// or after from (ascending), and only when the first of them does not begin at from a
// second for the greatest base below it (descending, one item). A consumer reading on
// from where its last poll ended asks at an entry's base, so a tail poll costs one query.
func (s *MetaStore) IndexEntries(ctx context.Context, topic string, partition int32, from int64, limit int) ([]store.IndexEntry, error) {
	return s.indexEntries(ctx, topic, partition, from, limit, true)
}

// IndexEntriesEventual is IndexEntries read from any replica (eventually consistent
// queries, half the read units).
func (s *MetaStore) IndexEntriesEventual(ctx context.Context, topic string, partition int32, from int64, limit int) ([]store.IndexEntry, error) {
	return s.indexEntries(ctx, topic, partition, from, limit, false)
}

// indexEntries is IndexEntries' queries, strongly consistent or from any replica.
func (s *MetaStore) indexEntries(ctx context.Context, topic string, partition int32, from int64, limit int, consistent bool) ([]store.IndexEntry, error) {
	if limit <= 0 {
		return nil, nil
	}
	op := fmt.Sprintf("index entries of %s/%d from %d", topic, partition, from)
	names := map[string]string{"#tp": attrTP, "#bo": attrBaseOffset}
	values := item{":tp": avS(tpKey(topic, partition)), ":from": avN(from)}
	later, err := s.queryAll(ctx, op, &dynamodb.QueryInput{
		TableName:                 aws.String(s.index),
		KeyConditionExpression:    aws.String("#tp = :tp AND #bo >= :from"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
		ScanIndexForward:          aws.Bool(true),
		ConsistentRead:            aws.Bool(consistent),
	}, limit)
	if err != nil {
		return nil, err
	}
	es, err := decodeIndexItems(later)
	if err != nil {
		return nil, err
	}
	if len(es) > 0 && es[0].BaseOffset == from {
		return es, nil
	}
	below, err := s.queryAll(ctx, op, &dynamodb.QueryInput{
		TableName:                 aws.String(s.index),
		KeyConditionExpression:    aws.String("#tp = :tp AND #bo < :from"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
		ScanIndexForward:          aws.Bool(false),
		ConsistentRead:            aws.Bool(consistent),
	}, 1)
	if err != nil {
		return nil, err
	}
	holding, err := decodeIndexItems(below)
	if err != nil {
		return nil, err
	}
	es = append(holding, es...)
	if len(es) == 0 {
		return nil, nil
	}
	return es[:min(len(es), limit)], nil
}

// GetIdempotency reads the (key, partition) row.
func (s *MetaStore) GetIdempotency(ctx context.Context, key string, partition int32) (store.IdempotencyRecord, error) {
	op := fmt.Sprintf("get idempotency key %q partition %d", key, partition)
	it, err := s.getItem(ctx, op, s.idem, idemKey(key, partition))
	if err != nil {
		return store.IdempotencyRecord{}, err
	}
	if it == nil {
		return store.IdempotencyRecord{}, fmt.Errorf("dynamo: %s: %w", op, store.ErrNotFound)
	}
	return decodeIdem(it)
}

// DeleteIndexEntry deletes the entry at baseOffset; DynamoDB deletes of a missing key succeed.
func (s *MetaStore) DeleteIndexEntry(ctx context.Context, topic string, partition int32, baseOffset int64) error {
	_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(s.index),
		Key:       indexKey(topic, partition, baseOffset),
	})
	if err != nil {
		return mapError(fmt.Sprintf("delete index entry %s/%d@%d", topic, partition, baseOffset), err)
	}
	return nil
}
