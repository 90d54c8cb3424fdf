package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/pkg/httpapi"
)

var (
	topicAuthFailed   = kerr.TopicAuthorizationFailed.Code
	groupAuthFailed   = kerr.GroupAuthorizationFailed.Code
	clusterAuthFailed = kerr.ClusterAuthorizationFailed.Code
)

// grant is an authorization plan for one request, decided before it is served: the
// request keeps only the parts the principal may act on, and finish adds the refused
// parts' answers (Kafka's *_AUTHORIZATION_FAILED codes) to the handler's answer. A
// request left with nothing is not served at all (skip): finish fills an empty answer.
type grant struct {
	// deny, when set, is the whole answer: nothing is served.
	deny kmsg.Response
	// skip: every part was refused; the answer is finish applied to an empty one.
	skip bool
	// finish adds the refused parts' answers (nil: nothing to add).
	finish func(kmsg.Response)
	// err closes the connection (an acks=0 produce with a refused part: it takes no
	// answer, so the close is the refusal, as Kafka does).
	err error
}

func topicRes(name string) string { return "topic:" + name }
func groupRes(name string) string { return "group:" + name }

// either reports whether g allows one of ops on resource.
func either(g Grants, resource string, ops ...string) bool {
	for _, op := range ops {
		if g.Allowed(op, resource) {
			return true
		}
	}
	return false
}

// split partitions xs into those keep allows and the rest, keeping their order.
func split[T any](xs []T, keep func(T) bool) (kept, refused []T) {
	if xs != nil {
		kept = xs[:0:0]
	}
	for _, x := range xs {
		if keep(x) {
			kept = append(kept, x)
		} else {
			refused = append(refused, x)
		}
	}
	return kept, refused
}

