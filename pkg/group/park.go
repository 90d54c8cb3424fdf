package group

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// Failure policies of Settings.OnFailure.
const (
	OnFailureDeadLetter = wire.OnFailureDeadLetter
	OnFailurePark       = wire.OnFailurePark
	DefaultOnFailure    = OnFailureDeadLetter
)

// Parked is a key a group parked on one partition (store.ParkedKey).
type Parked = store.ParkedKey

// TopicCreator creates a topic (*log.Log has it); SetSettings uses it to create a
// parking group's parking topic. MaxRetention is the deployment's maximum retention (0:
// none), the retention a parking topic gets.
type TopicCreator interface {
	CreateTopic(ctx context.Context, name string, partitions int32, retention time.Duration) (store.Topic, error)
	MaxRetention() time.Duration
}

// DefaultParkingRetention is a parking topic's retention in a deployment without a
// maximum retention: 7 days, the stack's default maximum.
const DefaultParkingRetention = 7 * 24 * time.Hour

// ParkingRetention is the retention a parking topic is created with: the deployment's
// maximum retention (maxRetention, 0 for none), else DefaultParkingRetention. A parking
// topic holds records of every topic the group consumes until their key is released,
// so it keeps them at least as long as any source may keep its own (every retention is
// within the maximum); the records a release finds taken all the same are counted lost.
func ParkingRetention(maxRetention time.Duration) time.Duration {
	if maxRetention > 0 {
		return maxRetention
	}
	return DefaultParkingRetention
}

func (c *Coordinator) parks() (store.ParkStore, error) {
	p, ok := c.store.(store.ParkStore)
	if !ok {
		return nil, fmt.Errorf("%w: the store keeps no parked keys", ErrUnsupported)
	}
	return p, nil
}

// ensureParkingTopic creates group's parking topic unless it exists; with create false a
// missing one is ErrParkingTopicMissing.
func (c *Coordinator) ensureParkingTopic(ctx context.Context, group string, create bool) error {
	name := wire.ParkingTopic(group)
	_, err := c.offsets.Partitions(ctx, name)
	if err == nil {
		return nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("group: parking topic %q: %w", name, err)
	}
	if !create {
		return fmt.Errorf("%w: %q", ErrParkingTopicMissing, name)
	}
	tc, ok := c.offsets.(TopicCreator)
	if !ok {
		return invalidf("parking topic %q does not exist (create it first)", name)
	}
	if _, err := tc.CreateTopic(ctx, name, 0, ParkingRetention(tc.MaxRetention())); err != nil {
		if _, again := c.offsets.Partitions(ctx, name); again == nil {
			return nil // created meanwhile
		}
		return fmt.Errorf("group: create parking topic %q: %w", name, err)
	}
	return nil
}

// PartitionKey names one partition of a topic.
type PartitionKey struct {
	Topic     string
	Partition int32
}

// CountParked counts parked rows per partition. Describe leaves parked keys out, so
// what describes groups without reading the parked rows (dispatch's sweep, retention's
// lag sample) needs no access to them; the API and the metrics count ListParked's rows.
func CountParked(rows []Parked) map[PartitionKey]int64 {
	out := make(map[PartitionKey]int64, len(rows))
	for _, p := range rows {
		out[PartitionKey{p.Topic, p.Partition}]++
	}
	return out
}

// ListParked returns every key the group parked, ordered by topic, partition and key.
func (c *Coordinator) ListParked(ctx context.Context, group string) ([]Parked, error) {
	if !validGroup(group) {
		return nil, invalidf("bad group name %q", group)
	}
	ps, err := c.parks()
	if err != nil {
		return nil, err
	}
	if _, err := c.store.GetGroup(ctx, group); err != nil {
		return nil, fmt.Errorf("group: %q: %w", group, err)
	}
	rows, err := ps.ListParked(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("group: parked keys of %q: %w", group, err)
	}
	return rows, nil
}

// ParkedOf returns the keys the group parked on one partition; a consumer reads them
// when its run starts and as it renews.
func (c *Coordinator) ParkedOf(ctx context.Context, group, topic string, partition int32) ([]Parked, error) {
	if err := checkRef(group, topic, partition); err != nil {
		return nil, err
	}
	ps, err := c.parks()
	if err != nil {
		return nil, err
	}
	rows, err := ps.ListParkedPartition(ctx, group, topic, partition)
	if err != nil {
		return nil, fmt.Errorf("group: parked keys of %s on %s/%d: %w", group, topic, partition, err)
	}
	return rows, nil
}

// PutParked stores p for the partition's owner, fenced by its generation (ErrFenced).
func (c *Coordinator) PutParked(ctx context.Context, p Parked, member string, generation int64) error {
	if err := checkRef(p.Group, p.Topic, p.Partition); err != nil {
		return err
	}
	if err := checkMember(member, generation, true); err != nil {
		return err
	}
	if len(p.Key) > wire.MaxParkedKey {
		return invalidf("parked key of %d bytes, at most %d", len(p.Key), wire.MaxParkedKey)
	}
	ps, err := c.parks()
	if err != nil {
		return err
	}
	if err := ps.PutParked(ctx, p, member, generation); err != nil {
		return fmt.Errorf("group: park a key of %s on %s/%d: %w", p.Group, p.Topic, p.Partition, err)
	}
	return nil
}

// Unpark deletes a parked key for the partition's owner once it replayed the key's
// parked records, fenced by its generation.
func (c *Coordinator) Unpark(ctx context.Context, group, topic string, partition int32, key []byte, member string, generation int64) error {
	if err := checkRef(group, topic, partition); err != nil {
		return err
	}
	if err := checkMember(member, generation, true); err != nil {
		return err
	}
	ps, err := c.parks()
	if err != nil {
		return err
	}
	if err := ps.DeleteParked(ctx, group, topic, partition, key, member, generation); err != nil {
		return fmt.Errorf("group: unpark a key of %s on %s/%d: %w", group, topic, partition, err)
	}
	return nil
}

// ReleaseParked asks for key to be released on every partition of topic where the
// group parked it, and returns those rows. The partition's owner replays the key's
// parked records in order before any newer record of the key, then unparks it (a
// partition with no owner does so on its next run). A key not parked is ErrNotFound.
func (c *Coordinator) ReleaseParked(ctx context.Context, group, topic string, key []byte) ([]Parked, error) {
	if err := checkNames(group, topic, 0); err != nil {
		return nil, err
	}
	rows, err := c.ListParked(ctx, group)
	if err != nil {
		return nil, err
	}
	ps, err := c.parks()
	if err != nil {
		return nil, err
	}
	now := c.now()
	var out []Parked
	for _, p := range rows {
		if p.Topic != topic || !bytes.Equal(p.Key, key) {
			continue
		}
		got, err := ps.RequestRelease(ctx, group, topic, p.Partition, key, now)
		if errors.Is(err, store.ErrNotFound) {
			continue // unparked meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("group: release a key of %s on %s/%d: %w", group, topic, p.Partition, err)
		}
		out = append(out, got)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("group: key %q of %s on %s is not parked: %w", key, group, topic, ErrNotFound)
	}
	return out, nil
}
