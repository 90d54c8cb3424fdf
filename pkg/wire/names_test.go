package wire

import (
	"strings"
	"testing"
)

// TestValidName: the name rule as docs/API.md states it, at its edges.
func TestValidName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"orders", true},
		{"A", true},
		{"9.a_b-c", true},
		{strings.Repeat("a", MaxNameLength), true},
		{strings.Repeat("a", MaxNameLength+1), false},
		{"", false},
		{".orders", false},
		{"-orders", false},
		{"_orders", false},
		{"a/b", false},
		{"a#1", false},
		{"a b", false},
		{"ä", false},
		{"orders\n", false},
	} {
		if got := ValidName(tc.name); got != tc.ok {
			t.Errorf("ValidName(%q) = %v, want %v", tc.name, got, tc.ok)
		}
	}
}
