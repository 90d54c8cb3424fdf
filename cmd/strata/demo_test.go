package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestDemoSmall runs the demo end to end at a tenth of its size: every record reaches
// billing's sink exactly once and in order per order, the kill causes a replay, the
// zombie is fenced, and nothing is lost.
func TestDemoSmall(t *testing.T) {
	var out bytes.Buffer
	size := demoSize{Events: 10_000, Orders: 100, ValueBytes: 1_000, KillAfter: 500}
	if err := runDemoSize(context.Background(), &out, nil, size); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Log(out.String())
	// Not a terminal: no progress frames in the output.
	if strings.Contains(out.String(), "\r") || strings.Contains(out.String(), "events/s") {
		t.Errorf("the demo wrote progress frames to a non-terminal:\n%q", out.String())
	}
	for _, want := range []string{"killed billing-0 mid-batch", "took partition 0 over", "its commit got 409 fenced", "its business write was refused as fenced", "zombie business writes refused    1", "records lost                      0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
