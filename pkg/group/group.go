// Package group coordinates consumer groups on top of the metadata tables: generation-
// fenced leases of (group, topic, partition), commits of the next offset to read (never
// above the high watermark, never backwards), describe with lag, reset of a topic's
// positions, and a step-driven balancer that spreads partitions over live members.
package group

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// Lease TTL limits of the API contract (docs/API.md): a zero TTL means DefaultTTL.
const (
	DefaultTTL = wire.DefaultLeaseTTL
	MinTTL     = wire.MinLeaseTTL
	MaxTTL     = wire.MaxLeaseTTL
)

// Settings a group gets when its first lease (or reset) creates it.
const (
	DefaultResetPolicy     = "earliest"
	DefaultMaxAttempts     = 5
	DefaultDeadLetterTopic = ""
)

// Store is what the coordinator needs of the metadata tables; store.MetaStore has it.
type Store interface {
	store.LeaseStore
	store.GroupStore
}

// Offsets is what the coordinator needs of the log: partition counts, bounds and the
// time index used for lag and timestamp resets.
type Offsets interface {
	// Partitions returns the partition count of topic; an unknown topic is an error
	// wrapping store.ErrNotFound.
	Partitions(ctx context.Context, topic string) (int32, error)
	// Bounds returns the partition's log start offset and high watermark. Commit passes
	// its caller's topic, which may be a store.TopicRef: one that is not the live
	// incarnation must be an error matching store.ErrFenced (as *log.Log's is).
	Bounds(ctx context.Context, topic string, partition int32) (logStart, highWatermark int64, err error)
	// AppendedAt returns the append time of the record at offset (below the HW).
	AppendedAt(ctx context.Context, topic string, partition int32, offset int64) (time.Time, error)
	// OffsetForTime returns the first offset appended at or after t, else the HW.
	OffsetForTime(ctx context.Context, topic string, partition int32, t time.Time) (int64, error)
	// Topic returns the topic's configuration: its retention and pin cap say how long
	// after its append a record expires (store.Topic.KeptFor). An unknown topic is an
	// error wrapping store.ErrNotFound.
	Topic(ctx context.Context, topic string) (store.Topic, error)
}

// Lease is a member's hold on (group, topic, partition) at a generation.
type Lease struct {
	Group      string
	Topic      string
	Partition  int32
	Member     string
	Generation int64
	ExpiresAt  time.Time
	// Committed is the next offset to read, nil before the group's first commit.
	Committed *int64
	// Completed are the offsets above Committed the last commit said were handled
	// (sorted, disjoint): whoever holds the lease skips them instead of redoing them.
	Completed []store.OffsetRange
	// Incarnation is the topic incarnation the lease was taken on ("" when the store
	// keys leases by name, or for the legacy incarnation).
	Incarnation string
}

// TopicRef names the lease's topic incarnation (store.TopicRef): the holder passes it
// as the topic of its renewals, commits, release, park writes and fenced effects, so
// that each is fenced once the incarnation is deleted, even when the name has a live
// incarnation again, and derives its keys from it (store.RecordKey).
func (l Lease) TopicRef() string { return store.TopicRef(l.Topic, l.Incarnation) }

// Coordinator runs the group operations. Its only state is the set of groups it has
// seen exist, a cache that a delete on another host makes stale: the assignment row a
// lease takes says when its group was deleted (store.Assignment.GroupDeleted), and the
// group is created again then. So any number of Coordinators, in any number of
// processes, may share one store. It is safe for concurrent use.
type Coordinator struct {
	store   Store
	offsets Offsets
	now     func() time.Time
	// lag keeps the lag history when the store has one (store.LagHistoryStore).
	lag store.LagHistoryStore
	// known holds the names of groups known to exist, sparing a read per Acquire.
	known sync.Map
}

// New returns a Coordinator over st and off; clock nil means time.Now. When off also
// resolves topic incarnations (TopicIDs, as *log.Log does), leases and commits are
// kept per incarnation (ByIncarnation).
func New(st Store, off Offsets, clock func() time.Time) *Coordinator {
	if clock == nil {
		clock = time.Now
	}
	lag, _ := st.(store.LagHistoryStore)
	if ids, ok := off.(TopicIDs); ok {
		st = ByIncarnation(st, ids)
	}
	return &Coordinator{store: st, offsets: off, now: clock, lag: lag}
}

