package kafka

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/pkg/log"
	"github.com/stratalog/strata/pkg/store"
)

// TopicID is the Kafka topic id (KIP-516) of a topic incarnation: a UUID (version 8,
// RFC 9562) from the SHA-256 of its store.TopicID, so every gateway derives the same id
// without storing one, and a topic created again under its name gets another.
func TopicID(t store.Topic) [16]byte {
	sum := sha256.Sum256([]byte("strata kafka topic id\x00" + t.ID()))
	var id [16]byte
	copy(id[:], sum[:16])
	id[6] = id[6]&0x0f | 0x80
	id[8] = id[8]&0x3f | 0x80
	return id
}

// errCode maps a log or store error to the Kafka error code a client acts on:
// retriable for the store's unavailability, UNKNOWN_TOPIC_OR_PARTITION for a topic that
// is not there.
func errCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, log.ErrTopicNotFound), errors.Is(err, store.ErrNotFound):
		return unknownTopicOrPartition
	case errors.Is(err, log.ErrOffsetOutOfRange):
		return offsetOutOfRange
	case errors.Is(err, log.ErrTooLarge):
		return messageTooLarge
	case errors.Is(err, log.ErrKeyless):
		return invalidRecord
	case errors.Is(err, log.ErrInvalid):
		return invalidRequest
	case errors.Is(err, log.ErrUnavailable), errors.Is(err, store.ErrUnavailable):
		return storageError
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return requestTimedOut
	}
	return unknownServerError
}

// topic returns the live topic name with partition p, or the Kafka error code for why
// not (a name the log cannot hold is unknown too).
func (s *Server) topic(ctx context.Context, name string, p int32) (store.Topic, int16) {
	if !log.ValidName(name) {
		return store.Topic{}, unknownTopicOrPartition
	}
	t, err := s.log.Topic(ctx, name)
	if err != nil {
		return store.Topic{}, errCode(err)
	}
	if p >= t.Partitions {
		// The count may have grown on another node since the cache was filled.
		if _, _, err := s.log.Bounds(ctx, name, p); err == nil {
			if t, err = s.log.Topic(ctx, name); err != nil {
				return store.Topic{}, errCode(err)
			}
		}
	}
	if p < 0 || p >= t.Partitions {
		return t, unknownTopicOrPartition
	}
	return t, 0
}

// topicByID finds the live topic whose TopicID is id.
func (s *Server) topicByID(ctx context.Context, id [16]byte) (store.Topic, int16) {
	names, err := s.log.ListTopics(ctx)
	if err != nil {
		return store.Topic{}, errCode(err)
	}
	for _, n := range names {
		t, err := s.log.Topic(ctx, n)
		if err == nil && TopicID(t) == id {
			return t, 0
		}
	}
	return store.Topic{}, unknownTopicID
}

