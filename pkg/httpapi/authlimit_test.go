package httpapi

import (
	"fmt"
	"testing"
	"time"
)

// TestFailLimiterBounded: however many addresses fail, the limiter remembers at most
// MaxClients of them, and an address it forgot has a full bucket again (never a
// blocked one).
func TestFailLimiterBounded(t *testing.T) {
	f := newFailLimiter(AuthFailureLimit{FailuresPerSecond: 1, FailuresBurst: 2, MaxClients: 16})
	now := time.Unix(1000, 0)
	for i := range 10_000 {
		c := fmt.Sprintf("10.0.%d.%d", i/256, i%256)
		f.fail(c, now)
		f.fail(c, now)
		if n := f.size(); n > 16 {
			t.Fatalf("after %d clients the limiter holds %d, want at most 16", i+1, n)
		}
	}
	if f.blocked("10.0.39.15", "this address", now) == nil {
		t.Fatal("the last client to fail twice is not blocked")
	}
	if f.blocked("10.0.0.0", "this address", now) != nil {
		t.Fatal("a forgotten client is blocked")
	}
}
