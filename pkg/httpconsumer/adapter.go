// Package httpconsumer runs pkg/consumer over Strata's HTTP API. NewGroupConsumer is
// the one call for a consumer group member (as franz-go's kgo.ConsumerGroup): handler,
// options, rebalance callbacks, Stats, Run(ctx). Beneath it, ConsumerAdapter is the
// consumer's log and coordinator, MemberBalancer its balancer for members that share a
// topic across processes. It lives beside pkg/consumer, not in the SDK, so pkg/client
// stays free of server packages.
package httpconsumer

import (
	"context"
	"errors"
	"fmt"
	"github.com/stratalog/strata/pkg/client"
	"time"

	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/segment"
	"github.com/stratalog/strata/pkg/store"
)

// ConsumerAdapter runs pkg/consumer over HTTP: it implements consumer.Log (Poll,
// Append, Bounds), consumer.Coordinator (Acquire, Renew, Release, Commit, GetSettings)
// and consumer.ParkCoordinator (ParkedOf, PutParked, Unpark: the member-side parked-row
// routes, fenced as a commit) with a client.Client, and turns the contract's error codes
// back into the sentinels pkg/consumer branches on (group.ErrFenced, group.ErrLeaseHeld
// as a *group.LeaseHeldError, log.ErrOffsetOutOfRange as a *log.OffsetOutOfRangeError,
// log.ErrUnavailable). The Client's own sentinels and *client.APIError stay reachable
// with errors.Is and errors.As.
//
// The ExpiresAt of the leases Acquire and Renew return is a local deadline, not the
// server's expiry: this process's clock read just before the request was sent, plus the
// TTL. The server's expiry is later by at least the request's transit, so the deadline
// is safe, and it never mixes the two machines' clocks: a client clock ahead of the
// server's does not make every lease look expired, nor one behind make a lapsed lease
// look live.
type ConsumerAdapter struct {
	c   *client.Client
	now func() time.Time
}

// AdapterOption configures a ConsumerAdapter.
type AdapterOption func(*ConsumerAdapter)

// WithAdapterClock sets the clock lease deadlines are measured on (default time.Now,
// whose readings carry the monotonic clock). Give pkg/consumer the same clock.
func WithAdapterClock(now func() time.Time) AdapterOption {
	return func(a *ConsumerAdapter) {
		if now != nil {
			a.now = now
		}
	}
}

// NewConsumerAdapter returns the adapter over c.
func NewConsumerAdapter(c *client.Client, opts ...AdapterOption) *ConsumerAdapter {
	a := &ConsumerAdapter{c: c, now: time.Now}
	for _, o := range opts {
		o(a)
	}
	return a
}

// deadline is the local lease deadline of a request sent at sent for ttl (zero: the
// contract's default).
func deadline(sent time.Time, ttl time.Duration) time.Time {
	if ttl == 0 {
		ttl = group.DefaultTTL
	}
	return sent.Add(ttl)
}

// Poll implements consumer.Log. A wait above the contract's 20 s is cut to 20 s.
func (a *ConsumerAdapter) Poll(ctx context.Context, topic string, partition int32, offset int64, opt log.PollOptions) (log.PollResult, error) {
	res, err := a.c.Poll(ctx, topic, partition, offset, client.PollOptions{
		MaxRecords: opt.MaxRecords, MaxBytes: opt.MaxBytes, Wait: min(opt.Wait, log.MaxPollWait)})
	if err != nil {
		return log.PollResult{}, a.logError(ctx, topic, partition, offset, err)
	}
	out := log.PollResult{NextOffset: res.NextOffset, HighWatermark: res.HighWatermark, LogStartOffset: res.LogStartOffset,
		Records: make([]segment.Record, len(res.Records))}
	for i, r := range res.Records {
		out.Records[i] = toSegmentRecord(r)
	}
	return out, nil
}