// ensureGroup creates the group unless this Coordinator has seen it exist.
func (c *Coordinator) ensureGroup(ctx context.Context, group string, now time.Time) error {
	if _, ok := c.known.Load(group); ok {
		return nil
	}
	if err := createGroupIfAbsent(ctx, c.store, group, now); err != nil {
		return err
	}
	c.known.Store(group, struct{}{})
	return nil
}

// validName reports whether s is a valid topic name (wire.ValidName).
func validName(s string) bool { return wire.ValidName(s) }

// validGroup reports whether s is a valid group id (wire.ValidGroup).
func validGroup(s string) bool { return wire.ValidGroup(s) }

// validMember reports whether s is 1–200 printable ASCII characters.
func validMember(s string) bool {
	if len(s) == 0 || len(s) > 200 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func checkNames(group, topic string, partition int32) error {
	if !validGroup(group) {
		return invalidf("bad group name %q", group)
	}
	if !validName(topic) {
		return invalidf("bad topic name %q", topic)
	}
	if partition < 0 {
		return invalidf("negative partition %d", partition)
	}
	return nil
}

// checkRef is checkNames for the calls of a lease's holder, whose topic may be a
// store.TopicRef naming the lease's incarnation.
func checkRef(group, topic string, partition int32) error {
	name, inc, pinned := store.ParseTopicRef(topic)
	if pinned && !store.ValidIncarnation(inc) {
		return invalidf("bad topic incarnation %q", topic)
	}
	return checkNames(group, name, partition)
}

// topicName is the name a store.TopicRef (or a name) names.
func topicName(topic string) string {
	name, _, _ := store.ParseTopicRef(topic)
	return name
}

func checkMember(member string, generation int64, needGeneration bool) error {
	if !validMember(member) {
		return invalidf("bad member name %q", member)
	}
	if needGeneration && generation < 1 {
		return invalidf("generation %d is not positive", generation)
	}
	return nil
}

func leaseTTL(ttl time.Duration) (time.Duration, error) {
	if ttl == 0 {
		return DefaultTTL, nil
	}
	if ttl < MinTTL || ttl > MaxTTL {
		return 0, invalidf("ttl %s outside [%s, %s]", ttl, MinTTL, MaxTTL)
	}
	return ttl, nil
}

// checkPartition checks that topic exists and has partition.
func (c *Coordinator) checkPartition(ctx context.Context, topic string, partition int32) error {
	n, err := c.offsets.Partitions(ctx, topic)
	if err != nil {
		return fmt.Errorf("group: topic %q: %w", topic, err)
	}
	if partition >= n {
		return invalidf("partition %d outside [0, %d) of topic %q", partition, n, topic)
	}
	return nil
}

// createGroupIfAbsent creates the group with the default settings unless it exists (read
// first: a conditional put that fails still costs a write).
func createGroupIfAbsent(ctx context.Context, st Store, group string, now time.Time) error {
	_, err := st.GetGroup(ctx, group)
	if err == nil {
		return nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("group %q: %w", group, err)
	}
	_, err = st.EnsureGroup(ctx, store.GroupConfig{
		Name:            group,
		ResetPolicy:     DefaultResetPolicy,
		MaxAttempts:     DefaultMaxAttempts,
		DeadLetterTopic: DefaultDeadLetterTopic,
		CreatedAt:       now,
	})
	if err != nil {
		return fmt.Errorf("group: create %q: %w", group, err)
	}
	return nil
}

// committedOffset returns the next offset to read, nil before the first commit, and
// the completed ranges stored with it.
func committedOffset(ctx context.Context, st Store, group, topic string, partition int32) (*int64, []store.OffsetRange, error) {
	row, err := st.GetCommit(ctx, group, topic, partition)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("group: read commit of %s %s/%d: %w", group, topic, partition, err)
	}
	o := row.NextOffset
	return &o, row.Completed, nil
}

func leaseOf(a store.Assignment, committed *int64, completed []store.OffsetRange) Lease {
	return Lease{
		Group:       a.Group,
		Topic:       a.Topic,
		Partition:   a.Partition,
		Member:      a.Owner,
		Generation:  a.Generation,
		ExpiresAt:   a.ExpiresAt,
		Committed:   committed,
		Completed:   completed,
		Incarnation: a.Incarnation,
	}
}

