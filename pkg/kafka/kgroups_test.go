package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/group"
	"github.com/stratalog/strata/pkg/kafka"
	"github.com/stratalog/strata/pkg/log"
)

// twoGateways starts two gateways, each with its own log and coordinator (as two
// processes would have), over one backend's stores.
func twoGateways(t *testing.T, s backendtest.Stores) [2]*gateway {
	t.Helper()
	var gws [2]*gateway
	for i := range gws {
		l, err := log.New(log.Config{Objects: s.Objects, Meta: s.Meta})
		if err != nil {
			t.Fatal(err)
		}
		coord := group.New(s.Meta, l, nil)
		srv, err := kafka.New(kafka.Config{Log: l, Groups: coord, Barriers: s.Meta.(kafka.GroupBarriers), MinSessionTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ln) }()
		t.Cleanup(func() {
			_ = srv.Close()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
		})
		gws[i] = &gateway{addr: ln.Addr().String(), log: l, coord: coord}
	}
	return gws
}

func groupCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// member is a kgo group consumer that records what it reads.
type member struct {
	cl   *kgo.Client
	mu   sync.Mutex
	recs []*kgo.Record
	stop func()
}

func startMember(t *testing.T, g *gateway, grp, topic string, bal kgo.GroupBalancer) *member {
	t.Helper()
	m := &member{}
	m.cl = g.client(t, kgo.ConsumerGroup(grp), kgo.ConsumeTopics(topic), kgo.Balancers(bal),
		kgo.SessionTimeout(10*time.Second), kgo.RebalanceTimeout(10*time.Second), kgo.HeartbeatInterval(300*time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AutoCommitInterval(time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := m.cl.PollFetches(ctx)
			m.mu.Lock()
			m.recs = append(m.recs, fs.Records()...)
			m.mu.Unlock()
		}
	}()
	var once sync.Once
	m.stop = func() { once.Do(func() { cancel(); <-done; m.cl.Close() }) }
	t.Cleanup(m.stop)
	return m
}

func (m *member) read() []*kgo.Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.recs)
}

