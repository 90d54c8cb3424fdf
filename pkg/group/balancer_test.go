package group_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/stratalog/strata/internal/clocktest"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/store"
)

// cluster drives Balancers over one store and a shared fake clock the way a long-running
// consumer would: step, then for each extra commit its position and release it.
type cluster struct {
	t          rapid.TB
	st         store.MetaStore
	clock      *clocktest.Clock
	group      string
	partitions int32
	ttl        time.Duration
	bals       map[string]*group.Balancer
	takes      int
}

func newCluster(t rapid.TB, st store.MetaStore, partitions int32, ttl time.Duration) *cluster {
	return &cluster{t: t, st: st, clock: newClock(), group: uniqueGroup("bal"), partitions: partitions, ttl: ttl,
		bals: map[string]*group.Balancer{}}
}

func (c *cluster) join(member string) {
	c.t.Helper()
	b, err := group.NewBalancer(group.BalancerConfig{Store: c.st, Group: c.group, Topic: topic, Member: member,
		Partitions: c.partitions, TTL: c.ttl, Clock: c.clock.Now})
	if err != nil {
		c.t.Fatalf("balancer of %s: %v", member, err)
	}
	c.bals[member] = b
}

// step runs one Step of member and handles its releases; it fails the test if a
// member loses a partition it should not (lostOK false).
func (c *cluster) step(member string, lostOK bool) {
	c.t.Helper()
	ctx := context.Background()
	b := c.bals[member]
	res, err := b.Step(ctx)
	if err != nil {
		c.t.Fatalf("step of %s: %v", member, err)
	}
	if len(res.Lost) > 0 && !lostOK {
		c.t.Fatalf("%s lost %v", member, res.Lost)
	}
	if res.Takes != len(res.Acquired) {
		c.t.Fatalf("%s: Takes %d but %d acquired", member, res.Takes, len(res.Acquired))
	}
	c.takes += res.Takes
	for _, l := range res.Release {
		// Commit first, then release: the position survives the hand-over.
		row := store.CommitRow{Group: c.group, Topic: topic, Partition: l.Partition, NextOffset: int64(l.Partition),
			Generation: l.Generation, CommittedAt: c.clock.Now()}
		if err := c.st.Commit(ctx, row, member); err != nil {
			c.t.Fatalf("%s commits %d before release: %v", member, l.Partition, err)
		}
		if err := b.Release(ctx, l.Partition); err != nil {
			c.t.Fatalf("%s releases %d: %v", member, l.Partition, err)
		}
	}
	for _, l := range res.Acquired {
		if l.Committed != nil && *l.Committed != int64(l.Partition) {
			c.t.Fatalf("%s took %d with committed %d, want %d", member, l.Partition, *l.Committed, l.Partition)
		}
	}
}

// round steps every given member once.
func (c *cluster) round(members []string) {
	c.t.Helper()
	for _, m := range members {
		c.step(m, false)
	}
}

// owners checks that the store and the Balancers of members agree on who holds what
// and returns each member's live partition count plus the number of unowned partitions.
func (c *cluster) owners(members []string) (map[string]int, int) {
	c.t.Helper()
	rows, err := c.st.ListAssignments(context.Background(), c.group)
	if err != nil {
		c.t.Fatalf("list leases: %v", err)
	}
	now := c.clock.Now()
	live := map[int32]store.Assignment{}
	for _, a := range rows {
		if a.Topic == topic && a.Live(now) {
			live[a.Partition] = a
		}
	}
	counts := map[string]int{}
	held := map[int32]string{}
	for _, m := range members {
		for _, l := range c.bals[m].Held() {
			if other, dup := held[l.Partition]; dup {
				c.t.Fatalf("partition %d held by both %s and %s", l.Partition, other, m)
			}
			held[l.Partition] = m
			a, ok := live[l.Partition]
			if !ok || a.Owner != m || a.Generation != l.Generation {
				c.t.Fatalf("%s believes it holds %d at generation %d; the store says %+v (live %v)", m, l.Partition, l.Generation, a, ok)
			}
			counts[m]++
		}
	}
	unowned := 0
	for p := range c.partitions {
		a, ok := live[p]
		if !ok {
			unowned++
		} else if slices.Contains(members, a.Owner) && held[p] != a.Owner {
			c.t.Fatalf("the store says %s holds %d but its Balancer does not know", a.Owner, p)
		}
	}
	return counts, unowned
}

func balanced(counts map[string]int, unowned int, members []string, each int) bool {
	if unowned != 0 {
		return false
	}
	for _, m := range members {
		if counts[m] != each {
			return false
		}
	}
	return true
}