// Acquire takes the lease of (group, topic, partition) for member for ttl when it is
// free, expired or already member's, incrementing the generation (a member re-acquiring
// fences its own earlier incarnation), and creates the group on its first lease. A live
// lease of another member is ErrLeaseHeld (a *LeaseHeldError); a group with live Kafka
// members is ErrKafkaGroup, and nothing is changed.
func (c *Coordinator) Acquire(ctx context.Context, group, topic string, partition int32, member string, ttl time.Duration) (Lease, error) {
	if err := checkNames(group, topic, partition); err != nil {
		return Lease{}, err
	}
	if err := checkMember(member, 0, false); err != nil {
		return Lease{}, err
	}
	ttl, err := leaseTTL(ttl)
	if err != nil {
		return Lease{}, err
	}
	if err := c.checkPartition(ctx, topic, partition); err != nil {
		return Lease{}, err
	}
	now := c.now()
	if err := refuseKafkaGroup(ctx, c.store, group, now); err != nil {
		return Lease{}, err
	}
	if err := c.ensureGroup(ctx, group, now); err != nil {
		return Lease{}, err
	}
	a, err := c.store.AcquireLease(ctx, group, topic, partition, member, now, now.Add(ttl))
	if err != nil {
		return Lease{}, fmt.Errorf("group: acquire %s %s/%d for %q: %w", group, topic, partition, member, err)
	}
	if a.GroupDeleted || a.Generation == 1 {
		// The group was deleted since this Coordinator saw it (the row says so), or this
		// is the row's first lease, which a group deleted before it was ever leased here
		// also looks like: what it remembers may be stale, so the group is made to exist.
		c.known.Delete(group)
		if err := c.ensureGroup(ctx, group, now); err != nil {
			return Lease{}, err
		}
	}
	committed, completed, err := committedOffset(ctx, c.store, group, topic, partition)
	if err != nil {
		return Lease{}, err
	}
	return leaseOf(a, committed, completed), nil
}

// Renew moves the expiry of member's lease at generation to now + ttl; any other owner
// or generation is ErrFenced. An expired lease nobody took over can still be renewed.
// topic may be the lease's TopicRef, as for Release and Commit: then a lease of a
// deleted incarnation is ErrFenced even when the name has a live one again.
func (c *Coordinator) Renew(ctx context.Context, group, topic string, partition int32, member string, generation int64, ttl time.Duration) (Lease, error) {
	if err := checkRef(group, topic, partition); err != nil {
		return Lease{}, err
	}
	if err := checkMember(member, generation, true); err != nil {
		return Lease{}, err
	}
	ttl, err := leaseTTL(ttl)
	if err != nil {
		return Lease{}, err
	}
	now := c.now()
	a, err := c.store.RenewLease(ctx, group, topic, partition, member, generation, now.Add(ttl))
	if err != nil {
		return Lease{}, fmt.Errorf("group: renew %s %s/%d for %q gen %d: %w", group, topic, partition, member, generation, err)
	}
	committed, completed, err := committedOffset(ctx, c.store, group, topic, partition)
	if err != nil {
		return Lease{}, err
	}
	return leaseOf(a, committed, completed), nil
}

// Release frees member's lease at generation (the generation stays); any other owner or
// generation is ErrFenced.
func (c *Coordinator) Release(ctx context.Context, group, topic string, partition int32, member string, generation int64) error {
	if err := checkRef(group, topic, partition); err != nil {
		return err
	}
	if err := checkMember(member, generation, true); err != nil {
		return err
	}
	if err := c.store.ReleaseLease(ctx, group, topic, partition, member, generation); err != nil {
		return fmt.Errorf("group: release %s %s/%d for %q gen %d: %w", group, topic, partition, member, generation, err)
	}
	return nil
}

// Commit stores nextOffset (the next offset to read) as the group's position, only if
// member owns the lease at generation (else ErrFenced) and nextOffset is not below the
// committed one (else ErrStaleCommit; equal is accepted). An offset above the high
// watermark is refused before the store is touched: the HW only grows, so a later
// commit of the same offset may succeed.
//
// completed are the offsets above nextOffset already handled, stored with the commit
// (replacing the last commit's) and returned by the next lease: at most
// wire.MaxCompletedRanges ranges, sorted, disjoint and not touching, above nextOffset
// and up to the high watermark, else ErrInvalid and nothing changes.
func (c *Coordinator) Commit(ctx context.Context, group, topic string, partition int32, member string, generation, nextOffset int64, completed ...store.OffsetRange) error {
	return c.CommitAt(ctx, group, topic, partition, member, generation, nextOffset, CommitOptions{Completed: completed})
}