// waitStable waits until the group is Stable with n members, as DescribeGroups says.
func waitStable(t *testing.T, adm *kadm.Client, grp string, n int) kadm.DescribedGroup {
	t.Helper()
	ctx := groupCtx(t)
	for {
		ds, err := adm.DescribeGroups(ctx, grp)
		if err == nil {
			if d := ds[grp]; d.Err == nil && d.State == "Stable" && len(d.Members) == n && allAssigned(d) {
				return d
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("group %s never became stable with %d members: %+v (%v)", grp, n, ds, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// allAssigned reports whether every member has a partition: a cooperative rebalance
// passes through a stable generation where the newcomer has none yet.
func allAssigned(d kadm.DescribedGroup) bool {
	for _, m := range d.Members {
		c, ok := m.Assigned.AsConsumer()
		if !ok || len(c.Topics) == 0 || len(c.Topics[0].Partitions) == 0 {
			return false
		}
	}
	return true
}

// produceKeyed produces n records over keys k0..k9, each value the key's sequence.
func produceKeyed(t *testing.T, g *gateway, topic string, n int) {
	t.Helper()
	cl := g.client(t, kgo.DefaultProduceTopic(topic))
	recs := make([]*kgo.Record, 0, n)
	for i := range n {
		recs = append(recs, &kgo.Record{Key: []byte("k" + strconv.Itoa(i%10)), Value: []byte(strconv.Itoa(i / 10))})
	}
	if err := cl.ProduceSync(groupCtx(t), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// checkOnceInOrder checks that recs hold every one of n records exactly once and each
// key's values in produce order.
func checkOnceInOrder(t *testing.T, recs []*kgo.Record, n int) {
	t.Helper()
	seen := map[string]bool{}
	last := map[string]int{}
	for _, r := range recs {
		id := fmt.Sprintf("%d/%d", r.Partition, r.Offset)
		if seen[id] {
			t.Fatalf("record %s read twice", id)
		}
		seen[id] = true
		v, _ := strconv.Atoi(string(r.Value))
		if prev, ok := last[string(r.Key)]; ok && v != prev+1 {
			t.Fatalf("key %s: %d after %d", r.Key, v, prev)
		}
		last[string(r.Key)] = v
	}
	if len(seen) != n {
		t.Fatalf("read %d distinct records, want %d", len(seen), n)
	}
}

// TestGroupAcrossGateways: two kgo group members, each connected to a different gateway
// over one store, form one generation (the barrier meets in the store), split the
// topic, and read every record exactly once with each key in order, with each of
// franz-go's balancers; their commits are the group's Strata commits.
func TestGroupAcrossGateways(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		gws := twoGateways(t, s)
		adm := kadm.NewClient(gws[0].client(t))
		balancers := []kgo.GroupBalancer{kgo.RangeBalancer(), kgo.RoundRobinBalancer(), kgo.StickyBalancer(), kgo.CooperativeStickyBalancer()}
		for _, bal := range balancers {
			t.Run(bal.ProtocolName(), func(t *testing.T) {
				topic, grp := "t-"+bal.ProtocolName(), "g-"+bal.ProtocolName()
				createTopic(t, adm, topic, 4)
				a := startMember(t, gws[0], grp, topic, bal)
				b := startMember(t, gws[1], grp, topic, bal)
				d := waitStable(t, adm, grp, 2)
				if d.Protocol != bal.ProtocolName() || d.ProtocolType != "consumer" {
					t.Fatalf("group protocol %s/%s, want consumer/%s", d.ProtocolType, d.Protocol, bal.ProtocolName())
				}
				const n = 100
				produceKeyed(t, gws[1], topic, n)
				ctx := groupCtx(t)
				for len(a.read())+len(b.read()) < n && ctx.Err() == nil {
					time.Sleep(50 * time.Millisecond)
				}
				ra, rb := a.read(), b.read()
				t.Logf("read %d+%d records", len(ra), len(rb))
				if len(ra) == 0 || len(rb) == 0 {
					t.Fatalf("members read %d and %d records: one of them got no partition", len(ra), len(rb))
				}
				checkOnceInOrder(t, append(ra, rb...), n)
				// The members' commits are the group's Strata commits.
				ctx = groupCtx(t)
				for ctx.Err() == nil {
					info, err := gws[0].coord.Describe(ctx, grp)
					if err != nil {
						t.Fatal(err)
					}
					var total int64
					for _, p := range info.Partitions {
						if p.Committed != nil {
							total += *p.Committed
						}
					}
					if total == n {
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
				if ctx.Err() != nil {
					t.Fatal("the members' commits never reached every record in Strata's describe")
				}
				t.Logf("the commits reached every record")
				// b leaves: a rebalance gives a every partition from the group's commits,
				// and no record produced after is lost (a rebalance may deliver again
				// what was read but not yet committed: at least once).
				b.stop()
				waitStable(t, adm, grp, 1)
				produceKeyed(t, gws[0], topic, n)
				ctx = groupCtx(t)
				distinct := func() int {
					seen := map[string]bool{}
					for _, r := range append(a.read(), b.read()...) {
						seen[fmt.Sprintf("%d/%d", r.Partition, r.Offset)] = true
					}
					return len(seen)
				}
				for distinct() < 2*n && ctx.Err() == nil {
					time.Sleep(50 * time.Millisecond)
				}
				if got := distinct(); got != 2*n {
					t.Fatalf("after the rebalance the members read %d distinct records, want %d", got, 2*n)
				}
			})
		}
	})
}

// rawMember speaks the group protocol by hand, so a test can make it stop (a crash)
// or answer with a stale generation.
type rawMember struct {
	cl  *kgo.Client
	grp string
	id  string
	gen int32
}

func (m *rawMember) join(t *testing.T, ctx context.Context, protoType string, meta []byte, session time.Duration) *kmsg.JoinGroupResponse {
	t.Helper()
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID, req.ProtocolType = m.grp, m.id, protoType
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = int32(session.Milliseconds()), int32(session.Milliseconds())
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", meta
	req.Protocols = append(req.Protocols, p)
	resp, err := req.RequestWith(ctx, m.cl)
	if err != nil {
		t.Fatalf("join: %v", err)
	}
	if resp.ErrorCode == 0 {
		m.id, m.gen = resp.MemberID, resp.Generation
	}
	return resp
}

func (m *rawMember) sync(t *testing.T, ctx context.Context, assign map[string][]byte) *kmsg.SyncGroupResponse {
	t.Helper()
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.Generation = m.grp, m.id, m.gen
	for id, a := range assign {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = id, a
		req.GroupAssignment = append(req.GroupAssignment, ga)
	}
	resp, err := req.RequestWith(ctx, m.cl)
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	return resp
}

func (m *rawMember) commit(t *testing.T, ctx context.Context, topic string, offset int64) error {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.MemberID, req.Generation = m.grp, m.id, m.gen
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, m.cl)
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
}

// TestGroupMemberCrash: a member that stops heartbeating (a crash) is dropped when a
// new generation forms without it; the survivor, on the other gateway, then gets every
// partition, and the crashed member's commits of its old generation are refused.
func TestGroupMemberCrash(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		gws := twoGateways(t, s)
		ctx := groupCtx(t)
		adm := kadm.NewClient(gws[0].client(t))
		createTopic(t, adm, "crash", 2)
		produceKeyed(t, gws[0], "crash", 20)
		crashed := &rawMember{cl: gws[0].client(t), grp: "crashg"}
		md := (&kmsg.ConsumerMemberMetadata{Topics: []string{"crash"}}).AppendTo(nil)
		if resp := crashed.join(t, ctx, "consumer", md, 2*time.Second); resp.ErrorCode != 0 || resp.LeaderID != crashed.id {
			t.Fatalf("join: %+v", resp)
		}
		if resp := crashed.sync(t, ctx, map[string][]byte{crashed.id: {}}); resp.ErrorCode != 0 {
			t.Fatalf("sync: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		if err := crashed.commit(t, ctx, "crash", 1); err != nil {
			t.Fatalf("commit of the live generation: %v", err)
		}
		// It crashes: no more heartbeats. A kgo member joins through the other gateway.
		survivor := startMember(t, gws[1], "crashg", "crash", kgo.CooperativeStickyBalancer())
		d := waitStable(t, adm, "crashg", 1)
		for d.Members[0].MemberID == crashed.id {
			if ctx.Err() != nil {
				t.Fatalf("the crashed member is still the group's")
			}
			time.Sleep(100 * time.Millisecond)
			d = waitStable(t, adm, "crashg", 1)
		}
		for len(survivor.read()) < 19 && ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
		}
		if got := len(survivor.read()); got != 19 {
			t.Fatalf("survivor read %d records, want the 19 after the crashed member's commit", got)
		}
		if err := crashed.commit(t, ctx, "crash", 2); !errors.Is(err, kerr.UnknownMemberID) {
			t.Fatalf("commit of the crashed member: %v, want UNKNOWN_MEMBER_ID", err)
		}
		// A member of the group at an obsolete generation is ILLEGAL_GENERATION.
		stale := &rawMember{cl: gws[1].client(t), grp: "crashg", id: d.Members[0].MemberID, gen: 0}
		if err := stale.commit(t, ctx, "crash", 2); !errors.Is(err, kerr.IllegalGeneration) {
			t.Fatalf("commit at generation 0: %v, want ILLEGAL_GENERATION", err)
		}
	})
}

// TestGroupAdminAndConnect: Connect's protocol type passes through with its opaque
// metadata; kadm lists, describes and deletes groups and their offsets; a group
// Strata members consume refuses Kafka members, and a Kafka group's commits are
// refused while a Strata lease is live.
func TestGroupAdminAndConnect(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		gws := twoGateways(t, s)
		ctx := groupCtx(t)
		adm := kadm.NewClient(gws[0].client(t))
		createTopic(t, adm, "cfg", 1)
		produceKeyed(t, gws[0], "cfg", 5)

		w := &rawMember{cl: gws[1].client(t), grp: "connect-cluster"}
		meta := []byte{0, 1, 0xff, 'u', 'r', 'l'}
		resp := w.join(t, ctx, "connect", meta, 3*time.Second)
		if resp.ErrorCode != 0 || len(resp.Members) != 1 || string(resp.Members[0].ProtocolMetadata) != string(meta) {
			t.Fatalf("connect join: %+v", resp)
		}
		if sr := w.sync(t, ctx, map[string][]byte{w.id: []byte("tasks")}); sr.ErrorCode != 0 || string(sr.MemberAssignment) != "tasks" {
			t.Fatalf("connect sync: %+v", sr)
		}
		ls, err := adm.ListGroups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if l, ok := ls["connect-cluster"]; !ok || l.ProtocolType != "connect" || l.State != "Stable" {
			t.Fatalf("ListGroups: %+v", ls)
		}
		ds, err := adm.DescribeGroups(ctx, "connect-cluster", "nobody")
		if err != nil {
			t.Fatal(err)
		}
		if d := ds["connect-cluster"]; d.ProtocolType != "connect" || len(d.Members) != 1 || d.Members[0].MemberID != w.id {
			t.Fatalf("DescribeGroups: %+v", d)
		}
		if d := ds["nobody"]; d.State != "Dead" {
			t.Fatalf("DescribeGroups of an unknown group: %+v", d)
		}
		if err := w.commit(t, ctx, "cfg", 3); err != nil {
			t.Fatalf("member commit: %v", err)
		}
		if o, err := gws[0].coord.Committed(ctx, "connect-cluster", "cfg", 0); err != nil || o == nil || *o != 3 {
			t.Fatalf("Strata's commit %v (%v), want 3", o, err)
		}
		// OffsetDelete and DeleteGroups are refused while the member is in the group.
		dr, err := adm.DeleteOffsets(ctx, "connect-cluster", kadm.TopicsSet{"cfg": {0: {}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := dr.Error(); !errors.Is(err, kerr.GroupSubscribedToTopic) {
			t.Fatalf("DeleteOffsets with a member: %v", err)
		}
		gr, err := adm.DeleteGroups(ctx, "connect-cluster")
		if err != nil {
			t.Fatal(err)
		}
		if err := gr["connect-cluster"].Err; !errors.Is(err, kerr.NonEmptyGroup) {
			t.Fatalf("DeleteGroups with a member: %v", err)
		}
		lv := kmsg.NewPtrLeaveGroupRequest()
		lv.Group, lv.MemberID = w.grp, w.id
		lm := kmsg.NewLeaveGroupRequestMember()
		lm.MemberID = w.id
		lv.Members = append(lv.Members, lm)
		if lr, err := lv.RequestWith(ctx, w.cl); err != nil || lr.ErrorCode != 0 || (len(lr.Members) > 0 && lr.Members[0].ErrorCode != 0) {
			t.Fatalf("leave: %+v %v", lr, err)
		}
		if err := w.commit(t, ctx, "cfg", 4); !errors.Is(err, kerr.UnknownMemberID) {
			t.Fatalf("commit after leaving: %v", err)
		}
		dr, err = adm.DeleteOffsets(ctx, "connect-cluster", kadm.TopicsSet{"cfg": {0: {}}})
		if err != nil || dr.Error() != nil {
			t.Fatalf("DeleteOffsets of an empty group: %v %v", err, dr.Error())
		}
		if o, err := gws[0].coord.Committed(ctx, "connect-cluster", "cfg", 0); err != nil || o != nil {
			t.Fatalf("Strata's commit after DeleteOffsets %v (%v), want none", o, err)
		}
		gr, err = adm.DeleteGroups(ctx, "connect-cluster")
		if err != nil || gr["connect-cluster"].Err != nil {
			t.Fatalf("DeleteGroups of an empty group: %v %v", err, gr["connect-cluster"].Err)
		}
		if _, err := gws[1].coord.Describe(ctx, "connect-cluster"); !errors.Is(err, group.ErrNotFound) {
			t.Fatalf("Strata's describe after DeleteGroups: %v", err)
		}

		// A group Strata members consume refuses Kafka members.
		if _, err := gws[0].coord.StepMember(ctx, "strata-g", "cfg", "http-1", 10*time.Second, nil); err != nil {
			t.Fatal(err)
		}
		k := &rawMember{cl: gws[0].client(t), grp: "strata-g"}
		if resp := k.join(t, ctx, "consumer", nil, 3*time.Second); resp.ErrorCode != kerr.InconsistentGroupProtocol.Code {
			t.Fatalf("Kafka join into a Strata group: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		// A session timeout below the gateway's minimum is refused, creating nothing.
		short := &rawMember{cl: gws[0].client(t), grp: "short-session"}
		if resp := short.join(t, ctx, "consumer", nil, 100*time.Millisecond); resp.ErrorCode != kerr.InvalidSessionTimeout.Code {
			t.Fatalf("join with a 100 ms session: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		if _, err := gws[0].coord.Describe(ctx, "short-session"); !errors.Is(err, group.ErrNotFound) {
			t.Fatalf("a refused join created the group: %v", err)
		}
		// Static membership is not advertised: JoinGroup stops at v4 (v5 adds
		// group.instance.id), and a v5 join is UNSUPPORTED_VERSION.
		for _, a := range kafka.APIs {
			if a.Key == 11 && a.Max >= 5 {
				t.Fatalf("JoinGroup advertised up to v%d: v5+ carries static membership, which the gateway lacks", a.Max)
			}
		}
		st := kmsg.NewPtrJoinGroupRequest()
		st.SetVersion(5)
		st.Group, st.ProtocolType, st.SessionTimeoutMillis, st.RebalanceTimeoutMillis, st.InstanceID = "static", "consumer", 6000, 6000, kmsg.StringPtr("i-1")
		st.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
		if sr := dial(t, gws[0].addr).roundTrip(st).(*kmsg.JoinGroupResponse); sr.ErrorCode != kerr.UnsupportedVersion.Code {
			t.Fatalf("static join at v5: %v, want UNSUPPORTED_VERSION", kerr.ErrorForCode(sr.ErrorCode))
		}
	})
}
