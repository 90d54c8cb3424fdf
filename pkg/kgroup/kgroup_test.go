package kgroup

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

var t0 = time.UnixMilli(1_800_000_000_000).UTC()

func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

func joinEv(id string, protos ...string) Event {
	ev := Event{Kind: Join, Member: id, New: true, ProtocolType: "consumer", Session: 10 * time.Second, Rebalance: 20 * time.Second}
	for _, p := range protos {
		ev.Protos = append(ev.Protos, Protocol{Name: p, Metadata: []byte("md-" + id)})
	}
	if len(protos) == 0 {
		ev.Protos = []Protocol{{Name: "range", Metadata: []byte("md-" + id)}}
	}
	return ev
}

// run applies evs at their times and returns the state and the last answer.
type at struct {
	ev  Event
	now time.Time
}

func run(steps ...at) (State, Result) {
	var s State
	var r Result
	for _, st := range steps {
		s, r = Step(s, st.ev, st.now)
	}
	return s, r
}

// TestStepTable: the protocol's transitions, one scenario a row.
func TestStepTable(t *testing.T) {
	two := []at{{joinEv("a"), ms(0)}, {joinEv("b"), ms(10)}}
	for _, tc := range []struct {
		name   string
		steps  []at
		code   int16
		gen    int32
		phase  Phase
		leader string
		ids    []string
	}{
		{"first join forms generation 1 at once", []at{{joinEv("a"), ms(0)}}, 0, 1, Completing, "a", []string{"a"}},
		{"second join opens a barrier", two, 0, 1, Preparing, "a", []string{"a", "b"}},
		{"the barrier closes when every member joined", append(two, at{joinEv("a"), ms(20)}), 0, 2, Completing, "a", []string{"a", "b"}},
		{"the rebalance deadline drops who did not join", append(two, at{Event{Kind: Tick}, ms(10 + 20_000)}), 0, 2, Completing, "b", []string{"b"}},
		{"before the deadline nobody is dropped", append(two, at{Event{Kind: Tick}, ms(10 + 19_999)}), 0, 1, Preparing, "a", []string{"a", "b"}},
		{"heartbeat while forming is REBALANCE_IN_PROGRESS", append(two, at{Event{Kind: Heartbeat, Member: "a", Generation: 1}, ms(20)}), codeRebalance, 1, Preparing, "a", []string{"a", "b"}},
		{"heartbeat of a stale generation is ILLEGAL_GENERATION", []at{{joinEv("a"), ms(0)}, {Event{Kind: Heartbeat, Member: "a", Generation: 0}, ms(5)}}, codeIllegalGen, 1, Completing, "a", []string{"a"}},
		{"heartbeat of an unknown member is UNKNOWN_MEMBER_ID", []at{{joinEv("a"), ms(0)}, {Event{Kind: Heartbeat, Member: "x", Generation: 1}, ms(5)}}, codeUnknownMember, 1, Completing, "a", []string{"a"}},
		{"leader's sync makes the group stable", []at{{joinEv("a"), ms(0)}, {Event{Kind: Sync, Member: "a", Generation: 1, Assignments: map[string][]byte{"a": []byte("p0")}}, ms(5)}}, 0, 1, Stable, "a", []string{"a"}},
		{"a session that ends removes the member", []at{{joinEv("a"), ms(0)}, {Event{Kind: Tick}, ms(10_000)}}, 0, 2, Empty, "", nil},
		{"leave of the last member empties the group", []at{{joinEv("a"), ms(0)}, {Event{Kind: Leave, Member: "a"}, ms(5)}}, 0, 2, Empty, "", nil},
		{"leave starts a new generation for the rest", append(append(two, at{joinEv("a"), ms(20)}), at{Event{Kind: Leave, Member: "a"}, ms(30)}), 0, 2, Preparing, "", []string{"b"}},
		{"the rest forms it by joining again", append(append(two, at{joinEv("a"), ms(20)}), at{Event{Kind: Leave, Member: "a"}, ms(30)}, at{joinEv("b"), ms(40)}), 0, 3, Completing, "b", []string{"b"}},
		{"another protocol type is refused", []at{{joinEv("a"), ms(0)}, {func() Event { e := joinEv("b"); e.ProtocolType = "connect"; return e }(), ms(5)}}, codeInconsistent, 1, Completing, "a", []string{"a"}},
		{"no common assignor is refused", []at{{joinEv("a", "range"), ms(0)}, {joinEv("b", "sticky"), ms(5)}}, codeInconsistent, 1, Completing, "a", []string{"a"}},
		{"a made-up member id is UNKNOWN_MEMBER_ID", []at{{joinEv("a"), ms(0)}, {func() Event { e := joinEv("b"); e.New = false; return e }(), ms(5)}}, codeUnknownMember, 1, Completing, "a", []string{"a"}},
		{"commit of the generation is accepted", []at{{joinEv("a"), ms(0)}, {Event{Kind: Sync, Member: "a", Generation: 1}, ms(1)}, {Event{Kind: Commit, Member: "a", Generation: 1}, ms(5)}}, 0, 1, Stable, "a", []string{"a"}},
		{"commit of an older generation is ILLEGAL_GENERATION", append(append(two, at{joinEv("a"), ms(20)}), at{Event{Kind: Commit, Member: "a", Generation: 1}, ms(30)}), codeIllegalGen, 2, Completing, "a", []string{"a", "b"}},
		{"commit awaiting the assignment is REBALANCE_IN_PROGRESS", []at{{joinEv("a"), ms(0)}, {Event{Kind: Commit, Member: "a", Generation: 1}, ms(5)}}, codeRebalance, 1, Completing, "a", []string{"a"}},
		{"commit outside the group into a non-empty one is UNKNOWN_MEMBER_ID", []at{{joinEv("a"), ms(0)}, {Event{Kind: Commit, Generation: -1}, ms(5)}}, codeUnknownMember, 1, Completing, "a", []string{"a"}},
		{"commit outside the group into an empty one is accepted", []at{{Event{Kind: Commit, Generation: -1}, ms(5)}}, 0, 0, Empty, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, r := run(tc.steps...)
			var ids []string
			for _, m := range s.Members {
				ids = append(ids, m.ID)
			}
			if r.Code != tc.code || s.Generation != tc.gen || s.Phase != tc.phase || s.Leader != tc.leader || !slices.Equal(ids, tc.ids) {
				t.Fatalf("code %d gen %d %s leader %q members %v; want code %d gen %d %s leader %q members %v",
					r.Code, s.Generation, s.Phase, s.Leader, ids, tc.code, tc.gen, tc.phase, tc.leader, tc.ids)
			}
		})
	}
}

