package dynamo

import (
	"strings"
	"testing"

	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// TestGroupKeyHostile: a group id holding '#' never shares a group#topic key with
// another group and topic incarnation, and the ids of the earlier name rule keep
// their keys.
func TestGroupKeyHostile(t *testing.T) {
	if a, b := gtKey("a#b", "c"), gtKey("a", store.TopicID("b", "c")); a == b {
		t.Errorf("group a#b on c and group a on incarnation c of b share key %q", a)
	}
	if got := gtKey("orders-1.x_y", "t"); got != "orders-1.x_y#t" {
		t.Errorf("legacy group key changed: %q", got)
	}
	topic := store.TopicID(strings.Repeat("t", wire.MaxNameLength), strings.Repeat("i", 64))
	for _, g := range []string{strings.Repeat("#", wire.MaxGroupLength), strings.Repeat("\U0001F600", wire.MaxGroupLength)} {
		if long := gtKey(g, topic); len(long) > 2048 {
			t.Errorf("group#topic key of a %d-byte group is %d bytes, over DynamoDB's 2048", len(g), len(long))
		}
	}
}

// FuzzGroupKey: two (group, topic ID) pairs share a composite key only when they are
// the same pair.
func FuzzGroupKey(f *testing.F) {
	f.Add("a#b", "c", "a", "b#c")
	f.Add("%23", "t", "#", "t")
	f.Add("a%", "t", "a%25", "t")
	f.Fuzz(func(t *testing.T, g1, t1, g2, t2 string) {
		for _, tp := range []string{t1, t2} {
			name, inc := store.SplitTopicID(tp)
			if !wire.ValidName(name) || inc != "" && !store.ValidIncarnation(inc) || store.TopicID(name, inc) != tp {
				return
			}
		}
		if !wire.ValidGroup(g1) || !wire.ValidGroup(g2) {
			return
		}
		if gtKey(g1, t1) == gtKey(g2, t2) && (g1 != g2 || t1 != t2) {
			t.Fatalf("(%q, %q) and (%q, %q) share key %q", g1, t1, g2, t2, gtKey(g1, t1))
		}
		if strings.Contains(escapeGroup(g1), "#") {
			t.Fatalf("escaped group %q holds '#'", escapeGroup(g1))
		}
	})
}
