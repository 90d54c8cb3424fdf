// Package kgroup is Kafka's classic group protocol (JoinGroup, SyncGroup, Heartbeat,
// LeaveGroup) as a pure state machine: Step takes a group's state, one event and the
// time, and returns the next state and the answer, touching nothing else. The Kafka
// gateway keeps the state in the group's barrier row (store.GroupBarrierStore) and moves
// it by compare-and-swap, so members connected to different gateways meet at one
// barrier; time is an input, so every timeout is decided the same way wherever it is
// read.
package kgroup

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Phase is where a group is in its round of joining and syncing.
type Phase uint8

const (
	// Empty: no members.
	Empty Phase = iota
	// Preparing: a new generation is forming; members join until all known members have
	// or the rebalance deadline passes.
	Preparing
	// Completing: the generation is formed; members wait for the leader's assignment.
	Completing
	// Stable: the leader's assignment is stored; members heartbeat.
	Stable
)

// String is the phase's name in DescribeGroups and ListGroups.
func (p Phase) String() string {
	switch p {
	case Empty:
		return "Empty"
	case Preparing:
		return "PreparingRebalance"
	case Completing:
		return "CompletingRebalance"
	case Stable:
		return "Stable"
	}
	return fmt.Sprintf("Phase(%d)", uint8(p))
}

// Protocol is one assignor a member supports, with its opaque metadata.
type Protocol struct {
	Name     string `json:"n"`
	Metadata []byte `json:"m,omitempty"`
}

// Member is one member of the group.
type Member struct {
	ID       string     `json:"id"`
	ClientID string     `json:"c,omitempty"`
	Host     string     `json:"h,omitempty"`
	Protos   []Protocol `json:"p"`
	// Session and Rebalance are the member's timeouts.
	Session   time.Duration `json:"s"`
	Rebalance time.Duration `json:"r"`
	// Joined says the member has joined the generation forming (Preparing).
	Joined bool `json:"j,omitempty"`
	// Deadline is when the member's session ends unless it heartbeats (Completing and
	// Stable).
	Deadline time.Time `json:"d"`
	// Assignment is the leader's assignment of the member (Stable).
	Assignment []byte `json:"a,omitempty"`
}

// Metadata is the member's metadata of protocol name, nil when it has none.
func (m Member) Metadata(name string) []byte {
	for _, p := range m.Protos {
		if p.Name == name {
			return p.Metadata
		}
	}
	return nil
}

func (m Member) supports(name string) bool {
	return slices.ContainsFunc(m.Protos, func(p Protocol) bool { return p.Name == name })
}

// State is a group's membership: the barrier row's content.
type State struct {
	Generation   int32  `json:"g"`
	Phase        Phase  `json:"ph"`
	ProtocolType string `json:"pt,omitempty"`
	// Protocol is the assignor the generation chose (Completing and Stable).
	Protocol string `json:"pn,omitempty"`
	Leader   string `json:"l,omitempty"`
	// Members are ordered by ID.
	Members []Member `json:"ms,omitempty"`
	// RebalanceDeadline ends the forming generation's barrier (Preparing).
	RebalanceDeadline time.Time `json:"rd"`
}

// Member returns the member with id.
func (s State) Member(id string) (Member, bool) {
	i, ok := s.find(id)
	if !ok {
		return Member{}, false
	}
	return s.Members[i], true
}

func (s State) find(id string) (int, bool) {
	return slices.BinarySearchFunc(s.Members, id, func(m Member, id string) int {
		switch {
		case m.ID < id:
			return -1
		case m.ID > id:
			return 1
		}
		return 0
	})
}

// Encode is the state as the barrier row stores it.
func (s State) Encode() []byte {
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("kgroup: encode state: %v", err))
	}
	return b
}

// Decode reads a state Encode wrote; no bytes are the empty group.
func Decode(b []byte) (State, error) {
	var s State
	if len(b) == 0 {
		return s, nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&s); err != nil {
		return State{}, fmt.Errorf("kgroup: decode state: %w", err)
	}
	if s.Phase > Stable || !slices.IsSortedFunc(s.Members, func(a, b Member) int { return compareID(a.ID, b.ID) }) {
		return State{}, fmt.Errorf("kgroup: decode state: phase %d or member order is not valid", s.Phase)
	}
	for i := 1; i < len(s.Members); i++ {
		if s.Members[i].ID == s.Members[i-1].ID {
			return State{}, fmt.Errorf("kgroup: decode state: member %q twice", s.Members[i].ID)
		}
	}
	return s, nil
}

