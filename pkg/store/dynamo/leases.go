package dynamo

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stratalog/strata/pkg/store"
)

// Attribute names of assignment and commit rows.
const (
	attrOwner      = "owner"
	attrGeneration = "generation"
	attrLeaseExp   = "lease_expires_at"
	attrNextOffset = "next_offset"
	attrCompleted  = "completed"
	// attrGroupDeleted marks an assignment row DeleteGroup fenced, until it is acquired.
	attrGroupDeleted = "group_deleted"
)

func gtpKey(group, topic string, partition int32) item {
	return item{attrGT: avS(gtKey(group, topic)), attrPartition: avN(int64(partition))}
}

func decodeAssignment(it item) (store.Assignment, error) {
	d := decoder{it: it}
	a := store.Assignment{
		Group:      d.str(attrGroup, true),
		Topic:      d.str(attrTopic, true),
		Partition:  d.int32(attrPartition, true),
		Owner:      d.str(attrOwner, false),
		Generation: d.num(attrGeneration, true),
		ExpiresAt:  d.time(attrLeaseExp),
	}
	_, a.GroupDeleted = it[attrGroupDeleted]
	return a, d.err
}

func decodeCommit(it item) (store.CommitRow, error) {
	d := decoder{it: it}
	c := store.CommitRow{
		Group:       d.str(attrGroup, true),
		Topic:       d.str(attrTopic, true),
		Partition:   d.int32(attrPartition, true),
		NextOffset:  d.num(attrNextOffset, true),
		Generation:  d.num(attrGeneration, false),
		CommittedAt: d.time("committed_at"),
		Metadata:    d.str("metadata", false),
		Completed:   d.ranges(attrCompleted),
	}
	return c, d.err
}

// leaseFree is true of a row that is missing, released, or expired at :now; a lease
// expiring exactly at now is free (store.Assignment.Live).
const leaseFree = "attribute_not_exists(#owner) OR #exp <= :now"

// ownerAt is true of a row owned by :m at generation :g.
const ownerAt = "#owner = :m AND #gen = :g"

// AcquireLease is one conditional update: owner, expiry and generation+1 are set only if
// the lease is free or already the member's. A refused acquire gets the holder's row
// back from the failed condition (ALL_OLD) for the *LeaseHeldError.
func (s *MetaStore) AcquireLease(ctx context.Context, group, topic string, partition int32, member string, now, expiresAt time.Time) (store.Assignment, error) {
	op := fmt.Sprintf("acquire lease %s/%s/%d for %q", group, topic, partition, member)
	if member == "" {
		return store.Assignment{}, fmt.Errorf("dynamo: %s: empty member", op)
	}
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.assignments),
		Key:       gtpKey(group, topic, partition),
		UpdateExpression: aws.String("SET #owner = :m, #exp = :exp, #gen = if_not_exists(#gen, :zero) + :one, " +
			"#group = :group, #topic = :topic REMOVE #gdel"),
		ConditionExpression: aws.String(leaseFree + " OR #owner = :m"),
		ExpressionAttributeNames: map[string]string{
			"#owner": attrOwner, "#exp": attrLeaseExp, "#gen": attrGeneration, "#group": attrGroup, "#topic": attrTopic,
			"#gdel": attrGroupDeleted,
		},
		ExpressionAttributeValues: item{
			":m": avS(member), ":exp": avN(expiresAt.UnixMilli()), ":now": avN(now.UnixMilli()),
			":zero": avN(0), ":one": avN(1), ":group": avS(group), ":topic": avS(topic),
		},
		// The row as it was (ALL_OLD) says whether DeleteGroup marked it; the new row
		// follows from it: this member, this expiry, the next generation.
		ReturnValues:                        types.ReturnValueAllOld,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		d := decoder{it: out.Attributes}
		a := store.Assignment{Group: group, Topic: topic, Partition: partition, Owner: member,
			Generation: d.num(attrGeneration, false) + 1, ExpiresAt: time.UnixMilli(expiresAt.UnixMilli()).UTC()}
		_, a.GroupDeleted = out.Attributes[attrGroupDeleted]
		if d.err != nil {
			return store.Assignment{}, fmt.Errorf("dynamo: %s: the row it replaced: %w", op, d.err)
		}
		return a, nil
	}
	err = mapError(op, err)
	var cf *conditionFailed
	if !errors.As(err, &cf) {
		return store.Assignment{}, err
	}
	old := cf.item
	if old == nil {
		if old, err = s.getItem(ctx, op, s.assignments, gtpKey(group, topic, partition)); err != nil {
			return store.Assignment{}, err
		}
	}
	holder, err := decodeAssignment(old)
	if old == nil || err != nil || !holder.Live(now) {
		// The holder let go between the write and the read: the caller may retry at once.
		return store.Assignment{}, fmt.Errorf("dynamo: %s: lease changed hands during the attempt: %w", op, store.ErrUnavailable)
	}
	return store.Assignment{}, &store.LeaseHeldError{Owner: holder.Owner, ExpiresAt: holder.ExpiresAt}
}

