package runtime_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/stratalog/strata/pkg/client"
	"github.com/stratalog/strata/pkg/node"
	"github.com/stratalog/strata/pkg/runtime"
	"github.com/stratalog/strata/pkg/wire"
)

// TestCommitCompletedRangesServed: the assembled server stores a commit's completed
// ranges and the next lease returns them; a malformed set is refused and changes
// nothing.
func TestCommitCompletedRangesServed(t *testing.T) {
	_, c, _ := start(t, runtime.Config{Node: node.Config{DataDir: t.TempDir()}})
	ctx := context.Background()
	if _, err := c.CreateTopic(ctx, "orders", client.TopicConfig{Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	var recs []client.Record
	for range 10 {
		p := int32(0)
		recs = append(recs, client.Record{Value: []byte("v"), Partition: &p})
	}
	if _, err := c.Append(ctx, "orders", recs, client.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	l, err := c.Lease(ctx, "billing", "orders", 0, "m-1", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []wire.OffsetRange{{4, 6}, {8, 10}}
	if _, err := c.Commit(ctx, "billing", "orders", 0, "m-1", l.Generation, 2, want...); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Commit(ctx, "billing", "orders", 0, "m-1", l.Generation, 2, wire.OffsetRange{6, 4}); !errors.Is(err, client.ErrInvalid) {
		t.Fatalf("commit of a reversed range: %v, want ErrInvalid", err)
	}
	again, err := c.Lease(ctx, "billing", "orders", 0, "m-1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if again.CommittedOffset == nil || *again.CommittedOffset != 2 || !slices.Equal(again.Completed, want) {
		t.Fatalf("lease: committed %v, completed %v; want 2 and %v", again.CommittedOffset, again.Completed, want)
	}
}
