package group

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

// TopicIDs resolves a topic name to the store.TopicID of its live incarnation (*log.Log
// has it); an unknown or deleted name is an error wrapping store.ErrNotFound.
type TopicIDs interface {
	TopicID(ctx context.Context, name string) (string, error)
}

// ByIncarnation returns st with every lease and commit of a topic keyed by the topic's
// live incarnation (its store.TopicID) instead of its name, as Kafka keys by topic ID
// (KIP-516): a group's positions and leases on a deleted topic never carry over to a
// topic created again under the name. A member still holding a lease of the old
// incarnation is fenced on its next renew, release or commit (those of a name with no
// live incarnation too), and the new incarnation starts with no position, so each
// group starts there as its reset policy says. Rows read back carry the topic name;
// rows of incarnations other than the live one are left out. The legacy incarnation's
// ID is the name, so rows written before incarnations keep their meaning.
func ByIncarnation(st Store, ids TopicIDs) Store {
	return &byIncarnation{Store: st, ids: ids}
}

type byIncarnation struct {
	Store
	ids TopicIDs
}

var (
	_ store.LeaseStore      = (*byIncarnation)(nil)
	_ store.GroupAdminStore = (*byIncarnation)(nil)
)

// id resolves topic — a name or a store.TopicRef — to the store key of its live
// incarnation; lost turns a name without a live incarnation into ErrFenced, for the
// calls of a member that held a lease on it. A TopicRef naming an incarnation other
// than the live one (deleted, the name maybe created again since) is ErrFenced: the
// calls of a lease's holder act on the incarnation the lease was taken on, or not at
// all.
func (s *byIncarnation) id(ctx context.Context, topic string, lost bool) (string, error) {
	name, _, pinned := store.ParseTopicRef(topic)
	id, err := s.ids.TopicID(ctx, name)
	if err != nil && (lost || pinned) && errors.Is(err, store.ErrNotFound) {
		// Fenced only (not also not-found): the caller held a lease, and it is lost.
		return "", fmt.Errorf("%w: topic %s has no live incarnation (%v)", store.ErrFenced, name, err)
	}
	if err == nil && pinned && id != topic {
		return "", fmt.Errorf("%w: topic incarnation %s was deleted (the live one is %s)", store.ErrFenced, topic, id)
	}
	return id, err
}

// named gives a row read under id the topic's name and its incarnation.
func named(a store.Assignment, id string) store.Assignment {
	a.Topic, a.Incarnation = store.SplitTopicID(id)
	return a
}

func (s *byIncarnation) AcquireLease(ctx context.Context, group, topic string, partition int32, member string, now, expiresAt time.Time) (store.Assignment, error) {
	id, err := s.id(ctx, topic, false)
	if err != nil {
		return store.Assignment{}, err
	}
	a, err := s.Store.AcquireLease(ctx, group, id, partition, member, now, expiresAt)
	return named(a, id), err
}

func (s *byIncarnation) RenewLease(ctx context.Context, group, topic string, partition int32, member string, generation int64, expiresAt time.Time) (store.Assignment, error) {
	id, err := s.id(ctx, topic, true)
	if err != nil {
		return store.Assignment{}, err
	}
	a, err := s.Store.RenewLease(ctx, group, id, partition, member, generation, expiresAt)
	return named(a, id), err
}

func (s *byIncarnation) ReleaseLease(ctx context.Context, group, topic string, partition int32, member string, generation int64) error {
	id, err := s.id(ctx, topic, true)
	if err != nil {
		return err
	}
	return s.Store.ReleaseLease(ctx, group, id, partition, member, generation)
}

func (s *byIncarnation) GetAssignment(ctx context.Context, group, topic string, partition int32) (store.Assignment, error) {
	id, err := s.id(ctx, topic, false)
	if err != nil {
		return store.Assignment{}, err
	}
	a, err := s.Store.GetAssignment(ctx, group, id, partition)
	return named(a, id), err
}