// RenewLease moves the expiry only if member owns the lease at generation.
func (s *MetaStore) RenewLease(ctx context.Context, group, topic string, partition int32, member string, generation int64, expiresAt time.Time) (store.Assignment, error) {
	op := fmt.Sprintf("renew lease %s/%s/%d for %q generation %d", group, topic, partition, member, generation)
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.assignments),
		Key:                       gtpKey(group, topic, partition),
		UpdateExpression:          aws.String("SET #exp = :exp"),
		ConditionExpression:       aws.String(ownerAt),
		ExpressionAttributeNames:  map[string]string{"#owner": attrOwner, "#gen": attrGeneration, "#exp": attrLeaseExp},
		ExpressionAttributeValues: item{":m": avS(member), ":g": avN(generation), ":exp": avN(expiresAt.UnixMilli())},
		ReturnValues:              types.ReturnValueAllNew,
	})
	if err != nil {
		return store.Assignment{}, fenceError(op, err)
	}
	return decodeAssignment(out.Attributes)
}

// ReleaseLease removes the owner only if member owns the lease at generation; the
// generation stays, so the next acquire moves past it. A release is not idempotent: when
// the SDK sent it again (an attempt's answer lost to a timeout or a 5xx) and the condition
// then fails on a row with no owner at generation, the earlier attempt released it, and
// that is success.
func (s *MetaStore) ReleaseLease(ctx context.Context, group, topic string, partition int32, member string, generation int64) error {
	op := fmt.Sprintf("release lease %s/%s/%d for %q generation %d", group, topic, partition, member, generation)
	var resent atomic.Bool
	_, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.assignments),
		Key:                                 gtpKey(group, topic, partition),
		UpdateExpression:                    aws.String("REMOVE #owner"),
		ConditionExpression:                 aws.String(ownerAt),
		ExpressionAttributeNames:            map[string]string{"#owner": attrOwner, "#gen": attrGeneration},
		ExpressionAttributeValues:           item{":m": avS(member), ":g": avN(generation)},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}, noteResend(&resent))
	if err == nil {
		return nil
	}
	if cf := (*conditionFailed)(nil); resent.Load() && errors.As(mapError(op, err), &cf) && cf.item != nil {
		if a, derr := decodeAssignment(cf.item); derr == nil && a.Owner == "" && a.Generation == generation {
			return nil
		}
	}
	return fenceError(op, err)
}

// noteResend makes the call's retryer set resent when it decides to send the request
// again, so that a condition failure can be told from one caused by an earlier attempt
// that was applied and whose answer was lost.
func noteResend(resent *atomic.Bool) func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		inner := o.Retryer
		if inner == nil {
			inner = retry.NewStandard()
		}
		o.Retryer = resendNoter{Retryer: inner, resent: resent}
	}
}

// resendNoter is a retryer that records that it retried.
type resendNoter struct {
	aws.Retryer
	resent *atomic.Bool
}

func (r resendNoter) IsErrorRetryable(err error) bool {
	if r.Retryer.IsErrorRetryable(err) {
		r.resent.Store(true)
		return true
	}
	return false
}

