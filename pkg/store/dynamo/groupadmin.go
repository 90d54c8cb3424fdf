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

var _ store.GroupAdminStore = (*MetaStore)(nil)

// PutGroupConfig writes the group's settings in one update: created_at is set only when
// the row is new, so an existing group keeps its creation time.
func (s *MetaStore) PutGroupConfig(ctx context.Context, cfg store.GroupConfig) (store.GroupConfig, error) {
	op := "put group config " + cfg.Name
	expr := "SET #rp = :rp, #ma = :ma"
	names := map[string]string{"#rp": "reset_policy", "#ma": "max_attempts"}
	vals := item{":rp": avS(cfg.ResetPolicy), ":ma": avN(int64(cfg.MaxAttempts))}
	if !cfg.CreatedAt.IsZero() {
		expr += ", #ca = if_not_exists(#ca, :ca)"
		names["#ca"] = "created_at"
		vals[":ca"] = avN(cfg.CreatedAt.UnixMilli())
	}
	var remove []string
	if cfg.DeadLetterTopic != "" {
		expr += ", #dlq = :dlq"
		vals[":dlq"] = avS(cfg.DeadLetterTopic)
	} else {
		remove = append(remove, "#dlq")
	}
	names["#dlq"] = "dead_letter_topic"
	if cfg.OnFailure != "" {
		expr += ", #of = :of"
		vals[":of"] = avS(cfg.OnFailure)
	} else {
		remove = append(remove, "#of")
	}
	names["#of"] = "on_failure"
	if len(remove) > 0 {
		expr += " REMOVE " + strings.Join(remove, ", ")
	}
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.groups),
		Key:                       item{attrGroup: avS(cfg.Name)},
		UpdateExpression:          aws.String(expr),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: vals,
		ReturnValues:              types.ReturnValueAllNew,
	})
	if err != nil {
		return store.GroupConfig{}, mapError(op, err)
	}
	return decodeGroup(out.Attributes)
}

// ListGroups scans the groups table; it holds one small row per group.
func (s *MetaStore) ListGroups(ctx context.Context) ([]string, error) {
	items, err := s.scanAll(ctx, "list groups", &dynamodb.ScanInput{
		TableName:                aws.String(s.groups),
		ProjectionExpression:     aws.String("#k"),
		ExpressionAttributeNames: map[string]string{"#k": attrGroup},
	})
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(items))
	for _, it := range items {
		d := decoder{it: it}
		names = append(names, d.str(attrGroup, true))
		if d.err != nil {
			return nil, d.err
		}
	}
	slices.Sort(names)
	return names, nil
}

// DeleteCommits fences every assignment row of (group, topic) on the condition that its
// lease is free, and deletes the commit rows, in transactions of at most the configured
// item count (like ResetCommits: one transaction for a topic of up to ~50 partitions; a
// larger one may be partially applied when a lease is taken meanwhile, and says so).
func (s *MetaStore) DeleteCommits(ctx context.Context, group, topic string, now time.Time) error {
	op := fmt.Sprintf("delete commits of %s on %s", group, topic)
	q := func(table string) ([]item, error) {
		return s.queryAll(ctx, op, &dynamodb.QueryInput{
			TableName:                 aws.String(table),
			KeyConditionExpression:    aws.String("#gt = :gt"),
			ExpressionAttributeNames:  map[string]string{"#gt": attrGT},
			ExpressionAttributeValues: item{":gt": avS(gtKey(group, topic))},
		}, 0)
	}
	rows, err := q(s.assignments)
	if err != nil {
		return err
	}
	var assigned []int32
	for _, it := range rows {
		a, err := decodeAssignment(it)
		if err != nil {
			return err
		}
		if a.Live(now) {
			return fmt.Errorf("dynamo: %s: partition %d leased by %q until %s: %w",
				op, a.Partition, a.Owner, a.ExpiresAt.UTC().Format(time.RFC3339), store.ErrGroupActive)
		}
		assigned = append(assigned, a.Partition)
	}
	commits, err := q(s.commits)
	if err != nil {
		return err
	}
	var items []types.TransactWriteItem
	for _, p := range assigned {
		items = append(items, s.fenceIfFree(group, topic, p, now, false))
	}
	for _, it := range commits {
		c, err := decodeCommit(it)
		if err != nil {
			return err
		}
		items = append(items, s.deleteCommitRow(group, topic, c.Partition))
	}
	return s.groupTransactions(ctx, op, items, "a lease was taken meanwhile")
}

