package kafka

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/ctxtime"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/kgroup"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// GroupBarriers is what the Kafka group APIs need of the store: each group's barrier
// row, and creating the group (with Strata's default settings) on its first JoinGroup.
type GroupBarriers interface {
	store.GroupBarrierStore
	EnsureGroup(ctx context.Context, cfg store.GroupConfig) (store.GroupConfig, error)
}

// Session timeout bounds (Kafka's group.min.session.timeout.ms and
// group.max.session.timeout.ms defaults).
const (
	DefaultMinSessionTimeout = 6 * time.Second
	DefaultMaxSessionTimeout = 30 * time.Minute
)

var (
	rebalanceInProgress   = kerr.RebalanceInProgress.Code
	inconsistentProtocol  = kerr.InconsistentGroupProtocol.Code
	invalidSessionTimeout = kerr.InvalidSessionTimeout.Code
	groupIDNotFound       = kerr.GroupIDNotFound.Code
	nonEmptyGroup         = kerr.NonEmptyGroup.Code
	groupSubscribed       = kerr.GroupSubscribedToTopic.Code
	// staticMembership answers a request carrying a group.instance.id: static
	// membership is not implemented, and Kafka has no code that says so.
	staticMembership = kerr.InvalidRequest.Code
)

// barrierAttempts bounds one step's compare-and-swap retries when gateways race.
const barrierAttempts = 64

// groupsReady is 0 when the group APIs can run.
func (s *Server) groupsReady() int16 {
	if s.cfg.Groups == nil || s.cfg.Barriers == nil {
		return coordinatorNotAvailable
	}
	return 0
}

// step reads the group's barrier, steps ev at the current time and stores the result
// when it changed, retrying on a lost race; before is the state it stepped from. A
// missing group is created first when create is set, else ErrNotFound.
func (s *Server) step(ctx context.Context, g string, ev kgroup.Event, create bool) (before, after kgroup.State, r kgroup.Result, err error) {
	for attempt := range barrierAttempts {
		b, err := s.cfg.Barriers.GetBarrier(ctx, g)
		if errors.Is(err, store.ErrNotFound) && create {
			if _, err := s.cfg.Barriers.EnsureGroup(ctx, store.GroupConfig{Name: g, ResetPolicy: group.DefaultResetPolicy,
				MaxAttempts: group.DefaultMaxAttempts, DeadLetterTopic: group.DefaultDeadLetterTopic, CreatedAt: time.Now()}); err != nil {
				return before, after, r, err
			}
			b, err = s.cfg.Barriers.GetBarrier(ctx, g)
		}
		if err != nil {
			return before, after, r, err
		}
		before, err = kgroup.Decode(b.State)
		if err != nil {
			return before, after, r, err
		}
		after, r = kgroup.Step(before, ev, time.Now())
		enc := after.Encode()
		if bytes.Equal(enc, before.Encode()) {
			return before, after, r, nil
		}
		_, err = s.cfg.Barriers.SwapBarrier(ctx, g, b.Version, enc)
		if !errors.Is(err, store.ErrBarrierConflict) {
			return before, after, r, err
		}
		if err := ctxtime.Sleep(ctx, time.Duration(attempt%8+1)*5*time.Millisecond); err != nil {
			return before, after, r, err
		}
	}
	return before, after, r, fmt.Errorf("kafka: group %q: %d gateways' writes won in a row: %w", g, barrierAttempts, store.ErrUnavailable)
}

// await polls the group (stepping time, so any gateway's poll closes a barrier whose
// deadline passed) with a growing backoff until done says so or until passes.
func (s *Server) await(ctx context.Context, g string, until time.Time, done func(kgroup.State) bool) (kgroup.State, error) {
	wait := 10 * time.Millisecond
	for {
		_, st, _, err := s.step(ctx, g, kgroup.Event{Kind: kgroup.Tick}, false)
		if err != nil || done(st) || !time.Now().Before(until) {
			return st, err
		}
		if err := ctxtime.Sleep(ctx, min(wait, time.Until(until)+time.Millisecond)); err != nil {
			return st, err
		}
		wait = min(2*wait, 250*time.Millisecond)
	}
}

