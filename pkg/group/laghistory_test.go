package group_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/store"
)

// TestSampleLagKeepsHistoryInTheStore: each pass records every group's lag (records and
// time) in the store, so a new coordinator (another process or Lambda host) reads the
// same history; an unknown group is ErrNotFound.
func TestSampleLagKeepsHistoryInTheStore(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st store.MetaStore) {
		ctx := context.Background()
		f := newFixture(st)
		c := group.New(st, f.off, f.clock.Now) // the fixture's counting wrapper hides the history
		f.off.addTopic(topic, 2)
		for i := range 4 {
			f.off.append(topic, 1, t0.Add(time.Duration(i)*time.Second))
		}
		g := uniqueGroup("lag")
		f.clock.Advance(10 * time.Second)
		l := must(f.c.Acquire(ctx, g, topic, 1, "A", time.Minute))(t)
		mustOK(t, f.c.Commit(ctx, g, topic, 1, "A", l.Generation, 1))
		if _, err := c.SampleLag(ctx); err != nil {
			t.Fatalf("SampleLag: %v", err)
		}
		f.clock.Advance(5 * time.Second)
		mustOK(t, f.c.Commit(ctx, g, topic, 1, "A", l.Generation, 3))
		if _, err := c.SampleLag(ctx); err != nil {
			t.Fatalf("SampleLag: %v", err)
		}
		other := group.New(st, f.off, f.clock.Now)
		h := must(other.LagHistory(ctx, g))(t)
		if len(h) != 1 || h[0].Topic != topic || h[0].Partition != 1 || len(h[0].Samples) != 2 {
			t.Fatalf("history = %+v, want two samples of %s/1", h, topic)
		}
		s0, s1 := h[0].Samples[0], h[0].Samples[1]
		if s0.Records != 3 || s0.Behind != 9*time.Second || !s0.At.Equal(t0.Add(10*time.Second)) ||
			s1.Records != 1 || s1.Behind != 12*time.Second || !s1.At.Equal(t0.Add(15*time.Second)) {
			t.Fatalf("samples = %+v, want lag 3 records 9s at +10s, then 1 record 12s at +15s", h[0].Samples)
		}
		if _, err := other.LagHistory(ctx, uniqueGroup("nosuch")); !errors.Is(err, group.ErrNotFound) {
			t.Fatalf("LagHistory of an unknown group: %v, want ErrNotFound", err)
		}
	})
}