// authorize plans req's authorization by g, exactly as the HTTP API authorizes the
// same actions (docs/KAFKA.md, "Authentication"): append to produce, read to fetch and
// commit, read or describe to list offsets and offsets, describe to see a topic in
// Metadata, create, delete and alter to administer topics, consume (or describe) on a
// group to find its coordinator and be a member, reset on a group to commit outside a
// membership or delete its offsets, delete to delete it. topicName resolves a topic id
// ("" when unknown). req is changed in place.
func authorize(g Grants, req kmsg.Request, topicName func([16]byte) string) grant {
	switch r := req.(type) {
	case *kmsg.ApiVersionsRequest, *kmsg.DescribeClusterRequest, *kmsg.InitProducerIDRequest:
		return grant{}
	case *kmsg.ProduceRequest:
		var refused []kmsg.ProduceRequestTopic
		r.Topics, refused = split(r.Topics, func(t kmsg.ProduceRequestTopic) bool { return g.Allowed(httpapi.OpAppend, topicRes(t.Topic)) })
		if len(refused) == 0 {
			return grant{}
		}
		if r.Acks == acksNone {
			return grant{err: fmt.Errorf("%w: an acks=0 produce to %q is not authorized", errClose, refused[0].Topic)}
		}
		return grant{skip: len(r.Topics) == 0, finish: func(resp kmsg.Response) {
			out := resp.(*kmsg.ProduceResponse)
			for _, t := range refused {
				rt := kmsg.NewProduceResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewProduceResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, topicAuthFailed
					rp.ErrorMessage = kmsg.StringPtr("not authorized to append to topic " + t.Topic)
					rt.Partitions = append(rt.Partitions, rp)
				}
				out.Topics = append(out.Topics, rt)
			}
		}}
	case *kmsg.FetchRequest:
		var refused []kmsg.FetchRequestTopic
		r.Topics, refused = split(r.Topics, func(t kmsg.FetchRequestTopic) bool { return g.Allowed(httpapi.OpRead, topicRes(t.Topic)) })
		if len(refused) == 0 {
			return grant{}
		}
		return grant{skip: len(r.Topics) == 0, finish: func(resp kmsg.Response) {
			out := resp.(*kmsg.FetchResponse)
			for _, t := range refused {
				rt := kmsg.NewFetchResponseTopic()
				rt.Topic, rt.TopicID = t.Topic, t.TopicID
				for _, p := range t.Partitions {
					rp := kmsg.NewFetchResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, topicAuthFailed
					rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
					rt.Partitions = append(rt.Partitions, rp)
				}
				out.Topics = append(out.Topics, rt)
			}
		}}
	case *kmsg.ListOffsetsRequest:
		var refused []kmsg.ListOffsetsRequestTopic
		r.Topics, refused = split(r.Topics, func(t kmsg.ListOffsetsRequestTopic) bool {
			return either(g, topicRes(t.Topic), httpapi.OpRead, httpapi.OpDescribe)
		})
		if len(refused) == 0 {
			return grant{}
		}
		return grant{skip: len(r.Topics) == 0, finish: func(resp kmsg.Response) {
			out := resp.(*kmsg.ListOffsetsResponse)
			for _, t := range refused {
				rt := kmsg.NewListOffsetsResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewListOffsetsResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, topicAuthFailed
					rp.Offset, rp.Timestamp, rp.LeaderEpoch = -1, -1, -1
					rt.Partitions = append(rt.Partitions, rp)
				}
				out.Topics = append(out.Topics, rt)
			}
		}}
	case *kmsg.MetadataRequest:
		// Listing every topic hides those the principal may not see (describers); a topic
		// asked for by name or id is answered TOPIC_AUTHORIZATION_FAILED, whether it
		// exists or not, so the answer says nothing about it.
		all := r.Topics == nil || r.Version == 0 && len(r.Topics) == 0
		return grant{finish: func(resp kmsg.Response) {
			out := resp.(*kmsg.MetadataResponse)
			kept := out.Topics[:0]
			for _, t := range out.Topics {
				if t.Topic == nil || either(g, topicRes(*t.Topic), describers...) {
					kept = append(kept, t)
					continue
				}
				if all {
					continue
				}
				rt := kmsg.NewMetadataResponseTopic()
				rt.Topic, rt.ErrorCode = t.Topic, topicAuthFailed
				if r.Version >= 10 && t.TopicID != ([16]byte{}) && !named(r, *t.Topic) {
					rt.Topic, rt.TopicID = nil, t.TopicID
				}
				kept = append(kept, rt)
			}
			out.Topics = kept
		}}
	case *kmsg.CreateTopicsRequest:
		var refused []kmsg.CreateTopicsRequestTopic
		r.Topics, refused = split(r.Topics, func(t kmsg.CreateTopicsRequestTopic) bool { return g.Allowed(httpapi.OpCreate, topicRes(t.Topic)) })
		if len(refused) == 0 {
			return grant{}
		}
		return grant{skip: len(r.Topics) == 0, finish: func(resp kmsg.Response) {
			out := resp.(*kmsg.CreateTopicsResponse)
			for _, t := range refused {
				rt := kmsg.NewCreateTopicsResponseTopic()
				rt.Topic, rt.ErrorCode = t.Topic, topicAuthFailed
				rt.ErrorMessage = kmsg.StringPtr("not authorized to create topic " + t.Topic)
				rt.NumPartitions, rt.ReplicationFactor = -1, -1
				out.Topics = append(out.Topics, rt)
			}
		}}
	case *kmsg.DeleteTopicsRequest:
		ok := func(name string) bool { return g.Allowed(httpapi.OpDelete, topicRes(name)) }
		var refusedNames []string
		r.TopicNames, refusedNames = split(r.TopicNames, ok)
		var refused []kmsg.DeleteTopicsRequestTopic
		r.Topics, refused = split(r.Topics, func(t kmsg.DeleteTopicsRequestTopic) bool {
			if t.Topic != nil {
				return ok(*t.Topic)
			}
			// An unknown id is the handler's UNKNOWN_TOPIC_ID.
			name := topicName(t.TopicID)
			return name == "" || ok(name)
		})
		if len(refusedNames)+len(refused) == 0 {
			return grant{}
		}
		return grant{skip: len(r.TopicNames)+len(r.Topics) == 0, finish: func(resp kmsg.Response) {
			out := resp.(*kmsg.DeleteTopicsResponse)
			add := func(name *string, id [16]byte) {
				rt := kmsg.NewDeleteTopicsResponseTopic()
				rt.Topic, rt.TopicID, rt.ErrorCode = name, id, topicAuthFailed
				out.Topics = append(out.Topics, rt)
			}
			for _, n := range refusedNames {
				add(kmsg.StringPtr(n), [16]byte{})
			}
			for _, t := range refused {
				add(t.Topic, t.TopicID)
			}
		}}
	case *kmsg.CreatePartitionsRequest:
		var refused []kmsg.CreatePartitionsRequestTopic
		r.Topics, refused = split(r.Topics, func(t kmsg.CreatePartitionsRequestTopic) bool { return g.Allowed(httpapi.OpAlter, topicRes(t.Topic)) })
		if len(refused) == 0 {
			return grant{}
		}
		return grant{skip: len(r.Topics) == 0, finish: func(resp kmsg.Response) {
			out := resp.(*kmsg.CreatePartitionsResponse)
			for _, t := range refused {
				rt := kmsg.NewCreatePartitionsResponseTopic()
				rt.Topic, rt.ErrorCode = t.Topic, topicAuthFailed
				out.Topics = append(out.Topics, rt)
			}
		}}
	case *kmsg.FindCoordinatorRequest:
		if r.CoordinatorType != 0 {
			return grant{}
		}
		member := func(grp string) bool { return either(g, groupRes(grp), httpapi.OpConsume, httpapi.OpDescribe) }
		return grant{finish: func(resp kmsg.Response) {
			out := resp.(*kmsg.FindCoordinatorResponse)
			if r.Version < 4 && !member(r.CoordinatorKey) {
				out.ErrorCode, out.NodeID, out.Host, out.Port = groupAuthFailed, -1, "", -1
			}
			for i := range out.Coordinators {
				if c := &out.Coordinators[i]; !member(c.Key) {
					c.ErrorCode, c.NodeID, c.Host, c.Port = groupAuthFailed, -1, "", -1
				}
			}
		}}
	case *kmsg.OffsetCommitRequest:
		// A commit outside a membership is a reset of the group's positions, as on
		// HTTP; a member's commit needs consume.
		op := httpapi.OpConsume
		if r.Generation < 0 && r.MemberID == "" {
			op = httpapi.OpReset
		}
		if !g.Allowed(op, groupRes(r.Group)) {
			return grant{deny: errorResponse(r, groupAuthFailed)}
		}
		var refused []kmsg.OffsetCommitRequestTopic
		r.Topics, refused = split(r.Topics, func(t kmsg.OffsetCommitRequestTopic) bool { return g.Allowed(httpapi.OpRead, topicRes(t.Topic)) })
		if len(refused) == 0 {
			return grant{}
		}
		return grant{skip: len(r.Topics) == 0, finish: func(resp kmsg.Response) {
			out := resp.(*kmsg.OffsetCommitResponse)
			for _, t := range refused {
				rt := kmsg.NewOffsetCommitResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetCommitResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, topicAuthFailed
					rt.Partitions = append(rt.Partitions, rp)
				}
				out.Topics = append(out.Topics, rt)
			}
		}}
	case *kmsg.OffsetFetchRequest:
		return authorizeOffsetFetch(g, r)
	case *kmsg.JoinGroupRequest:
		return memberGrant(g, r, r.Group)
	case *kmsg.SyncGroupRequest:
		return memberGrant(g, r, r.Group)
	case *kmsg.HeartbeatRequest:
		return memberGrant(g, r, r.Group)
	case *kmsg.LeaveGroupRequest:
		return memberGrant(g, r, r.Group)
	case *kmsg.ListGroupsRequest:
		return grant{finish: func(resp kmsg.Response) {
			out := resp.(*kmsg.ListGroupsResponse)
			out.Groups, _ = split(out.Groups, func(x kmsg.ListGroupsResponseGroup) bool { return g.Allowed(httpapi.OpDescribe, groupRes(x.Group)) })
		}}
	case *kmsg.DescribeGroupsRequest:
		return grant{finish: func(resp kmsg.Response) {
			out := resp.(*kmsg.DescribeGroupsResponse)
			for i, x := range out.Groups {
				if !g.Allowed(httpapi.OpDescribe, groupRes(x.Group)) {
					d := kmsg.NewDescribeGroupsResponseGroup()
					d.Group, d.ErrorCode = x.Group, groupAuthFailed
					out.Groups[i] = d
				}
			}
		}}
	case *kmsg.DeleteGroupsRequest:
		var refused []string
		r.Groups, refused = split(r.Groups, func(x string) bool { return g.Allowed(httpapi.OpDelete, groupRes(x)) })
		if len(refused) == 0 {
			return grant{}
		}
		return grant{skip: len(r.Groups) == 0, finish: func(resp kmsg.Response) {
			out := resp.(*kmsg.DeleteGroupsResponse)
			for _, x := range refused {
				d := kmsg.NewDeleteGroupsResponseGroup()
				d.Group, d.ErrorCode = x, groupAuthFailed
				out.Groups = append(out.Groups, d)
			}
		}}
	case *kmsg.OffsetDeleteRequest:
		if !g.Allowed(httpapi.OpReset, groupRes(r.Group)) {
			resp := kmsg.NewPtrOffsetDeleteResponse()
			resp.SetVersion(r.Version)
			resp.ErrorCode = groupAuthFailed
			return grant{deny: resp}
		}
		var refused []kmsg.OffsetDeleteRequestTopic
		r.Topics, refused = split(r.Topics, func(t kmsg.OffsetDeleteRequestTopic) bool { return g.Allowed(httpapi.OpRead, topicRes(t.Topic)) })
		if len(refused) == 0 {
			return grant{}
		}
		return grant{skip: len(r.Topics) == 0, finish: func(resp kmsg.Response) {
			out := resp.(*kmsg.OffsetDeleteResponse)
			for _, t := range refused {
				rt := kmsg.NewOffsetDeleteResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetDeleteResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, topicAuthFailed
					rt.Partitions = append(rt.Partitions, rp)
				}
				out.Topics = append(out.Topics, rt)
			}
		}}
	case *kmsg.DescribeConfigsRequest:
		return grant{finish: func(resp kmsg.Response) {
			out := resp.(*kmsg.DescribeConfigsResponse)
			for i := range out.Resources {
				x := &out.Resources[i]
				if x.ResourceType == kmsg.ConfigResourceTypeTopic && !g.Allowed(httpapi.OpDescribe, topicRes(x.ResourceName)) {
					x.ErrorCode, x.ErrorMessage, x.Configs = topicAuthFailed, nil, nil
				}
			}
		}}
	case *kmsg.IncrementalAlterConfigsRequest:
		var refused []kmsg.IncrementalAlterConfigsRequestResource
		r.Resources, refused = split(r.Resources, func(x kmsg.IncrementalAlterConfigsRequestResource) bool {
			return x.ResourceType == kmsg.ConfigResourceTypeTopic && g.Allowed(httpapi.OpAlter, topicRes(x.ResourceName))
		})
		if len(refused) == 0 {
			return grant{}
		}
		return grant{skip: len(r.Resources) == 0, finish: func(resp kmsg.Response) {
			out := resp.(*kmsg.IncrementalAlterConfigsResponse)
			for _, x := range refused {
				d := kmsg.NewIncrementalAlterConfigsResponseResource()
				d.ResourceType, d.ResourceName, d.ErrorCode = x.ResourceType, x.ResourceName, topicAuthFailed
				if x.ResourceType != kmsg.ConfigResourceTypeTopic {
					d.ErrorCode = clusterAuthFailed
				}
				out.Resources = append(out.Resources, d)
			}
		}}
	}
	// An API without a rule here is refused rather than served unchecked.
	if resp := errorResponse(req, clusterAuthFailed); resp != nil {
		return grant{deny: resp}
	}
	return grant{err: fmt.Errorf("%w: %s has no authorization rule", errClose, kmsg.NameForKey(req.Key()))}
}

