package group_test

import (
	"context"
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/store"
)

// TestLeaseAfterDeleteRecreatesTheGroupOnEveryNode: in Lambda every request may be its
// own host, and a host that served a group's leases before it was deleted remembers the
// group exists. A lease taken through that host after the delete must create the group
// again, with its settings, exactly as a lease through a host that never saw it does —
// on a partition leased before (its assignment row fenced by the delete) and on one
// never leased (no row). Before, the remembering host leased without a settings row: the
// group had leases but no settings, was not listed, and consumers reading its settings
// failed, depending on which host served them.
func TestLeaseAfterDeleteRecreatesTheGroupOnEveryNode(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st store.MetaStore) {
		ctx := context.Background()
		f := newFixture(st)
		f.off.addTopic(topic, 2)
		hostA := group.New(st, f.off, f.clock.Now)
		hostB := group.New(st, f.off, f.clock.Now) // a second host over the same store
		g := uniqueGroup("deleted")
		const ttl = time.Second

		for _, c := range []*group.Coordinator{hostA, hostB} {
			l := must(c.Acquire(ctx, g, topic, 0, "A", ttl))(t)
			mustOK(t, c.Release(ctx, g, topic, 0, "A", l.Generation))
		}
		mustOK(t, hostA.DeleteGroup(ctx, g))
		if _, err := hostA.GetSettings(ctx, g); err == nil {
			t.Fatal("settings read after the delete: want not found")
		}

		for _, p := range []int32{0, 1} { // 0 was leased before the delete, 1 never
			l, err := hostB.Acquire(ctx, g, topic, p, "B", ttl)
			if err != nil {
				t.Fatalf("lease of partition %d through the remembering host: %v", p, err)
			}
			if _, err := hostB.GetSettings(ctx, g); err != nil {
				t.Fatalf("after a lease of partition %d through the host that saw the group before its delete: settings: %v (want the group created again)", p, err)
			}
			if l.Committed != nil {
				t.Fatalf("partition %d: committed = %d after the delete, want none", p, *l.Committed)
			}
			mustOK(t, hostB.Release(ctx, g, topic, p, "B", l.Generation))
			if p == 0 {
				mustOK(t, hostA.DeleteGroup(ctx, g))
			}
		}
		groups := must(hostB.ListGroups(ctx))(t)
		found := false
		for _, n := range groups {
			found = found || n == g
		}
		if !found {
			t.Fatalf("groups %v: want %q listed again", groups, g)
		}
	})
}

// TestDeleteGroupDeletesParkedKeys: a group created again under a deleted group's name
// starts with no parked keys — the deleted group's are gone with it, so the new group
// neither forwards a key the old one parked nor lists it.
func TestDeleteGroupDeletesParkedKeys(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st store.MetaStore) {
		ctx := context.Background()
		f := newFixture(st)
		f.off.addTopic(topic, 2)
		c := group.New(st, f.off, f.clock.Now)
		g := uniqueGroup("parkdel")
		for _, p := range []int32{0, 1} {
			l := must(c.Acquire(ctx, g, topic, p, "A", time.Second))(t)
			mustOK(t, c.PutParked(ctx, group.Parked{Group: g, Topic: topic, Partition: p, Key: []byte("k"), FirstOffset: 3, LastOffset: 3,
				Records: 1, Error: "boom", ParkedAt: t0, ParkOffset: -1}, "A", l.Generation))
			mustOK(t, c.Release(ctx, g, topic, p, "A", l.Generation))
		}
		if rows := must(c.ListParked(ctx, g))(t); len(rows) != 2 {
			t.Fatalf("parked before the delete: %v, want 2 rows", rows)
		}
		mustOK(t, c.DeleteGroup(ctx, g))
		l := must(c.Acquire(ctx, g, topic, 0, "B", time.Second))(t) // the group again
		if rows := must(c.ParkedOf(ctx, g, topic, 0))(t); len(rows) != 0 {
			t.Fatalf("the group created again inherits parked keys %v", rows)
		}
		if rows := must(c.ListParked(ctx, g))(t); len(rows) != 0 {
			t.Fatalf("the group created again lists parked keys %v", rows)
		}
		mustOK(t, c.Release(ctx, g, topic, 0, "B", l.Generation))
	})
}
