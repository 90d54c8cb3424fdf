package measure

import (
	"context"
	"errors"
	"testing"

	"github.com/stratalog/strata/pkg/store/awstest"
)

// TestCountsPerAppend runs the tiny workload on the emulator and checks the requests
// counted per append against docs/DESIGN.md §4: one PUT per append, and per partition
// touched one sequencer UpdateItem and one index PutItem; a tail poll GETs its block.
func TestCountsPerAppend(t *testing.T) {
	ctx := context.Background()
	cfg := awstest.Config(ctx, t)
	res, err := Run(ctx, cfg, Options{Appends: 3, RecordsPerAppend: 4, ValueBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cases) != 4 {
		t.Fatalf("%d cases, want 4", len(res.Cases))
	}
	for _, c := range res.Cases {
		t.Logf("%s: append ops %v; poll ops %v (%d polls)", c.Name, c.AppendOps, c.PollOps, c.Polls)
		if c.Idempotent {
			continue
		}
		want := map[string]float64{"S3.PutObject": 1, "DynamoDB.UpdateItem": float64(c.Partitions),
			"DynamoDB.PutItem": float64(c.Partitions)}
		for op, w := range want {
			if got := c.PerAppend(op); got != w {
				t.Errorf("%s: %s per append = %v, want %v", c.Name, op, got, w)
			}
		}
		if c.Blocks != c.Appends*c.Partitions {
			t.Errorf("%s: %d blocks read, want %d", c.Name, c.Blocks, c.Appends*c.Partitions)
		}
		if got := c.PollOps["S3.GetObject"].Requests; got != int64(c.Blocks) {
			t.Errorf("%s: %d GETs for %d blocks", c.Name, got, c.Blocks)
		}
	}
	p := res.Profile
	if p.PutsPerAppend != 1 || p.UpdatesPerBlock != 1 || p.PutItemsPerBlock != 1 || p.WritesPerAppend != 0 || p.GetsPerBlock != 1 {
		t.Errorf("profile %+v, want 1 PUT per append, 1 UpdateItem + 1 PutItem per block, 1 GET per block", p)
	}
	if p.StoredBytesPerByte < 1 || p.StoredBytesPerByte > 2 {
		t.Errorf("stored bytes per value byte = %v, want within [1, 2] for 100-byte values", p.StoredBytesPerByte)
	}
}

func TestEmulatorConfigLoopbackOnly(t *testing.T) {
	for _, ep := range []string{"https://dynamodb.us-east-1.amazonaws.com", "http://10.0.0.1:4566", "127.0.0.1:4566", ""} {
		if _, err := EmulatorConfig(ep); !errors.Is(err, ErrNotLoopback) {
			t.Errorf("EmulatorConfig(%q) = %v, want ErrNotLoopback", ep, err)
		}
	}
	for _, ep := range []string{"http://127.0.0.1:4576", "http://localhost:4566", "http://[::1]:4566"} {
		if _, err := EmulatorConfig(ep); err != nil {
			t.Errorf("EmulatorConfig(%q) = %v", ep, err)
		}
	}
}
