package dispatch_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/stratalog/strata/pkg/deploy"
	"github.com/stratalog/strata/pkg/dispatch"
	"github.com/stratalog/strata/pkg/store"
)

// memLeases is an in-memory Leases for the property test: assignment and commit rows
// by (group, topic, partition).
type memLeases struct {
	assignments map[string]store.Assignment
	commits     map[string]store.CommitRow
	reads       int
}

func rowKey(g, t string, p int32) string { return fmt.Sprintf("%s|%s|%d", g, t, p) }

func (m *memLeases) GetAssignment(_ context.Context, g, t string, p int32) (store.Assignment, error) {
	m.reads++
	a, ok := m.assignments[rowKey(g, t, p)]
	if !ok {
		return store.Assignment{}, store.ErrNotFound
	}
	return a, nil
}

func (m *memLeases) GetCommit(_ context.Context, g, t string, p int32) (store.CommitRow, error) {
	m.reads++
	c, ok := m.commits[rowKey(g, t, p)]
	if !ok {
		return store.CommitRow{}, store.ErrNotFound
	}
	return c, nil
}

// TestPropertyCoalescing: for any batch and any lease and commit rows, dispatch invokes
// exactly the (subscription, partition) pairs of the batch whose group has no live lease
// and lags behind the batch's newest high watermark, each once, after one lease check
// per pair.
func TestPropertyCoalescing(t *testing.T) {
	now := time.Unix(1796092200, 0)
	topics := []string{"orders", "payments"}
	groups := []string{"billing", "audit"}
	rapid.Check(t, func(rt *rapid.T) {
		var subs []deploy.Subscription
		for _, tp := range topics {
			for _, g := range groups {
				if rapid.Bool().Draw(rt, "sub "+tp+"/"+g) {
					subs = append(subs, deploy.Subscription{Topic: tp, Group: g, Function: "fn-" + g})
				}
			}
		}
		leases := &memLeases{assignments: map[string]store.Assignment{}, commits: map[string]store.CommitRow{}}
		for _, tp := range topics {
			for _, g := range groups {
				for p := range int32(3) {
					k := rowKey(g, tp, p)
					switch rapid.IntRange(0, 2).Draw(rt, "lease "+k) {
					case 1: // live
						leases.assignments[k] = store.Assignment{Group: g, Topic: tp, Partition: p, Owner: "m", ExpiresAt: now.Add(time.Second)}
					case 2: // expired
						leases.assignments[k] = store.Assignment{Group: g, Topic: tp, Partition: p, Owner: "m", ExpiresAt: now.Add(-time.Second)}
					}
					if rapid.Bool().Draw(rt, "committed "+k) {
						leases.commits[k] = store.CommitRow{Group: g, Topic: tp, Partition: p, NextOffset: rapid.Int64Range(0, 20).Draw(rt, "commit "+k)}
					}
				}
			}
		}
		commits := rapid.SliceOfN(rapid.Custom(func(rt *rapid.T) dispatch.Commit {
			return dispatch.Commit{
				Topic:         rapid.SampledFrom(topics).Draw(rt, "topic"),
				Partition:     rapid.Int32Range(0, 2).Draw(rt, "partition"),
				HighWatermark: rapid.Int64Range(1, 20).Draw(rt, "hw"),
			}
		}), 0, 40).Draw(rt, "commits")

		inv := &recorder{}
		d, err := dispatch.New(dispatch.Config{Subscriptions: subs, Leases: leases, Invoker: inv, Clock: func() time.Time { return now }})
		if err != nil {
			rt.Fatal(err)
		}
		st, err := d.HandleCommits(context.Background(), commits)
		if err != nil {
			rt.Fatal(err)
		}

		newest := map[string]int64{}
		for _, c := range commits {
			k := fmt.Sprintf("%s|%d", c.Topic, c.Partition)
			newest[k] = max(newest[k], c.HighWatermark)
		}
		want := map[string]bool{}
		pairs := 0
		for _, s := range subs {
			for p := range int32(3) {
				hw, ok := newest[fmt.Sprintf("%s|%d", s.Topic, p)]
				if !ok {
					continue
				}
				pairs++
				k := rowKey(s.Group, s.Topic, p)
				if a, ok := leases.assignments[k]; ok && a.Live(now) {
					continue
				}
				if c, ok := leases.commits[k]; ok && c.NextOffset >= hw {
					continue
				}
				want[fmt.Sprintf("%s:%s/%s/%d", s.Function, s.Group, s.Topic, p)] = true
			}
		}
		got := map[string]bool{}
		for _, c := range inv.sorted() {
			if got[c] {
				rt.Fatalf("%s invoked twice in one batch", c)
			}
			got[c] = true
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			rt.Fatalf("invoked %v, want %v", got, want)
		}
		if st.LeaseChecks != pairs || st.Invocations != len(want) || st.Commits != len(commits) {
			rt.Fatalf("stats %+v: want %d lease checks, %d invocations", st, pairs, len(want))
		}
		if leases.reads > 2*pairs {
			rt.Fatalf("%d reads for %d pairs: at most a lease check and a commit read each", leases.reads, pairs)
		}
	})
}
