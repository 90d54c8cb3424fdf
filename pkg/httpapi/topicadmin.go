package httpapi

import (
	"context"
	"net/http"

	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
)

// TopicAdmin is what the topic administration route needs of the log (*log.Log
// implements it).
type TopicAdmin interface {
	IncreasePartitions(ctx context.Context, name string, partitions int32) (store.Topic, error)
	DeleteTopic(ctx context.Context, name string) error
}

var _ TopicAdmin = (*log.Log)(nil)

type alterTopicRequest struct {
	Partitions *int32 `json:"partitions"`
}

// topicAdminRoutes registers the topic administration routes when the log offers them.
func (s *server) topicAdminRoutes() {
	if s.topics == nil {
		return
	}
	s.mux.HandleFunc("PATCH /v1/topics/{topic}", s.alterTopic)
	s.mux.HandleFunc("DELETE /v1/topics/{topic}", s.deleteTopic)
}

// deleteTopic tombstones a topic; the retention pass removes its data.
func (s *server) deleteTopic(w http.ResponseWriter, r *http.Request) {
	topic := r.PathValue("topic")
	if _, ok := s.allow(w, r, onTopic(OpDelete, topic)); !ok {
		return
	}
	if err := s.topics.DeleteTopic(r.Context(), topic); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// alterTopic raises a topic's partition count.
func (s *server) alterTopic(w http.ResponseWriter, r *http.Request) {
	topic := r.PathValue("topic")
	if _, ok := s.allow(w, r, onTopic(OpAlter, topic)); !ok {
		return
	}
	var req alterTopicRequest
	if e := decodeBody(w, r, MaxSmallBody, &req); e != nil {
		writeError(w, e)
		return
	}
	if req.Partitions == nil {
		writeError(w, missing("partitions"))
		return
	}
	t, err := s.topics.IncreasePartitions(r.Context(), topic, *req.Partitions)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, topicResponse{Name: t.Name, Partitions: t.Partitions, RetentionMs: t.Retention.Milliseconds()})
}