func compareID(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Kind names an event.
type Kind uint8

// Events.
const (
	// Tick only lets time pass: expired sessions and barriers.
	Tick Kind = iota
	// Join is a JoinGroup: Member (with a non-empty ID the caller made for a new member),
	// ProtocolType, Protos, Session and Rebalance.
	Join
	// Sync is a SyncGroup of Member at Generation; the leader's carries Assignments.
	Sync
	// Heartbeat is a Heartbeat of Member at Generation.
	Heartbeat
	// Leave is a LeaveGroup of Member.
	Leave
	// Commit is an OffsetCommit of Member at Generation (generation -1 and no member for
	// a commit made outside the group): checked, never changing the membership.
	Commit
)

// Event is one input of Step.
type Event struct {
	Kind         Kind
	Member       string
	ClientID     string
	Host         string
	ProtocolType string
	Protos       []Protocol
	Session      time.Duration
	Rebalance    time.Duration
	Generation   int32
	// New says Member is an id the caller made for a member that joined without one.
	New bool
	// Assignments is the leader's Sync: each member's assignment.
	Assignments map[string][]byte
}

// Result is Step's answer to its event: a Kafka error code (0 for none).
type Result struct {
	Code int16
}

// Error codes Step answers.
var (
	codeUnknownMember  = kerr.UnknownMemberID.Code
	codeIllegalGen     = kerr.IllegalGeneration.Code
	codeRebalance      = kerr.RebalanceInProgress.Code
	codeInconsistent   = kerr.InconsistentGroupProtocol.Code
	codeInvalidRequest = kerr.InvalidRequest.Code
)

// Step applies ev to s at now and returns the next state and the answer. It never
// changes s's slices in place. Time first takes its course: members of a formed
// generation whose session ended are removed (a new generation starts forming), and a
// forming generation whose rebalance deadline passed completes without those that did
// not join. A refused event changes nothing beyond that.
func Step(s State, ev Event, now time.Time) (State, Result) {
	s = clone(s)
	s = expire(s, now)
	switch ev.Kind {
	case Tick:
		return s, Result{}
	case Join:
		return join(s, ev, now)
	case Sync:
		return sync(s, ev, now)
	case Heartbeat:
		i, code := s.check(ev.Member, ev.Generation)
		if code != 0 {
			return s, Result{Code: code}
		}
		if s.Phase == Preparing {
			return s, Result{Code: codeRebalance}
		}
		s.Members[i].Deadline = now.Add(s.Members[i].Session)
		return s, Result{}
	case Leave:
		i, ok := s.find(ev.Member)
		if !ok {
			return s, Result{Code: codeUnknownMember}
		}
		s.Members = slices.Delete(s.Members, i, i+1)
		return afterRemoval(s, now), Result{}
	case Commit:
		if ev.Generation < 0 && ev.Member == "" {
			if len(s.Members) > 0 {
				return s, Result{Code: codeUnknownMember}
			}
			return s, Result{}
		}
		_, code := s.check(ev.Member, ev.Generation)
		if code == 0 && s.Phase == Completing {
			code = codeRebalance
		}
		return s, Result{Code: code}
	}
	return s, Result{Code: codeInvalidRequest}
}

// check finds a member at the current generation.
func (s State) check(id string, gen int32) (int, int16) {
	i, ok := s.find(id)
	if !ok {
		return 0, codeUnknownMember
	}
	if gen != s.Generation {
		return 0, codeIllegalGen
	}
	return i, 0
}

func join(s State, ev Event, now time.Time) (State, Result) {
	if ev.Member == "" || ev.ProtocolType == "" || len(ev.Protos) == 0 || ev.Session <= 0 || ev.Rebalance <= 0 {
		return s, Result{Code: codeInconsistent}
	}
	i, known := s.find(ev.Member)
	if !known && !ev.New && len(s.Members) > 0 {
		return s, Result{Code: codeUnknownMember}
	}
	others := slices.DeleteFunc(slices.Clone(s.Members), func(m Member) bool { return m.ID == ev.Member })
	if len(others) > 0 && (ev.ProtocolType != s.ProtocolType || !sharesProtocol(others, ev.Protos)) {
		return s, Result{Code: codeInconsistent}
	}
	m := Member{ID: ev.Member, ClientID: ev.ClientID, Host: ev.Host, Protos: slices.Clone(ev.Protos),
		Session: ev.Session, Rebalance: ev.Rebalance, Joined: true, Deadline: now.Add(ev.Session)}
	if known {
		s.Members[i] = m
	} else {
		s.Members = slices.Insert(s.Members, i, m)
	}
	s.ProtocolType = ev.ProtocolType
	if s.Phase != Preparing {
		s = prepare(s, now, ev.Member)
	}
	return completeIfReady(s, now), Result{}
}

// sharesProtocol reports whether one of protos is supported by every member of ms.
func sharesProtocol(ms []Member, protos []Protocol) bool {
	return slices.ContainsFunc(protos, func(p Protocol) bool {
		return !slices.ContainsFunc(ms, func(m Member) bool { return !m.supports(p.Name) })
	})
}

// prepare starts forming a new generation: every member but joined must join again
// before the longest rebalance timeout of the members passes.
func prepare(s State, now time.Time, joined string) State {
	var longest time.Duration
	for i := range s.Members {
		s.Members[i].Joined = s.Members[i].ID == joined
		s.Members[i].Assignment = nil
		longest = max(longest, s.Members[i].Rebalance)
	}
	s.Phase = Preparing
	s.RebalanceDeadline = now.Add(longest)
	return s
}

func completeIfReady(s State, now time.Time) State {
	if s.Phase != Preparing {
		return s
	}
	for _, m := range s.Members {
		if !m.Joined {
			return s
		}
	}
	return complete(s, now)
}

// complete closes the barrier: members that did not join are dropped, the generation
// advances by one, the leader (kept while it stays) and the assignor (the leader's first
// choice that every member supports) are chosen, and sessions start.
func complete(s State, now time.Time) State {
	s.Members = slices.DeleteFunc(s.Members, func(m Member) bool { return !m.Joined })
	s.Generation++
	s.RebalanceDeadline = time.Time{}
	if len(s.Members) == 0 {
		return empty(s)
	}
	if _, ok := s.find(s.Leader); !ok {
		s.Leader = s.Members[0].ID
	}
	leader, _ := s.Member(s.Leader)
	s.Protocol = leader.Protos[0].Name
	for _, p := range leader.Protos {
		if !slices.ContainsFunc(s.Members, func(m Member) bool { return !m.supports(p.Name) }) {
			s.Protocol = p.Name
			break
		}
	}
	for i := range s.Members {
		s.Members[i].Joined = false
		s.Members[i].Assignment = nil
		s.Members[i].Deadline = now.Add(s.Members[i].Session)
	}
	s.Phase = Completing
	return s
}

func empty(s State) State {
	s.Phase, s.Leader, s.Protocol, s.ProtocolType, s.Members, s.RebalanceDeadline = Empty, "", "", "", nil, time.Time{}
	return s
}

// afterRemoval is the state once members left or expired: empty, or a new generation
// forming among those that remain.
func afterRemoval(s State, now time.Time) State {
	if len(s.Members) == 0 {
		s.Generation++
		return empty(s)
	}
	if _, ok := s.find(s.Leader); !ok {
		s.Leader = ""
	}
	if s.Phase == Preparing {
		return completeIfReady(s, now)
	}
	return prepare(s, now, "")
}

func expire(s State, now time.Time) State {
	switch s.Phase {
	case Preparing:
		if !now.Before(s.RebalanceDeadline) {
			s = complete(s, now)
		}
	case Completing, Stable:
		n := len(s.Members)
		s.Members = slices.DeleteFunc(s.Members, func(m Member) bool { return !now.Before(m.Deadline) })
		if len(s.Members) < n {
			s = afterRemoval(s, now)
		}
	}
	return s
}

func sync(s State, ev Event, now time.Time) (State, Result) {
	i, code := s.check(ev.Member, ev.Generation)
	if code != 0 {
		return s, Result{Code: code}
	}
	if s.Phase == Preparing {
		return s, Result{Code: codeRebalance}
	}
	s.Members[i].Deadline = now.Add(s.Members[i].Session)
	if s.Phase == Completing && ev.Member == s.Leader {
		for j := range s.Members {
			s.Members[j].Assignment = slices.Clone(ev.Assignments[s.Members[j].ID])
		}
		s.Phase = Stable
	}
	return s, Result{}
}

func clone(s State) State {
	ms := make([]Member, len(s.Members))
	copy(ms, s.Members)
	s.Members = ms
	if len(ms) == 0 {
		s.Members = nil
	}
	return s
}

// LiveMembers counts the members of a stored state (Encode's bytes, nil for none) that
// are live at now, by the rules Step applies: a member past its session is gone, and a
// forming generation keeps every member until its rebalance deadline, then those that
// joined. Strata's own members read it to stay out of a group Kafka members hold.
func LiveMembers(b []byte, now time.Time) (int, error) {
	s, err := Decode(b)
	if err != nil {
		return 0, err
	}
	return len(expire(s, now).Members), nil
}
