package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/client"
)

// TestRetentionPinThroughServer: against the assembled server, CreateTopic sends the
// pin, DescribeTopic reads it back, SetRetentionPin replaces and removes it, and a
// negative one is ErrInvalid.
func TestRetentionPinThroughServer(t *testing.T) {
	url, stop := exampleServer()
	defer stop()
	ctx := context.Background()
	c, err := client.New(url)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.CreateTopic(ctx, "pinned", client.TopicConfig{Partitions: 1, Retention: time.Hour, RetentionPin: 6 * time.Hour})
	if err != nil || got.RetentionPin != 6*time.Hour {
		t.Fatalf("CreateTopic = %+v, %v; want a 6h pin", got, err)
	}
	if got, err = c.DescribeTopic(ctx, "pinned"); err != nil || got.RetentionPin != 6*time.Hour {
		t.Fatalf("DescribeTopic = %+v, %v; want a 6h pin", got, err)
	}
	if got, err = c.SetRetentionPin(ctx, "pinned", 90*time.Minute); err != nil || got.RetentionPin != 90*time.Minute || got.Partitions != 1 {
		t.Fatalf("SetRetentionPin(90m) = %+v, %v", got, err)
	}
	if got, err = c.SetRetentionPin(ctx, "pinned", 0); err != nil || got.RetentionPin != 0 {
		t.Fatalf("SetRetentionPin(0) = %+v, %v", got, err)
	}
	if _, err := c.SetRetentionPin(ctx, "pinned", -time.Second); !errors.Is(err, client.ErrInvalid) {
		t.Fatalf("SetRetentionPin(-1s) = %v, want ErrInvalid", err)
	}
}

// TestSecondsToDataLossCountsPin: through the assembled server, a group with a position
// on a pinned topic (retention 1h, pin 2h) has about 3h to data loss for a record just
// appended — retention + cap — and no more.
func TestSecondsToDataLossCountsPin(t *testing.T) {
	url, stop := exampleServer()
	defer stop()
	ctx := context.Background()
	c, err := client.New(url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTopic(ctx, "pinned", client.TopicConfig{Partitions: 1, Retention: time.Hour, RetentionPin: 2 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	if _, err := c.Append(ctx, "pinned", []client.Record{{Value: []byte("a")}, {Value: []byte("b")}}, client.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	l, err := c.Lease(ctx, "billing", "pinned", 0, "m", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Commit(ctx, "billing", "pinned", 0, "m", l.Generation, 1); err != nil {
		t.Fatal(err)
	}
	g, err := c.DescribeGroup(ctx, "billing")
	if err != nil || len(g.Partitions) != 1 || g.Partitions[0].SecondsToDataLoss == nil {
		t.Fatalf("DescribeGroup = %+v, %v", g, err)
	}
	// The record at offset 1 was appended between before and now: 3h after that, less
	// what has passed since, is left.
	left := *g.Partitions[0].SecondsToDataLoss
	if most := (3 * time.Hour).Seconds(); left > most || left < most-time.Since(before).Seconds()-1 {
		t.Fatalf("seconds_to_data_loss %.0f, want retention + cap = %.0f less the seconds since the append", left, most)
	}
}
