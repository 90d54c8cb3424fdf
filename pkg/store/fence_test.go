package store_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// held is n keys' fences of owner (two attempts of the first, so keys, not fences, count).
func held(owner string, n int) []store.RequestFence {
	var out []store.RequestFence
	for i := range n {
		out = append(out, store.RequestFence{Key: fmt.Sprintf("%s.%d", owner, i), Owner: owner, Attempt: 1})
	}
	if n > 0 {
		out = append(out, store.RequestFence{Key: owner + ".0", Owner: owner, Attempt: 2})
	}
	return out
}

// TestFenceRoom: a new key's fence finds room unless its owner holds OwnerFences keys
// or more while the topic holds Fences-OwnerFences (ErrFenceLimit: the last ones are
// the others'), or the topic holds Fences (ErrUnavailable); for the default limits
// (MaxFences, MaxOwnerFences) and smaller ones a test store may set.
func TestFenceRoom(t *testing.T) {
	for _, l := range []store.FenceLimits{{}, {Fences: 12, OwnerFences: 4}} {
		testFenceRoom(t, l)
	}
	if got := (store.FenceLimits{}).OrDefault(); got != (store.FenceLimits{Fences: store.MaxFences, OwnerFences: store.MaxOwnerFences}) {
		t.Errorf("the zero limits are %+v, want MaxFences and MaxOwnerFences", got)
	}
}

func testFenceRoom(t *testing.T, l store.FenceLimits) {
	share := l.Share()
	owners := l.OrDefault().OwnerFences
	join := func(fs ...[]store.RequestFence) []store.RequestFence {
		var out []store.RequestFence
		for _, f := range fs {
			out = append(out, f...)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		held  []store.RequestFence
		owner string
		want  error
	}{
		{"an empty topic", nil, "a", nil},
		{"an owner past its share while the topic has room", held("a", owners+1), "a", nil},
		{"an owner alone just below the topic's spare", held("a", share-1), "a", nil},
		{"an owner alone at the topic's spare", held("a", share), "a", store.ErrFenceLimit},
		{"another owner beside it", held("a", share), "b", nil},
		{"the in-process owner beside it", held("a", share), "", nil},
		{"an owner below its share on a nearly full topic", join(held("a", share), held("b", owners-1)), "b", nil},
		{"an owner at its share on a topic past the spare", join(held("a", share-owners), held("b", owners)), "b", store.ErrFenceLimit},
		{"a third owner on a topic two filled", join(held("a", share), held("b", owners)), "c", store.ErrUnavailable},
	} {
		err := l.Room(tc.held, store.RequestFence{Key: "new", Owner: tc.owner, Attempt: 1})
		if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("limits %+v, %s: Room = %v, want %v", l, tc.name, err, tc.want)
		}
	}
}

// TestFenceAttemptsMatchTheContract: the last attempt a store fences is the contract's,
// which the SDK's producer bounds its retries by.
func TestFenceAttemptsMatchTheContract(t *testing.T) {
	if store.MaxFenceAttempts != wire.MaxFencedAttempt {
		t.Fatalf("store.MaxFenceAttempts %d, wire.MaxFencedAttempt %d", store.MaxFenceAttempts, wire.MaxFencedAttempt)
	}
}
