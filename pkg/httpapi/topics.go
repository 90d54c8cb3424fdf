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
	return topicResponse{Name: t.Name, Partitions: t.Partitions, RetentionMs: t.Retention.Milliseconds(), RetentionPinMs: t.RetentionPin.Milliseconds(), TimestampType: ts}
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
	if e := authorize(p, onTopic(OpCreate, *req.Name)); e != nil {
		writeError(w, e)
		return
	}
	t, err := s.log.CreateTopicWith(r.Context(), *req.Name, log.TopicSpec{Partitions: partitions, Retention: retention, RetentionPin: pin, LogAppendTime: logAppend})
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