// Append implements consumer.Log. Headers are kept in order, repeated names and null
// values included (the contract's list form), and a nil value stays a tombstone. A
// partial failure is a *log.AppendError holding every record's outcome.
func (a *ConsumerAdapter) Append(ctx context.Context, topic string, recs []log.Record, opt log.AppendOptions) ([]log.Result, error) {
	in := make([]client.Record, len(recs))
	for i, r := range recs {
		in[i] = client.Record{Key: r.Key, Value: r.Value, Partition: r.Partition}
		if r.Timestamp != nil {
			in[i].Timestamp = time.UnixMilli(*r.Timestamp)
		}
		in[i].HeaderList = r.Headers
	}
	res, err := a.c.Append(ctx, topic, in, client.AppendOptions{IdempotencyKey: opt.IdempotencyKey})
	if err != nil && len(res) != len(recs) {
		return nil, a.logError(ctx, topic, 0, 0, err)
	}
	out := make([]log.Result, len(res))
	for i, r := range res {
		out[i] = log.Result{Partition: r.Partition, Offset: r.Offset}
		if r.Err != nil {
			out[i].Err = a.logError(ctx, topic, r.Partition, 0, r.Err)
		}
	}
	if err != nil {
		return nil, &log.AppendError{Results: out, Err: a.logError(ctx, topic, 0, 0, err)}
	}
	return out, nil
}

// Bounds implements consumer.Log by describing the topic. Of a store.TopicRef it
// describes the name's live incarnation (a description names none): the run's polls and
// commits that follow are what is fenced once its incarnation is deleted.
func (a *ConsumerAdapter) Bounds(ctx context.Context, topic string, partition int32) (logStart, highWatermark int64, err error) {
	topic, _, _ = store.ParseTopicRef(topic)
	t, err := a.c.DescribeTopic(ctx, topic)
	if err != nil {
		return 0, 0, a.logError(ctx, topic, partition, 0, err)
	}
	for _, p := range t.PartitionInfo {
		if p.Partition == partition {
			return p.LogStartOffset, p.HighWatermark, nil
		}
	}
	return 0, 0, fmt.Errorf("%w: partition %d of %q (%d partitions)", log.ErrInvalid, partition, topic, t.Partitions)
}

// Acquire implements consumer.Coordinator; ExpiresAt is the local deadline, and the
// lease names the topic incarnation the server answered, so that its holder's calls
// (which pass Lease.TopicRef as their topic) are fenced once that incarnation is
// deleted, and its dead-letter and parking keys carry it.
func (a *ConsumerAdapter) Acquire(ctx context.Context, grp, topic string, partition int32, member string, ttl time.Duration) (group.Lease, error) {
	sent := a.now()
	l, err := a.c.Lease(ctx, grp, topic, partition, member, ttl)
	if err != nil {
		return group.Lease{}, groupError(err)
	}
	return group.Lease{Group: grp, Topic: topic, Partition: partition, Member: member,
		Generation: l.Generation, ExpiresAt: deadline(sent, ttl), Committed: l.CommittedOffset,
		Completed: group.FromWire(l.Completed), Incarnation: l.Incarnation}, nil
}

// Renew implements consumer.Coordinator; ExpiresAt is the local deadline. topic is
// the lease's TopicRef (or a name, for the live incarnation).
func (a *ConsumerAdapter) Renew(ctx context.Context, grp, topic string, partition int32, member string, generation int64, ttl time.Duration) (group.Lease, error) {
	sent := a.now()
	l, err := a.c.RenewLease(ctx, grp, topic, partition, member, generation, ttl)
	if err != nil {
		return group.Lease{}, groupError(err)
	}
	name, inc, _ := store.ParseTopicRef(topic)
	if l.Incarnation != "" {
		inc = l.Incarnation
	}
	return group.Lease{Group: grp, Topic: name, Partition: partition, Member: member,
		Generation: l.Generation, ExpiresAt: deadline(sent, ttl), Committed: l.CommittedOffset,
		Completed: group.FromWire(l.Completed), Incarnation: inc}, nil
}

