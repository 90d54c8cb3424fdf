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