func (s *byIncarnation) Commit(ctx context.Context, c store.CommitRow, member string) error {
	id, err := s.id(ctx, c.Topic, true)
	if err != nil {
		return err
	}
	c.Topic = id
	return s.Store.Commit(ctx, c, member)
}

func (s *byIncarnation) GetCommit(ctx context.Context, group, topic string, partition int32) (store.CommitRow, error) {
	id, err := s.id(ctx, topic, false)
	if err != nil {
		return store.CommitRow{}, err
	}
	c, err := s.Store.GetCommit(ctx, group, id, partition)
	c.Topic = topicName(topic)
	return c, err
}

func (s *byIncarnation) ResetCommits(ctx context.Context, group, topic string, offsets map[int32]int64, now time.Time) error {
	id, err := s.id(ctx, topic, false)
	if err != nil {
		return err
	}
	return s.Store.ResetCommits(ctx, group, id, offsets, now)
}

// live maps a row's topic ID to its name, ok only for the live incarnation's rows.
func (s *byIncarnation) live(ctx context.Context, cache map[string]string, id string) (string, bool, error) {
	name, _ := store.SplitTopicID(id)
	cur, seen := cache[name]
	if !seen {
		var err error
		cur, err = s.ids.TopicID(ctx, name)
		if errors.Is(err, store.ErrNotFound) {
			cur, err = "", nil
		}
		if err != nil {
			return "", false, err
		}
		cache[name] = cur
	}
	return name, cur == id, nil
}

func (s *byIncarnation) ListAssignments(ctx context.Context, group string) ([]store.Assignment, error) {
	rows, err := s.Store.ListAssignments(ctx, group)
	if err != nil {
		return nil, err
	}
	cache := map[string]string{}
	out := rows[:0]
	for _, a := range rows {
		_, ok, err := s.live(ctx, cache, a.Topic)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, named(a, a.Topic))
		}
	}
	slices.SortStableFunc(out, func(a, b store.Assignment) int { return cmpTP(a.Topic, a.Partition, b.Topic, b.Partition) })
	return out, nil
}

func (s *byIncarnation) ListCommits(ctx context.Context, group string) ([]store.CommitRow, error) {
	rows, err := s.Store.ListCommits(ctx, group)
	if err != nil {
		return nil, err
	}
	cache := map[string]string{}
	out := rows[:0]
	for _, c := range rows {
		name, ok, err := s.live(ctx, cache, c.Topic)
		if err != nil {
			return nil, err
		}
		if ok {
			c.Topic = name
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b store.CommitRow) int { return cmpTP(a.Topic, a.Partition, b.Topic, b.Partition) })
	return out, nil
}

func cmpTP(at string, ap int32, bt string, bp int32) int {
	switch {
	case at < bt:
		return -1
	case at > bt:
		return 1
	case ap < bp:
		return -1
	case ap > bp:
		return 1
	}
	return 0
}

func (s *byIncarnation) admin() (store.GroupAdminStore, error) {
	a, ok := s.Store.(store.GroupAdminStore)
	if !ok {
		return nil, ErrUnsupported
	}
	return a, nil
}

func (s *byIncarnation) PutGroupConfig(ctx context.Context, cfg store.GroupConfig) (store.GroupConfig, error) {
	a, err := s.admin()
	if err != nil {
		return store.GroupConfig{}, err
	}
	return a.PutGroupConfig(ctx, cfg)
}

func (s *byIncarnation) ListGroups(ctx context.Context) ([]string, error) {
	a, err := s.admin()
	if err != nil {
		return nil, err
	}
	return a.ListGroups(ctx)
}

func (s *byIncarnation) DeleteCommits(ctx context.Context, group, topic string, now time.Time) error {
	a, err := s.admin()
	if err != nil {
		return err
	}
	id, err := s.id(ctx, topic, false)
	if err != nil {
		return err
	}
	return a.DeleteCommits(ctx, group, id, now)
}