// Release implements consumer.Coordinator.
func (a *ConsumerAdapter) Release(ctx context.Context, grp, topic string, partition int32, member string, generation int64) error {
	if err := a.c.Release(ctx, grp, topic, partition, member, generation); err != nil {
		return groupError(err)
	}
	return nil
}

// GetSettings implements consumer.Coordinator: the group's stored settings
// (group.ErrNotFound for an unknown group).
func (a *ConsumerAdapter) GetSettings(ctx context.Context, grp string) (group.Settings, error) {
	s, err := a.c.GroupSettings(ctx, grp)
	if err != nil {
		return group.Settings{}, groupError(err)
	}
	return group.Settings{ResetPolicy: s.ResetPolicy, MaxAttempts: s.MaxAttempts, DeadLetterTopic: s.DeadLetterTopic,
		OnFailure: s.OnFailure, CreatedAt: s.CreatedAt}, nil
}

// Commit implements consumer.Coordinator.
func (a *ConsumerAdapter) Commit(ctx context.Context, grp, topic string, partition int32, member string, generation, nextOffset int64, completed ...store.OffsetRange) error {
	if _, err := a.c.Commit(ctx, grp, topic, partition, member, generation, nextOffset, group.ToWire(completed)...); err != nil {
		err = groupError(err)
		var beyond *group.BeyondHighWatermarkError
		if errors.As(err, &beyond) {
			beyond.Partition, beyond.Offset = partition, nextOffset
			beyond.Topic, _, _ = store.ParseTopicRef(topic)
		}
		return err
	}
	return nil
}

// ParkedOf implements consumer.ParkCoordinator: the partition's parked rows, read
// through the member-side route GET .../partitions/{p}/parked.
func (a *ConsumerAdapter) ParkedOf(ctx context.Context, grp, topic string, partition int32) ([]group.Parked, error) {
	rows, err := a.c.PartitionParked(ctx, grp, topic, partition)
	if err != nil {
		return nil, groupError(err)
	}
	topic, _, _ = store.ParseTopicRef(topic)
	out := make([]group.Parked, len(rows))
	for i, r := range rows {
		out[i] = group.Parked{Group: grp, Topic: topic, Partition: partition, Key: r.Key, FirstOffset: r.FirstOffset,
			LastOffset: r.LastOffset, Records: r.Records, Error: r.Error, Attempts: r.Attempts, ParkedAt: r.ParkedAt,
			ParkPartition: r.ParkPartition, ParkOffset: r.ParkOffset, ReleaseRequested: r.ReleaseRequested}
	}
	return out, nil
}

// PutParked implements consumer.ParkCoordinator with PUT .../partitions/{p}/parked,
// fenced by the lease's generation as a commit is (group.ErrFenced).
func (a *ConsumerAdapter) PutParked(ctx context.Context, p group.Parked, member string, generation int64) error {
	row := client.ParkedRow{Key: p.Key, FirstOffset: p.FirstOffset, LastOffset: p.LastOffset, Records: p.Records, Error: p.Error,
		Attempts: p.Attempts, ParkedAt: p.ParkedAt, ParkPartition: p.ParkPartition, ParkOffset: p.ParkOffset}
	if err := a.c.PutParked(ctx, p.Group, p.Topic, p.Partition, member, generation, row); err != nil {
		return groupError(err)
	}
	return nil
}

// Unpark implements consumer.ParkCoordinator with POST .../partitions/{p}/parked/unpark,
// fenced as PutParked.
func (a *ConsumerAdapter) Unpark(ctx context.Context, grp, topic string, partition int32, key []byte, member string, generation int64) error {
	if err := a.c.Unpark(ctx, grp, topic, partition, member, generation, key); err != nil {
		return groupError(err)
	}
	return nil
}

// toSegmentRecord converts a polled record, its headers in order and a tombstone's
// value nil.
func toSegmentRecord(r client.PolledRecord) segment.Record {
	return segment.Record{Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli(), Key: r.Key, Value: r.Value, Headers: r.HeaderList}
}

