package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
)

// TopicAdmin is what the topic administration route needs of the log (*log.Log
// implements it).
type TopicAdmin interface {
	IncreasePartitions(ctx context.Context, name string, partitions int32) (store.Topic, error)
	SetRetentionPin(ctx context.Context, name string, pin time.Duration) (store.Topic, error)
	DeleteTopic(ctx context.Context, name string) error
}

var _ TopicAdmin = (*log.Log)(nil)

type alterTopicRequest struct {
	Partitions     *int32 `json:"partitions"`
	RetentionPinMs *int64 `json:"retention_pin_ms"`
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

// alterTopic raises a topic's partition count or sets its retention pin: one change per
// request, so a refused one changes nothing.
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
	var t store.Topic
	var err error
	switch {
	case (req.Partitions == nil) == (req.RetentionPinMs == nil):
		writeError(w, invalid(`exactly one of "partitions" and "retention_pin_ms" is required`))
		return
	case req.Partitions != nil:
		t, err = s.topics.IncreasePartitions(r.Context(), topic, *req.Partitions)
	default:
		pin, e := retentionPin(*req.RetentionPinMs)
		if e != nil {
			writeError(w, e)
			return
		}
		t, err = s.topics.SetRetentionPin(r.Context(), topic, pin)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, topicJSON(t))
}
