package kafka

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// API keys the gateway names in code.
const apiVersionsKey int16 = 18

// Error codes the gateway answers (Kafka's, from franz-go's kerr).
var (
	unsupportedVersion      = kerr.UnsupportedVersion.Code
	corruptMessage          = kerr.CorruptMessage.Code
	unknownTopicOrPartition = kerr.UnknownTopicOrPartition.Code
	unknownTopicID          = kerr.UnknownTopicID.Code
	messageTooLarge         = kerr.MessageTooLarge.Code
	invalidRecord           = kerr.InvalidRecord.Code
	invalidTimestamp        = kerr.InvalidTimestamp.Code
	invalidRequest          = kerr.InvalidRequest.Code
	invalidTopic            = kerr.InvalidTopicException.Code
	invalidPartitions       = kerr.InvalidPartitions.Code
	invalidConfig           = kerr.InvalidConfig.Code
	invalidReplicaAssign    = kerr.InvalidReplicaAssignment.Code
	topicExists             = kerr.TopicAlreadyExists.Code
	offsetOutOfRange        = kerr.OffsetOutOfRange.Code
	storageError            = kerr.KafkaStorageError.Code
	requestTimedOut         = kerr.RequestTimedOut.Code
	unknownServerError      = kerr.UnknownServerError.Code
	coordinatorNotAvailable = kerr.CoordinatorNotAvailable.Code
	unsupportedEndpointType = kerr.UnsupportedEndpointType.Code
	fetchSessionNotFound    = kerr.FetchSessionIDNotFound.Code
)

// apiRange is one API the gateway implements and the versions it answers.
type apiRange struct {
	Key, Min, Max int16
}

// APIs is what ApiVersions advertises: only what is implemented, each from the oldest
// version a Kafka 2.1 client sends (Kafka 4.x Java clients need no older) to the newest
// whose features the gateway has (docs/KAFKA.md has the table and what stops each at
// its maximum).
var APIs = []apiRange{
	{0, 3, 11}, // Produce (v12 is transactions v2, v13 topic ids)
	{1, 4, 12}, // Fetch (v13 addresses topics by id)
	{2, 1, 6},  // ListOffsets (v7 asks for the max timestamp)
	{3, 0, 12}, // Metadata
	{8, 2, 6},  // OffsetCommit (v7 adds group.instance.id: static membership)
	{9, 1, 8},  // OffsetFetch (likewise)
	{10, 0, 4}, // FindCoordinator (v5 is transactions v2, v6 share groups)
	{11, 0, 4}, // JoinGroup (classic protocol; v5 adds group.instance.id: static membership)
	{12, 0, 2}, // Heartbeat (v3 adds group.instance.id)
	{13, 0, 2}, // LeaveGroup (v3 leaves by group.instance.id)
	{14, 0, 2}, // SyncGroup (v3 adds group.instance.id)
	{15, 0, 3}, // DescribeGroups (v4 answers members' group.instance.id)
	{16, 0, 4}, // ListGroups (v5 filters by group type, KIP-848)
	{18, 0, 4}, // ApiVersions
	{19, 2, 7}, // CreateTopics
	{20, 1, 6}, // DeleteTopics
	{22, 0, 4}, // InitProducerId (no transactional ids; v5 is transactions v2)
	{32, 0, 4}, // DescribeConfigs
	{33, 0, 2}, // AlterConfigs
	{37, 0, 3}, // CreatePartitions
	{17, 1, 1}, // SaslHandshake (v0's raw SASL frames are gone from Kafka 4.0)
	{36, 0, 2}, // SaslAuthenticate
	{42, 0, 2}, // DeleteGroups
	{47, 0, 0}, // OffsetDelete
	{44, 0, 1}, // IncrementalAlterConfigs
	{60, 0, 1}, // DescribeCluster (v2 lists fenced brokers)
}

// supported reports whether the gateway answers key at version.
func supported(key, version int16) bool {
	for _, a := range APIs {
		if a.Key == key {
			return version >= a.Min && version <= a.Max
		}
	}
	return false
}

func apiVersionsResponse(code int16) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.ErrorCode = code
	for _, a := range APIs {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = a.Key, a.Min, a.Max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	return resp
}