// Committed returns the group's next offset to read of (topic, partition), nil before
// the first commit.
func (c *Coordinator) Committed(ctx context.Context, group, topic string, partition int32) (*int64, error) {
	if err := checkNames(group, topic, partition); err != nil {
		return nil, err
	}
	o, _, err := committedOffset(ctx, c.store, group, topic, partition)
	return o, err
}

// GroupInfo is the state of a group: its settings and every partition it has leased
// or committed.
type GroupInfo struct {
	Config     store.GroupConfig
	Partitions []PartitionInfo
}

// PartitionInfo is a group's position and lease on one partition.
type PartitionInfo struct {
	Topic     string
	Partition int32
	// Committed is the next offset to read, nil before the first commit.
	Committed      *int64
	LogStartOffset int64
	HighWatermark  int64
	// LagRecords is HW − committed, or HW − log start when nothing is committed.
	LagRecords int64
	// LagTime is how long ago the first unread record was appended; zero without lag.
	LagTime time.Duration
	// DataLoss is how long until the oldest unread record still retained expires and
	// how many expired unread; nil without lag or while that record's time is unknown.
	DataLoss *DataLoss
	// Owner and LeaseExpiresAt are set only while a lease is live.
	Owner          string
	LeaseExpiresAt time.Time
	// Generation is the last lease generation, 0 if never leased.
	Generation int64
	// Metadata is the string the last commit stored with the position (CommitOptions).
	Metadata string
}

