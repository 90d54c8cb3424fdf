package httpapi

import (
	"context"
	"encoding/base64"
	"net/http"

	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/wire"
)

// GroupParker is what the parked-key routes need of the coordinator: the group's
// parked keys and their release (*group.Coordinator implements it).
type GroupParker interface {
	ListParked(ctx context.Context, g string) ([]group.Parked, error)
	ReleaseParked(ctx context.Context, g, topic string, key []byte) ([]group.Parked, error)
}

var _ GroupParker = (*group.Coordinator)(nil)

// parkRoutes registers the parked-key routes when the server's groups can park.
func (s *server) parkRoutes() {
	if s.parker == nil {
		return
	}
	s.mux.HandleFunc("GET /v1/groups/{group}/parked", s.listParked)
	s.mux.HandleFunc("POST /v1/groups/{group}/parked/release", s.releaseParked)
}

func parkedJSON(rows []group.Parked) wire.ParkedList {
	out := wire.ParkedList{Parked: make([]wire.ParkedKey, len(rows))}
	for i, p := range rows {
		out.Parked[i] = wire.ParkedKey{Topic: p.Topic, Partition: p.Partition, Key: base64.StdEncoding.EncodeToString(p.Key),
			FirstOffset: p.FirstOffset, Records: p.Records, Error: p.Error, ParkedAtMs: p.ParkedAt.UnixMilli()}
		if !p.ReleaseRequested.IsZero() {
			ms := p.ReleaseRequested.UnixMilli()
			out.Parked[i].ReleaseRequestedAtMs = &ms
		}
	}
	return out
}

// listParked answers the group's parked keys; it needs describe on the group, and
// lists only the topics the caller may read.
func (s *server) listParked(w http.ResponseWriter, r *http.Request) {
	g := r.PathValue("group")
	p, ok := s.allow(w, r, onGroup(OpDescribe, g))
	if !ok {
		return
	}
	rows, err := s.parker.ListParked(r.Context(), g)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	visible := rows[:0]
	for _, row := range rows {
		if p.Allowed(OpRead, "topic:"+row.Topic) {
			visible = append(visible, row)
		}
	}
	writeJSON(w, http.StatusOK, parkedJSON(visible))
}

type parkedReleaseRequest struct {
	Topic *string `json:"topic"`
	Key   *string `json:"key"`
}

// releaseParked asks for a parked key's release; it needs reset on the group (a
// release hands records to the group's handler again) and read on the topic.
func (s *server) releaseParked(w http.ResponseWriter, r *http.Request) {
	g := r.PathValue("group")
	p, ok := s.allow(w, r, onGroup(OpReset, g))
	if !ok {
		return
	}
	var req parkedReleaseRequest
	if e := decodeBody(w, r, MaxSmallBody, &req); e != nil {
		writeError(w, e)
		return
	}
	if req.Topic == nil || req.Key == nil {
		writeError(w, missing("topic", "key"))
		return
	}
	key, e := decodeBase64("key", *req.Key)
	if e != nil {
		writeError(w, e)
		return
	}
	if len(key) > wire.MaxParkedKey {
		writeError(w, invalid(`"key" is longer than any parked key`))
		return
	}
	if e := authorize(p, onTopic(OpRead, *req.Topic)); e != nil {
		writeError(w, e)
		return
	}
	rows, err := s.parker.ReleaseParked(r.Context(), g, *req.Topic, key)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, parkedJSON(rows))
}