// TestProtocolChoice: the leader's first choice that every member supports wins.
func TestProtocolChoice(t *testing.T) {
	s, _ := run(at{joinEv("a", "cooperative-sticky", "range"), ms(0)}, at{joinEv("b", "range"), ms(1)}, at{joinEv("a", "cooperative-sticky", "range"), ms(2)})
	if s.Phase != Completing || s.Protocol != "range" {
		t.Fatalf("protocol %q in %s, want range chosen", s.Protocol, s.Phase)
	}
}

// TestEncodeRoundTrip: a state survives the barrier row.
func TestEncodeRoundTrip(t *testing.T) {
	s, _ := run(at{joinEv("a"), ms(0)}, at{joinEv("b"), ms(1)})
	got, err := Decode(s.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Encode(), s.Encode()) {
		t.Fatalf("round trip changed the state:\n%s\n%s", got.Encode(), s.Encode())
	}
	if _, err := Decode([]byte(`{"g":1,"ms":[{"id":"b"},{"id":"a"}]}`)); err == nil {
		t.Fatal("Decode took members out of order")
	}
}

// FuzzDecode: any bytes decode to a state or an error, and a decoded state encodes back
// to a state that decodes alike.
func FuzzDecode(f *testing.F) {
	s, _ := run(at{joinEv("a"), ms(0)}, at{joinEv("b"), ms(1)})
	f.Add(s.Encode())
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Decode(b)
		if err != nil {
			return
		}
		again, err := Decode(s.Encode())
		if err != nil || !bytes.Equal(again.Encode(), s.Encode()) {
			t.Fatalf("re-decoding %q: %v", s.Encode(), err)
		}
	})
}

