package main

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/client"
)

// stopDev sends SIGTERM and waits for a clean exit.
func stopDev(t *testing.T, p *devProc) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		if err != nil {
			t.Fatalf("strata dev exited with %v (stderr %q)", err, p.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("strata dev still running 30 s after SIGTERM (stderr %q)", p.stderr.String())
	}
}

// TestDevRestartsRightAfterDelete: `strata dev` restarted within the
// minutes between a topic's delete and its purge failed in the counter migration
// ("topic not found"), and the data dir stayed unstartable. It must start, the deleted
// name must be free, and a topic created again under it must read from offset 0 — also
// across a second restart with the old incarnation still waiting for its purge.
func TestDevRestartsRightAfterDelete(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	p := startDev(t, dir)
	c, _ := client.New(p.url)
	if _, err := c.CreateTopic(ctx, "orders", client.TopicConfig{Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	one := int32(1)
	for _, v := range []string{"a", "b", "c"} {
		if _, err := c.Append(ctx, "orders", []client.Record{{Value: []byte(v), Partition: &one}}, client.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.DeleteTopic(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	stopDev(t, p)

	p = startDev(t, dir)
	c, _ = client.New(p.url)
	if err := c.Health(ctx); err != nil {
		t.Fatalf("strata dev restarted after a delete: %v (stderr %q)", err, p.stderr.String())
	}
	if _, err := c.CreateTopic(ctx, "orders", client.TopicConfig{Partitions: 2}); err != nil {
		t.Fatalf("create the deleted name after the restart: %v", err)
	}
	res, err := c.Append(ctx, "orders", []client.Record{{Value: []byte("new"), Partition: &one}}, client.AppendOptions{})
	if err != nil || res[0].Offset != 0 {
		t.Fatalf("first append to the re-created topic = %+v, %v; want offset 0", res, err)
	}
	stopDev(t, p)

	p = startDev(t, dir)
	c, _ = client.New(p.url)
	got, err := c.Poll(ctx, "orders", 1, 0, client.PollOptions{MaxRecords: 10})
	if err != nil {
		t.Fatalf("poll after the second restart: %v (stderr %q)", err, p.stderr.String())
	}
	if len(got.Records) != 1 || string(got.Records[0].Value) != "new" || got.HighWatermark != 1 {
		t.Fatalf("the re-created topic after a restart reads %+v, want only \"new\" at 0", got)
	}
	stopDev(t, p)
}
