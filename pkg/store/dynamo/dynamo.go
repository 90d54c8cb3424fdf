// Package dynamo implements store.MetaStore on Amazon DynamoDB (or an emulator) with
// aws-sdk-go-v2, following docs/DESIGN.md §3–4: the index table is the per-partition
// offset sequencer (one conditional put per append), leases and commits are fenced by
// conditional writes and transactions. Every read is strongly consistent. Times are
// stored as epoch milliseconds; TTL attributes as epoch seconds.
package dynamo

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stratalog/strata/pkg/store"
)

// MetaStore is the DynamoDB MetaStore. It is safe for concurrent use.
type MetaStore struct {
	client *dynamodb.Client
	cfg    Config
	// Table names.
	topics, sequencer, index, partitions, assignments, commits, groups, members, idem, lag, parked string
	// seen is the greatest high watermark this store observed per partition (tp key →
	// int64): a lower bound of the base of any commit sent after it, which bounds the
	// index range a lost commit answer is looked for in (resolveCommit).
	seen sync.Map
	// fences are the request fences of each topic commit topic (topic → []RequestFence)
	// as this store last saw its item: a commit removes those past store.FenceHorizon.
	fences sync.Map
}

var _ store.MetaStore = (*MetaStore)(nil)

// FenceLimits are the bounds this store holds a topic's request fences to.
func (s *MetaStore) FenceLimits() store.FenceLimits { return s.cfg.FenceLimits.OrDefault() }

// New returns a MetaStore using the tables named by cfg, which must exist (Bootstrap or
// the CDK stack creates them).
func New(client *dynamodb.Client, cfg Config) *MetaStore {
	return &MetaStore{
		client:      client,
		cfg:         cfg,
		topics:      cfg.TableName(TopicsTable),
		sequencer:   cfg.TableName(SequencerTable),
		index:       cfg.TableName(IndexTable),
		partitions:  cfg.TableName(PartitionsTable),
		assignments: cfg.TableName(AssignmentsTable),
		commits:     cfg.TableName(CommitsTable),
		groups:      cfg.TableName(GroupsTable),
		members:     cfg.TableName(MembersTable),
		idem:        cfg.TableName(IdempotencyTable),
		lag:         cfg.TableName(LagHistoryTable),
		parked:      cfg.TableName(ParkedTable),
	}
}

// getItem reads one item strongly consistently; a missing item is (nil, nil).
func (s *MetaStore) getItem(ctx context.Context, op, table string, key item) (item, error) {
	return s.readItem(ctx, op, table, key, true)
}

// readItem reads one item, strongly consistently or from any replica (eventually
// consistent: half the read units); a missing item is (nil, nil).
func (s *MetaStore) readItem(ctx context.Context, op, table string, key item, consistent bool) (item, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(table),
		Key:            key,
		ConsistentRead: aws.Bool(consistent),
	})
	if err != nil {
		return nil, mapError(op, err)
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	return out.Item, nil
}

// scanAll reads every item of table, strongly consistently, optionally filtered.
func (s *MetaStore) scanAll(ctx context.Context, op string, in *dynamodb.ScanInput) ([]item, error) {
	in.ConsistentRead = aws.Bool(true)
	var items []item
	p := dynamodb.NewScanPaginator(s.client, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, mapError(op, err)
		}
		items = append(items, page.Items...)
	}
	return items, nil
}

// --- topics ---

