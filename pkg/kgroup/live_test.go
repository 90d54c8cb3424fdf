package kgroup

import (
	"testing"
	"time"
)

// TestLiveMembers: the members Strata counts as Kafka's are the ones Step would keep at
// that time: a stable member until its session ends, a forming generation's members
// until its rebalance deadline, then those that joined.
func TestLiveMembers(t *testing.T) {
	t0 := time.Unix(1000, 0)
	stable := State{Generation: 1, Phase: Stable, ProtocolType: "consumer", Protocol: "range", Leader: "a",
		Members: []Member{{ID: "a", Protos: []Protocol{{Name: "range"}}, Session: time.Second, Rebalance: time.Second, Deadline: t0.Add(time.Second)}}}
	forming := State{Generation: 1, Phase: Preparing, ProtocolType: "consumer", RebalanceDeadline: t0.Add(time.Second),
		Members: []Member{
			{ID: "a", Protos: []Protocol{{Name: "range"}}, Session: time.Second, Rebalance: time.Second, Joined: true},
			{ID: "b", Protos: []Protocol{{Name: "range"}}, Session: time.Second, Rebalance: time.Second},
		}}
	for _, tc := range []struct {
		name  string
		state []byte
		at    time.Time
		want  int
	}{
		{"no barrier", nil, t0, 0},
		{"empty", State{Generation: 3}.Encode(), t0, 0},
		{"stable, in session", stable.Encode(), t0, 1},
		{"stable, session ended", stable.Encode(), t0.Add(time.Second), 0},
		{"forming, before deadline", forming.Encode(), t0, 2},
		{"forming, after deadline: the joined", forming.Encode(), t0.Add(time.Second), 1},
	} {
		got, err := LiveMembers(tc.state, tc.at)
		if err != nil || got != tc.want {
			t.Errorf("%s: LiveMembers = %d, %v; want %d", tc.name, got, err, tc.want)
		}
	}
	if _, err := LiveMembers([]byte("{bad"), t0); err == nil {
		t.Error("a corrupt barrier decoded")
	}
}