// TopicsOf resolves names through the topics table itself (one read per call), for a
// Balancer that talks to the store directly, as a fleet of consumers may:
// ByIncarnation(st, TopicsOf(st)) keys its leases as the Coordinator does.
func TopicsOf(ts store.TopicStore) TopicIDs { return topicsOf{ts} }

type topicsOf struct{ ts store.TopicStore }

func (t topicsOf) TopicID(ctx context.Context, name string) (string, error) {
	tp, err := t.ts.GetTopic(ctx, name)
	if err != nil {
		return "", err
	}
	return tp.ID(), nil
}

// DeleteGroup is group-wide: every incarnation's rows of the group go.
func (s *byIncarnation) DeleteGroup(ctx context.Context, group string, now time.Time) error {
	a, err := s.admin()
	if err != nil {
		return err
	}
	return a.DeleteGroup(ctx, group, now)
}

var _ store.ParkStore = (*byIncarnation)(nil)

func (s *byIncarnation) parks() (store.ParkStore, error) {
	p, ok := s.Store.(store.ParkStore)
	if !ok {
		return nil, fmt.Errorf("%w: the store keeps no parked keys", ErrUnsupported)
	}
	return p, nil
}

func (s *byIncarnation) PutParked(ctx context.Context, p store.ParkedKey, member string, generation int64) error {
	ps, err := s.parks()
	if err != nil {
		return err
	}
	if p.Topic, err = s.id(ctx, p.Topic, true); err != nil {
		return err
	}
	return ps.PutParked(ctx, p, member, generation)
}

func (s *byIncarnation) DeleteParked(ctx context.Context, group, topic string, partition int32, key []byte, member string, generation int64) error {
	ps, err := s.parks()
	if err != nil {
		return err
	}
	id, err := s.id(ctx, topic, true)
	if err != nil {
		return err
	}
	return ps.DeleteParked(ctx, group, id, partition, key, member, generation)
}

func (s *byIncarnation) RequestRelease(ctx context.Context, group, topic string, partition int32, key []byte, at time.Time) (store.ParkedKey, error) {
	ps, err := s.parks()
	if err != nil {
		return store.ParkedKey{}, err
	}
	id, err := s.id(ctx, topic, false)
	if err != nil {
		return store.ParkedKey{}, err
	}
	p, err := ps.RequestRelease(ctx, group, id, partition, key, at)
	p.Topic = topicName(topic)
	return p, err
}

func (s *byIncarnation) ListParked(ctx context.Context, group string) ([]store.ParkedKey, error) {
	ps, err := s.parks()
	if err != nil {
		return nil, err
	}
	rows, err := ps.ListParked(ctx, group)
	if err != nil {
		return nil, err
	}
	return s.liveParked(ctx, rows)
}

func (s *byIncarnation) ListParkedPartition(ctx context.Context, group, topic string, partition int32) ([]store.ParkedKey, error) {
	ps, err := s.parks()
	if err != nil {
		return nil, err
	}
	id, err := s.id(ctx, topic, false)
	if err != nil {
		return nil, err
	}
	rows, err := ps.ListParkedPartition(ctx, group, id, partition)
	if err != nil {
		return nil, err
	}
	for i := range rows {
		rows[i].Topic = topicName(topic)
	}
	return rows, nil
}

// liveParked keeps the rows of live incarnations, under the topic's name, in order.
func (s *byIncarnation) liveParked(ctx context.Context, rows []store.ParkedKey) ([]store.ParkedKey, error) {
	cache := map[string]string{}
	out := rows[:0]
	for _, p := range rows {
		name, ok, err := s.live(ctx, cache, p.Topic)
		if err != nil {
			return nil, err
		}
		if ok {
			p.Topic = name
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, func(a, b store.ParkedKey) int {
		if c := cmpTP(a.Topic, a.Partition, b.Topic, b.Partition); c != 0 {
			return c
		}
		return bytes.Compare(a.Key, b.Key)
	})
	return out, nil
}
