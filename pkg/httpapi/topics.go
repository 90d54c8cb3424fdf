package httpapi

import (
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
	"github.com/stratalog/strata/pkg/wire"
)

// maxRetentionMs keeps retention_ms * 1ms within a time.Duration.
const maxRetentionMs = math.MaxInt64 / int64(time.Millisecond)

type createTopicRequest struct {
	Name           *string `json:"name"`
	Partitions     *int32  `json:"partitions"`
	RetentionMs    *int64  `json:"retention_ms"`
	RetentionPinMs *int64  `json:"retention_pin_ms"`
	TimestampType  *string `json:"timestamp_type"`
	cleanupFields
}

// cleanupFields are the cleanup policy and compaction settings of a create or an alter.
type cleanupFields struct {
	CleanupPolicy      *string `json:"cleanup_policy"`
	MinCompactionLagMs *int64  `json:"min_compaction_lag_ms"`
	MaxCompactionLagMs *int64  `json:"max_compaction_lag_ms"`
	DeleteRetentionMs  *int64  `json:"delete_retention_ms"`
}

// set reports whether any of the fields is given.
func (c cleanupFields) set() bool {
	return c.CleanupPolicy != nil || c.MinCompactionLagMs != nil || c.MaxCompactionLagMs != nil || c.DeleteRetentionMs != nil
}

// change is the fields as a log.CleanupChange: a policy as Kafka spells cleanup.policy,
// each setting 0 (unset) to maxRetentionMs.
func (c cleanupFields) change() (log.CleanupChange, *apiError) {
	var ch log.CleanupChange
	if c.CleanupPolicy != nil {
		p, err := store.ParseCleanupPolicy(*c.CleanupPolicy)
		if !documentedPolicy(*c.CleanupPolicy) || err != nil {
			return ch, invalid(fmt.Sprintf("cleanup_policy must be %q, %q or %q, got %q", wire.CleanupDelete, wire.CleanupCompact, wire.CleanupCompactDelete, *c.CleanupPolicy))
		}
		ch.Cleanup = &p
	}
	for _, f := range []struct {
		name string
		ms   *int64
		dst  **time.Duration
	}{
		{"min_compaction_lag_ms", c.MinCompactionLagMs, &ch.MinCompactionLag},
		{"max_compaction_lag_ms", c.MaxCompactionLagMs, &ch.MaxCompactionLag},
		{"delete_retention_ms", c.DeleteRetentionMs, &ch.DeleteRetention},
	} {
		if f.ms == nil {
			continue
		}
		if *f.ms < 0 || *f.ms > maxRetentionMs {
			return ch, invalid(fmt.Sprintf("%s must be an integer from 0 to %d", f.name, maxRetentionMs))
		}
		d := time.Duration(*f.ms) * time.Millisecond
		*f.dst = &d
	}
	return ch, nil
}

// documentedPolicy reports whether s is spelled as the contract's enum spells a policy:
// the HTTP API takes no empty or spaced lists, which Kafka's configs allow.
func documentedPolicy(s string) bool {
	switch s {
	case wire.CleanupDelete, wire.CleanupCompact, wire.CleanupCompactDelete, "delete,compact":
		return true
	}
	return false
}

// cleanup is the fields as a new topic's settings.
func (c cleanupFields) cleanup() (store.TopicCleanup, *apiError) {
	ch, e := c.change()
	var tc store.TopicCleanup
	if ch.Cleanup != nil {
		tc.Cleanup = *ch.Cleanup
	}
	for _, f := range []struct{ src, dst *time.Duration }{
		{ch.MinCompactionLag, &tc.MinCompactionLag}, {ch.MaxCompactionLag, &tc.MaxCompactionLag}, {ch.DeleteRetention, &tc.DeleteRetention},
	} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	return tc, e
}