// CreateTopic puts the topic row only if no row has its name.
func (s *MetaStore) CreateTopic(ctx context.Context, t store.Topic) error {
	it := topicItem(t)
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(s.topics),
		Item:                                it,
		ConditionExpression:                 aws.String("attribute_not_exists(#k)"),
		ExpressionAttributeNames:            map[string]string{"#k": attrTopic},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err != nil {
		err = mapError("create topic "+t.Name, err)
		cf := (*conditionFailed)(nil)
		if !errors.As(err, &cf) {
			return err
		}
		// The SDK retries a put whose answer was lost; the retry then finds our own row.
		// A live row with the same configuration and creation time (to the millisecond) is
		// it; a tombstoned one never is.
		_, deleted := cf.item[attrDeletedAt]
		if old, derr := decodeTopic(cf.item); cf.item == nil || deleted || derr != nil || old.Partitions != t.Partitions ||
			old.Incarnation != t.Incarnation || old.Retention != t.Retention || old.RetentionPin != t.RetentionPin || old.LogAppendTime != t.LogAppendTime || old.CleanupSettings() != t.CleanupSettings() || !old.CreatedAt.Equal(t.CreatedAt.Truncate(time.Millisecond)) {
			return fmt.Errorf("dynamo: create topic %q: %w", t.Name, store.ErrExists)
		}
	}
	s.seedNewTopic(ctx, t)
	return nil
}

// attrIncarnation is a topic row's incarnation (absent for the legacy layout).
const attrIncarnation = "incarnation"

// attrRetentionPin is a topic row's retention pin cap (absent: no pin).
const attrRetentionPin = "retention_pin_ms"

// attrLogAppendTime is true on the row of a topic that stamps records with their append
// time (absent: the producer's timestamps).
const attrLogAppendTime = "log_append_time"

// The attributes of a topic row's cleanup policy and compaction settings, each absent
// when unset (delete, no compaction settings).
const (
	attrCleanup          = "cleanup_policy"
	attrMinCompactionLag = "min_compaction_lag_ms"
	attrMaxCompactionLag = "max_compaction_lag_ms"
	attrDeleteRetention  = "delete_retention_ms"
)

// cleanupAttrs are c's attributes of a topic row, only those set.
func cleanupAttrs(c store.TopicCleanup) item {
	it := item{}
	if c.Cleanup != "" {
		it[attrCleanup] = avS(string(c.Cleanup))
	}
	for name, d := range map[string]time.Duration{attrMinCompactionLag: c.MinCompactionLag, attrMaxCompactionLag: c.MaxCompactionLag, attrDeleteRetention: c.DeleteRetention} {
		if d > 0 {
			it[name] = &types.AttributeValueMemberN{Value: durationMillis(d)}
		}
	}
	return it
}

// topicItem is the live row of t.
func topicItem(t store.Topic) item {
	it := item{
		attrTopic:      avS(t.Name),
		"partitions":   avN(int64(t.Partitions)),
		"retention_ms": &types.AttributeValueMemberN{Value: durationMillis(t.Retention)},
	}
	if t.Incarnation != "" {
		it[attrIncarnation] = avS(t.Incarnation)
	}
	if t.RetentionPin > 0 {
		it[attrRetentionPin] = &types.AttributeValueMemberN{Value: durationMillis(t.RetentionPin)}
	}
	if t.LogAppendTime {
		it[attrLogAppendTime] = &types.AttributeValueMemberBOOL{Value: true}
	}
	maps.Copy(it, cleanupAttrs(t.CleanupSettings()))
	setTime(it, "created_at", t.CreatedAt)
	return it
}

// GetTopic reads the topic row: one read answers both whether the name has a live
// topic and which. A row with a tombstone (the legacy delete, which kept the row) is
// not found.
func (s *MetaStore) GetTopic(ctx context.Context, name string) (store.Topic, error) {
	it, err := s.getItem(ctx, "get topic "+name, s.topics, item{attrTopic: avS(name)})
	if err != nil {
		return store.Topic{}, err
	}
	if _, deleted := it[attrDeletedAt]; it == nil || deleted || strings.Contains(name, "#") {
		return store.Topic{}, fmt.Errorf("dynamo: topic %q: %w", name, store.ErrNotFound)
	}
	return decodeTopic(it)
}