// describers are the operations that let a principal see a topic in Metadata: describe,
// or any other it may do on the topic (Kafka's implied Describe), since every client
// looks a topic up before producing to it or reading it.
var describers = []string{httpapi.OpDescribe, httpapi.OpAppend, httpapi.OpRead, httpapi.OpAlter, httpapi.OpDelete}

// named reports whether a Metadata request asked for topic by name.
func named(r *kmsg.MetadataRequest, topic string) bool {
	for _, t := range r.Topics {
		if t.Topic != nil && *t.Topic == topic {
			return true
		}
	}
	return false
}

// memberGrant refuses a group member's request (JoinGroup, SyncGroup, Heartbeat,
// LeaveGroup) without consume on its group.
func memberGrant(g Grants, req kmsg.Request, grp string) grant {
	if g.Allowed(httpapi.OpConsume, groupRes(grp)) {
		return grant{}
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	switch r := resp.(type) {
	case *kmsg.JoinGroupResponse:
		r.ErrorCode, r.Generation = groupAuthFailed, -1
	case *kmsg.SyncGroupResponse:
		r.ErrorCode = groupAuthFailed
	case *kmsg.HeartbeatResponse:
		r.ErrorCode = groupAuthFailed
	case *kmsg.LeaveGroupResponse:
		r.ErrorCode = groupAuthFailed
	}
	return grant{deny: resp}
}

// authorizeOffsetFetch: a group needs consume or describe (GROUP_AUTHORIZATION_FAILED);
// its topics read or describe: one asked for by name is answered
// TOPIC_AUTHORIZATION_FAILED, and when every committed topic is asked for, those the
// principal may not see are left out.
func authorizeOffsetFetch(g Grants, r *kmsg.OffsetFetchRequest) grant {
	groupOK := func(grp string) bool { return either(g, groupRes(grp), httpapi.OpConsume, httpapi.OpDescribe) }
	topicOK := func(t string) bool { return either(g, topicRes(t), httpapi.OpRead, httpapi.OpDescribe) }
	if r.Version < 8 {
		if !groupOK(r.Group) {
			// Before v2 the code is only per partition.
			resp := errorResponse(r, groupAuthFailed).(*kmsg.OffsetFetchResponse)
			for _, t := range r.Topics {
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseTopicPartition()
					rp.Partition, rp.Offset, rp.ErrorCode = p, -1, groupAuthFailed
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return grant{deny: resp}
		}
		all := r.Topics == nil
		return grant{finish: func(resp kmsg.Response) {
			out := resp.(*kmsg.OffsetFetchResponse)
			kept := out.Topics[:0]
			for _, t := range out.Topics {
				if !topicOK(t.Topic) {
					if all {
						continue
					}
					for i := range t.Partitions {
						t.Partitions[i].ErrorCode, t.Partitions[i].Offset, t.Partitions[i].Metadata = topicAuthFailed, -1, nil
					}
				}
				kept = append(kept, t)
			}
			out.Topics = kept
		}}
	}
	var refused []kmsg.OffsetFetchRequestGroup
	r.Groups, refused = split(r.Groups, func(x kmsg.OffsetFetchRequestGroup) bool { return groupOK(x.Group) })
	asked := map[string]bool{}
	for _, x := range r.Groups {
		asked[x.Group] = x.Topics != nil
	}
	return grant{skip: len(r.Groups) == 0 && len(refused) > 0, finish: func(resp kmsg.Response) {
		out := resp.(*kmsg.OffsetFetchResponse)
		for gi := range out.Groups {
			og := &out.Groups[gi]
			kept := og.Topics[:0]
			for _, t := range og.Topics {
				if !topicOK(t.Topic) {
					if !asked[og.Group] {
						continue
					}
					for i := range t.Partitions {
						t.Partitions[i].ErrorCode, t.Partitions[i].Offset, t.Partitions[i].Metadata = topicAuthFailed, -1, nil
					}
				}
				kept = append(kept, t)
			}
			og.Topics = kept
		}
		for _, x := range refused {
			d := kmsg.NewOffsetFetchResponseGroup()
			d.Group, d.ErrorCode = x.Group, groupAuthFailed
			out.Groups = append(out.Groups, d)
		}
	}}
}

// topicName resolves a topic id to its name for authorization ("" when unknown).
func (s *Server) topicName(ctx context.Context) func([16]byte) string {
	return func(id [16]byte) string {
		t, code := s.topicByID(ctx, id)
		if code != 0 {
			return ""
		}
		return t.Name
	}
}