func groupErr(err error) int16 {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return unknownMemberID
	case errors.Is(err, store.ErrBarrierTooLarge):
		return kerr.GroupMaxSizeReached.Code
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return rebalanceInProgress
	}
	return errCode(err)
}

func newMemberID(clientID string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	if len(clientID) > 100 {
		clientID = clientID[:100]
	}
	return clientID + "-" + hex.EncodeToString(b[:])
}

// joinGroup writes the member into the group's barrier and waits until the generation
// it joined has formed (every known member joined, or the rebalance timeout passed,
// whichever gateway's write saw it), then answers that generation; the leader also
// gets every member's metadata.
func (s *Server) joinGroup(ctx context.Context, clientID string, r *kmsg.JoinGroupRequest) kmsg.Response {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.SetVersion(r.Version)
	resp.Generation = -1
	fail := func(code int16) kmsg.Response { resp.ErrorCode = code; return resp }
	if code := s.groupsReady(); code != 0 {
		return fail(code)
	}
	if !wire.ValidGroup(r.Group) {
		return fail(invalidGroupID)
	}
	if r.InstanceID != nil {
		return fail(staticMembership)
	}
	session := time.Duration(r.SessionTimeoutMillis) * time.Millisecond
	rebalance := time.Duration(r.RebalanceTimeoutMillis) * time.Millisecond
	if r.Version == 0 {
		rebalance = session
	}
	if session < s.cfg.MinSessionTimeout || session > s.cfg.MaxSessionTimeout || rebalance <= 0 {
		return fail(invalidSessionTimeout)
	}
	// A barrier waits at most the longest session a member may have.
	rebalance = min(rebalance, s.cfg.MaxSessionTimeout)
	if code := s.strataMembers(ctx, r.Group); code != 0 {
		return fail(code)
	}
	ev := kgroup.Event{Kind: kgroup.Join, Member: r.MemberID, ProtocolType: r.ProtocolType, Session: session, Rebalance: rebalance}
	ev.ClientID = clientID
	if ev.Member == "" {
		ev.Member, ev.New = newMemberID(clientID), true
	}
	for _, p := range r.Protocols {
		ev.Protos = append(ev.Protos, kgroup.Protocol{Name: p.Name, Metadata: p.Metadata})
	}
	_, after, res, err := s.step(ctx, r.Group, ev, true)
	if err != nil {
		return fail(groupErr(err))
	}
	if res.Code != 0 {
		return fail(res.Code)
	}
	target := after.Generation
	if after.Phase == kgroup.Preparing {
		target++
	}
	until := after.RebalanceDeadline.Add(time.Second)
	if after.Phase != kgroup.Preparing {
		until = time.Now()
	}
	st, err := s.await(ctx, r.Group, until, func(st kgroup.State) bool { return st.Generation >= target })
	if err != nil {
		return fail(groupErr(err))
	}
	if st.Generation < target {
		return fail(rebalanceInProgress)
	}
	if _, ok := st.Member(ev.Member); !ok {
		return fail(unknownMemberID)
	}
	resp.Generation, resp.LeaderID, resp.MemberID = st.Generation, st.Leader, ev.Member
	resp.Protocol = kmsg.StringPtr(st.Protocol)
	resp.ProtocolType = kmsg.StringPtr(st.ProtocolType)
	if st.Leader == ev.Member {
		for _, m := range st.Members {
			rm := kmsg.NewJoinGroupResponseMember()
			rm.MemberID, rm.ProtocolMetadata = m.ID, m.Metadata(st.Protocol)
			resp.Members = append(resp.Members, rm)
		}
	}
	return resp
}

// strataMembers refuses a Kafka member into a group that Strata members (HTTP or SDK
// consumers, which heartbeat the group's member rows) are consuming: a group is either
// one or the other at a time.
func (s *Server) strataMembers(ctx context.Context, g string) int16 {
	ms, err := s.cfg.Groups.LiveMembers(ctx, g)
	if errors.Is(err, group.ErrNotFound) || errors.Is(err, store.ErrNotFound) {
		return 0
	}
	if err != nil {
		return errCode(err)
	}
	if len(ms) > 0 {
		return inconsistentProtocol
	}
	return 0
}