// fenceError maps a failed owner-and-generation condition to store.ErrFenced.
func fenceError(op string, err error) error {
	err = mapError(op, err)
	if cf := (*conditionFailed)(nil); errors.As(err, &cf) {
		return fmt.Errorf("dynamo: %s: %w", op, store.ErrFenced)
	}
	return err
}

// GetAssignment reads the lease row.
func (s *MetaStore) GetAssignment(ctx context.Context, group, topic string, partition int32) (store.Assignment, error) {
	op := fmt.Sprintf("get assignment %s/%s/%d", group, topic, partition)
	it, err := s.getItem(ctx, op, s.assignments, gtpKey(group, topic, partition))
	if err != nil {
		return store.Assignment{}, err
	}
	if it == nil {
		return store.Assignment{}, fmt.Errorf("dynamo: %s: %w", op, store.ErrNotFound)
	}
	return decodeAssignment(it)
}

// Commit is one transaction: a ConditionCheck that member owns the assignment at
// c.Generation (an update on that condition when the commit renews or releases the
// lease: ownerWrite), and an update of the commit row if c.NextOffset is not below the stored
// one (any offset when c.Backward). The cancellation reasons tell which failed; fencing
// is reported first.
func (s *MetaStore) Commit(ctx context.Context, c store.CommitRow, member string) error {
	op := fmt.Sprintf("commit %s/%s/%d at %d for %q generation %d", c.Group, c.Topic, c.Partition, c.NextOffset, member, c.Generation)
	set := []string{"#no = :o", "#gen = :g", "#group = :group", "#topic = :topic"}
	var remove []string
	names := map[string]string{
		"#no": attrNextOffset, "#gen": attrGeneration, "#group": attrGroup, "#topic": attrTopic,
		"#ca": "committed_at", "#md": "metadata", "#cr": attrCompleted,
	}
	values := item{":o": avN(c.NextOffset), ":g": avN(c.Generation), ":group": avS(c.Group), ":topic": avS(c.Topic)}
	if len(c.Completed) == 0 {
		remove = append(remove, "#cr")
	} else {
		set, values[":cr"] = append(set, "#cr = :cr"), avRanges(c.Completed)
	}
	if c.CommittedAt.IsZero() {
		remove = append(remove, "#ca")
	} else {
		set, values[":ca"] = append(set, "#ca = :ca"), avN(c.CommittedAt.UnixMilli())
	}
	if c.Metadata == "" {
		remove = append(remove, "#md")
	} else {
		set, values[":md"] = append(set, "#md = :md"), avS(c.Metadata)
	}
	update := "SET " + strings.Join(set, ", ")
	if len(remove) > 0 {
		update += " REMOVE " + strings.Join(remove, ", ")
	}
	// A backward commit keeps the condition's form (always true), so the cancellation
	// reasons read alike.
	cond := "attribute_not_exists(#no) OR #no <= :o"
	if c.Backward {
		cond = "attribute_not_exists(#no) OR #no <= :o OR #no > :o"
	}
	_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{
			s.ownerWrite(c, member),
			{Update: &types.Update{
				TableName:                 aws.String(s.commits),
				Key:                       gtpKey(c.Group, c.Topic, c.Partition),
				UpdateExpression:          aws.String(update),
				ConditionExpression:       aws.String(cond),
				ExpressionAttributeNames:  names,
				ExpressionAttributeValues: values,
			}},
		},
	})
	return fencedOutcome(op, err, store.ErrStaleCommit)
}

// ownerWrite is the commit's first item: the owner check, or, when the commit renews or
// releases the lease, an update of the assignment on the same condition (a transaction's
// ConditionCheck is billed as a write, so the lease write costs nothing more).
func (s *MetaStore) ownerWrite(c store.CommitRow, member string) types.TransactWriteItem {
	var update string
	names := map[string]string{"#owner": attrOwner, "#gen": attrGeneration}
	values := item{":m": avS(member), ":g": avN(c.Generation)}
	switch {
	case c.ReleaseLease:
		update = "REMOVE #owner"
	case !c.LeaseExpiresAt.IsZero():
		update = "SET #exp = :exp"
		names["#exp"], values[":exp"] = attrLeaseExp, avN(c.LeaseExpiresAt.UnixMilli())
	default:
		return s.ownerCheck(c.Group, c.Topic, c.Partition, member, c.Generation)
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(s.assignments),
		Key:                       gtpKey(c.Group, c.Topic, c.Partition),
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String(ownerAt),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}}
}

