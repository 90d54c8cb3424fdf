package kafka_test

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stratalog/strata/internal/backendtest"
	"github.com/stratalog/strata/pkg/group"
)

// TestStrataMemberRefusedInKafkaGroup: while a Kafka member (JoinGroup through the
// gateway) is live in a group, a Strata member's Acquire and its first StepMember are
// refused with group.ErrKafkaGroup and leave no lease and no member behind; once the
// Kafka member's session has ended, or it left, the Strata member gets its lease.
func TestStrataMemberRefusedInKafkaGroup(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, s backendtest.Stores) {
		gws := twoGateways(t, s)
		ctx := groupCtx(t)
		adm := kadm.NewClient(gws[0].client(t))
		createTopic(t, adm, "excl", 2)
		km := &rawMember{cl: gws[0].client(t), grp: "exclg"}
		md := (&kmsg.ConsumerMemberMetadata{Topics: []string{"excl"}}).AppendTo(nil)
		if resp := km.join(t, ctx, "consumer", md, 2*time.Second); resp.ErrorCode != 0 {
			t.Fatalf("join: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		if resp := km.sync(t, ctx, map[string][]byte{km.id: {}}); resp.ErrorCode != 0 {
			t.Fatalf("sync: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		coord := gws[1].coord
		if _, err := coord.Acquire(ctx, "exclg", "excl", 0, "strata-1", 10*time.Second); !errors.Is(err, group.ErrKafkaGroup) {
			t.Fatalf("Acquire in a Kafka group: %v, want ErrKafkaGroup", err)
		}
		if _, err := coord.StepMember(ctx, "exclg", "excl", "strata-1", 10*time.Second, nil); !errors.Is(err, group.ErrKafkaGroup) {
			t.Fatalf("StepMember in a Kafka group: %v, want ErrKafkaGroup", err)
		}
		if ms, err := coord.LiveMembers(ctx, "exclg"); err != nil || len(ms) != 0 {
			t.Fatalf("Strata members after the refusals: %v, %v; want none", ms, err)
		}
		info, err := coord.Describe(ctx, "exclg")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range info.Partitions {
			if p.Owner != "" {
				t.Fatalf("a refused member left a lease: %+v", p)
			}
		}
		// The Kafka member stops heartbeating: a coordinator whose clock is past its
		// session sees no live Kafka member and grants the lease.
		later := group.New(s.Meta, gws[1].log, func() time.Time { return time.Now().Add(time.Minute) })
		if _, err := later.Acquire(ctx, "exclg", "excl", 0, "strata-1", 10*time.Second); err != nil {
			t.Fatalf("Acquire after the Kafka member's session ended: %v", err)
		}
		// A Kafka member that leaves frees the group at once.
		km2 := &rawMember{cl: gws[0].client(t), grp: "exclg2"}
		if resp := km2.join(t, ctx, "consumer", md, 10*time.Second); resp.ErrorCode != 0 {
			t.Fatalf("join: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		if _, err := coord.StepMember(ctx, "exclg2", "excl", "strata-2", 10*time.Second, nil); !errors.Is(err, group.ErrKafkaGroup) {
			t.Fatalf("StepMember in a Kafka group: %v, want ErrKafkaGroup", err)
		}
		leave := kmsg.NewPtrLeaveGroupRequest()
		leave.Group, leave.MemberID = km2.grp, km2.id
		if resp, err := leave.RequestWith(ctx, km2.cl); err != nil || resp.ErrorCode != 0 {
			t.Fatalf("leave: %v %+v", err, resp)
		}
		res, err := coord.StepMember(ctx, "exclg2", "excl", "strata-2", 10*time.Second, nil)
		if err != nil || len(res.Acquired) == 0 {
			t.Fatalf("StepMember after the Kafka member left: %+v, %v", res, err)
		}
	})
}
