package soak

import (
	"testing"
	"time"
)

// TestAuditFindsViolations: a clean history passes, and each kind of violation the
// soak asserts on is found in an otherwise clean one.
func TestAuditFindsViolations(t *testing.T) {
	t0 := time.Unix(1000, 0)
	rec := func(p int32, off int64, id string) Stored {
		return Stored{Partition: p, Offset: off, Key: []byte("k"), Value: []byte(id + "|x")}
	}
	ack := func(p int32, off int64, id string, idem bool) Ack {
		return Ack{ID: id, Partition: p, Offset: off, Key: []byte("k"), Value: []byte(id + "|x"), Idempotent: idem}
	}
	clean := func() Input {
		return Input{
			Acks:          []Ack{ack(0, 0, "a", false), ack(0, 1, "b", true)},
			Failed:        map[string]int{"c": 1},
			IdempotentIDs: map[string]bool{"b": true},
			Log:           []Stored{rec(0, 0, "a"), rec(0, 1, "b"), rec(0, 2, "c")},
			Grants:        []Grant{{"g", 0, 1, t0}, {"g", 0, 2, t0.Add(time.Second)}},
			Commits: []CommitCall{{"g", 0, "m1", 1, 2, t0.Add(500 * time.Millisecond), true},
				{"g", 0, "m1", 1, 3, t0.Add(2 * time.Second), false}, {"g", 0, "m2", 2, 3, t0.Add(3 * time.Second), true}},
			Deliveries:     []Delivery{{"g", 0, 0, "a"}, {"g", 0, 1, "b"}, {"g", 0, 2, "c"}, {"g", 0, 2, "c"}},
			Groups:         []string{"g"},
			Committed:      map[string]map[int32]int64{"g": {0: 3}},
			HighWatermarks: map[int32]int64{0: 3},
		}
	}
	if r := Audit(clean()); len(r.Violations) != 0 || r.Redeliveries != 1 || r.CommitsAccepted != 2 {
		t.Fatalf("clean history: %+v", r)
	}
	cases := []struct {
		name  string
		spoil func(*Input)
		check func(Report) bool
	}{
		{"lost ack", func(in *Input) { in.Log = in.Log[1:] }, func(r Report) bool { return r.LostAcked == 1 }},
		{"changed bytes", func(in *Input) { in.Log[0].Key = []byte("other") }, func(r Report) bool { return r.LostAcked == 1 }},
		{"reused offset", func(in *Input) { in.Acks = append(in.Acks, ack(0, 0, "z", false)) }, func(r Report) bool { return r.ReusedOffsets == 1 }},
		{"idempotent retry at other offsets", func(in *Input) { in.Acks = append(in.Acks, ack(0, 2, "b", true)) }, func(r Report) bool { return r.ReusedOffsets >= 1 }},
		{"unexplained duplicate", func(in *Input) { in.Log = append(in.Log, rec(0, 3, "a")) }, func(r Report) bool { return r.UnexplainedDups == 1 }},
		{"idempotent duplicate", func(in *Input) { in.Failed["b"] = 1; in.Log = append(in.Log, rec(0, 3, "b")) }, func(r Report) bool { return r.IdempotentDups == 1 }},
		{"obsolete commit", func(in *Input) { in.Commits[1].Accepted = true }, func(r Report) bool { return r.ObsoleteAccepted == 1 }},
		{"undelivered", func(in *Input) { in.Deliveries = in.Deliveries[:1] }, func(r Report) bool { return r.Undelivered == 2 }},
		{"phantom delivery", func(in *Input) { in.Deliveries = append(in.Deliveries, Delivery{"g", 0, 7, "q"}) }, func(r Report) bool { return r.PhantomDeliveries == 1 }},
		{"commit short of the high watermark", func(in *Input) { in.Committed["g"][0] = 2 }, func(r Report) bool { return true }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := clean()
			tc.spoil(&in)
			r := Audit(in)
			if len(r.Violations) == 0 || !tc.check(r) {
				t.Fatalf("not found: %+v", r)
			}
		})
	}
	// A duplicate explained by a failed attempt is not a violation.
	in := clean()
	in.Failed["a"] = 1
	in.Log = append(in.Log, rec(0, 3, "a"))
	in.Deliveries = append(in.Deliveries, Delivery{"g", 0, 3, "a"})
	in.HighWatermarks[0], in.Committed["g"][0] = 4, 4
	if r := Audit(in); len(r.Violations) != 0 || r.Duplicates != 1 {
		t.Fatalf("explained duplicate: %+v", r)
	}
}