// logError maps a client.Client error of a log call to pkg/log's sentinels. An
// offset_out_of_range answer becomes a *log.OffsetOutOfRangeError with both bounds (read
// from the answer, or by describing the topic if the answer lacks them).
func (a *ConsumerAdapter) logError(ctx context.Context, topic string, partition int32, offset int64, err error) error {
	var apiErr *client.APIError
	switch {
	case errors.Is(err, client.ErrOffsetOutOfRange):
		oor := &log.OffsetOutOfRangeError{Offset: offset}
		start, okS := int64(0), false
		hw, okH := int64(0), false
		if errors.As(err, &apiErr) {
			start, okS = apiErr.LogStartOffset()
			hw, okH = apiErr.HighWatermark()
		}
		if !okS || !okH {
			var berr error
			if start, hw, berr = a.Bounds(ctx, topic, partition); berr != nil {
				return fmt.Errorf("%w (bounds unknown: %w): %w", log.ErrUnavailable, berr, err)
			}
		}
		oor.LogStartOffset, oor.HighWatermark = start, hw
		return fmt.Errorf("%w: %w", oor, err)
	case errors.Is(err, client.ErrFenced):
		// A poll of a lease's incarnation deleted since, as *log.Log says it.
		return fmt.Errorf("%w: %w: %w", log.ErrTopicNotFound, group.ErrFenced, err)
	case errors.Is(err, client.ErrNotFound):
		return fmt.Errorf("%w: %w", log.ErrTopicNotFound, err)
	case errors.Is(err, client.ErrInvalid):
		return fmt.Errorf("%w: %w", log.ErrInvalid, err)
	case errors.Is(err, client.ErrPayloadTooLarge):
		return fmt.Errorf("%w: %w", log.ErrTooLarge, err)
	case errors.Is(err, client.ErrIdempotencyKeyReused):
		return fmt.Errorf("%w: %w", log.ErrIdempotencyKeyReused, err)
	case errors.Is(err, client.ErrInternal):
		return fmt.Errorf("%w: %w", log.ErrCorrupt, err)
	case client.IsRetryable(err) && ctx.Err() == nil:
		return fmt.Errorf("%w: %w", log.ErrUnavailable, err)
	}
	return err
}

// groupError maps a client.Client error of a coordinator call to pkg/group's sentinels.
func groupError(err error) error {
	var apiErr *client.APIError
	switch {
	case errors.Is(err, client.ErrFenced):
		return fmt.Errorf("%w: %w", group.ErrFenced, err)
	case errors.Is(err, client.ErrLeaseHeld):
		held := &group.LeaseHeldError{}
		if errors.As(err, &apiErr) {
			held.Owner, _ = apiErr.Owner()
			held.ExpiresAt, _ = apiErr.LeaseExpiresAt()
		}
		return fmt.Errorf("%w: %w", held, err)
	case errors.Is(err, client.ErrStaleCommit):
		return fmt.Errorf("%w: %w", group.ErrStaleCommit, err)
	case errors.Is(err, client.ErrGroupActive):
		return fmt.Errorf("%w: %w", group.ErrGroupActive, err)
	case errors.Is(err, client.ErrBeyondHighWatermark):
		beyond := &group.BeyondHighWatermarkError{}
		if errors.As(err, &apiErr) {
			beyond.HighWatermark, _ = apiErr.HighWatermark()
		}
		return fmt.Errorf("%w: %w", beyond, err)
	case errors.Is(err, client.ErrNotFound):
		return fmt.Errorf("%w: %w", group.ErrNotFound, err)
	case errors.Is(err, client.ErrInvalid):
		return fmt.Errorf("%w: %w", group.ErrInvalid, err)
	case client.IsRetryable(err):
		return fmt.Errorf("%w: %w", group.ErrUnavailable, err)
	}
	return err
}
