package client

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/stratalog/strata/pkg/wire"
)

// GroupSettings are a group's consumer settings (docs/API.md, "Group administration").
// DeadLetterTopic is "" for none.
type GroupSettings struct {
	Group           string
	ResetPolicy     string
	MaxAttempts     int
	DeadLetterTopic string
	// OnFailure is "dead_letter" or "park" ("" in a SetGroupSettings: dead_letter).
	OnFailure string
	CreatedAt time.Time
}

func settingsFromWire(w wire.GroupSettings) *GroupSettings {
	s := &GroupSettings{Group: w.Group, ResetPolicy: w.ResetPolicy, MaxAttempts: w.MaxAttempts, OnFailure: w.OnFailure, CreatedAt: time.UnixMilli(w.CreatedAtMs)}
	if w.DeadLetterTopic != nil {
		s.DeadLetterTopic = *w.DeadLetterTopic
	}
	return s
}

// ListGroups returns the names of the groups the caller may describe.
func (c *Client) ListGroups(ctx context.Context) ([]string, error) {
	var w wire.GroupList
	if err := c.doJSON(ctx, http.MethodGet, "/v1/groups", nil, nil, &w); err != nil {
		return nil, fmt.Errorf("strata: list groups: %w", err)
	}
	return w.Groups, nil
}

// GroupSettings returns the group's settings; ErrNotFound for an unknown group.
func (c *Client) GroupSettings(ctx context.Context, group string) (*GroupSettings, error) {
	var w wire.GroupSettings
	if err := c.doJSON(ctx, http.MethodGet, "/v1/groups/"+seg(group)+"/settings", nil, nil, &w); err != nil {
		return nil, fmt.Errorf("strata: settings of group %q: %w", group, err)
	}
	return settingsFromWire(w), nil
}

// SetGroupSettings stores s's ResetPolicy, MaxAttempts and DeadLetterTopic as the
// group's settings (creating the group) and returns what was stored.
func (c *Client) SetGroupSettings(ctx context.Context, group string, s GroupSettings) (*GroupSettings, error) {
	req := wire.GroupSettingsRequest{ResetPolicy: s.ResetPolicy, MaxAttempts: s.MaxAttempts, OnFailure: s.OnFailure}
	if s.DeadLetterTopic != "" {
		req.DeadLetterTopic = &s.DeadLetterTopic
	}
	var w wire.GroupSettings
	if err := c.doJSON(ctx, http.MethodPut, "/v1/groups/"+seg(group)+"/settings", nil, req, &w); err != nil {
		return nil, fmt.Errorf("strata: set settings of group %q: %w", group, err)
	}
	return settingsFromWire(w), nil
}

// DeleteGroupOffsets drops the group's committed positions on topic; ErrGroupActive
// while a member holds a live lease there.
func (c *Client) DeleteGroupOffsets(ctx context.Context, group, topic string) error {
	path := "/v1/groups/" + seg(group) + "/topics/" + seg(topic) + "/commits"
	if err := c.doJSON(ctx, http.MethodDelete, path, nil, nil, nil); err != nil {
		return fmt.Errorf("strata: delete offsets of group %q on %q: %w", group, topic, err)
	}
	return nil
}

// DeleteGroup deletes a stopped group: its settings, members and committed positions on
// every topic. ErrGroupActive while a member holds a live lease or heartbeats,
// ErrNotFound for an unknown group.
func (c *Client) DeleteGroup(ctx context.Context, group string) error {
	if err := c.doJSON(ctx, http.MethodDelete, "/v1/groups/"+seg(group), nil, nil, nil); err != nil {
		return fmt.Errorf("strata: delete group %q: %w", group, err)
	}
	return nil
}

// ResetGroupPartitions is ResetGroup limited to the given partitions (at least one).
func (c *Client) ResetGroupPartitions(ctx context.Context, group, topic string, partitions []int32, to ResetTarget) ([]PartitionOffset, error) {
	var w wire.ResetResponse
	path := "/v1/groups/" + seg(group) + "/topics/" + seg(topic) + "/reset"
	body := struct {
		To         ResetTarget `json:"to"`
		Partitions []int32     `json:"partitions"`
	}{to, partitions}
	if err := c.doJSON(ctx, http.MethodPost, path, nil, body, &w); err != nil {
		return nil, fmt.Errorf("strata: reset group %q on %q partitions %v: %w", group, topic, partitions, err)
	}
	out := make([]PartitionOffset, len(w.Partitions))
	for i, p := range w.Partitions {
		out[i] = PartitionOffset{Partition: p.Partition, CommittedOffset: p.CommittedOffset}
	}
	return out, nil
}