// GetCommit reads the commit row.
func (s *MetaStore) GetCommit(ctx context.Context, group, topic string, partition int32) (store.CommitRow, error) {
	op := fmt.Sprintf("get commit %s/%s/%d", group, topic, partition)
	it, err := s.getItem(ctx, op, s.commits, gtpKey(group, topic, partition))
	if err != nil {
		return store.CommitRow{}, err
	}
	if it == nil {
		return store.CommitRow{}, fmt.Errorf("dynamo: %s: %w", op, store.ErrNotFound)
	}
	return decodeCommit(it)
}

// ResetCommits sets the commit rows of the given partitions in a transaction that also
// updates, on condition "no live lease", the assignment row of every partition of the
// group on topic: those that exist (one consistent query finds them) and those being
// reset (a missing row passes the condition and is created, and a concurrent acquire
// fails the transaction). Each of those rows moves to the next generation with no owner,
// so an owner whose lease lapsed is fenced: its renew and commit at the old generation
// fail. A reset of every partition, as the API does, thus cannot miss a lease taken
// meanwhile. The commit rows keep their generation; their metadata is removed.
//
// A transaction holds at most Config.MaxTransactItems (DynamoDB: 100) items, that is 50
// partitions with commit rows. A larger reset runs as consecutive transactions, each
// atomic; a lease taken between two of them fails the later ones with ErrGroupActive
// after the earlier ones were applied. The error says so, and repeating the reset once
// the group is idle completes it (a reset sets offsets absolutely, so it is idempotent).
func (s *MetaStore) ResetCommits(ctx context.Context, group, topic string, offsets map[int32]int64, now time.Time) error {
	op := fmt.Sprintf("reset commits of %s on %s", group, topic)
	rows, err := s.queryAll(ctx, op, &dynamodb.QueryInput{
		TableName:                 aws.String(s.assignments),
		KeyConditionExpression:    aws.String("#gt = :gt"),
		ExpressionAttributeNames:  map[string]string{"#gt": attrGT},
		ExpressionAttributeValues: item{":gt": avS(gtKey(group, topic))},
	}, 0)
	if err != nil {
		return err
	}
	checked := map[int32]bool{}
	for _, it := range rows {
		a, err := decodeAssignment(it)
		if err != nil {
			return err
		}
		if a.Live(now) {
			return fmt.Errorf("dynamo: %s: partition %d leased by %q until %s: %w",
				op, a.Partition, a.Owner, a.ExpiresAt.UTC().Format(time.RFC3339), store.ErrGroupActive)
		}
		checked[a.Partition] = true
	}
	for p := range offsets {
		checked[p] = true
	}
	partitions := slices.Sorted(maps.Keys(checked))

	var chunk []types.TransactWriteItem
	var chunkParts, done []int32
	flush := func() error {
		if len(chunk) == 0 {
			return nil
		}
		_, err := s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: chunk})
		if err != nil {
			err = mapError(op, err)
			if tx := (*txConditionFailed)(nil); errors.As(err, &tx) {
				err = fmt.Errorf("dynamo: %s: a lease of partitions %v was taken: %w", op, chunkParts, store.ErrGroupActive)
			}
			if len(done) > 0 {
				return fmt.Errorf("%w (partially applied: partitions %v were reset; repeat the reset once the group is idle)", err, done)
			}
			return err
		}
		done = append(done, chunkParts...)
		chunk, chunkParts = chunk[:0], chunkParts[:0]
		return nil
	}
	maxItems := s.cfg.maxTransactItems()
	for _, p := range partitions {
		items := []types.TransactWriteItem{{Update: &types.Update{
			TableName:           aws.String(s.assignments),
			Key:                 gtpKey(group, topic, p),
			UpdateExpression:    aws.String("SET #gen = if_not_exists(#gen, :zero) + :one, #group = :group, #topic = :topic REMOVE #owner"),
			ConditionExpression: aws.String(leaseFree),
			ExpressionAttributeNames: map[string]string{
				"#owner": attrOwner, "#exp": attrLeaseExp, "#gen": attrGeneration, "#group": attrGroup, "#topic": attrTopic,
			},
			ExpressionAttributeValues: item{
				":now": avN(now.UnixMilli()), ":zero": avN(0), ":one": avN(1), ":group": avS(group), ":topic": avS(topic),
			},
		}}}
		if off, ok := offsets[p]; ok {
			items = append(items, types.TransactWriteItem{Update: &types.Update{
				TableName: aws.String(s.commits),
				Key:       gtpKey(group, topic, p),
				UpdateExpression: aws.String("SET #no = :o, #ca = :now, #group = :group, #topic = :topic, " +
					"#gen = if_not_exists(#gen, :zero) REMOVE #md, #cr"),
				ExpressionAttributeNames: map[string]string{
					"#no": attrNextOffset, "#ca": "committed_at", "#group": attrGroup, "#topic": attrTopic,
					"#gen": attrGeneration, "#md": "metadata", "#cr": attrCompleted,
				},
				ExpressionAttributeValues: item{
					":o": avN(off), ":now": avN(now.UnixMilli()), ":group": avS(group), ":topic": avS(topic), ":zero": avN(0),
				},
			}})
		}
		if len(chunk)+len(items) > maxItems {
			if err := flush(); err != nil {
				return err
			}
		}
		chunk = append(chunk, items...)
		chunkParts = append(chunkParts, p)
	}
	return flush()
}