// syncGroup stores the leader's assignment and waits (any member) until the
// generation has one, then answers the member's part.
func (s *Server) syncGroup(ctx context.Context, r *kmsg.SyncGroupRequest) kmsg.Response {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.SetVersion(r.Version)
	fail := func(code int16) kmsg.Response { resp.ErrorCode = code; return resp }
	if code := s.groupsReady(); code != 0 {
		return fail(code)
	}
	if !wire.ValidGroup(r.Group) {
		return fail(invalidGroupID)
	}
	if r.InstanceID != nil {
		return fail(staticMembership)
	}
	ev := kgroup.Event{Kind: kgroup.Sync, Member: r.MemberID, Generation: r.Generation, Assignments: map[string][]byte{}}
	for _, a := range r.GroupAssignment {
		ev.Assignments[a.MemberID] = a.MemberAssignment
	}
	_, after, res, err := s.step(ctx, r.Group, ev, false)
	if err != nil {
		return fail(groupErr(err))
	}
	if res.Code != 0 {
		return fail(res.Code)
	}
	if (r.ProtocolType != nil && *r.ProtocolType != after.ProtocolType) || (r.Protocol != nil && *r.Protocol != after.Protocol) {
		return fail(inconsistentProtocol)
	}
	m, _ := after.Member(r.MemberID)
	st, err := s.await(ctx, r.Group, time.Now().Add(m.Session), func(st kgroup.State) bool {
		return st.Phase != kgroup.Completing || st.Generation != r.Generation
	})
	if err != nil {
		return fail(groupErr(err))
	}
	m, code := syncOutcome(st, r.MemberID, r.Generation)
	if code != 0 {
		return fail(code)
	}
	resp.MemberAssignment = m.Assignment
	if resp.MemberAssignment == nil {
		resp.MemberAssignment = []byte{}
	}
	resp.ProtocolType, resp.Protocol = kmsg.StringPtr(st.ProtocolType), kmsg.StringPtr(st.Protocol)
	return resp
}

// syncOutcome answers a SyncGroup of member at generation from the group's state once
// its wait ended: the member's part of a stable generation; REBALANCE_IN_PROGRESS when
// another generation formed meanwhile (whether or not it kept the member, as Kafka tells
// the members awaiting sync to join again), or when the leader's assignment is still
// missing; UNKNOWN_MEMBER_ID only for a member its own generation no longer has.
func syncOutcome(st kgroup.State, member string, generation int32) (kgroup.Member, int16) {
	if st.Generation != generation {
		return kgroup.Member{}, rebalanceInProgress
	}
	m, ok := st.Member(member)
	switch {
	case !ok:
		return kgroup.Member{}, unknownMemberID
	case st.Phase != kgroup.Stable:
		return kgroup.Member{}, rebalanceInProgress
	}
	return m, 0
}

// heartbeat renews the member's session; REBALANCE_IN_PROGRESS tells it to join again.
func (s *Server) heartbeat(ctx context.Context, r *kmsg.HeartbeatRequest) kmsg.Response {
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.SetVersion(r.Version)
	switch {
	case s.groupsReady() != 0:
		resp.ErrorCode = s.groupsReady()
	case !wire.ValidGroup(r.Group):
		resp.ErrorCode = invalidGroupID
	case r.InstanceID != nil:
		resp.ErrorCode = staticMembership
	default:
		_, _, res, err := s.step(ctx, r.Group, kgroup.Event{Kind: kgroup.Heartbeat, Member: r.MemberID, Generation: r.Generation}, false)
		resp.ErrorCode = res.Code
		if err != nil {
			resp.ErrorCode = groupErr(err)
		}
	}
	return resp
}

