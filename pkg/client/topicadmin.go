package client

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/stratalog/strata/pkg/wire"
)

// IncreasePartitions raises the topic's partition count to partitions (counts only
// grow; ErrInvalid otherwise) and returns the topic. Keys hash over the new count from
// then on: see docs/DESIGN.md, "More partitions", before doing it to a topic whose
// consumers rely on per-key order.
func (c *Client) IncreasePartitions(ctx context.Context, name string, partitions int32) (*Topic, error) {
	var w wire.Topic
	body := wire.TopicAlter{Partitions: partitions}
	if err := c.doJSON(ctx, http.MethodPatch, "/v1/topics/"+seg(name), nil, body, &w); err != nil {
		return nil, fmt.Errorf("strata: increase partitions of %q to %d: %w", name, partitions, err)
	}
	return fromWireTopic(w), nil
}

// SetRetentionPin sets how far beyond its retention the topic keeps a record that a
// group which has committed on it has not read (0 removes the pin) and returns the
// topic. Retention plus the cap above the deployment's maximum retention is ErrInvalid.
func (c *Client) SetRetentionPin(ctx context.Context, name string, pin time.Duration) (*Topic, error) {
	var w wire.Topic
	ms := pin.Milliseconds()
	body := wire.TopicAlter{RetentionPinMs: &ms}
	if err := c.doJSON(ctx, http.MethodPatch, "/v1/topics/"+seg(name), nil, body, &w); err != nil {
		return nil, fmt.Errorf("strata: set retention pin of %q to %s: %w", name, pin, err)
	}
	return fromWireTopic(w), nil
}

// RetentionForever, given to SetRetention, keeps the topic's records for ever (Kafka's
// retention.ms=-1): allowed only where the deployment has no maximum retention.
const RetentionForever time.Duration = -1

// SetRetention changes how long the topic keeps records and returns the topic. A shorter
// retention removes the older records at the next retention pass; RetentionForever keeps
// them for ever. Below a second, or above the deployment's maximum retention (with the
// topic's pin cap), it is ErrInvalid and nothing changes.
func (c *Client) SetRetention(ctx context.Context, name string, retention time.Duration) (*Topic, error) {
	var w wire.Topic
	ms := int64(-1)
	if retention != RetentionForever {
		ms = retention.Milliseconds()
	}
	body := wire.TopicAlter{RetentionMs: &ms}
	if err := c.doJSON(ctx, http.MethodPatch, "/v1/topics/"+seg(name), nil, body, &w); err != nil {
		return nil, fmt.Errorf("strata: set retention of %q to %s: %w", name, retentionString(retention), err)
	}
	return fromWireTopic(w), nil
}

// retentionString is d for an error, "for ever" for RetentionForever.
func retentionString(d time.Duration) string {
	if d == RetentionForever {
		return "for ever"
	}
	return d.String()
}

// DeleteTopic deletes a topic: it is unknown to appends and reads at once and its name
// is free at once — a topic created again under it is a new one, from offset 0 — while
// the retention pass removes its data in the background (docs/API.md).
func (c *Client) DeleteTopic(ctx context.Context, name string) error {
	if err := c.doJSON(ctx, http.MethodDelete, "/v1/topics/"+seg(name), nil, nil, nil); err != nil {
		return fmt.Errorf("strata: delete topic %q: %w", name, err)
	}
	return nil
}