func (s *Server) metadata(ctx context.Context, b broker, r *kmsg.MetadataRequest) kmsg.Response {
	resp := kmsg.NewPtrMetadataResponse()
	resp.SetVersion(r.Version)
	br := kmsg.NewMetadataResponseBroker()
	br.NodeID, br.Host, br.Port = s.cfg.NodeID, b.host, b.port
	resp.Brokers = []kmsg.MetadataResponseBroker{br}
	resp.ClusterID = kmsg.StringPtr(s.cfg.ClusterID)
	resp.ControllerID = s.cfg.NodeID
	add := func(t store.Topic, name *string, id [16]byte, code int16) {
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic, rt.TopicID, rt.ErrorCode = name, id, code
		if code == 0 {
			rt.Topic, rt.TopicID = kmsg.StringPtr(t.Name), TopicID(t)
			for p := range t.Partitions {
				rp := kmsg.NewMetadataResponseTopicPartition()
				rp.Partition, rp.Leader = p, s.cfg.NodeID
				rp.Replicas, rp.ISR = []int32{s.cfg.NodeID}, []int32{s.cfg.NodeID}
				rt.Partitions = append(rt.Partitions, rp)
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if r.Topics == nil || r.Version == 0 && len(r.Topics) == 0 {
		names, err := s.log.ListTopics(ctx)
		if err != nil {
			resp.ErrorCode = errCode(err)
			return resp
		}
		for _, n := range names {
			if t, err := s.log.Topic(ctx, n); err == nil {
				add(t, nil, [16]byte{}, 0)
			}
		}
		return resp
	}
	for _, rt := range r.Topics {
		if rt.Topic == nil {
			t, code := s.topicByID(ctx, rt.TopicID)
			add(t, nil, rt.TopicID, code)
			continue
		}
		t, code := s.topic(ctx, *rt.Topic, 0)
		add(t, rt.Topic, [16]byte{}, code)
	}
	return resp
}

func (s *Server) findCoordinator(b broker, r *kmsg.FindCoordinatorRequest) kmsg.Response {
	resp := kmsg.NewPtrFindCoordinatorResponse()
	resp.SetVersion(r.Version)
	keys := r.CoordinatorKeys
	if r.Version < 4 {
		keys = []string{r.CoordinatorKey}
	}
	for _, k := range keys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.NodeID, c.Host, c.Port = k, s.cfg.NodeID, b.host, b.port
		if r.CoordinatorType != 0 {
			// Only groups have a coordinator: there are no transactions.
			c.NodeID, c.Host, c.Port = -1, "", -1
			c.ErrorCode = coordinatorNotAvailable
			c.ErrorMessage = kmsg.StringPtr("this gateway has no transaction coordinator: transactions are not implemented")
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	if r.Version < 4 && len(resp.Coordinators) == 1 {
		c := resp.Coordinators[0]
		resp.ErrorCode, resp.ErrorMessage, resp.NodeID, resp.Host, resp.Port = c.ErrorCode, c.ErrorMessage, c.NodeID, c.Host, c.Port
	}
	return resp
}

func (s *Server) describeCluster(b broker, r *kmsg.DescribeClusterRequest) kmsg.Response {
	resp := kmsg.NewPtrDescribeClusterResponse()
	resp.SetVersion(r.Version)
	resp.EndpointType = r.EndpointType
	if r.Version >= 1 && r.EndpointType != 1 {
		resp.ErrorCode = unsupportedEndpointType
		resp.ErrorMessage = kmsg.StringPtr("this gateway has broker endpoints only (endpoint type 1)")
		return resp
	}
	resp.ClusterID, resp.ControllerID = s.cfg.ClusterID, s.cfg.NodeID
	br := kmsg.NewDescribeClusterResponseBroker()
	br.NodeID, br.Host, br.Port = s.cfg.NodeID, b.host, b.port
	resp.Brokers = []kmsg.DescribeClusterResponseBroker{br}
	return resp
}

// topicConfig is what CreateTopics' configs ask for, in Strata's terms.
type topicConfig struct {
	retention     time.Duration
	logAppendTime bool
	cleanup       store.TopicCleanup
}

// parseConfigs maps the configs a topic may be created with: retention.ms (-1: for
// ever, where the deployment's maximum maxRetention, 0 for none, allows it),
// message.timestamp.type (CreateTime or LogAppendTime), cleanup.policy (delete, compact
// or both) and the compaction settings (min.compaction.lag.ms, max.compaction.lag.ms,
// delete.retention.ms). Anything else is INVALID_CONFIG, not silently ignored.
func parseConfigs(cs []kmsg.CreateTopicsRequestTopicConfig, maxRetention time.Duration) (topicConfig, error) {
	var tc topicConfig
	for _, c := range cs {
		if c.Value == nil {
			continue // null: the default
		}
		switch c.Name {
		case "retention.ms":
			r, err := parseRetentionMs(*c.Value, maxRetention)
			if err != nil {
				return tc, err
			}
			tc.retention = r
		case "message.timestamp.type":
			switch *c.Value {
			case "CreateTime":
				tc.logAppendTime = false
			case "LogAppendTime":
				tc.logAppendTime = true
			default:
				return tc, fmt.Errorf("message.timestamp.type must be CreateTime or LogAppendTime, got %q", *c.Value)
			}
		case cfgCleanupPolicy:
			p, err := parseCleanupPolicy(*c.Value)
			if err != nil {
				return tc, err
			}
			tc.cleanup.Cleanup = p
		case cfgMinCompaction, cfgMaxCompaction, cfgDeleteRetain:
			d, err := parseLagMs(c.Name, *c.Value)
			if err != nil {
				return tc, err
			}
			*map[string]*time.Duration{cfgMinCompaction: &tc.cleanup.MinCompactionLag, cfgMaxCompaction: &tc.cleanup.MaxCompactionLag,
				cfgDeleteRetain: &tc.cleanup.DeleteRetention}[c.Name] = d
		default:
			return tc, fmt.Errorf("config %q is not one this gateway implements (retention.ms, message.timestamp.type, cleanup.policy, min.compaction.lag.ms, max.compaction.lag.ms, delete.retention.ms)", c.Name)
		}
	}
	return tc, nil
}

// timestampType is Kafka's message.timestamp.type of a topic.
func timestampType(logAppendTime bool) string {
	if logAppendTime {
		return "LogAppendTime"
	}
	return "CreateTime"
}

func (s *Server) createTopics(ctx context.Context, r *kmsg.CreateTopicsRequest) kmsg.Response {
	resp := kmsg.NewPtrCreateTopicsResponse()
	resp.SetVersion(r.Version)
	for _, rt := range r.Topics {
		out := kmsg.NewCreateTopicsResponseTopic()
		out.Topic = rt.Topic
		fail := func(code int16, format string, args ...any) {
			out.ErrorCode, out.ErrorMessage = code, kmsg.StringPtr(fmt.Sprintf(format, args...))
		}
		tc, cerr := parseConfigs(rt.Configs, s.log.MaxRetention())
		switch {
		case !log.ValidName(rt.Topic):
			fail(invalidTopic, "topic name %q: Kafka's topic names are 1-249 of [a-zA-Z0-9._-], not \".\" or \"..\"", rt.Topic)
		case len(rt.ReplicaAssignment) > 0:
			fail(invalidReplicaAssign, "there are no brokers to assign replicas to: every partition is stored in the object store")
		case rt.NumPartitions == 0 || rt.NumPartitions < -1 || rt.NumPartitions > log.MaxPartitions:
			fail(invalidPartitions, "partitions must be 1–%d (or -1 for the default), got %d", log.MaxPartitions, rt.NumPartitions)
		case cerr != nil:
			fail(invalidConfig, "%v", cerr)
		case r.ValidateOnly:
			if _, err := s.log.Topic(ctx, rt.Topic); err == nil {
				fail(topicExists, "topic %q exists", rt.Topic)
			}
		default:
			t, err := s.log.CreateTopicWith(ctx, rt.Topic, log.TopicSpec{Partitions: max(rt.NumPartitions, 0), Retention: tc.retention, LogAppendTime: tc.logAppendTime, Cleanup: tc.cleanup})
			switch {
			case errors.Is(err, log.ErrTopicExists):
				fail(topicExists, "topic %q exists", rt.Topic)
			case errors.Is(err, log.ErrInvalid):
				fail(invalidConfig, "%v", err)
			case err != nil:
				fail(errCode(err), "%v", err)
			default:
				out.TopicID, out.NumPartitions, out.ReplicationFactor = TopicID(t), t.Partitions, 1
				v := retentionMsValue(t.Retention)
				out.Configs = []kmsg.CreateTopicsResponseTopicConfig{{Name: "retention.ms", Value: &v, Source: 1},
					{Name: "message.timestamp.type", Value: kmsg.StringPtr(timestampType(t.LogAppendTime)), Source: 1}}
				for _, e := range cleanupConfigs(t) {
					out.Configs = append(out.Configs, kmsg.CreateTopicsResponseTopicConfig{Name: e.name, Value: kmsg.StringPtr(e.value), Source: 1})
				}
			}
		}
		if out.ErrorCode != 0 {
			out.NumPartitions, out.ReplicationFactor = -1, -1
		}
		resp.Topics = append(resp.Topics, out)
	}
	return resp
}

func (s *Server) deleteTopics(ctx context.Context, r *kmsg.DeleteTopicsRequest) kmsg.Response {
	resp := kmsg.NewPtrDeleteTopicsResponse()
	resp.SetVersion(r.Version)
	topics := r.Topics
	for _, n := range r.TopicNames {
		t := kmsg.NewDeleteTopicsRequestTopic()
		t.Topic = kmsg.StringPtr(n)
		topics = append(topics, t)
	}
	for _, rt := range topics {
		out := kmsg.NewDeleteTopicsResponseTopic()
		out.Topic, out.TopicID = rt.Topic, rt.TopicID
		name := ""
		if rt.Topic != nil {
			name = *rt.Topic
		} else {
			t, code := s.topicByID(ctx, rt.TopicID)
			if code != 0 {
				out.ErrorCode = code
				resp.Topics = append(resp.Topics, out)
				continue
			}
			name, out.Topic = t.Name, kmsg.StringPtr(t.Name)
		}
		if !log.ValidName(name) {
			out.ErrorCode = unknownTopicOrPartition
		} else if err := s.log.DeleteTopic(ctx, name); err != nil {
			out.ErrorCode, out.ErrorMessage = errCode(err), kmsg.StringPtr(err.Error())
		}
		resp.Topics = append(resp.Topics, out)
	}
	return resp
}

func (s *Server) createPartitions(ctx context.Context, r *kmsg.CreatePartitionsRequest) kmsg.Response {
	resp := kmsg.NewPtrCreatePartitionsResponse()
	resp.SetVersion(r.Version)
	for _, rt := range r.Topics {
		out := kmsg.NewCreatePartitionsResponseTopic()
		out.Topic = rt.Topic
		fail := func(code int16, format string, args ...any) {
			out.ErrorCode, out.ErrorMessage = code, kmsg.StringPtr(fmt.Sprintf(format, args...))
		}
		t, code := s.topic(ctx, rt.Topic, 0)
		switch {
		case code != 0:
			fail(code, "topic %q is unknown", rt.Topic)
		case len(rt.Assignment) > 0:
			fail(invalidReplicaAssign, "there are no brokers to assign replicas to: every partition is stored in the object store")
		case rt.Count <= t.Partitions:
			fail(invalidPartitions, "topic %q has %d partitions: the count can only grow", rt.Topic, t.Partitions)
		case rt.Count > log.MaxPartitions:
			fail(invalidPartitions, "partitions must be at most %d, got %d", log.MaxPartitions, rt.Count)
		case r.ValidateOnly:
		default:
			if _, err := s.log.IncreasePartitions(ctx, rt.Topic, rt.Count); err != nil {
				c := errCode(err)
				if errors.Is(err, log.ErrInvalid) {
					c = invalidPartitions
				}
				fail(c, "%v", err)
			}
		}
		resp.Topics = append(resp.Topics, out)
	}
	return resp
}

// ListOffsets' special timestamps.
const (
	latestTimestamp   = -1
	earliestTimestamp = -2
)

func (s *Server) listOffsets(ctx context.Context, r *kmsg.ListOffsetsRequest) kmsg.Response {
	resp := kmsg.NewPtrListOffsetsResponse()
	resp.SetVersion(r.Version)
	for _, rt := range r.Topics {
		out := kmsg.NewListOffsetsResponseTopic()
		out.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			p := kmsg.NewListOffsetsResponseTopicPartition()
			p.Partition = rp.Partition
			p.Offset, p.Timestamp, p.ErrorCode = s.offsetFor(ctx, rt.Topic, rp.Partition, rp.Timestamp)
			out.Partitions = append(out.Partitions, p)
		}
		resp.Topics = append(resp.Topics, out)
	}
	return resp
}

// offsetFor answers one partition of ListOffsets: the log start (earliest), the high
// watermark (latest) or the first offset appended at or after a time, found by the
// log's index (not a scan of records), with that record's append time; -1 and -1 when
// nothing was appended since.
func (s *Server) offsetFor(ctx context.Context, topic string, p int32, ts int64) (offset, timestamp int64, code int16) {
	if _, code := s.topic(ctx, topic, p); code != 0 {
		return -1, -1, code
	}
	switch {
	case ts == earliestTimestamp || ts == latestTimestamp:
		start, hw, err := s.log.Bounds(ctx, topic, p)
		if err != nil {
			return -1, -1, errCode(err)
		}
		if ts == earliestTimestamp {
			return start, -1, 0
		}
		return hw, -1, 0
	case ts < 0:
		return -1, -1, invalidRequest
	}
	off, err := s.log.OffsetForTime(ctx, topic, p, time.UnixMilli(ts))
	if err != nil {
		return -1, -1, errCode(err)
	}
	_, hw, err := s.log.Bounds(ctx, topic, p)
	if err != nil {
		return -1, -1, errCode(err)
	}
	if off >= hw {
		return -1, -1, 0
	}
	at, err := s.log.AppendedAt(ctx, topic, p, off)
	if err != nil {
		return -1, -1, errCode(err)
	}
	return off, at.UnixMilli(), 0
}
