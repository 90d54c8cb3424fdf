package kafka

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/wire"
)

var (
	invalidGroupID      = kerr.InvalidGroupID.Code
	unknownMemberID     = kerr.UnknownMemberID.Code
	illegalGeneration   = kerr.IllegalGeneration.Code
	offsetMetadataLarge = kerr.OffsetMetadataTooLarge.Code
)

// offsetCommit stores a commit's offsets as the group's Strata commits, one partition
// at a time: what `strata groups reset --to` does, so it is refused while a Strata
// member holds a live lease on the topic and may move backwards. A member of a Kafka
// group commits at its generation (commitCheck: UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION
// and REBALANCE_IN_PROGRESS as Kafka answers them); a commit made outside any
// membership (generation -1, no member id: kadm's CommitOffsets, a consumer with
// assigned partitions) is taken only by a group without Kafka members. Offset metadata
// (at most group.MaxCommitMetadata bytes, else OFFSET_METADATA_TOO_LARGE) is stored
// with the position and returned by OffsetFetch when the commit is made outside a
// membership; a member's is checked and dropped (franz-go sends its member id), since
// keeping it would take the partition's lease for each commit.
func (s *Server) offsetCommit(ctx context.Context, r *kmsg.OffsetCommitRequest) kmsg.Response {
	resp := kmsg.NewPtrOffsetCommitResponse()
	resp.SetVersion(r.Version)
	all := int16(0)
	switch {
	case s.cfg.Groups == nil:
		all = coordinatorNotAvailable
	case !wire.ValidGroup(r.Group):
		all = invalidGroupID
	default:
		all = s.commitCheck(ctx, r)
	}
	for _, rt := range r.Topics {
		out := kmsg.NewOffsetCommitResponseTopic()
		out.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			p := kmsg.NewOffsetCommitResponseTopicPartition()
			p.Partition, p.ErrorCode = rp.Partition, all
			if all == 0 {
				p.ErrorCode = s.commitOne(ctx, r.Group, rt.Topic, rp, r.MemberID != "")
			}
			out.Partitions = append(out.Partitions, p)
		}
		resp.Topics = append(resp.Topics, out)
	}
	return resp
}

func (s *Server) commitOne(ctx context.Context, g, topic string, rp kmsg.OffsetCommitRequestTopicPartition, member bool) int16 {
	md := ""
	if rp.Metadata != nil {
		md = *rp.Metadata
	}
	if err := group.CheckMetadata(md); errors.Is(err, group.ErrMetadataTooLarge) {
		return offsetMetadataLarge
	} else if err != nil {
		return invalidRequest
	}
	if _, code := s.topic(ctx, topic, rp.Partition); code != 0 {
		return code
	}
	var err error
	if md == "" || member {
		_, err = s.cfg.Groups.ResetPartitions(ctx, g, topic, []int32{rp.Partition}, group.ResetOffset(rp.Offset))
	} else {
		err = s.commitWithMetadata(ctx, g, topic, rp.Partition, rp.Offset, md)
	}
	var oor *group.OffsetOutOfRangeError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, group.ErrGroupActive), errors.Is(err, group.ErrLeaseHeld):
		return unknownMemberID
	case errors.As(err, &oor), errors.Is(err, group.ErrBeyondHighWatermark):
		return offsetOutOfRange
	}
	return errCode(err)
}

// offsetCommitter is the member name under which a commit made outside any membership
// briefly holds its partition's lease, to store metadata with the position.
const offsetCommitter = "kafka-offset-commit"

// commitWithMetadata is a reset that keeps metadata: it takes the partition's lease
// (refused while another member holds it, as a reset is; taking it fences every
// earlier generation, as a reset does), commits offset with md at that generation,
// backward if need be, and releases the lease.
func (s *Server) commitWithMetadata(ctx context.Context, g, topic string, p int32, offset int64, md string) error {
	info, err := s.cfg.Groups.Describe(ctx, g)
	if err != nil && !errors.Is(err, group.ErrNotFound) {
		return err
	}
	for _, pi := range info.Partitions {
		if pi.Topic == topic && pi.Owner != "" {
			return fmt.Errorf("group %q has a live lease of %s/%d: %w", g, topic, pi.Partition, group.ErrGroupActive)
		}
	}
	l, err := s.cfg.Groups.Acquire(ctx, g, topic, p, offsetCommitter, group.MinTTL)
	if err != nil {
		return err
	}
	ref := l.TopicRef()
	err = s.cfg.Groups.CommitAt(ctx, g, ref, p, offsetCommitter, l.Generation, offset, group.CommitOptions{Metadata: md, AllowBackward: true})
	return errors.Join(err, s.cfg.Groups.Release(ctx, g, ref, p, offsetCommitter, l.Generation))
}