// errorResponse is req's answer with code in every error field it has (a request at a
// version the gateway does not advertise), or nil for an API without one.
func errorResponse(req kmsg.Request, code int16) kmsg.Response {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		out := resp.(*kmsg.ProduceResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			out.Topics = append(out.Topics, rt)
		}
	case *kmsg.FetchRequest:
		out := resp.(*kmsg.FetchResponse)
		out.ErrorCode = code
		for _, t := range r.Topics {
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewFetchResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			out.Topics = append(out.Topics, rt)
		}
	case *kmsg.ListOffsetsRequest:
		out := resp.(*kmsg.ListOffsetsResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewListOffsetsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewListOffsetsResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			out.Topics = append(out.Topics, rt)
		}
	case *kmsg.MetadataRequest:
		out := resp.(*kmsg.MetadataResponse)
		out.ErrorCode = code
		for _, t := range r.Topics {
			rt := kmsg.NewMetadataResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode = t.Topic, t.TopicID, code
			out.Topics = append(out.Topics, rt)
		}
	case *kmsg.FindCoordinatorRequest:
		out := resp.(*kmsg.FindCoordinatorResponse)
		out.ErrorCode = code
		for _, k := range r.CoordinatorKeys {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key, c.ErrorCode, c.NodeID = k, code, -1
			out.Coordinators = append(out.Coordinators, c)
		}
	case *kmsg.CreateTopicsRequest:
		out := resp.(*kmsg.CreateTopicsResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, code
			out.Topics = append(out.Topics, rt)
		}
	case *kmsg.DeleteTopicsRequest:
		out := resp.(*kmsg.DeleteTopicsResponse)
		for _, name := range r.TopicNames {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.ErrorCode = kmsg.StringPtr(name), code
			out.Topics = append(out.Topics, rt)
		}
		for _, t := range r.Topics {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode = t.Topic, t.TopicID, code
			out.Topics = append(out.Topics, rt)
		}
	case *kmsg.CreatePartitionsRequest:
		out := resp.(*kmsg.CreatePartitionsResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, code
			out.Topics = append(out.Topics, rt)
		}
	case *kmsg.DescribeClusterRequest:
		resp.(*kmsg.DescribeClusterResponse).ErrorCode = code
	case *kmsg.InitProducerIDRequest:
		out := resp.(*kmsg.InitProducerIDResponse)
		out.ErrorCode, out.ProducerID, out.ProducerEpoch = code, -1, -1
	case *kmsg.DescribeConfigsRequest:
		out := resp.(*kmsg.DescribeConfigsResponse)
		for _, rr := range r.Resources {
			o := kmsg.NewDescribeConfigsResponseResource()
			o.ResourceType, o.ResourceName, o.ErrorCode = rr.ResourceType, rr.ResourceName, code
			out.Resources = append(out.Resources, o)
		}
	case *kmsg.AlterConfigsRequest:
		out := resp.(*kmsg.AlterConfigsResponse)
		for _, rr := range r.Resources {
			o := kmsg.NewAlterConfigsResponseResource()
			o.ResourceType, o.ResourceName, o.ErrorCode = rr.ResourceType, rr.ResourceName, code
			out.Resources = append(out.Resources, o)
		}
	case *kmsg.IncrementalAlterConfigsRequest:
		out := resp.(*kmsg.IncrementalAlterConfigsResponse)
		for _, rr := range r.Resources {
			o := kmsg.NewIncrementalAlterConfigsResponseResource()
			o.ResourceType, o.ResourceName, o.ErrorCode = rr.ResourceType, rr.ResourceName, code
			out.Resources = append(out.Resources, o)
		}
	case *kmsg.OffsetCommitRequest:
		out := resp.(*kmsg.OffsetCommitResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			out.Topics = append(out.Topics, rt)
		}
	case *kmsg.OffsetFetchRequest:
		out := resp.(*kmsg.OffsetFetchResponse)
		out.ErrorCode = code
		for _, g := range r.Groups {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = g.Group, code
			out.Groups = append(out.Groups, rg)
		}
	case *kmsg.SASLHandshakeRequest:
		resp.(*kmsg.SASLHandshakeResponse).ErrorCode = code
	case *kmsg.SASLAuthenticateRequest:
		resp.(*kmsg.SASLAuthenticateResponse).ErrorCode = code
	default:
		return groupErrorResponse(req, resp, code)
	}
	return resp
}
