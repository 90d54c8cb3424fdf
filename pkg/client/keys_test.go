package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/client"
)

// TestLatestThroughServer: against the assembled server, CreateTopic sends a compacted
// policy and its settings, DescribeTopic reads them back, Latest answers each
// acknowledged overwrite (binary keys too), a tombstone as ErrKeyDeleted with its offset
// (and ErrNotFound), a key never written as ErrNotFound; SetCleanup changes the settings
// and refuses turning compaction off; a keyless append is ErrInvalid.
func TestLatestThroughServer(t *testing.T) {
	url, stop := exampleServer()
	defer stop()
	ctx := context.Background()
	c, err := client.New(url)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.CreateTopic(ctx, "kv", client.TopicConfig{Partitions: 2, Cleanup: client.CleanupCompact, DeleteRetention: time.Hour})
	if err != nil || got.Cleanup != client.CleanupCompact || got.DeleteRetention != time.Hour {
		t.Fatalf("CreateTopic = %+v, %v", got, err)
	}
	if got, err = c.DescribeTopic(ctx, "kv"); err != nil || got.Cleanup != client.CleanupCompact {
		t.Fatalf("DescribeTopic = %+v, %v", got, err)
	}
	key := []byte{0, '/', 0xFF, 'k'}
	for _, v := range []string{"a", "b"} {
		if _, err := c.Append(ctx, "kv", []client.Record{{Key: key, Value: []byte(v)}}, client.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		kr, err := c.Latest(ctx, "kv", key)
		if err != nil || string(kr.Value) != v || string(kr.Key) != string(key) {
			t.Fatalf("Latest = %+v, %v; want value %q", kr, err, v)
		}
	}
	if _, err := c.Append(ctx, "kv", []client.Record{{Key: key, Value: nil}}, client.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = c.Latest(ctx, "kv", key)
	var ae *client.APIError
	if !errors.Is(err, client.ErrKeyDeleted) || !errors.Is(err, client.ErrNotFound) || !errors.As(err, &ae) || ae.Details["offset"] == nil {
		t.Fatalf("Latest after a tombstone = %v, want ErrKeyDeleted with its offset", err)
	}
	if _, err := c.Latest(ctx, "kv", []byte("never")); !errors.Is(err, client.ErrNotFound) || errors.Is(err, client.ErrKeyDeleted) {
		t.Fatalf("Latest of a key never written = %v, want ErrNotFound", err)
	}
	if _, err := c.LatestIn(ctx, "kv", 7, key); !errors.Is(err, client.ErrInvalid) {
		t.Fatalf("LatestIn a partition out of range = %v, want ErrInvalid", err)
	}
	if _, err := c.Append(ctx, "kv", []client.Record{{Value: []byte("keyless")}}, client.AppendOptions{}); !errors.Is(err, client.ErrInvalid) {
		t.Fatalf("keyless append = %v, want ErrInvalid", err)
	}
	lag := time.Minute
	if got, err = c.SetCleanup(ctx, "kv", client.CleanupChange{Cleanup: client.CleanupCompactDelete, MaxCompactionLag: &lag}); err != nil ||
		got.Cleanup != client.CleanupCompactDelete || got.MaxCompactionLag != time.Minute || got.DeleteRetention != time.Hour {
		t.Fatalf("SetCleanup = %+v, %v", got, err)
	}
	if _, err := c.SetCleanup(ctx, "kv", client.CleanupChange{Cleanup: client.CleanupDelete}); !errors.Is(err, client.ErrInvalid) {
		t.Fatalf("SetCleanup to delete = %v, want ErrInvalid", err)
	}
}