// TestBalancerSpreadsAndTakesOver: 3 members on 12 partitions, each stepped once per
// renew interval, settle at 4 each within 3 lease periods and stay there; when one stops,
// the other two own everything within the lease TTL plus one renew interval; when it
// comes back, it gets its share again.
func TestBalancerSpreadsAndTakesOver(t *testing.T) {
	const (
		partitions = 12
		ttl        = 3 * time.Second
		interval   = time.Second
	)
	forEachBackend(t, func(t *testing.T, st store.MetaStore) {
		c := newCluster(t, st, partitions, ttl)
		all := []string{"A", "B", "C"}
		for _, m := range all {
			c.join(m)
		}

		settled := time.Duration(-1)
		for elapsed := time.Duration(0); elapsed <= 3*ttl; elapsed += interval {
			c.round(all)
			if counts, unowned := c.owners(all); balanced(counts, unowned, all, 4) {
				settled = elapsed
				break
			}
			c.clock.Advance(interval)
		}
		if settled < 0 {
			counts, unowned := c.owners(all)
			t.Fatalf("not 4 each after 3 lease periods: %v, %d unowned", counts, unowned)
		}
		t.Logf("balanced at 4 each after %s with %d ownership changes", settled, c.takes)
		if c.takes < partitions {
			t.Errorf("%d ownership changes, want at least %d (every partition taken once)", c.takes, partitions)
		}

		// Stable: no further moves while membership does not change.
		before := c.takes
		for range 5 {
			c.clock.Advance(interval)
			c.round(all)
			if counts, unowned := c.owners(all); !balanced(counts, unowned, all, 4) {
				t.Fatalf("unbalanced while stable: %v, %d unowned", counts, unowned)
			}
		}
		if c.takes != before {
			t.Errorf("%d ownership changes while membership was stable", c.takes-before)
		}

		// C stops: no more heartbeats or steps.
		stoppedAt := c.clock.Now()
		survivors := []string{"A", "B"}
		taken := time.Duration(-1)
		before = c.takes
		for c.clock.Now().Sub(stoppedAt) < ttl+3*interval {
			c.clock.Advance(interval)
			c.round(survivors)
			if counts, unowned := c.owners(survivors); balanced(counts, unowned, survivors, 6) {
				taken = c.clock.Now().Sub(stoppedAt)
				break
			}
		}
		if taken < 0 || taken > ttl+interval {
			counts, unowned := c.owners(survivors)
			t.Fatalf("C's partitions not taken within TTL + one interval (%s): taken after %s, %v, %d unowned", ttl+interval, taken, counts, unowned)
		}
		if c.takes-before != 4 {
			t.Errorf("%d ownership changes to take over C's 4 partitions, want 4", c.takes-before)
		}
		t.Logf("C's partitions taken over %s after it stopped (TTL %s, interval %s) with %d ownership changes", taken, ttl, interval, c.takes-before)

		// C comes back as a new incarnation: the others hand back its share.
		before = c.takes
		c.join("C")
		back := time.Duration(-1)
		for elapsed := time.Duration(0); elapsed <= 3*ttl; elapsed += interval {
			c.clock.Advance(interval)
			c.round(all)
			if counts, unowned := c.owners(all); balanced(counts, unowned, all, 4) {
				back = elapsed
				break
			}
		}
		if back < 0 {
			counts, unowned := c.owners(all)
			t.Fatalf("not rebalanced after C rejoined: %v, %d unowned", counts, unowned)
		}
		t.Logf("rebalanced %s after C rejoined with %d ownership changes; %d in all", back, c.takes-before, c.takes)
	})
}

// TestBalancerLostAndLeave: a member whose lease was taken over learns it from Step
// (Lost) and never renews it again; Leave hands everything over at once.
func TestBalancerLostAndLeave(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st store.MetaStore) {
		ctx := context.Background()
		c := newCluster(t, st, 2, time.Second)
		c.join("A")
		c.step("A", false)
		if got := len(c.bals["A"].Held()); got != 2 {
			t.Fatalf("A alone holds %d, want 2", got)
		}
		// A pauses past its TTL; B (no Balancer) takes partition 1 directly.
		c.clock.Advance(2 * time.Second)
		coord := group.New(st, fixedOffsets(2), c.clock.Now)
		lb := must(coord.Acquire(ctx, c.group, topic, 1, "B", time.Minute))(t)
		res, err := c.bals["A"].Step(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Lost, []int32{1}) {
			t.Fatalf("A's step after take-over: lost %v, want [1]", res.Lost)
		}
		if held := c.bals["A"].Held(); len(held) != 1 || held[0].Partition != 0 {
			t.Fatalf("A holds %+v, want only partition 0", held)
		}
		a := must(st.GetAssignment(ctx, c.group, topic, 1))(t)
		if a.Owner != "B" || a.Generation != lb.Generation {
			t.Fatalf("partition 1 is %+v after A's step, want B's at generation %d", a, lb.Generation)
		}
		if err := c.bals["A"].Release(ctx, 1); !errors.Is(err, group.ErrInvalid) {
			t.Errorf("release of a lost partition: %v, want ErrInvalid (not held)", err)
		}

		mustOK(t, c.bals["A"].Leave(ctx))
		if len(c.bals["A"].Held()) != 0 {
			t.Errorf("A still holds %+v after Leave", c.bals["A"].Held())
		}
		ms := must(st.LiveMembers(ctx, c.group, c.clock.Now()))(t)
		if len(ms) != 0 {
			t.Errorf("live members after A left: %+v", ms)
		}
		// Partition 0 is free at once, without waiting for an expiry.
		if _, err := coord.Acquire(ctx, c.group, topic, 0, "B", time.Minute); err != nil {
			t.Errorf("B takes partition 0 right after A left: %v", err)
		}
	})
}