// leaveGroup removes members; those that stay form a new generation.
func (s *Server) leaveGroup(ctx context.Context, r *kmsg.LeaveGroupRequest) kmsg.Response {
	resp := kmsg.NewPtrLeaveGroupResponse()
	resp.SetVersion(r.Version)
	if code := s.groupsReady(); code != 0 {
		resp.ErrorCode = code
		return resp
	}
	if !wire.ValidGroup(r.Group) {
		resp.ErrorCode = invalidGroupID
		return resp
	}
	leave := func(id string) int16 {
		_, _, res, err := s.step(ctx, r.Group, kgroup.Event{Kind: kgroup.Leave, Member: id}, false)
		if err != nil {
			return groupErr(err)
		}
		return res.Code
	}
	if r.Version < 3 {
		resp.ErrorCode = leave(r.MemberID)
		return resp
	}
	for _, m := range r.Members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = m.MemberID, m.InstanceID
		if m.InstanceID != nil {
			rm.ErrorCode = staticMembership
		} else {
			rm.ErrorCode = leave(m.MemberID)
		}
		resp.Members = append(resp.Members, rm)
	}
	return resp
}

// barrierOf reads a group's Kafka membership; ok is false for an unknown group.
func (s *Server) barrierOf(ctx context.Context, g string) (kgroup.State, bool, error) {
	b, err := s.cfg.Barriers.GetBarrier(ctx, g)
	if errors.Is(err, store.ErrNotFound) {
		return kgroup.State{}, false, nil
	}
	if err != nil {
		return kgroup.State{}, false, err
	}
	st, err := kgroup.Decode(b.State)
	if err != nil {
		return kgroup.State{}, false, err
	}
	st, _ = kgroup.Step(st, kgroup.Event{Kind: kgroup.Tick}, time.Now())
	return st, true, nil
}

// listGroups lists every group, Strata's and Kafka's alike (a group Strata members
// consume shows as Empty, with no protocol type).
func (s *Server) listGroups(ctx context.Context, r *kmsg.ListGroupsRequest) kmsg.Response {
	resp := kmsg.NewPtrListGroupsResponse()
	resp.SetVersion(r.Version)
	if code := s.groupsReady(); code != 0 {
		resp.ErrorCode = code
		return resp
	}
	names, err := s.cfg.Groups.ListGroups(ctx)
	if err != nil {
		resp.ErrorCode = errCode(err)
		return resp
	}
	for _, name := range names {
		st, ok, err := s.barrierOf(ctx, name)
		if err != nil {
			resp.ErrorCode = errCode(err)
			return resp
		}
		if !ok {
			continue
		}
		if len(r.StatesFilter) > 0 && !slices.ContainsFunc(r.StatesFilter, func(f string) bool { return equalFold(f, st.Phase.String()) }) {
			continue
		}
		g := kmsg.NewListGroupsResponseGroup()
		g.Group, g.ProtocolType, g.GroupState, g.GroupType = name, st.ProtocolType, st.Phase.String(), "classic"
		resp.Groups = append(resp.Groups, g)
	}
	return resp
}

func equalFold(a, b string) bool { return bytes.EqualFold([]byte(a), []byte(b)) }