// decodeTopic decodes a live row or a graveyard row (keyed TopicID+"#" by graveKey).
func decodeTopic(it item) (store.Topic, error) {
	d := decoder{it: it}
	t := store.Topic{
		Name:        d.str(attrTopic, true),
		Incarnation: d.str(attrIncarnation, false),
		Partitions:  d.int32("partitions", true),
		Retention:   d.duration("retention_ms"),
		CreatedAt:   d.time("created_at"),
	}
	if _, ok := it[attrRetentionPin]; ok {
		t.RetentionPin = d.duration(attrRetentionPin)
	}
	if b, ok := it[attrLogAppendTime].(*types.AttributeValueMemberBOOL); ok {
		t.LogAppendTime = b.Value
	}
	if _, ok := it[attrCleanup]; ok {
		p, err := store.ParseCleanupPolicy(d.str(attrCleanup, true))
		if err != nil && d.err == nil {
			d.err = fmt.Errorf("dynamo: topic row: %w", err)
		}
		t.Cleanup = p
	}
	for name, dst := range map[string]*time.Duration{attrMinCompactionLag: &t.MinCompactionLag, attrMaxCompactionLag: &t.MaxCompactionLag, attrDeleteRetention: &t.DeleteRetention} {
		if _, ok := it[name]; ok {
			*dst = d.duration(name)
		}
	}
	if name, _, grave := strings.Cut(t.Name, "#"); grave {
		t.Name = name
	}
	return t, d.err
}

// ListTopics scans the topics table (one small row per topic) for the live rows: not
// the graveyard's, nor legacy tombstoned ones.
func (s *MetaStore) ListTopics(ctx context.Context) ([]string, error) {
	items, err := s.scanAll(ctx, "list topics", &dynamodb.ScanInput{
		TableName:                aws.String(s.topics),
		ProjectionExpression:     aws.String("#k"),
		FilterExpression:         aws.String("attribute_not_exists(#d)"),
		ExpressionAttributeNames: map[string]string{"#k": attrTopic, "#d": attrDeletedAt},
	})
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(items))
	for _, it := range items {
		d := decoder{it: it}
		name := d.str(attrTopic, true)
		if d.err != nil {
			return nil, d.err
		}
		if !strings.Contains(name, "#") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// --- partitions ---

func partitionKey(topic string, partition int32) item {
	return item{attrTopic: avS(topic), attrPartition: avN(int64(partition))}
}

// legacyLogStart reads the log start offset of the index-as-sequencer format (the
// partitions table), 0 when the row does not exist; only the migration reads it.
func (s *MetaStore) legacyLogStart(ctx context.Context, topic string, partition int32) (int64, error) {
	it, err := s.getItem(ctx, fmt.Sprintf("legacy log start of %s/%d", topic, partition), s.partitions, partitionKey(topic, partition))
	if err != nil || it == nil {
		return 0, err
	}
	d := decoder{it: it}
	off := d.num("log_start_offset", false)
	return off, d.err
}

// --- groups and members ---

// EnsureGroup puts the group row only if absent; when present, the failed condition
// returns the stored row (ALL_OLD), so both outcomes take one request.
func (s *MetaStore) EnsureGroup(ctx context.Context, cfg store.GroupConfig) (store.GroupConfig, error) {
	it := item{
		attrGroup:      avS(cfg.Name),
		"reset_policy": avS(cfg.ResetPolicy),
		"max_attempts": avN(int64(cfg.MaxAttempts)),
	}
	if cfg.DeadLetterTopic != "" {
		it["dead_letter_topic"] = avS(cfg.DeadLetterTopic)
	}
	if cfg.OnFailure != "" {
		it["on_failure"] = avS(cfg.OnFailure)
	}
	setTime(it, "created_at", cfg.CreatedAt)
	op := "ensure group " + cfg.Name
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(s.groups),
		Item:                                it,
		ConditionExpression:                 aws.String("attribute_not_exists(#k)"),
		ExpressionAttributeNames:            map[string]string{"#k": attrGroup},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return cfg, nil
	}
	err = mapError(op, err)
	var cf *conditionFailed
	if !errors.As(err, &cf) {
		return store.GroupConfig{}, err
	}
	old := cf.item
	if old == nil {
		if old, err = s.getItem(ctx, op, s.groups, item{attrGroup: avS(cfg.Name)}); err != nil {
			return store.GroupConfig{}, err
		}
		if old == nil {
			return store.GroupConfig{}, fmt.Errorf("dynamo: %s: row exists yet cannot be read: %w", op, store.ErrUnavailable)
		}
	}
	return decodeGroup(old)
}

