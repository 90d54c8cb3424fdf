package httpconsumer_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

// TestAdapterCarriesCompletedRanges: a commit's completed ranges go over HTTP, and the
// next lease (an acquire, as a new owner makes) brings them back.
func TestAdapterCarriesCompletedRanges(t *testing.T) {
	ctx := context.Background()
	n := newNode(t)
	if _, err := n.log.CreateTopic(ctx, "t", 1, time.Hour); err != nil {
		t.Fatal(err)
	}
	appendN(t, n.log, "t", 0, 10)
	l, err := n.ad.Acquire(ctx, "g", "t", 0, "m-1", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.OffsetRange{{From: 3, To: 5}, {From: 7, To: 10}}
	if err := n.ad.Commit(ctx, "g", "t", 0, "m-1", l.Generation, 2, want...); err != nil {
		t.Fatal(err)
	}
	again, err := n.ad.Acquire(ctx, "g", "t", 0, "m-1", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if again.Committed == nil || *again.Committed != 2 || !slices.Equal(again.Completed, want) {
		t.Fatalf("lease after the commit: committed %v, completed %v; want 2 and %v", again.Committed, again.Completed, want)
	}
}