// describeGroups answers each group's membership; an unknown group is Dead, as Kafka
// answers.
func (s *Server) describeGroups(ctx context.Context, r *kmsg.DescribeGroupsRequest) kmsg.Response {
	resp := kmsg.NewPtrDescribeGroupsResponse()
	resp.SetVersion(r.Version)
	for _, name := range r.Groups {
		g := kmsg.NewDescribeGroupsResponseGroup()
		g.Group, g.AuthorizedOperations = name, math.MinInt32
		switch {
		case s.groupsReady() != 0:
			g.ErrorCode = s.groupsReady()
		case !wire.ValidGroup(name):
			g.ErrorCode = invalidGroupID
		default:
			st, ok, err := s.barrierOf(ctx, name)
			switch {
			case err != nil:
				g.ErrorCode = errCode(err)
			case !ok:
				g.State = "Dead"
			default:
				g.State, g.ProtocolType, g.Protocol = st.Phase.String(), st.ProtocolType, st.Protocol
				for _, m := range st.Members {
					rm := kmsg.NewDescribeGroupsResponseGroupMember()
					rm.MemberID, rm.ClientID, rm.ClientHost = m.ID, m.ClientID, m.Host
					rm.ProtocolMetadata, rm.MemberAssignment = m.Metadata(st.Protocol), m.Assignment
					if rm.ProtocolMetadata == nil {
						rm.ProtocolMetadata = []byte{}
					}
					if rm.MemberAssignment == nil {
						rm.MemberAssignment = []byte{}
					}
					g.Members = append(g.Members, rm)
				}
			}
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp
}

// deleteGroups deletes groups that have no members: Strata's DeleteGroup, which takes
// the barrier with the group's row.
func (s *Server) deleteGroups(ctx context.Context, r *kmsg.DeleteGroupsRequest) kmsg.Response {
	resp := kmsg.NewPtrDeleteGroupsResponse()
	resp.SetVersion(r.Version)
	for _, name := range r.Groups {
		g := kmsg.NewDeleteGroupsResponseGroup()
		g.Group = name
		g.ErrorCode = s.deleteGroup(ctx, name)
		resp.Groups = append(resp.Groups, g)
	}
	return resp
}

func (s *Server) deleteGroup(ctx context.Context, name string) int16 {
	if code := s.groupsReady(); code != 0 {
		return code
	}
	if !wire.ValidGroup(name) {
		return invalidGroupID
	}
	st, ok, err := s.barrierOf(ctx, name)
	switch {
	case err != nil:
		return errCode(err)
	case !ok:
		return groupIDNotFound
	case len(st.Members) > 0:
		return nonEmptyGroup
	}
	err = s.cfg.Groups.DeleteGroup(ctx, name)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, group.ErrNotFound), errors.Is(err, store.ErrNotFound):
		return groupIDNotFound
	case errors.Is(err, group.ErrGroupActive), errors.Is(err, store.ErrGroupActive):
		return nonEmptyGroup
	}
	return errCode(err)
}

// offsetDelete drops the group's commits on topics no member is subscribed to. Strata
// keeps positions per topic, so a request must name every partition of a topic;
// naming only some is INVALID_REQUEST and deletes nothing.
func (s *Server) offsetDelete(ctx context.Context, r *kmsg.OffsetDeleteRequest) kmsg.Response {
	resp := kmsg.NewPtrOffsetDeleteResponse()
	resp.SetVersion(r.Version)
	if code := s.groupsReady(); code != 0 {
		resp.ErrorCode = code
		return resp
	}
	if !wire.ValidGroup(r.Group) {
		resp.ErrorCode = invalidGroupID
		return resp
	}
	st, ok, err := s.barrierOf(ctx, r.Group)
	switch {
	case err != nil:
		resp.ErrorCode = errCode(err)
		return resp
	case !ok:
		resp.ErrorCode = groupIDNotFound
		return resp
	}
	for _, rt := range r.Topics {
		out := kmsg.NewOffsetDeleteResponseTopic()
		out.Topic = rt.Topic
		code := s.deleteTopicOffsets(ctx, r.Group, st, rt)
		for _, p := range rt.Partitions {
			op := kmsg.NewOffsetDeleteResponseTopicPartition()
			op.Partition, op.ErrorCode = p.Partition, code
			out.Partitions = append(out.Partitions, op)
		}
		resp.Topics = append(resp.Topics, out)
	}
	return resp
}

func (s *Server) deleteTopicOffsets(ctx context.Context, g string, st kgroup.State, rt kmsg.OffsetDeleteRequestTopic) int16 {
	if subscribed(st, rt.Topic) {
		return groupSubscribed
	}
	n, err := s.log.Partitions(ctx, rt.Topic)
	if err != nil {
		return errCode(err)
	}
	named := make(map[int32]bool, len(rt.Partitions))
	for _, p := range rt.Partitions {
		if p.Partition < 0 || p.Partition >= n {
			return unknownTopicOrPartition
		}
		named[p.Partition] = true
	}
	if int32(len(named)) != n {
		return invalidRequest
	}
	err = s.cfg.Groups.DeletePositions(ctx, g, rt.Topic)
	switch {
	case err == nil, errors.Is(err, group.ErrNotFound), errors.Is(err, store.ErrNotFound):
		return 0
	case errors.Is(err, group.ErrGroupActive), errors.Is(err, store.ErrGroupActive):
		return groupSubscribed
	}
	return errCode(err)
}

