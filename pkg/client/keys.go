package client

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/stratalog/strata/pkg/wire"
)

// optMillis is d in milliseconds for a request, nil (left out) when 0.
func optMillis(d time.Duration) *int64 {
	if d == 0 {
		return nil
	}
	ms := d.Milliseconds()
	return &ms
}

// SetCleanup changes the topic's cleanup policy and compaction settings (ch's set
// fields) and returns the topic. Turning a delete topic compacted is allowed, as is
// moving between compact and compact,delete; a compacted topic back to delete is
// ErrInvalid (docs/API.md).
func (c *Client) SetCleanup(ctx context.Context, name string, ch CleanupChange) (*Topic, error) {
	var body wire.TopicAlter
	if ch.Cleanup != "" {
		body.CleanupPolicy = &ch.Cleanup
	}
	for _, f := range []struct {
		d   *time.Duration
		dst **int64
	}{{ch.MinCompactionLag, &body.MinCompactionLagMs}, {ch.MaxCompactionLag, &body.MaxCompactionLagMs}, {ch.DeleteRetention, &body.DeleteRetentionMs}} {
		if f.d != nil {
			ms := f.d.Milliseconds()
			*f.dst = &ms
		}
	}
	if body.CleanupPolicy == nil && body.MinCompactionLagMs == nil && body.MaxCompactionLagMs == nil && body.DeleteRetentionMs == nil {
		return nil, fmt.Errorf("strata: set cleanup of %q: %w: nothing to change", name, ErrInvalid)
	}
	var w wire.Topic
	if err := c.doJSON(ctx, http.MethodPatch, "/v1/topics/"+seg(name), nil, body, &w); err != nil {
		return nil, fmt.Errorf("strata: set cleanup of %q: %w", name, err)
	}
	return fromWireTopic(w), nil
}

// Latest returns the latest record of key on a compacted topic, from the server's key
// index (no replay): every append acknowledged before the call is seen. A key never
// written (or whose tombstone's retention passed) is ErrNotFound; one whose latest
// record is a tombstone is ErrKeyDeleted (which is ErrNotFound too). The key is looked
// for in its partition by the topic's partition count; LatestIn names another.
func (c *Client) Latest(ctx context.Context, topic string, key []byte) (*KeyRecord, error) {
	return c.latest(ctx, topic, key, nil)
}

// LatestIn is Latest in the given partition: a key appended there explicitly, or
// before a partition increase moved it.
func (c *Client) LatestIn(ctx context.Context, topic string, partition int32, key []byte) (*KeyRecord, error) {
	return c.latest(ctx, topic, key, &partition)
}

func (c *Client) latest(ctx context.Context, topic string, key []byte, partition *int32) (*KeyRecord, error) {
	if len(key) == 0 {
		return nil, fmt.Errorf("strata: latest of topic %q: %w: the empty key cannot be looked up", topic, ErrInvalid)
	}
	q := url.Values{"encoding": {"base64"}}
	if partition != nil {
		q.Set("partition", strconv.Itoa(int(*partition)))
	}
	var w wire.KeyRecord
	path := "/v1/topics/" + seg(topic) + "/keys/" + base64.RawURLEncoding.EncodeToString(key)
	if err := c.doJSON(ctx, http.MethodGet, path, q, nil, &w); err != nil {
		return nil, fmt.Errorf("strata: latest of key %q of topic %q: %w", key, topic, err)
	}
	rec, err := fromWirePolled(w.PolledRecord)
	if err != nil {
		return nil, fmt.Errorf("strata: latest of key %q of topic %q: %w", key, topic, err)
	}
	return &KeyRecord{Partition: w.Partition, PolledRecord: rec}, nil
}