// TestStepProperties drives random members through random events and time and checks
// the protocol's invariants after every step.
func TestStepProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ids := []string{"m0", "m1", "m2", "m3"}
		var s State
		now := t0
		// assigned remembers the leader's assignment of each generation made stable.
		for range rapid.IntRange(1, 60).Draw(t, "steps") {
			now = now.Add(time.Duration(rapid.IntRange(0, 12_000).Draw(t, "dt")) * time.Millisecond)
			id := rapid.SampledFrom(ids).Draw(t, "member")
			gen := s.Generation - int32(rapid.IntRange(0, 1).Draw(t, "stale"))
			var ev Event
			switch rapid.IntRange(0, 5).Draw(t, "kind") {
			case 0:
				ev = joinEv(id)
				ev.Session = time.Duration(rapid.IntRange(1, 15).Draw(t, "session")) * time.Second
			case 1:
				ev = Event{Kind: Sync, Member: id, Generation: gen, Assignments: map[string][]byte{}}
				for _, m := range ids {
					ev.Assignments[m] = []byte("gen" + string(rune('0'+gen%10)) + "-" + m)
				}
			case 2:
				ev = Event{Kind: Heartbeat, Member: id, Generation: gen}
			case 3:
				ev = Event{Kind: Leave, Member: id}
			case 4:
				ev = Event{Kind: Commit, Member: id, Generation: gen}
			default:
				ev = Event{Kind: Tick}
			}
			before := s
			expired := expire(clone(before), now)
			next, r := Step(before, ev, now)

			// One generation at a time: it never goes back and moves by at most one
			// completion of the barrier beyond what time alone does.
			if next.Generation < before.Generation || next.Generation > before.Generation+2 {
				t.Fatalf("generation %d -> %d", before.Generation, next.Generation)
			}
			if ev.Kind != Join && ev.Kind != Leave && next.Generation > expired.Generation+1 {
				t.Fatalf("%v moved the generation from %d to %d", ev.Kind, expired.Generation, next.Generation)
			}
			// A member whose session ended is gone.
			if before.Phase == Completing || before.Phase == Stable {
				for _, m := range before.Members {
					if !now.Before(m.Deadline) && !(ev.Kind == Join && ev.Member == m.ID) {
						if _, ok := next.Member(m.ID); ok {
							t.Fatalf("member %s whose session ended at %v is still in at %v", m.ID, m.Deadline, now)
						}
					}
				}
			}
			// A stale generation is refused and changes nothing but what time does.
			if (ev.Kind == Sync || ev.Kind == Heartbeat || ev.Kind == Commit) && ev.Generation != expired.Generation {
				if _, known := expired.Member(ev.Member); known && r.Code != codeIllegalGen {
					t.Fatalf("%v of generation %d at generation %d answered %d", ev.Kind, ev.Generation, expired.Generation, r.Code)
				}
				if !bytes.Equal(next.Encode(), expired.Encode()) {
					t.Fatalf("a refused %v changed the state", ev.Kind)
				}
			}
			// Shape: members ordered, the leader a member of a formed generation.
			if !slices.IsSortedFunc(next.Members, func(a, b Member) int { return compareID(a.ID, b.ID) }) {
				t.Fatalf("members out of order")
			}
			if (next.Phase == Empty) != (len(next.Members) == 0) {
				t.Fatalf("phase %s with %d members", next.Phase, len(next.Members))
			}
			if next.Phase == Completing || next.Phase == Stable {
				if _, ok := next.Member(next.Leader); !ok {
					t.Fatalf("leader %q is not a member", next.Leader)
				}
				if !slices.ContainsFunc(next.Members, func(m Member) bool { return m.supports(next.Protocol) }) {
					t.Fatalf("protocol %q nobody supports", next.Protocol)
				}
			}
			// Every member of a stable generation has the leader's assignment of it.
			if next.Phase == Stable && before.Phase == Completing && ev.Kind == Sync && r.Code == 0 && next.Generation == ev.Generation && ev.Member == next.Leader {
				for _, m := range next.Members {
					if !bytes.Equal(m.Assignment, ev.Assignments[m.ID]) {
						t.Fatalf("member %s has %q, leader assigned %q", m.ID, m.Assignment, ev.Assignments[m.ID])
					}
				}
			}
			got, err := Decode(next.Encode())
			if err != nil || !bytes.Equal(got.Encode(), next.Encode()) {
				t.Fatalf("state does not round-trip: %v", err)
			}
			s = next
		}
	})
}