// GetGroup reads the group row.
func (s *MetaStore) GetGroup(ctx context.Context, name string) (store.GroupConfig, error) {
	it, err := s.getItem(ctx, "get group "+name, s.groups, item{attrGroup: avS(name)})
	if err != nil {
		return store.GroupConfig{}, err
	}
	if it == nil {
		return store.GroupConfig{}, fmt.Errorf("dynamo: group %q: %w", name, store.ErrNotFound)
	}
	return decodeGroup(it)
}

func decodeGroup(it item) (store.GroupConfig, error) {
	d := decoder{it: it}
	g := store.GroupConfig{
		Name:            d.str(attrGroup, true),
		ResetPolicy:     d.str("reset_policy", false),
		MaxAttempts:     int(d.num("max_attempts", false)),
		DeadLetterTopic: d.str("dead_letter_topic", false),
		OnFailure:       d.str("on_failure", false),
		CreatedAt:       d.time("created_at"),
	}
	return g, d.err
}

// Heartbeat upserts the member row; its TTL lets DynamoDB remove rows of dead members.
func (s *MetaStore) Heartbeat(ctx context.Context, m store.Member) error {
	it := item{attrGroup: avS(m.Group), attrMember: avS(m.ID)}
	setExpiry(it, "expires_at", m.ExpiresAt)
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.members), Item: it})
	if err != nil {
		return mapError(fmt.Sprintf("heartbeat %s/%s", m.Group, m.ID), err)
	}
	return nil
}

// RemoveMember deletes the member row.
func (s *MetaStore) RemoveMember(ctx context.Context, group, id string) error {
	_, err := s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(s.members),
		Key:       item{attrGroup: avS(group), attrMember: avS(id)},
	})
	if err != nil {
		return mapError(fmt.Sprintf("remove member %s/%s", group, id), err)
	}
	return nil
}

// LiveMembers queries the group's member rows, keeping those expiring after now.
func (s *MetaStore) LiveMembers(ctx context.Context, group string, now time.Time) ([]store.Member, error) {
	items, err := s.queryAll(ctx, "live members of "+group, &dynamodb.QueryInput{
		TableName:                 aws.String(s.members),
		KeyConditionExpression:    aws.String("#g = :g"),
		FilterExpression:          aws.String("#ea > :now"),
		ExpressionAttributeNames:  map[string]string{"#g": attrGroup, "#ea": "expires_at"},
		ExpressionAttributeValues: item{":g": avS(group), ":now": avN(now.UnixMilli())},
	}, 0)
	if err != nil {
		return nil, err
	}
	ms := make([]store.Member, 0, len(items))
	for _, it := range items {
		d := decoder{it: it}
		m := store.Member{Group: d.str(attrGroup, true), ID: d.str(attrMember, true), ExpiresAt: d.time("expires_at")}
		if d.err != nil {
			return nil, d.err
		}
		// The filter compares milliseconds; now may carry a sub-millisecond part.
		if m.ExpiresAt.After(now) {
			ms = append(ms, m)
		}
	}
	slices.SortFunc(ms, func(a, b store.Member) int { return strings.Compare(a.ID, b.ID) })
	return ms, nil
}

// queryAll runs a query, strongly consistent unless in says otherwise, following pages
// until max items (0: all).
func (s *MetaStore) queryAll(ctx context.Context, op string, in *dynamodb.QueryInput, max int) ([]item, error) {
	if in.ConsistentRead == nil {
		in.ConsistentRead = aws.Bool(true)
	}
	var items []item
	for {
		if max > 0 {
			in.Limit = aws.Int32(int32(min(max-len(items), 1000)))
		}
		out, err := s.client.Query(ctx, in)
		if err != nil {
			return nil, mapError(op, err)
		}
		items = append(items, out.Items...)
		if len(out.LastEvaluatedKey) == 0 || (max > 0 && len(items) >= max) {
			return items, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}
