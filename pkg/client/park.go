package client

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"time"

	"github.com/stratalog/strata/pkg/wire"
)

// ParkedKey is a key a group parked on one partition (on_failure "park"): its records
// from FirstOffset on are in the group's parking topic until it is released.
type ParkedKey struct {
	Topic       string
	Partition   int32
	Key         []byte
	FirstOffset int64
	Records     int64
	Error       string
	ParkedAt    time.Time
	// ReleaseRequested is when a release was asked for (zero: none yet).
	ReleaseRequested time.Time
}

func parkedKeys(w wire.ParkedList) ([]ParkedKey, error) {
	out := make([]ParkedKey, len(w.Parked))
	for i, p := range w.Parked {
		key, err := base64.StdEncoding.DecodeString(p.Key)
		if err != nil {
			return nil, fmt.Errorf("parked key %d: %w", i, err)
		}
		out[i] = ParkedKey{Topic: p.Topic, Partition: p.Partition, Key: key, FirstOffset: p.FirstOffset, Records: p.Records,
			Error: p.Error, ParkedAt: time.UnixMilli(p.ParkedAtMs)}
		if p.ReleaseRequestedAtMs != nil {
			out[i].ReleaseRequested = time.UnixMilli(*p.ReleaseRequestedAtMs)
		}
	}
	return out, nil
}

// ParkedKeys lists the keys the group parked, ordered by topic, partition and key.
func (c *Client) ParkedKeys(ctx context.Context, group string) ([]ParkedKey, error) {
	var w wire.ParkedList
	if err := c.doJSON(ctx, http.MethodGet, "/v1/groups/"+seg(group)+"/parked", nil, nil, &w); err != nil {
		return nil, fmt.Errorf("strata: parked keys of group %q: %w", group, err)
	}
	return parkedKeys(w)
}

// ReleaseParkedKey asks for key's release on topic: each partition's owner replays the
// key's parked records in order before any newer record of the key, then unparks it.
// ErrNotFound when the key is not parked.
func (c *Client) ReleaseParkedKey(ctx context.Context, group, topic string, key []byte) ([]ParkedKey, error) {
	var w wire.ParkedList
	body := wire.ParkedRelease{Topic: topic, Key: base64.StdEncoding.EncodeToString(key)}
	if err := c.doJSON(ctx, http.MethodPost, "/v1/groups/"+seg(group)+"/parked/release", nil, body, &w); err != nil {
		return nil, fmt.Errorf("strata: release key %q of group %q on %q: %w", key, group, topic, err)
	}
	return parkedKeys(w)
}
