package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// Members is what the member routes need of the group coordinator: the balancer's step
// for a member across the network, and leaving (*group.Coordinator implements it).
type Members interface {
	StepMember(ctx context.Context, g, topic, member string, ttl time.Duration, held []group.HeldLease) (group.MemberStepResult, error)
	LeaveMember(ctx context.Context, g, member string) error
}

var _ Members = (*group.Coordinator)(nil)

// maxHeld bounds the leases one heartbeat may claim: a topic has at most 1024 partitions.
const maxHeld = 1024

type heldLeaseJSON struct {
	Partition   *int32  `json:"partition"`
	Generation  *int64  `json:"generation"`
	Incarnation *string `json:"incarnation"`
}

type heartbeatRequest struct {
	Member *string         `json:"member"`
	TTLMs  *int64          `json:"ttl_ms"`
	Held   []heldLeaseJSON `json:"held"`
}

// The answers are the contract's shapes (pkg/wire).
type (
	memberLeaseJSON   = wire.MemberLease
	acquiredLeaseJSON = wire.AcquiredLease
	heartbeatResponse = wire.Assignment
)

type leaveRequest struct {
	Member *string `json:"member"`
}

// memberRoutes registers the member routes when the server has a Members.
func (s *server) memberRoutes() {
	if s.members == nil {
		return
	}
	s.mux.HandleFunc("POST /v1/groups/{group}/topics/{topic}/heartbeat", s.heartbeat)
	s.mux.HandleFunc("DELETE /v1/groups/{group}/members", s.leave)
	if _, ok := s.members.(MemberList); ok {
		s.mux.HandleFunc("GET /v1/groups/{group}/members", s.listMembers)
	}
}

// MemberList is what GET /v1/groups/{group}/members needs: the group's live members
// (*group.Coordinator implements it; ErrNotFound for an unknown group).
type MemberList interface {
	LiveMembers(ctx context.Context, g string) ([]store.Member, error)
}

var _ MemberList = (*group.Coordinator)(nil)

// listMembers answers the group's live members (the console shows them, with the
// partitions each holds from GET /v1/groups/{group}).
func (s *server) listMembers(w http.ResponseWriter, r *http.Request) {
	g := r.PathValue("group")
	if _, ok := s.allow(w, r, onGroup(OpDescribe, g)); !ok {
		return
	}
	ms, err := s.members.(MemberList).LiveMembers(r.Context(), g)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := wire.MemberList{Group: g, Members: make([]wire.LiveMember, 0, len(ms))}
	for _, m := range ms {
		out.Members = append(out.Members, wire.LiveMember{Member: m.ID, ExpiresAtMs: m.ExpiresAt.UnixMilli()})
	}
	writeJSON(w, http.StatusOK, out)
}

func leasesJSON(ls []group.Lease) []memberLeaseJSON {
	out := make([]memberLeaseJSON, len(ls))
	for i, l := range ls {
		out[i] = memberLeaseJSON{Partition: l.Partition, Generation: l.Generation, LeaseExpiresAtMs: l.ExpiresAt.UnixMilli(),
			Incarnation: l.Incarnation}
	}
	return out
}

// heartbeat is one balancer step of a member: heartbeat, renew what it holds, take its
// fair share of free partitions, name the extras to hand back.
func (s *server) heartbeat(w http.ResponseWriter, r *http.Request) {
	g, topic := r.PathValue("group"), r.PathValue("topic")
	if _, ok := s.allow(w, r, onGroup(OpConsume, g), onTopic(OpRead, topic)); !ok {
		return
	}
	var req heartbeatRequest
	if e := decodeBody(w, r, MaxSmallBody, &req); e != nil {
		writeError(w, e)
		return
	}
	if req.Member == nil {
		writeError(w, missing("member"))
		return
	}
	ttl, e := leaseTTL(req.TTLMs)
	if e != nil {
		writeError(w, e)
		return
	}
	if len(req.Held) > maxHeld {
		writeError(w, invalid(fmt.Sprintf(`"held" has %d leases, at most %d`, len(req.Held), maxHeld)))
		return
	}
	held := make([]group.HeldLease, len(req.Held))
	for i, h := range req.Held {
		if h.Partition == nil || h.Generation == nil {
			writeError(w, invalid(`every "held" lease needs "partition" and "generation"`))
			return
		}
		held[i] = group.HeldLease{Partition: *h.Partition, Generation: *h.Generation}
		if h.Incarnation != nil {
			if _, e := pinTopic(topic, h.Incarnation); e != nil {
				writeError(w, e)
				return
			}
			held[i].Incarnation = *h.Incarnation
		}
	}
	res, err := s.members.StepMember(r.Context(), g, topic, *req.Member, ttl, held)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := heartbeatResponse{
		Acquired: make([]acquiredLeaseJSON, len(res.Acquired)), Held: leasesJSON(res.Held),
		Lost: res.Lost, Release: make([]int32, len(res.Release)),
		LiveMembers: res.LiveMembers, FairShare: res.FairShare,
	}
	if out.Lost == nil {
		out.Lost = []int32{}
	}
	for i, l := range leasesJSON(res.Acquired) {
		out.Acquired[i] = acquiredLeaseJSON{MemberLease: l, CommittedOffset: res.Acquired[i].Committed,
			Completed: group.ToWire(res.Acquired[i].Completed)}
	}
	for i, l := range res.Release {
		out.Release[i] = l.Partition
	}
	writeJSON(w, http.StatusOK, out)
}

// leave removes a member from the group's live members.
func (s *server) leave(w http.ResponseWriter, r *http.Request) {
	g := r.PathValue("group")
	if _, ok := s.allow(w, r, onGroup(OpConsume, g)); !ok {
		return
	}
	var req leaveRequest
	if e := decodeBody(w, r, MaxSmallBody, &req); e != nil {
		writeError(w, e)
		return
	}
	if req.Member == nil {
		writeError(w, missing("member"))
		return
	}
	if err := s.members.LeaveMember(r.Context(), g, *req.Member); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// pollTopic is the topic a poll reads: the path's name, pinned to the incarnation the
// query names (a group member polls its lease's incarnation, and is fenced, 409, once
// that one is deleted, even when the name has a live one again). The path names a
// topic, never a store.TopicRef: a name no topic can have is not found, as it always
// was, and permissions are checked on the name.
func pollTopic(name string, q query) (string, *apiError) {
	if !wire.ValidName(name) {
		return "", &apiError{status: http.StatusNotFound, code: codeNotFound, message: fmt.Sprintf("topic %q not found", name)}
	}
	return pinTopic(name, q.str("incarnation"))
}
