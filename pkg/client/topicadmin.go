package client

import (
	"context"
	"fmt"
	"net/http"

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

// DeleteTopic deletes a topic: it is unknown to appends and reads at once and its name
// is free at once — a topic created again under it is a new one, from offset 0 — while
// the retention pass removes its data in the background (docs/API.md).
func (c *Client) DeleteTopic(ctx context.Context, name string) error {
	if err := c.doJSON(ctx, http.MethodDelete, "/v1/topics/"+seg(name), nil, nil, nil); err != nil {
		return fmt.Errorf("strata: delete topic %q: %w", name, err)
	}
	return nil
}
