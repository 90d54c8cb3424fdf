package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/httpapi"
	"github.com/stratalog/strata/pkg/log"
)

// FuzzRequest feeds arbitrary frames to the request loop's handler on a live log (a
// topic with records, so produce, fetch and list offsets reach the store): it never
// panics, and every answer is a framed response to the frame's correlation id.
func FuzzRequest(f *testing.F) {
	ctx := context.Background()
	st := backendtest.Local(ctx, f)
	l, err := log.New(log.Config{Objects: st.Objects, Meta: st.Meta})
	if err != nil {
		f.Fatal(err)
	}
	if _, err := l.CreateTopic(ctx, "t", 2, 0); err != nil {
		f.Fatal(err)
	}
	if _, err := l.Append(ctx, "t", []log.Record{{Value: []byte("a")}, {Key: []byte("k"), Value: []byte("b")}}, log.AppendOptions{}); err != nil {
		f.Fatal(err)
	}
	s, err := New(Config{Log: l, Groups: group.New(st.Meta, l, nil), Barriers: st.Meta.(GroupBarriers)})
	if err != nil {
		f.Fatal(err)
	}
	b := broker{host: "127.0.0.1", port: 9092}
	// The same log behind SASL/PLAIN: each frame is also served before authentication,
	// after a PLAIN handshake, and authenticated as a principal that may read t only.
	tokens, err := httpapi.ParseAuth([]byte(`{"principals": {"token-0123456789abcdefghij": {"name": "r", "allow": [{"resource": "topic:t", "ops": ["read", "describe"]}]}}}`))
	if err != nil {
		f.Fatal(err)
	}
	sa, err := New(Config{Log: l, Groups: group.New(st.Meta, l, nil), Auth: &Auth{Tokens: tokens}})
	if err != nil {
		f.Fatal(err)
	}
	reader, _ := tokens.Lookup("token-0123456789abcdefghij")

	seed := func(req kmsg.Request, v int16) {
		req.SetVersion(v)
		frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz")).AppendRequest(nil, req, 7)
		f.Add(frame[4:])
	}
	for _, v := range []int16{0, 3, 4} {
		seed(kmsg.NewPtrApiVersionsRequest(), v)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("t")}, {Topic: kmsg.StringPtr("nope")}}
	seed(md, 1)
	seed(md, 12)
	for _, v := range []int16{3, 9, 11} {
		pr := kmsg.NewPtrProduceRequest()
		pr.Acks = -1
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "t"
		rt.Partitions = []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: testBatch(f, codecGzip, []kmsg.Record{rec("k", "v", "h", "1")}, nil, true)}, {Partition: 1, Records: testBatch(f, codecNone, []kmsg.Record{rec("", "v")}, nil, true)}}
		pr.Topics = append(pr.Topics, rt)
		seed(pr, v)
	}
	for _, v := range []int16{0, 3, 4} {
		ip := kmsg.NewPtrInitProducerIDRequest()
		ip.ProducerID, ip.ProducerEpoch = 1, 0
		seed(ip, v)
	}
	ipr := kmsg.NewPtrProduceRequest()
	ipr.Acks = -1
	ipr.Topics = []kmsg.ProduceRequestTopic{{Topic: "t", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: testBatch(f, codecNone, []kmsg.Record{rec("k", "v")},
		func(b *kmsg.RecordBatch) { b.ProducerID, b.ProducerEpoch, b.FirstSequence = 1, 0, 0 }, true)}}}}
	seed(ipr, 9)
	dc := kmsg.NewPtrDescribeConfigsRequest()
	dc.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "t"}, {ResourceType: kmsg.ConfigResourceTypeBroker}}
	seed(dc, 0)
	seed(dc, 4)
	ia := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ia.ValidateOnly = true
	ia.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "t",
		Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: kmsg.StringPtr("60000")}}}}
	seed(ia, 1)
	ac := kmsg.NewPtrAlterConfigsRequest()
	ac.ValidateOnly = true
	ac.Resources = []kmsg.AlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "t",
		Configs: []kmsg.AlterConfigsRequestResourceConfig{{Name: "cleanup.policy", Value: kmsg.StringPtr("delete")}}}}
	seed(ac, 2)
	fr := kmsg.NewPtrFetchRequest()
	fr.MaxWaitMillis, fr.MaxBytes = 10, 1<<20
	fr.Topics = []kmsg.FetchRequestTopic{{Topic: "t", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 100}, {Partition: 1, FetchOffset: 5}}}}
	seed(fr, 4)
	seed(fr, 12)
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "t", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, Timestamp: -2}, {Partition: 1, Timestamp: 1}}}}
	seed(lo, 1)
	seed(lo, 6)
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "new", NumPartitions: 1, ReplicationFactor: 1}}
	seed(ct, 2)
	seed(ct, 7)
	ctf := kmsg.NewPtrCreateTopicsRequest()
	ctf.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "kept", NumPartitions: 1, ReplicationFactor: 1,
		Configs: []kmsg.CreateTopicsRequestTopicConfig{{Name: "retention.ms", Value: kmsg.StringPtr("-1")}}}}
	seed(ctf, 5)
	iaf := kmsg.NewPtrIncrementalAlterConfigsRequest()
	iaf.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "t",
		Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: kmsg.StringPtr("-1")}}}}
	seed(iaf, 1)
	dt := kmsg.NewPtrDeleteTopicsRequest()
	dt.TopicNames = []string{"new"}
	seed(dt, 1)
	seed(kmsg.NewPtrFindCoordinatorRequest(), 4)
	seed(kmsg.NewPtrDescribeClusterRequest(), 1)
	cp := kmsg.NewPtrCreatePartitionsRequest()
	cp.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: "t", Count: 3}}
	seed(cp, 0)
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.Generation = "g", -1
	oc.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}, {Partition: 1, Offset: 9}}}}
	seed(oc, 2)
	seed(oc, 8)
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Group = "g"
	seed(of, 1)
	of.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g"}, {Group: "h", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0, 5}}}}}
	seed(of, 8)
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group, jg.ProtocolType, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis = "kg", "consumer", 6000, 6000
	jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: (&kmsg.ConsumerMemberMetadata{Topics: []string{"t"}}).AppendTo(nil)}}
	seed(jg, 0)
	seed(jg, 9)
	sg := kmsg.NewPtrSyncGroupRequest()
	sg.Group, sg.MemberID, sg.Generation = "kg", "m", 1
	sg.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: "m", MemberAssignment: []byte{0}}}
	seed(sg, 5)
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "kg", "m", 1
	seed(hb, 4)
	lg := kmsg.NewPtrLeaveGroupRequest()
	lg.Group, lg.Members = "kg", []kmsg.LeaveGroupRequestMember{{MemberID: "m"}}
	seed(lg, 5)
	seed(kmsg.NewPtrListGroupsRequest(), 4)
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"kg", "g"}
	seed(dg, 5)
	xg := kmsg.NewPtrDeleteGroupsRequest()
	xg.Groups = []string{"kg"}
	seed(xg, 2)
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group, od.Topics = "g", []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}, {Partition: 1}}}}
	seed(od, 0)

	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = MechanismPlain
	seed(hs, 1)
	hs.Mechanism = "SCRAM-SHA-512"
	seed(hs, 1)
	for _, msg := range []string{"\x00r\x00token-0123456789abcdefghij", "\x00r\x00wrong", "\x00\x00", "n,,\x01auth=Bearer strata-aws-v1.aHR0cA\x01\x01"} {
		au := kmsg.NewPtrSASLAuthenticateRequest()
		au.SASLAuthBytes = []byte(msg)
		seed(au, 0)
		seed(au, 2)
	}

	f.Fuzz(func(t *testing.T, frame []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		check := func(resp []byte) {
			if len(resp) == 0 {
				return
			}
			if len(resp) < 8 || int(uint32(resp[0])<<24|uint32(resp[1])<<16|uint32(resp[2])<<8|uint32(resp[3])) != len(resp)-4 {
				t.Fatalf("answer of %d bytes is not one frame", len(resp))
			}
			if string(resp[4:8]) != string(frame[4:8]) {
				t.Fatalf("answer's correlation id %x, the request's %x", resp[4:8], frame[4:8])
			}
		}
		resp, _ := s.handle(ctx, b, frame)
		check(resp)
		resp, _ = sa.handle(ctx, b, frame)
		check(resp)
		resp, _ = sa.serveFrame(ctx, b, &session{phase: phaseHandshaken, mech: MechanismPlain}, frame)
		check(resp)
		resp, _ = sa.serveFrame(ctx, b, &session{phase: phaseAuthorized, id: &identity{name: "r", grants: reader, appendAs: "token:r"}}, frame)
		check(resp)
	})
}
