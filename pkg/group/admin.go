package group

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// Settings are a group's consumer settings, kept in the store so every member (and
// `strata consume`) applies the same ones instead of carrying its own.
type Settings struct {
	// ResetPolicy says where a member starts without a usable position: "earliest",
	// "latest" or "fail".
	ResetPolicy string
	// MaxAttempts is how many times a record is handled before it is dead-lettered
	// (1–100).
	MaxAttempts int
	// DeadLetterTopic receives records that failed MaxAttempts times; "" drops them.
	DeadLetterTopic string
	// OnFailure is what such a record does: OnFailureDeadLetter (the default; also an
	// old row's empty value) or OnFailurePark (park its key in "<group>.parked").
	OnFailure string
	CreatedAt time.Time
	// ParkingTopicMustExist, an input of SetSettings only (never stored), makes a park
	// setting refuse a missing parking topic (ErrParkingTopicMissing) instead of
	// creating it: what a caller without the right to create topics asks for.
	ParkingTopicMustExist bool
}

// ErrParkingTopicMissing: SetSettings was asked not to create the parking topic, and it
// does not exist.
var ErrParkingTopicMissing = errors.New("group: the parking topic does not exist")

// MaxMaxAttempts bounds Settings.MaxAttempts.
const MaxMaxAttempts = 100

// ErrUnsupported: the store does not implement store.GroupAdminStore.
var ErrUnsupported = errors.New("group: the store cannot administer groups")

func (c *Coordinator) admin() (store.GroupAdminStore, error) {
	a, ok := c.store.(store.GroupAdminStore)
	if !ok {
		return nil, ErrUnsupported
	}
	return a, nil
}

func settingsOf(g store.GroupConfig) Settings {
	of := g.OnFailure
	if of == "" {
		of = DefaultOnFailure
	}
	return Settings{ResetPolicy: g.ResetPolicy, MaxAttempts: g.MaxAttempts, DeadLetterTopic: g.DeadLetterTopic, OnFailure: of, CreatedAt: g.CreatedAt}
}

// GetSettings returns the group's settings; ErrNotFound for an unknown group.
func (c *Coordinator) GetSettings(ctx context.Context, group string) (Settings, error) {
	if !validGroup(group) {
		return Settings{}, invalidf("bad group name %q", group)
	}
	g, err := c.store.GetGroup(ctx, group)
	if err != nil {
		return Settings{}, fmt.Errorf("group: %q: %w", group, err)
	}
	return settingsOf(g), nil
}

// SetSettings stores s as the group's settings, creating the group when absent. The
// dead-letter topic, when set, must exist. OnFailure empty means OnFailureDeadLetter;
// OnFailurePark creates the group's parking topic ("<group>.parked") when absent.
func (c *Coordinator) SetSettings(ctx context.Context, group string, s Settings) (Settings, error) {
	if !validGroup(group) {
		return Settings{}, invalidf("bad group name %q", group)
	}
	switch s.ResetPolicy {
	case "earliest", "latest", "fail":
	default:
		return Settings{}, invalidf("reset policy must be earliest, latest or fail, got %q", s.ResetPolicy)
	}
	if s.MaxAttempts < 1 || s.MaxAttempts > MaxMaxAttempts {
		return Settings{}, invalidf("max attempts must be 1–%d, got %d", MaxMaxAttempts, s.MaxAttempts)
	}
	if s.DeadLetterTopic != "" {
		if !validName(s.DeadLetterTopic) {
			return Settings{}, invalidf("bad dead-letter topic name %q", s.DeadLetterTopic)
		}
		if _, err := c.offsets.Partitions(ctx, s.DeadLetterTopic); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return Settings{}, invalidf("dead-letter topic %q does not exist", s.DeadLetterTopic)
			}
			return Settings{}, fmt.Errorf("group: dead-letter topic %q: %w", s.DeadLetterTopic, err)
		}
	}
	switch s.OnFailure {
	case "":
		s.OnFailure = DefaultOnFailure
	case OnFailureDeadLetter:
	case OnFailurePark:
		if len(group) > wire.MaxParkingGroupName || !validName(wire.ParkingTopic(group)) {
			return Settings{}, invalidf("a group that parks has a name of at most %d letters, digits, '.', '_' and '-' (its parking topic %q must be a topic name)",
				wire.MaxParkingGroupName, wire.ParkingTopic(group))
		}
		if _, err := c.parks(); err != nil {
			return Settings{}, err
		}
		if err := c.ensureParkingTopic(ctx, group, !s.ParkingTopicMustExist); err != nil {
			return Settings{}, err
		}
	default:
		return Settings{}, invalidf("on failure must be %s or %s, got %q", OnFailureDeadLetter, OnFailurePark, s.OnFailure)
	}
	a, err := c.admin()
	if err != nil {
		return Settings{}, err
	}
	g, err := a.PutGroupConfig(ctx, store.GroupConfig{Name: group, ResetPolicy: s.ResetPolicy, MaxAttempts: s.MaxAttempts,
		DeadLetterTopic: s.DeadLetterTopic, OnFailure: s.OnFailure, CreatedAt: c.now()})
	if err != nil {
		return Settings{}, fmt.Errorf("group: set settings of %q: %w", group, err)
	}
	c.known.Store(group, struct{}{})
	return settingsOf(g), nil
}

// ListGroups returns every group's name in lexical order.
func (c *Coordinator) ListGroups(ctx context.Context) ([]string, error) {
	a, err := c.admin()
	if err != nil {
		return nil, err
	}
	names, err := a.ListGroups(ctx)
	if err != nil {
		return nil, fmt.Errorf("group: list groups: %w", err)
	}
	return names, nil
}

// DeletePositions drops the group's committed positions on topic (the group then
// starts there as its reset policy says), fencing every earlier lease. It is refused
// with ErrGroupActive while any lease of the group on topic is live.
func (c *Coordinator) DeletePositions(ctx context.Context, group, topic string) error {
	if err := checkNames(group, topic, 0); err != nil {
		return err
	}
	a, err := c.admin()
	if err != nil {
		return err
	}
	if _, err := c.store.GetGroup(ctx, group); err != nil {
		return fmt.Errorf("group: %q: %w", group, err)
	}
	if err := a.DeleteCommits(ctx, group, topic, c.now()); err != nil {
		return fmt.Errorf("group: delete positions of %s on %q: %w", group, topic, err)
	}
	return nil
}

// DeleteGroup removes the group: its settings, members and committed positions on every
// topic, fencing every earlier lease (docs/API.md, "Deleting a group"). It is refused
// with ErrGroupActive while any lease of the group is live or any member heartbeats,
// and is ErrNotFound for an unknown group.
func (c *Coordinator) DeleteGroup(ctx context.Context, group string) error {
	if !validGroup(group) {
		return invalidf("bad group name %q", group)
	}
	a, err := c.admin()
	if err != nil {
		return err
	}
	c.known.Delete(group)
	if err := a.DeleteGroup(ctx, group, c.now()); err != nil {
		return fmt.Errorf("group: delete %q: %w", group, err)
	}
	c.known.Delete(group)
	return nil
}
