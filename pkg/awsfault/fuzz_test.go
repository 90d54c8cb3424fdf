package awsfault_test

import (
	"strings"
	"testing"

	"github.com/stratalog/strata/pkg/awsfault"
)

// FuzzParseFaults: STRATA_FAULT_KINDS never panics the parser; what it accepts is a list
// of valid faults that New takes and that prints back to an equivalent list.
func FuzzParseFaults(f *testing.F) {
	for _, s := range []string{"after/500", "before/throttle,after/timeout", " , ", "after", "x/y", "before/500,,after/throttle"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fs, err := awsfault.ParseFaults(s)
		if err != nil {
			return
		}
		if len(fs) > 0 {
			if _, err := awsfault.New(awsfault.Config{Rate: 0.5, Faults: fs}); err != nil {
				t.Fatalf("ParseFaults(%q) accepted %v, New refused it: %v", s, fs, err)
			}
		}
		parts := make([]string, len(fs))
		for i, f := range fs {
			parts[i] = f.String()
		}
		again, err := awsfault.ParseFaults(strings.Join(parts, ","))
		if err != nil || len(again) != len(fs) {
			t.Fatalf("round trip of %v: %v %v", fs, again, err)
		}
	})
}
