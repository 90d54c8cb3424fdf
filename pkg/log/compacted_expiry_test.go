package log

import (
	"testing"
	"time"

	"github.com/stratalog/strata/pkg/store"
)

// TestCompactOnlyEntriesHaveNoTTL: an index entry of a compact-only topic is kept for
// ever (no TTL, whatever the deployment's maximum retention); one of a topic that also
// deletes by time keeps the TTL at the maximum retention plus the grace.
func TestCompactOnlyEntriesHaveNoTTL(t *testing.T) {
	l := &Log{defaults: TopicDefaults{MaxRetention: 7 * 24 * time.Hour}}
	at := time.UnixMilli(1_780_000_000_000)
	for _, tc := range []struct {
		cleanup store.CleanupPolicy
		none    bool
	}{{store.CleanupCompact, true}, {store.CleanupCompactDelete, false}, {store.CleanupDelete, false}, {"", false}} {
		got := l.entryExpiry(store.Topic{Retention: time.Hour, Cleanup: tc.cleanup}, at)
		if got.IsZero() != tc.none {
			t.Errorf("cleanup %q: entry expiry %v, want none %v", tc.cleanup, got, tc.none)
		}
	}
}
