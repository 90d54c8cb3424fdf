package client

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
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
	// Expired: the parking topic's retention took the key's first parked record; a
	// release replays what is left and counts the rest as lost.
	Expired bool
}

func parkedKeys(w wire.ParkedList) ([]ParkedKey, error) {
	out := make([]ParkedKey, len(w.Parked))
	for i, p := range w.Parked {
		key, err := base64.StdEncoding.DecodeString(p.Key)
		if err != nil {
			return nil, fmt.Errorf("%w: parked key %d: %v", ErrBadResponse, i, err)
		}
		out[i] = ParkedKey{Topic: p.Topic, Partition: p.Partition, Key: key, FirstOffset: p.FirstOffset, Records: p.Records,
			Error: p.Error, ParkedAt: time.UnixMilli(p.ParkedAtMs), Expired: p.Expired}
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

// ParkedRow is a parked key of one partition as the member running the partition keeps
// it: where its records lie in the parking topic and what parked it (ParkOffset -1
// until the first record is there).
type ParkedRow struct {
	Key                     []byte
	FirstOffset, LastOffset int64
	Records                 int64
	Error                   string
	Attempts                int
	ParkedAt                time.Time
	ParkPartition           int32
	ParkOffset              int64
	// ReleaseRequested is when a release was asked for (zero: none yet).
	ReleaseRequested time.Time
	// Expired: the parking topic's retention took the key's first parked record; a
	// release replays what is left and counts the rest as lost.
	Expired bool
}

func parkedState(r ParkedRow) wire.ParkedState {
	return wire.ParkedState{Key: base64.StdEncoding.EncodeToString(r.Key), FirstOffset: r.FirstOffset, LastOffset: r.LastOffset,
		Records: r.Records, Error: r.Error, Attempts: r.Attempts, ParkedAtMs: r.ParkedAt.UnixMilli(),
		ParkPartition: r.ParkPartition, ParkOffset: r.ParkOffset}
}

func parkedRows(w wire.ParkedRows) ([]ParkedRow, error) {
	out := make([]ParkedRow, len(w.Parked))
	for i, p := range w.Parked {
		key, err := base64.StdEncoding.DecodeString(p.Key)
		if err != nil {
			return nil, fmt.Errorf("%w: parked row %d: %v", ErrBadResponse, i, err)
		}
		out[i] = ParkedRow{Key: key, FirstOffset: p.FirstOffset, LastOffset: p.LastOffset, Records: p.Records, Error: p.Error,
			Attempts: p.Attempts, ParkedAt: time.UnixMilli(p.ParkedAtMs), ParkPartition: p.ParkPartition, ParkOffset: p.ParkOffset}
		if p.ReleaseRequestedAtMs != nil {
			out[i].ReleaseRequested = time.UnixMilli(*p.ReleaseRequestedAtMs)
		}
	}
	return out, nil
}

// PartitionParked returns the keys the group parked on one partition, ordered by key
// bytes: what the member running the partition forwards to the parking topic, and the
// releases asked for. It needs what a commit needs; topic may be the lease's TopicRef.
func (c *Client) PartitionParked(ctx context.Context, group, topic string, partition int32) ([]ParkedRow, error) {
	var w wire.ParkedRows
	name, inc := splitRef(topic)
	var q url.Values
	if inc != "" {
		q = url.Values{"incarnation": {inc}}
	}
	if err := c.doJSON(ctx, http.MethodGet, groupPath(group, name, partition, "parked"), q, nil, &w); err != nil {
		return nil, fmt.Errorf("strata: parked rows of %s on %s/%d: %w", group, topic, partition, err)
	}
	rows, err := parkedRows(w)
	if err != nil {
		return nil, fmt.Errorf("strata: parked rows of %s on %s/%d: %w", group, topic, partition, err)
	}
	return rows, nil
}

// PutParked stores row as a parked key of the partition, fenced by the lease's
// generation as a commit is (ErrFenced: not the owner at that generation); a release
// asked for meanwhile is kept. topic may be the lease's TopicRef.
func (c *Client) PutParked(ctx context.Context, group, topic string, partition int32, member string, generation int64, row ParkedRow) error {
	name, inc := splitRef(topic)
	body := wire.ParkedPut{Member: member, Generation: generation, Incarnation: inc, ParkedState: parkedState(row)}
	if err := c.doJSON(ctx, http.MethodPut, groupPath(group, name, partition, "parked"), nil, body, nil); err != nil {
		return fmt.Errorf("strata: park key %q of %s on %s/%d gen %d for %q: %w", row.Key, group, topic, partition, generation, member, err)
	}
	return nil
}

// Unpark deletes key's parked row of the partition once its records were replayed,
// fenced as PutParked; a key not parked is no error. topic may be the lease's TopicRef.
func (c *Client) Unpark(ctx context.Context, group, topic string, partition int32, member string, generation int64, key []byte) error {
	name, inc := splitRef(topic)
	body := wire.ParkedUnpark{Member: member, Generation: generation, Key: base64.StdEncoding.EncodeToString(key), Incarnation: inc}
	if err := c.doJSON(ctx, http.MethodPost, groupPath(group, name, partition, "parked/unpark"), nil, body, nil); err != nil {
		return fmt.Errorf("strata: unpark key %q of %s on %s/%d gen %d for %q: %w", key, group, topic, partition, generation, member, err)
	}
	return nil
}