// offsetFetch answers the groups' committed offsets (the next offset to read, -1
// before the first commit), every partition the group committed when no topics are
// named.
func (s *Server) offsetFetch(ctx context.Context, r *kmsg.OffsetFetchRequest) kmsg.Response {
	resp := kmsg.NewPtrOffsetFetchResponse()
	resp.SetVersion(r.Version)
	if r.Version < 8 {
		var topics []kmsg.OffsetFetchRequestGroupTopic
		for _, t := range r.Topics {
			topics = append(topics, kmsg.OffsetFetchRequestGroupTopic{Topic: t.Topic, Partitions: t.Partitions})
		}
		if r.Topics == nil {
			topics = nil
		}
		g := s.fetchGroup(ctx, r.Group, topics)
		resp.ErrorCode = g.ErrorCode
		for _, t := range g.Topics {
			out := kmsg.NewOffsetFetchResponseTopic()
			out.Topic = t.Topic
			for _, p := range t.Partitions {
				op := kmsg.NewOffsetFetchResponseTopicPartition()
				op.Partition, op.Offset, op.LeaderEpoch, op.Metadata, op.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
				if r.Version < 2 && g.ErrorCode != 0 {
					op.ErrorCode = g.ErrorCode
				}
				out.Partitions = append(out.Partitions, op)
			}
			resp.Topics = append(resp.Topics, out)
		}
		return resp
	}
	for _, rg := range r.Groups {
		resp.Groups = append(resp.Groups, s.fetchGroup(ctx, rg.Group, rg.Topics))
	}
	return resp
}

func (s *Server) fetchGroup(ctx context.Context, g string, topics []kmsg.OffsetFetchRequestGroupTopic) kmsg.OffsetFetchResponseGroup {
	out := kmsg.NewOffsetFetchResponseGroup()
	out.Group = g
	switch {
	case s.cfg.Groups == nil:
		out.ErrorCode = coordinatorNotAvailable
		return out
	case !wire.ValidGroup(g):
		out.ErrorCode = invalidGroupID
		return out
	}
	part := func(p int32, off *int64, md string, code int16) kmsg.OffsetFetchResponseGroupTopicPartition {
		rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p, -1, -1, kmsg.StringPtr(md), code
		if off != nil {
			rp.Offset = *off
		}
		return rp
	}
	if topics == nil {
		info, err := s.cfg.Groups.Describe(ctx, g)
		if errors.Is(err, group.ErrNotFound) {
			return out
		}
		if err != nil {
			out.ErrorCode = errCode(err)
			return out
		}
		for _, p := range info.Partitions {
			if p.Committed == nil {
				continue
			}
			if n := len(out.Topics); n == 0 || out.Topics[n-1].Topic != p.Topic {
				t := kmsg.NewOffsetFetchResponseGroupTopic()
				t.Topic = p.Topic
				out.Topics = append(out.Topics, t)
			}
			t := &out.Topics[len(out.Topics)-1]
			t.Partitions = append(t.Partitions, part(p.Partition, p.Committed, p.Metadata, 0))
		}
		return out
	}
	for _, rt := range topics {
		t := kmsg.NewOffsetFetchResponseGroupTopic()
		t.Topic = rt.Topic
		for _, p := range rt.Partitions {
			if _, code := s.topic(ctx, rt.Topic, p); code != 0 {
				t.Partitions = append(t.Partitions, part(p, nil, "", code))
				continue
			}
			pos, err := s.cfg.Groups.Position(ctx, g, rt.Topic, p)
			if errors.Is(err, group.ErrNotFound) {
				pos, err = nil, nil
			}
			var off *int64
			md := ""
			if pos != nil {
				off, md = &pos.NextOffset, pos.Metadata
			}
			t.Partitions = append(t.Partitions, part(p, off, md, errCode(err)))
		}
		out.Topics = append(out.Topics, t)
	}
	return out
}
