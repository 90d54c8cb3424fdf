package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/wire"
)

// GroupAdmin is what the group administration routes need of the coordinator: group
// settings, the list of groups, dropping positions or the whole group, and per-partition resets
// (*group.Coordinator implements it).
type GroupAdmin interface {
	GetSettings(ctx context.Context, g string) (group.Settings, error)
	SetSettings(ctx context.Context, g string, s group.Settings) (group.Settings, error)
	ListGroups(ctx context.Context) ([]string, error)
	DeletePositions(ctx context.Context, g, topic string) error
	DeleteGroup(ctx context.Context, g string) error
	ResetPartitions(ctx context.Context, g, topic string, partitions []int32, to group.ResetTo) ([]group.PartitionOffset, error)
}

var _ GroupAdmin = (*group.Coordinator)(nil)

type settingsRequest struct {
	ResetPolicy     *string `json:"reset_policy"`
	MaxAttempts     *int    `json:"max_attempts"`
	DeadLetterTopic *string `json:"dead_letter_topic"`
	OnFailure       *string `json:"on_failure"`
}

// settingsResponse is the contract's shape (pkg/wire).
type settingsResponse = wire.GroupSettings

func settingsJSON(g string, s group.Settings) settingsResponse {
	out := settingsResponse{Group: g, ResetPolicy: s.ResetPolicy, MaxAttempts: s.MaxAttempts, OnFailure: s.OnFailure, CreatedAtMs: s.CreatedAt.UnixMilli()}
	if out.OnFailure == "" {
		out.OnFailure = group.DefaultOnFailure
	}
	if s.DeadLetterTopic != "" {
		d := s.DeadLetterTopic
		out.DeadLetterTopic = &d
	}
	return out
}

// adminRoutes registers the group administration routes when the server has a
// GroupAdmin.
func (s *server) adminRoutes() {
	if s.admin == nil {
		return
	}
	s.mux.HandleFunc("GET /v1/groups", s.listGroups)
	s.mux.HandleFunc("GET /v1/groups/{group}/settings", s.getSettings)
	s.mux.HandleFunc("PUT /v1/groups/{group}/settings", s.putSettings)
	s.mux.HandleFunc("DELETE /v1/groups/{group}/topics/{topic}/commits", s.deletePositions)
	s.mux.HandleFunc("DELETE /v1/groups/{group}", s.deleteGroup)
}

// deleteGroup removes a stopped group: settings, members and positions on every topic.
func (s *server) deleteGroup(w http.ResponseWriter, r *http.Request) {
	g := r.PathValue("group")
	if _, ok := s.allow(w, r, onGroup(OpDelete, g)); !ok {
		return
	}
	if err := s.admin.DeleteGroup(r.Context(), g); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// listGroups answers the groups the caller may describe.
func (s *server) listGroups(w http.ResponseWriter, r *http.Request) {
	p, ok := s.allow(w, r)
	if !ok {
		return
	}
	names, err := s.admin.ListGroups(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	visible := make([]string, 0, len(names))
	for _, n := range names {
		if p.Allowed(OpDescribe, "group:"+n) {
			visible = append(visible, n)
		}
	}
	writeJSON(w, http.StatusOK, wire.GroupList{Groups: visible})
}

func (s *server) getSettings(w http.ResponseWriter, r *http.Request) {
	g := r.PathValue("group")
	// A consumer reads its group's settings when a run starts: consume admits it as
	// describe does.
	p, e := s.authenticate(r)
	if e == nil && !p.Allowed(OpConsume, "group:"+g) {
		e = authorize(p, onGroup(OpDescribe, g))
	}
	if e != nil {
		writeError(w, e)
		return
	}
	st, err := s.admin.GetSettings(r.Context(), g)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, settingsJSON(g, st))
}

func (s *server) putSettings(w http.ResponseWriter, r *http.Request) {
	g := r.PathValue("group")
	p, ok := s.allow(w, r, onGroup(OpReset, g))
	if !ok {
		return
	}
	var req settingsRequest
	if e := decodeBody(w, r, MaxSmallBody, &req); e != nil {
		writeError(w, e)
		return
	}
	if req.ResetPolicy == nil || req.MaxAttempts == nil {
		writeError(w, missing("reset_policy", "max_attempts"))
		return
	}
	in := group.Settings{ResetPolicy: *req.ResetPolicy, MaxAttempts: *req.MaxAttempts}
	if req.DeadLetterTopic != nil {
		if *req.DeadLetterTopic == "" {
			writeError(w, invalid(`"dead_letter_topic" must be a topic name (absent for none)`))
			return
		}
		// Dead letters are appended to the topic: naming it needs the right to append
		// there, or a caller could redirect a group's dead letters into any topic and
		// learn from the answer whether a topic exists.
		if e := authorize(p, onTopic(OpAppend, *req.DeadLetterTopic)); e != nil {
			writeError(w, e)
			return
		}
		in.DeadLetterTopic = *req.DeadLetterTopic
	}
	if req.OnFailure != nil {
		switch *req.OnFailure {
		case group.OnFailureDeadLetter:
		case group.OnFailurePark:
			// Parked records are appended to the group's parking topic: naming it needs
			// the right to append there, and creating it when absent the right to
			// create it (without that a missing topic is refused, below).
			if e := authorize(p, onTopic(OpAppend, wire.ParkingTopic(g))); e != nil {
				writeError(w, e)
				return
			}
			in.ParkingTopicMustExist = authorize(p, onTopic(OpCreate, wire.ParkingTopic(g))) != nil
		default:
			writeError(w, invalid(`"on_failure" must be "dead_letter" or "park"`))
			return
		}
		in.OnFailure = *req.OnFailure
	}
	st, err := s.admin.SetSettings(r.Context(), g, in)
	if errors.Is(err, group.ErrParkingTopicMissing) {
		writeError(w, authorize(p, onTopic(OpCreate, wire.ParkingTopic(g))))
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, settingsJSON(g, st))
}

func (s *server) deletePositions(w http.ResponseWriter, r *http.Request) {
	g, topic := r.PathValue("group"), r.PathValue("topic")
	if _, ok := s.allow(w, r, onGroup(OpReset, g), onTopic(OpRead, topic)); !ok {
		return
	}
	if err := s.admin.DeletePositions(r.Context(), g, topic); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// resetPartitions serves a reset whose body lists "partitions".
func (s *server) resetPartitions(w http.ResponseWriter, r *http.Request, g, topic string, partitions []int32, to group.ResetTo) {
	if s.admin == nil {
		writeError(w, invalid(`"partitions" is not supported by this server`))
		return
	}
	if len(partitions) == 0 {
		writeError(w, invalid(`"partitions" must list at least one partition`))
		return
	}
	if len(partitions) > maxHeld {
		writeError(w, invalid(fmt.Sprintf(`"partitions" has %d entries, at most %d`, len(partitions), maxHeld)))
		return
	}
	offsets, err := s.admin.ResetPartitions(r.Context(), g, topic, partitions, to)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]resetPartition, len(offsets))
	for i, o := range offsets {
		out[i] = resetPartition{Partition: o.Partition, CommittedOffset: o.Offset}
	}
	writeJSON(w, http.StatusOK, wire.ResetResponse{Partitions: out})
}