func TestNewBalancerRejects(t *testing.T) {
	ok := group.BalancerConfig{Store: nilStore{}, Group: "g", Topic: "t", Member: "m", Partitions: 1, TTL: time.Second}
	if _, err := group.NewBalancer(ok); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for name, mut := range map[string]func(*group.BalancerConfig){
		"no store":        func(c *group.BalancerConfig) { c.Store = nil },
		"bad group":       func(c *group.BalancerConfig) { c.Group = "" },
		"bad topic":       func(c *group.BalancerConfig) { c.Topic = "a/b" },
		"bad member":      func(c *group.BalancerConfig) { c.Member = "" },
		"no partitions":   func(c *group.BalancerConfig) { c.Partitions = 0 },
		"zero ttl":        func(c *group.BalancerConfig) { c.TTL = 0 },
		"negative ttl":    func(c *group.BalancerConfig) { c.TTL = -time.Second },
		"member too long": func(c *group.BalancerConfig) { c.Member = fmt.Sprintf("%0201d", 0) },
	} {
		cfg := ok
		mut(&cfg)
		if _, err := group.NewBalancer(cfg); !errors.Is(err, group.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

// nilStore satisfies group.Store for constructor checks that never call it.
type nilStore struct{ group.Store }

// fixedOffsets is a fake log with one empty topic of n partitions.
func fixedOffsets(n int32) *fakeOffsets {
	f := newOffsets()
	f.addTopic(topic, n)
	return f
}

// TestBalancerConvergesProperty: under random joins, crashes, graceful leaves, pauses
// and resumes, every step keeps each member's view equal to the store's, and once
// membership is stable for a lease TTL plus a few intervals, every partition is owned
// and nobody holds more than its fair share. Runs on the embedded backend only: the
// logic under test is the Balancer's, and the store contract is covered on both
// backends by the tests above.
func TestBalancerConvergesProperty(t *testing.T) {
	const (
		ttl      = 3 * time.Second
		interval = time.Second
	)
	st := localStore(t)
	rapid.Check(t, func(rt *rapid.T) {
		partitions := rapid.Int32Range(1, 16).Draw(rt, "partitions")
		c := newCluster(rt, st, partitions, ttl)
		var active, paused []string
		next := 0
		join := func() {
			m := fmt.Sprintf("m%d", next)
			next++
			c.join(m)
			active = append(active, m)
		}
		join()
		remove := func(list []string, i int) []string { return append(list[:i:i], list[i+1:]...) }
		round := func(rt *rapid.T) {
			c.clock.Advance(interval)
			order := rapid.Permutation(active).Draw(rt, "order")
			for _, m := range order {
				c.step(m, false)
			}
		}
		rt.Repeat(map[string]func(*rapid.T){
			"round": round,
			"join": func(rt *rapid.T) {
				if len(active)+len(paused) >= 5 {
					rt.Skip("enough members")
				}
				join()
			},
			"crash": func(rt *rapid.T) {
				if len(active) < 2 {
					rt.Skip("keep one member")
				}
				i := rapid.IntRange(0, len(active)-1).Draw(rt, "crash")
				active = remove(active, i)
			},
			"leave": func(rt *rapid.T) {
				if len(active) < 2 {
					rt.Skip("keep one member")
				}
				i := rapid.IntRange(0, len(active)-1).Draw(rt, "leave")
				if err := c.bals[active[i]].Leave(context.Background()); err != nil {
					rt.Fatalf("leave of %s: %v", active[i], err)
				}
				active = remove(active, i)
			},
			"pause": func(rt *rapid.T) {
				if len(active) < 2 {
					rt.Skip("keep one member")
				}
				i := rapid.IntRange(0, len(active)-1).Draw(rt, "pause")
				paused = append(paused, active[i])
				active = remove(active, i)
			},
			"resume": func(rt *rapid.T) {
				if len(paused) == 0 {
					rt.Skip("nobody paused")
				}
				i := rapid.IntRange(0, len(paused)-1).Draw(rt, "resume")
				c.step(paused[i], true) // may find partitions taken over
				active = append(active, paused[i])
				paused = remove(paused, i)
			},
			"": func(rt *rapid.T) { c.owners(active) },
		})
		for _, m := range paused {
			c.step(m, true)
			active = append(active, m)
		}
		for range int(ttl/interval) + 3 {
			round(rt)
		}
		counts, unowned := c.owners(active)
		share := (int(partitions) + len(active) - 1) / len(active)
		if unowned != 0 {
			rt.Fatalf("%d of %d partitions unowned with members %v holding %v", unowned, partitions, active, counts)
		}
		for m, n := range counts {
			if n > share {
				rt.Fatalf("%s holds %d > fair share %d (%d partitions, %d members)", m, n, share, partitions, len(active))
			}
		}
	})
}
