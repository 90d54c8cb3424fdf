package httpapi

import "testing"

// TestInflightHoldGrows: an append holds what arrived of its body; bytes that would
// take the server or the principal past its bound are refused (503, 429) while
// another append holds bytes there, admitted when the append is alone; release gives
// everything back, and a refused or released hold holds nothing more.
func TestInflightHoldGrows(t *testing.T) {
	f := newInflight(InflightLimit{ServerBytes: 100, PrincipalBytes: 60})
	a := f.hold("alice")
	if e := a.grow(150); e != nil {
		t.Fatalf("an append alone past both bounds: %v, want admitted", e)
	}
	b := f.hold("bob")
	if e := b.grow(1); e == nil || e.status != 503 {
		t.Fatalf("bob while the server holds 150 of 100: %v, want 503", e)
	}
	a.release()
	a.release()
	if f.total != 0 || len(f.by) != 0 {
		t.Fatalf("after release: total %d, by %v", f.total, f.by)
	}
	if e := a.grow(10); e != nil || f.total != 0 {
		t.Fatalf("a released hold grew: %v, total %d", e, f.total)
	}
	for _, step := range []struct {
		h      *inflightHold
		n      int64
		status int
	}{
		{b, 40, 0},
		{f.hold("bob"), 30, 429}, // bob's second append: 70 of 60
		{f.hold("carol"), 50, 0}, // the server: 90 of 100
		{b, 20, 503},             // 110 of 100
		{f.hold("dave"), 10, 0},  // 100 of 100
	} {
		e := step.h.grow(step.n)
		switch {
		case step.status == 0 && e != nil:
			t.Fatalf("%s +%d: %v, want admitted", step.h.principal, step.n, e)
		case step.status != 0 && (e == nil || e.status != step.status):
			t.Fatalf("%s +%d: %v, want %d", step.h.principal, step.n, e, step.status)
		}
	}
	if f.total != 100 || f.by["bob"] != 40 {
		t.Fatalf("held: total %d, by %v; want 100, bob 40", f.total, f.by)
	}
}