// subscribed reports whether a member of st may consume topic: a consumer-protocol
// member that names it in its subscription, or any member of another protocol type
// (whose metadata is opaque).
func subscribed(st kgroup.State, topic string) bool {
	for _, m := range st.Members {
		if st.ProtocolType != "consumer" {
			return true
		}
		for _, p := range m.Protos {
			var md kmsg.ConsumerMemberMetadata
			if err := md.ReadFrom(p.Metadata); err != nil || slices.Contains(md.Topics, topic) {
				return true
			}
		}
	}
	return false
}

// commitCheck is the membership check of an OffsetCommit: the member at its
// generation, or a commit made outside the group into a group without members.
func (s *Server) commitCheck(ctx context.Context, r *kmsg.OffsetCommitRequest) int16 {
	if r.InstanceID != nil {
		return staticMembership
	}
	if s.cfg.Barriers == nil {
		if r.MemberID != "" || r.Generation >= 0 {
			return unknownMemberID
		}
		return 0
	}
	st, _, err := s.barrierOf(ctx, r.Group)
	if err != nil {
		return errCode(err)
	}
	_, res := kgroup.Step(st, kgroup.Event{Kind: kgroup.Commit, Member: r.MemberID, Generation: r.Generation}, time.Now())
	return res.Code
}

// dispatchGroup runs the group membership APIs; ok is false for any other request.
func (s *Server) dispatchGroup(ctx context.Context, req kmsg.Request) (kmsg.Response, bool) {
	switch r := req.(type) {
	case *kmsg.JoinGroupRequest:
		return s.joinGroup(ctx, clientIDOf(ctx), r), true
	case *kmsg.SyncGroupRequest:
		return s.syncGroup(ctx, r), true
	case *kmsg.HeartbeatRequest:
		return s.heartbeat(ctx, r), true
	case *kmsg.LeaveGroupRequest:
		return s.leaveGroup(ctx, r), true
	case *kmsg.ListGroupsRequest:
		return s.listGroups(ctx, r), true
	case *kmsg.DescribeGroupsRequest:
		return s.describeGroups(ctx, r), true
	case *kmsg.DeleteGroupsRequest:
		return s.deleteGroups(ctx, r), true
	case *kmsg.OffsetDeleteRequest:
		return s.offsetDelete(ctx, r), true
	}
	return nil, false
}

// groupErrorResponse is errorResponse for the group membership APIs.
func groupErrorResponse(req kmsg.Request, resp kmsg.Response, code int16) kmsg.Response {
	switch r := req.(type) {
	case *kmsg.JoinGroupRequest:
		out := resp.(*kmsg.JoinGroupResponse)
		out.ErrorCode, out.Generation = code, -1
	case *kmsg.SyncGroupRequest:
		resp.(*kmsg.SyncGroupResponse).ErrorCode = code
	case *kmsg.HeartbeatRequest:
		resp.(*kmsg.HeartbeatResponse).ErrorCode = code
	case *kmsg.LeaveGroupRequest:
		resp.(*kmsg.LeaveGroupResponse).ErrorCode = code
	case *kmsg.ListGroupsRequest:
		resp.(*kmsg.ListGroupsResponse).ErrorCode = code
	case *kmsg.DescribeGroupsRequest:
		out := resp.(*kmsg.DescribeGroupsResponse)
		for _, g := range r.Groups {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, code
			out.Groups = append(out.Groups, rg)
		}
	case *kmsg.DeleteGroupsRequest:
		out := resp.(*kmsg.DeleteGroupsResponse)
		for _, g := range r.Groups {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, code
			out.Groups = append(out.Groups, rg)
		}
	case *kmsg.OffsetDeleteRequest:
		resp.(*kmsg.OffsetDeleteResponse).ErrorCode = code
	default:
		return nil
	}
	return resp
}

type clientIDKey struct{}

// withClientID carries a request's client id (its header's) to the group handlers.
func withClientID(ctx context.Context, id *string) context.Context {
	if id == nil {
		return ctx
	}
	return context.WithValue(ctx, clientIDKey{}, *id)
}

func clientIDOf(ctx context.Context) string {
	id, _ := ctx.Value(clientIDKey{}).(string)
	return id
}
