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

// TestFenceRoom: a new key's fence finds room unless its owner holds MaxOwnerFences
// keys or more while the topic holds MaxFences-MaxOwnerFences (ErrFenceLimit: the last
// ones are the others'), or the topic holds MaxFences (ErrUnavailable).
func TestFenceRoom(t *testing.T) {
	share := store.MaxFences - store.MaxOwnerFences
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
		{"an owner past its share while the topic has room", held("a", store.MaxOwnerFences+10), "a", nil},
		{"an owner alone just below the topic's spare", held("a", share-1), "a", nil},
		{"an owner alone at the topic's spare", held("a", share), "a", store.ErrFenceLimit},
		{"another owner beside it", held("a", share), "b", nil},
		{"the in-process owner beside it", held("a", share), "", nil},
		{"an owner below its share on a nearly full topic", join(held("a", share), held("b", store.MaxOwnerFences-1)), "b", nil},
		{"an owner at its share on a topic past the spare", join(held("a", share-store.MaxOwnerFences), held("b", store.MaxOwnerFences)), "b", store.ErrFenceLimit},
		{"a third owner on a topic two filled", join(held("a", share), held("b", store.MaxOwnerFences)), "c", store.ErrUnavailable},
	} {
		err := store.FenceRoom(tc.held, store.RequestFence{Key: "new", Owner: tc.owner, Attempt: 1})
		if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: FenceRoom = %v, want %v", tc.name, err, tc.want)
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