// Describe returns the group's settings and, ordered by topic then partition, the
// position, lag and live lease of every partition it has leased or committed. An
// unknown group is ErrNotFound.
func (c *Coordinator) Describe(ctx context.Context, group string) (GroupInfo, error) {
	if !validGroup(group) {
		return GroupInfo{}, invalidf("bad group name %q", group)
	}
	cfg, err := c.store.GetGroup(ctx, group)
	if err != nil {
		return GroupInfo{}, fmt.Errorf("group %q: %w", group, err)
	}
	as, err := c.store.ListAssignments(ctx, group)
	if err != nil {
		return GroupInfo{}, fmt.Errorf("group: list leases of %q: %w", group, err)
	}
	cs, err := c.store.ListCommits(ctx, group)
	if err != nil {
		return GroupInfo{}, fmt.Errorf("group: list commits of %q: %w", group, err)
	}
	type key struct {
		topic     string
		partition int32
	}
	rows := map[key]*PartitionInfo{}
	get := func(topic string, p int32) *PartitionInfo {
		k := key{topic, p}
		if rows[k] == nil {
			rows[k] = &PartitionInfo{Topic: topic, Partition: p}
		}
		return rows[k]
	}
	now := c.now()
	for _, a := range as {
		pi := get(a.Topic, a.Partition)
		pi.Generation = a.Generation
		if a.Live(now) {
			pi.Owner = a.Owner
			pi.LeaseExpiresAt = a.ExpiresAt
		}
	}
	for _, cr := range cs {
		o := cr.NextOffset
		pi := get(cr.Topic, cr.Partition)
		pi.Committed, pi.Metadata = &o, cr.Metadata
	}
	info := GroupInfo{Config: cfg, Partitions: make([]PartitionInfo, 0, len(rows))}
	for _, pi := range rows {
		if err := c.fillLag(ctx, pi, now); err != nil {
			return GroupInfo{}, err
		}
		info.Partitions = append(info.Partitions, *pi)
	}
	sort.Slice(info.Partitions, func(i, j int) bool {
		a, b := info.Partitions[i], info.Partitions[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	return info, nil
}

// fillLag sets the bounds and the lag of pi.
func (c *Coordinator) fillLag(ctx context.Context, pi *PartitionInfo, now time.Time) error {
	start, hw, err := c.offsets.Bounds(ctx, pi.Topic, pi.Partition)
	if err != nil {
		return fmt.Errorf("group: bounds of %s/%d: %w", pi.Topic, pi.Partition, err)
	}
	pi.LogStartOffset, pi.HighWatermark = start, hw
	next := start
	if pi.Committed != nil {
		next = *pi.Committed
	}
	pi.LagRecords = max(hw-next, 0)
	if pi.LagRecords == 0 {
		return nil
	}
	// Records below the log start are gone; the oldest unread one still there is at it.
	// A retention pass may move the log start past it meanwhile: then read the bounds
	// again, once.
	at, err := c.offsets.AppendedAt(ctx, pi.Topic, pi.Partition, max(next, start))
	if errors.Is(err, log.ErrOffsetOutOfRange) {
		if start, hw, err = c.offsets.Bounds(ctx, pi.Topic, pi.Partition); err != nil {
			return fmt.Errorf("group: bounds of %s/%d: %w", pi.Topic, pi.Partition, err)
		}
		pi.LogStartOffset, pi.HighWatermark = start, hw
		pi.LagRecords = max(hw-next, 0)
		if pi.LagRecords == 0 {
			return nil
		}
		at, err = c.offsets.AppendedAt(ctx, pi.Topic, pi.Partition, max(next, start))
	}
	if errors.Is(err, log.ErrOffsetOutOfRange) {
		// Nothing indexed at or after the position yet: lag in seconds unknown (0). A
		// position below the log start has lost records all the same.
		if next < pi.LogStartOffset {
			pi.DataLoss = &DataLoss{RecordsLost: pi.LogStartOffset - next}
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("group: append time of %s/%d@%d: %w", pi.Topic, pi.Partition, max(next, start), err)
	}
	pi.LagTime = max(now.Sub(at), 0)
	t, err := c.offsets.Topic(ctx, pi.Topic)
	if err != nil {
		return fmt.Errorf("group: retention of %s: %w", pi.Topic, err)
	}
	if !t.DeletesByTime() {
		return nil // compact only: no record leaves by age, and every key's latest stays
	}
	// A group with a position on the partition pins its records (up to the cap).
	dl := PlanDataLoss(next, pi.LogStartOffset, at, t.KeptFor(pi.Committed != nil), now)
	pi.DataLoss = &dl
	return nil
}

// ResetTo says where Reset moves a group's positions.
type ResetTo struct {
	kind   resetKind
	offset int64
	at     time.Time
}

type resetKind int

const (
	resetNone resetKind = iota
	resetEarliest
	resetLatest
	resetOffset
	resetTime
)

// ResetEarliest moves every position to its partition's log start offset.
func ResetEarliest() ResetTo { return ResetTo{kind: resetEarliest} }

// ResetLatest moves every position to its partition's high watermark.
func ResetLatest() ResetTo { return ResetTo{kind: resetLatest} }

// ResetOffset moves every position to offset, which must lie within each partition's
// [log start, high watermark].
func ResetOffset(offset int64) ResetTo { return ResetTo{kind: resetOffset, offset: offset} }

// ResetTime moves every position to the first offset appended at or after t, else the
// high watermark.
func ResetTime(t time.Time) ResetTo { return ResetTo{kind: resetTime, at: t} }

func (r ResetTo) String() string {
	switch r.kind {
	case resetEarliest:
		return "earliest"
	case resetLatest:
		return "latest"
	case resetOffset:
		return fmt.Sprintf("offset %d", r.offset)
	case resetTime:
		return "time " + r.at.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	}
	return "none"
}

// PartitionOffset is a partition's position after a reset.
type PartitionOffset struct {
	Partition int32
	Offset    int64
}

// Reset sets the group's committed offset of every partition of topic as to says, all
// at once, creating the group if it does not exist. It is refused with ErrGroupActive
// while any lease of the group on topic is live, and with an *OffsetOutOfRangeError when
// an explicit offset lies outside a partition's bounds; either way nothing changes.
func (c *Coordinator) Reset(ctx context.Context, group, topic string, to ResetTo) ([]PartitionOffset, error) {
	return c.reset(ctx, group, topic, nil, to)
}

// resetOffset computes the target position of one partition.
func (c *Coordinator) resetOffset(ctx context.Context, topic string, p int32, to ResetTo) (int64, error) {
	start, hw, err := c.offsets.Bounds(ctx, topic, p)
	if err != nil {
		return 0, fmt.Errorf("group: bounds of %s/%d: %w", topic, p, err)
	}
	switch to.kind {
	case resetEarliest:
		return start, nil
	case resetLatest:
		return hw, nil
	case resetOffset:
		if to.offset < start || to.offset > hw {
			return 0, &OffsetOutOfRangeError{Topic: topic, Partition: p, Offset: to.offset, LogStartOffset: start, HighWatermark: hw}
		}
		return to.offset, nil
	default:
		o, err := c.offsets.OffsetForTime(ctx, topic, p, to.at)
		if err != nil {
			return 0, fmt.Errorf("group: offset for time in %s/%d: %w", topic, p, err)
		}
		return min(max(o, start), hw), nil
	}
}