// ListAssignments scans the assignments table for the group's rows. The key
// (group#topic, partition) cannot be queried by group alone; the table holds one small
// row per leased partition of every group, so a filtered consistent scan is the honest
// cost (a group-keyed index would be eventually consistent).
func (s *MetaStore) ListAssignments(ctx context.Context, group string) ([]store.Assignment, error) {
	items, err := s.scanGroup(ctx, "list assignments of "+group, s.assignments, group)
	if err != nil {
		return nil, err
	}
	as := make([]store.Assignment, 0, len(items))
	for _, it := range items {
		a, err := decodeAssignment(it)
		if err != nil {
			return nil, err
		}
		as = append(as, a)
	}
	slices.SortFunc(as, func(a, b store.Assignment) int {
		return cmpTopicPartition(a.Topic, a.Partition, b.Topic, b.Partition)
	})
	return as, nil
}

// ListCommits scans the commits table for the group's rows (see ListAssignments).
func (s *MetaStore) ListCommits(ctx context.Context, group string) ([]store.CommitRow, error) {
	items, err := s.scanGroup(ctx, "list commits of "+group, s.commits, group)
	if err != nil {
		return nil, err
	}
	cs := make([]store.CommitRow, 0, len(items))
	for _, it := range items {
		c, err := decodeCommit(it)
		if err != nil {
			return nil, err
		}
		cs = append(cs, c)
	}
	slices.SortFunc(cs, func(a, b store.CommitRow) int {
		return cmpTopicPartition(a.Topic, a.Partition, b.Topic, b.Partition)
	})
	return cs, nil
}

func (s *MetaStore) scanGroup(ctx context.Context, op, table, group string) ([]item, error) {
	return s.scanAll(ctx, op, &dynamodb.ScanInput{
		TableName:                 aws.String(table),
		FilterExpression:          aws.String("#group = :group"),
		ExpressionAttributeNames:  map[string]string{"#group": attrGroup},
		ExpressionAttributeValues: item{":group": avS(group)},
	})
}

func cmpTopicPartition(ta string, pa int32, tb string, pb int32) int {
	if c := strings.Compare(ta, tb); c != 0 {
		return c
	}
	switch {
	case pa < pb:
		return -1
	case pa > pb:
		return 1
	}
	return 0
}
