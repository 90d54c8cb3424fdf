package httpapi

import (
	"context"
	"errors"
	"fmt"
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
	SetRetention(ctx context.Context, name string, retention time.Duration) (store.Topic, error)
	MaxRetention() time.Duration
	DeleteTopic(ctx context.Context, name string) error
}

var _ TopicAdmin = (*log.Log)(nil)

type alterTopicRequest struct {
	Partitions     *int32 `json:"partitions"`
	RetentionMs    *int64 `json:"retention_ms"`
	RetentionPinMs *int64 `json:"retention_pin_ms"`
	cleanupFields
}

// CleanupAdmin is what the alter of a topic's cleanup policy needs of the log (*log.Log
// implements it).
type CleanupAdmin interface {
	AlterCleanup(ctx context.Context, name string, ch log.CleanupChange) (store.Topic, error)
}

var _ CleanupAdmin = (*log.Log)(nil)

// MaxRetentionSetting names the setting that bounds a topic's retention, for the
// refusal of a longer one: the stack's context key on AWS, the flag and variable locally.
const MaxRetentionSetting = "strata:maxRetentionDays on AWS, --max-retention (STRATA_MAX_RETENTION_MS) for strata dev"

// alterRetention is the retention a PATCH asks for: retention_ms from 1000 up, or -1 (kept
// for ever: the longest duration) where the deployment has no maximum retention. Above
// the maximum it is refused naming the setting that sets it.
func alterRetention(ms int64, maxR time.Duration) (time.Duration, *apiError) {
	switch {
	case ms == -1 && maxR > 0:
		return 0, invalid(fmt.Sprintf("retention_ms -1 (kept for ever) is refused: this deployment has a maximum retention of %s (retention_ms %d), set by %s",
			maxR, maxR.Milliseconds(), MaxRetentionSetting))
	case ms == -1:
		return time.Duration(maxRetentionMs) * time.Millisecond, nil
	case ms < 1000 || ms > maxRetentionMs:
		return 0, invalid(fmt.Sprintf("retention_ms must be -1 (for ever) or an integer from 1000 to %d, got %d", maxRetentionMs, ms))
	}
	d := time.Duration(ms) * time.Millisecond
	if maxR > 0 && d > maxR {
		return 0, invalid(fmt.Sprintf("retention_ms %d (%s) is above this deployment's maximum retention of %s (retention_ms %d), set by %s",
			ms, d, maxR, maxR.Milliseconds(), MaxRetentionSetting))
	}
	return d, nil
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

// alterTopic raises a topic's partition count, sets its retention or sets its retention
// pin: one change per request, so a refused one changes nothing.
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
	n := 0
	cleaner, canClean := s.topics.(CleanupAdmin)
	for _, set := range []bool{req.Partitions != nil, req.RetentionMs != nil, req.RetentionPinMs != nil, req.cleanupFields.set()} {
		if set {
			n++
		}
	}
	switch {
	case n != 1:
		writeError(w, invalid(`exactly one of "partitions", "retention_ms", "retention_pin_ms" and the cleanup settings ("cleanup_policy", "min_compaction_lag_ms", "max_compaction_lag_ms", "delete_retention_ms", together) is required`))
		return
	case req.cleanupFields.set():
		ch, e := req.cleanupFields.change()
		if e != nil {
			writeError(w, e)
			return
		}
		if !canClean {
			writeError(w, invalid("this server cannot change a topic's cleanup policy"))
			return
		}
		t, err = cleaner.AlterCleanup(r.Context(), topic, ch)
	case req.Partitions != nil:
		t, err = s.topics.IncreasePartitions(r.Context(), topic, *req.Partitions)
	case req.RetentionMs != nil:
		ret, e := alterRetention(*req.RetentionMs, s.topics.MaxRetention())
		if e != nil {
			writeError(w, e)
			return
		}
		t, err = s.topics.SetRetention(r.Context(), topic, ret)
	default:
		pin, e := retentionPin(*req.RetentionPinMs)
		if e != nil {
			writeError(w, e)
			return
		}
		t, err = s.topics.SetRetentionPin(r.Context(), topic, pin)
	}
	if err != nil && req.Partitions == nil && !req.cleanupFields.set() && s.topics.MaxRetention() > 0 && errors.Is(err, log.ErrInvalid) {
		// The values are in range by now: what the log refused is retention plus the
		// topic's pin cap above the maximum.
		err = fmt.Errorf("%w (the maximum is set by %s)", err, MaxRetentionSetting)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, topicJSON(t))
}