// DeleteGroup fences every assignment row of the group on the condition that its lease
// is free, deletes its commit rows, its parked keys and (on the condition that they
// expired) its member rows, and deletes the settings row last, in transactions of at most the configured
// item count: a group whose rows need more than one transaction may be partially
// deleted when a lease or a member appears meanwhile, and says so; repeating the call
// finishes it, since the settings row goes last.
func (s *MetaStore) DeleteGroup(ctx context.Context, group string, now time.Time) error {
	op := "delete group " + group
	if g, err := s.getItem(ctx, op, s.groups, item{attrGroup: avS(group)}); err != nil {
		return err
	} else if g == nil {
		return fmt.Errorf("dynamo: %s: %w", op, store.ErrNotFound)
	}
	assignments, err := s.scanGroup(ctx, op, s.assignments, group)
	if err != nil {
		return err
	}
	var fence []store.Assignment
	for _, it := range assignments {
		a, err := decodeAssignment(it)
		if err != nil {
			return err
		}
		if a.Live(now) {
			return fmt.Errorf("dynamo: %s: %s/%d leased by %q until %s: %w",
				op, a.Topic, a.Partition, a.Owner, a.ExpiresAt.UTC().Format(time.RFC3339), store.ErrGroupActive)
		}
		fence = append(fence, a)
	}
	members, err := s.queryAll(ctx, op, &dynamodb.QueryInput{
		TableName:                 aws.String(s.members),
		KeyConditionExpression:    aws.String("#g = :g"),
		ExpressionAttributeNames:  map[string]string{"#g": attrGroup},
		ExpressionAttributeValues: item{":g": avS(group)},
	}, 0)
	if err != nil {
		return err
	}
	var memberIDs []string
	for _, it := range members {
		d := decoder{it: it}
		id, exp := d.str(attrMember, true), d.time("expires_at")
		if d.err != nil {
			return d.err
		}
		if exp.After(now) {
			return fmt.Errorf("dynamo: %s: member %q is live until %s: %w", op, id, exp.UTC().Format(time.RFC3339), store.ErrGroupActive)
		}
		memberIDs = append(memberIDs, id)
	}
	commits, err := s.scanGroup(ctx, op, s.commits, group)
	if err != nil {
		return err
	}
	parked, err := s.scanGroup(ctx, op, s.parked, group)
	if err != nil {
		return err
	}
	var items []types.TransactWriteItem
	for _, a := range fence {
		items = append(items, s.fenceIfFree(group, a.Topic, a.Partition, now, true))
	}
	for _, it := range commits {
		c, err := decodeCommit(it)
		if err != nil {
			return err
		}
		items = append(items, s.deleteCommitRow(group, c.Topic, c.Partition))
	}
	for _, it := range parked {
		items = append(items, types.TransactWriteItem{Delete: &types.Delete{
			TableName: aws.String(s.parked),
			Key:       item{attrGT: it[attrGT], attrPK: it[attrPK]},
		}})
	}
	for _, id := range memberIDs {
		items = append(items, types.TransactWriteItem{Delete: &types.Delete{
			TableName:                 aws.String(s.members),
			Key:                       item{attrGroup: avS(group), attrMember: avS(id)},
			ConditionExpression:       aws.String("attribute_not_exists(#ea) OR #ea <= :now"),
			ExpressionAttributeNames:  map[string]string{"#ea": "expires_at"},
			ExpressionAttributeValues: item{":now": avN(now.UnixMilli())},
		}})
	}
	items = append(items, types.TransactWriteItem{Delete: &types.Delete{
		TableName: aws.String(s.groups),
		Key:       item{attrGroup: avS(group)},
	}})
	return s.groupTransactions(ctx, op, items, "a lease or a member appeared meanwhile")
}

// fenceIfFree is the transaction item that fences a partition's assignment row (its
// generation bumped, its owner removed) on condition that its lease is free at now, so a
// member that held it can no longer commit. groupDeleted also marks the row as fenced by
// the group's delete (store.Assignment.GroupDeleted).
func (s *MetaStore) fenceIfFree(group, topic string, partition int32, now time.Time, groupDeleted bool) types.TransactWriteItem {
	set := "SET #gen = #gen + :one"
	names := map[string]string{"#owner": attrOwner, "#exp": attrLeaseExp, "#gen": attrGeneration}
	if groupDeleted {
		set += ", #gdel = :one"
		names["#gdel"] = attrGroupDeleted
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(s.assignments),
		Key:                       gtpKey(group, topic, partition),
		UpdateExpression:          aws.String(set + " REMOVE #owner"),
		ConditionExpression:       aws.String(leaseFree),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: item{":now": avN(now.UnixMilli()), ":one": avN(1)},
	}}
}

// deleteCommitRow is the transaction item that deletes a partition's commit row.
func (s *MetaStore) deleteCommitRow(group, topic string, partition int32) types.TransactWriteItem {
	return types.TransactWriteItem{Delete: &types.Delete{
		TableName: aws.String(s.commits),
		Key:       gtpKey(group, topic, partition),
	}}
}

// groupTransactions writes items in transactions of at most the store's limit. A failed
// condition means the group became active meanwhile (conflict says how): ErrGroupActive,
// with the rows an earlier transaction already changed counted in the message.
func (s *MetaStore) groupTransactions(ctx context.Context, op string, items []types.TransactWriteItem, conflict string) error {
	maxItems := s.cfg.maxTransactItems()
	done := 0
	for len(items) > 0 {
		n := min(len(items), maxItems)
		if _, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items[:n]}); err != nil {
			err = mapError(op, err)
			if tx := (*txConditionFailed)(nil); errors.As(err, &tx) {
				err = fmt.Errorf("dynamo: %s: %s: %w", op, conflict, store.ErrGroupActive)
			}
			if done > 0 {
				return fmt.Errorf("%w (partially applied: %d rows changed; repeat once the group is idle)", err, done)
			}
			return err
		}
		done += n
		items = items[n:]
	}
	return nil
}
