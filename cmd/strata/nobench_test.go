//go:build !bench

package main

import (
	"strings"
	"testing"
)

// TestBenchNotInTheUsersBinary: the binary users run has no
// benchmark drivers, and `strata bench` says how to build them.
func TestBenchNotInTheUsersBinary(t *testing.T) {
	_, errOut, code := runBin(t, "", "bench", "cost", "--plot-dir", "x")
	if code != 1 || !strings.Contains(errOut, "go run -tags bench ./cmd/strata bench cost --plot-dir x") {
		t.Fatalf("strata bench cost: exit %d, %q", code, errOut)
	}
	out, _, code := runBin(t, "", "--help")
	if code != 0 || !strings.Contains(out, "build with -tags bench") {
		t.Fatalf("strata --help: exit %d, %q", code, out)
	}
}