// retentionPin checks an explicit retention_pin_ms (0, no pin, to maxRetentionMs).
func retentionPin(ms int64) (time.Duration, *apiError) {
	if ms < 0 || ms > maxRetentionMs {
		return 0, invalid(fmt.Sprintf("retention_pin_ms must be an integer from 0 to %d", maxRetentionMs))
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// topicJSON is the answer describing t (without its partitions' bounds).
func topicJSON(t store.Topic) topicResponse {
	ts := wire.TimestampCreateTime
	if t.LogAppendTime {
		ts = wire.TimestampLogAppendTime
	}
	policy := string(t.Cleanup)
	if policy == "" {
		policy = wire.CleanupDelete
	}
	return topicResponse{Name: t.Name, Partitions: t.Partitions, RetentionMs: t.Retention.Milliseconds(), RetentionPinMs: t.RetentionPin.Milliseconds(), TimestampType: ts,
		CleanupPolicy: policy, MinCompactionLagMs: t.MinCompactionLag.Milliseconds(), MaxCompactionLagMs: t.MaxCompactionLag.Milliseconds(), DeleteRetentionMs: t.DeleteRetention.Milliseconds()}
}

// The answers are the contract's shapes (pkg/wire).
type (
	topicResponse = wire.Topic
	partitionInfo = wire.PartitionInfo
)

func (s *server) createTopic(w http.ResponseWriter, r *http.Request) {
	p, ok := s.allow(w, r)
	if !ok {
		return
	}
	var req createTopicRequest
	if e := decodeBody(w, r, MaxSmallBody, &req); e != nil {
		writeError(w, e)
		return
	}
	if req.Name == nil {
		writeError(w, invalid(`"name" is required`))
		return
	}
	// Zero is the log's "default" (the node's default partitions and retention, which
	// also bounds retention): explicit values must be in range themselves.
	partitions := int32(0)
	if req.Partitions != nil {
		if *req.Partitions < 1 {
			writeError(w, invalid(fmt.Sprintf("partitions must be 1–%d, got %d", log.MaxPartitions, *req.Partitions)))
			return
		}
		partitions = *req.Partitions
	}
	retention := time.Duration(0)
	if req.RetentionMs != nil {
		if *req.RetentionMs < 1000 || *req.RetentionMs > maxRetentionMs {
			writeError(w, invalid(fmt.Sprintf("retention_ms must be an integer from 1000 to %d", maxRetentionMs)))
			return
		}
		retention = time.Duration(*req.RetentionMs) * time.Millisecond
	}
	pin := time.Duration(0)
	if req.RetentionPinMs != nil {
		var e *apiError
		if pin, e = retentionPin(*req.RetentionPinMs); e != nil {
			writeError(w, e)
			return
		}
	}
	logAppend := false
	if req.TimestampType != nil {
		switch *req.TimestampType {
		case wire.TimestampCreateTime:
		case wire.TimestampLogAppendTime:
			logAppend = true
		default:
			writeError(w, invalid(fmt.Sprintf("timestamp_type must be %q or %q", wire.TimestampCreateTime, wire.TimestampLogAppendTime)))
			return
		}
	}
	cleanup, e := req.cleanup()
	if e != nil {
		writeError(w, e)
		return
	}
	if e := authorize(p, onTopic(OpCreate, *req.Name)); e != nil {
		writeError(w, e)
		return
	}
	t, err := s.log.CreateTopicWith(r.Context(), *req.Name, log.TopicSpec{Partitions: partitions, Retention: retention, RetentionPin: pin, LogAppendTime: logAppend, Cleanup: cleanup})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, topicJSON(t))
}

func (s *server) listTopics(w http.ResponseWriter, r *http.Request) {
	p, ok := s.allow(w, r)
	if !ok {
		return
	}
	names, err := s.log.ListTopics(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	visible := make([]string, 0, len(names))
	for _, n := range names {
		if p.Allowed(OpDescribe, "topic:"+n) {
			visible = append(visible, n)
		}
	}
	writeJSON(w, http.StatusOK, wire.TopicList{Topics: visible})
}

func (s *server) describeTopic(w http.ResponseWriter, r *http.Request) {
	topic := r.PathValue("topic")
	if _, ok := s.allow(w, r, onTopic(OpDescribe, topic)); !ok {
		return
	}
	info, err := s.log.DescribeTopic(r.Context(), topic)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.setTopicBatch(w, topic)
	resp := topicJSON(info.Topic)
	resp.PartitionInfo = make([]partitionInfo, len(info.Partitions))
	for i, pi := range info.Partitions {
		resp.PartitionInfo[i] = partitionInfo{Partition: pi.Partition, LogStartOffset: pi.LogStartOffset, HighWatermark: pi.HighWatermark}
	}
	writeJSON(w, http.StatusOK, resp)
}
