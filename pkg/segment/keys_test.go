package segment_test

import (
	"testing"

	"github.com/oklog/ulid/v2"

	"github.com/stratalog/strata/pkg/segment"
)

// TestObjectKeysOfIncarnationsNeverMix: a key is an object of exactly one prefix, so a
// retention pass over one incarnation (or the legacy layout) never takes another's.
func TestObjectKeysOfIncarnationsNeverMix(t *testing.T) {
	id := ulid.MustParse("01J0000000000000000000000A")
	prefixes := []string{
		segment.ObjectPrefix("orders", ""),
		segment.ObjectPrefix("orders", "01j2abcdefghjkmnpqrstvwxyz"),
		segment.ObjectPrefix("orders", "01j2abcdefghjkmnpqrstvwxy0"),
		segment.ObjectPrefix("orders.eu", ""),
		segment.ObjectPrefix("Orders", ""),
	}
	for i, owner := range prefixes {
		key := owner + id.String()
		for j, p := range prefixes {
			got, ok := segment.ObjectID(p, key)
			if want := i == j; ok != want || (ok && got != id) {
				t.Errorf("ObjectID(%q, %q) = %v, %v; want ok=%v", p, key, got, ok, want)
			}
		}
	}
	if got := segment.ObjectKey("orders", "inc", id); got != "v1/orders/inc/"+id.String() {
		t.Fatalf("ObjectKey = %q", got)
	}
	if got := segment.ObjectKey("orders", "", id); got != "v1/orders/"+id.String() {
		t.Fatalf("legacy ObjectKey = %q", got)
	}
}
